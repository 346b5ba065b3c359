"""Power and cooling of the physical plan, one concern a module:

* ``draw``: what each device draws with the optics in its cages (the rule every view uses);
* ``circuits``: the PDUs a rack needs and the circuits that feed them;
* ``cords``: each power supply's cord to a PDU outlet, and what losing a feed takes;
* ``cooling``: the cooling that removes a rack's heat.
"""
