"""Cable labels, the plan's one rule for them: every view that prints or compares a cable end (the cable schedule,
the rack printouts, the phase review, the verification's expected ends) reads its identifiers and labels here.

Labels follow the TIA-606-B identifier for a port, ``fs.XY-r:P`` (space, cabinet grid
location, rack unit, port; ANSI/TIA-606-B-2012 as summarised by HellermannTyton,
https://www.cablinginstall.com/design-install/article/16467224/ansitia606b-standard-approved-for-publication
and "Standardized Labeling of the Data Center", T. Fries): here ``<site>.<rack>-<U>:<port>``, e.g.
``DC1.A04-09:OSFP4P2``. A patch cord carries the identifiers of both its ends, near end first
(``near / far``), so the text read at either end says where the other end goes.

A cable's A end is one connector; a 1:2 splitter's B end is two, joined with JOIN in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpucluster.plan.cables import cable_ends
from gpucluster.plan.model import Cable, Device, Plan

JOIN = " + "  # between the connectors of a splitter's B end
SEPARATOR = " / "  # between a label's near and far end (TIA-606's "/", spaced: port names contain "/")
LABEL = ("{}" + SEPARATOR + "{}").format  # a single-connector end's label from (near, far) identifiers, in C


def end_labels(a_id: str, b_ids: Sequence[str]) -> tuple[str, str]:
    """The labels at a cable's A end and at its B end(s) (one per B connector, joined), near end first, so the text
    read at either end says where the other end goes."""
    return LABEL(a_id, JOIN.join(b_ids)), JOIN.join(LABEL(b_id, a_id) for b_id in b_ids)


def link_label(cable_id: str, leg: int, legs: int) -> str:
    """One link's label where a cable carries several (NetBox's cable per link): the cable's id and the link's place
    on it, ``C-A04-0012/2``; a cable of one link is labelled with its id."""
    return f"{cable_id}/{leg}" if legs > 1 else cable_id


@dataclass(frozen=True, slots=True)
class Connector:
    """One plug of a cable: the device it goes into, and the port(s) of the cage it fills."""

    device: str
    ports: tuple[str, ...]

    @property
    def port_names(self) -> str:
        """Its port(s) as printed: a twin-port cage's two ports joined with "+"."""
        return "+".join(self.ports)


def cable_connectors(plan: Plan, cable: Cable) -> tuple[Connector, tuple[Connector, ...]]:
    """The A connector and the B connector(s) of a cable: A is the side all its links share (cable_ends, a
    splitter's switch cage), so a splitter's two host plugs are its B end; one link keeps its orientation."""
    links = [plan.links[i] for i in cable.links]
    first = links[0]
    if len(links) == 1:
        return Connector(first.a_device, (first.a_port,)), (Connector(first.b_device, (first.b_port,)),)
    a_ends, _b_ends = cable_ends(plan, cable)
    shared_a = (first.a_device, first.a_cage) in a_ends  # else the cable's A end is its links' b side
    ends = [
        ((link.a_device, link.a_port), (link.b_device, link.b_port, link.b_cage))
        if shared_a
        else ((link.b_device, link.b_port), (link.a_device, link.a_port, link.a_cage))
        for link in links
    ]
    a = Connector(ends[0][0][0], tuple(near[1] for near, _ in ends))
    far: dict[tuple[str, int | str], list[str]] = {}  # one plug per far cage (a cageless port is its own)
    for _, (device, port, cage) in ends:
        far.setdefault((device, cage or port), []).append(port)
    return a, tuple(Connector(device, tuple(ports)) for (device, _cage), ports in far.items())


class Locator:
    """Where devices stand, and the TIA-606 identifier of their ports (computed once per device)."""

    def __init__(self, plan: Plan):
        self.site = plan.design.site.name
        self.devices = plan.devices
        self._prefix: dict[str, str] = {}

    def unit(self, device: Device) -> str:
        """The rack unit as printed: two digits, or the device's own name for zero-U devices (PDUs),
        which hang beside the rack where no unit number tells them apart."""
        if device.u_position:
            return f"{device.u_position:02d}"
        return device.name.removeprefix(f"{device.rack}-").upper()

    def prefix(self, name: str) -> str:
        """The TIA-606 identifier of a device's ports up to the port name: ``<site>.<rack>-<U>:``."""
        prefix = self._prefix.get(name)
        if prefix is None:
            device = self.devices[name]
            prefix = self._prefix[name] = f"{self.site}.{device.rack}-{self.unit(device)}:"
        return prefix

    def identifier(self, connector: Connector) -> str:
        """The TIA-606 identifier of a plug: its device's prefix and the port(s) of the cage it fills."""
        return self.prefix(connector.device) + connector.port_names
