"""Bring-up check: compare the fabric as built (``ibnetdiscover``, LLDP) with the plan, and name every
miswired, missing, unexpected or degraded link by its cable label, the rack and rack unit of both ends and
the port.

Free functions over the plan: ``expected`` names every planned port as discovery names it (the burn-in plan
and the build's expected-topology files read it too, so it imports nothing above the plan model), the
readers (``ibnetdiscover``, ``lldp``) turn discovery output into links, ``compare`` finds the differences,
``check.verify`` runs them for a set of discovery files and ``report`` renders the findings.
"""
