"""What discovery should find: every planned link as the fabric's own tools name its two ends.

An InfiniBand fabric names a port by its node's description and its port number (``ibnetdiscover``);
LLDP names it by the neighbour's system name and port id (``lldpcli show neighbors``). The plan names
devices and hardware ports; this module turns one into the other, once per plan, so the comparison and
the expected-topology files the build writes read the same names.

* A switch's node description is its plan name (NVIDIA's switch OS reports ``MF0;<hostname>:<model>/U1``,
  which discovery reduces to the hostname). Its InfiniBand port number is the port's position among the
  model's InfiniBand ports in catalog order: cage c, sub-port s of a twin-port OSFP switch is port
  2(c - 1) + s, as NVIDIA numbers ``IB1/c/s``.
* A host's InfiniBand port is one HCA with one port (a ConnectX adapter shows each port as its own RDMA
  device), described as ``<hostname> <RDMA device>`` (rdma-ndd's default ``%h %d``); where the catalog does
  not name the RDMA device, the port's hardware name stands in for it and the site sets that description.
* On Ethernet a host's port id is its network interface where the catalog names it, else its port name.
* A half of a split switch port (``IB1/c/s/1`` and ``/2``, each on a 1:2 splitter leg) has an InfiniBand port
  number too, but how the switch numbers its halves is not in NVIDIA's documents (the MLNX-OS manual names them
  1/c/s/1 and 1/c/s/2 and says each "is then handled as an individual port", nothing more). Such a link is
  checked up to the switch: its host port must be up and reach the planned switch, at any port. Its switch end
  carries a stand-in number past the model's ports (ports + 2(n - 1) + half, n the whole port's number), so that
  ibsim can simulate the link; it is never compared with what ibnetdiscover finds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from gpucluster.plan.model import Link, Plan
from gpucluster.plan.queries import queries

IB_NODE_DESCRIPTION_BYTES = 64  # NodeDescription is 64 bytes (IBA NodeDescription attribute)

# Lane rate of each InfiniBand generation (Gb/s per lane), as ibnetdiscover prints it after the width.
IB_LANE_GBPS: dict[str, float] = {
    "SDR": 2.5,
    "DDR": 5.0,
    "QDR": 10.0,
    "FDR10": 10.0,
    "FDR": 14.0,
    "EDR": 25.0,
    "HDR": 50.0,
    "NDR": 100.0,
    "XDR": 200.0,
}
# The catalog's InfiniBand technologies and the lane generation each runs.
IB_TECHNOLOGY_LANE: dict[str, str] = {"infiniband-ndr": "NDR", "infiniband-xdr": "XDR"}


@dataclass(frozen=True, slots=True)
class PortInfo:
    """One hardware port of a catalog part, with the names discovery uses for it."""

    technology: str | None
    speed_gbps: float
    ib_port: int  # InfiniBand port number on a switch (0 when the port is not InfiniBand)
    os_device: str | None  # RDMA device (mlx5_0), where the catalog names it
    netdev: str | None  # network interface, where the catalog names it
    split_half: bool = False  # a half of a split switch port: ib_port is a stand-in number, not the switch's
    infiniband: bool = field(init=False, repr=False, compare=False)  # technology is InfiniBand (read per link)
    ib_port_text: str = field(init=False, repr=False, compare=False)  # str(ib_port), the port as discovery names it

    def __post_init__(self) -> None:
        object.__setattr__(self, "infiniband", (self.technology or "").startswith("infiniband"))
        object.__setattr__(self, "ib_port_text", str(self.ib_port))


class PlannedEnd(NamedTuple):
    """One end of a planned link: the plan's device and port, and what discovery calls them (a named tuple, as
    PlannedLink)."""

    device: str
    port: str
    node: str  # InfiniBand node description / LLDP system name
    node_port: str  # InfiniBand port number / LLDP port id
    switch: bool


class PlannedLink(NamedTuple):
    """A planned link with its cable and the width and lane rate it must train at (InfiniBand). Immutable; a named
    tuple rather than a frozen dataclass, which is slower to build (a 131,072-GPU fabric has half a million
    links, each with two ends)."""

    link: int  # index into plan.links
    network: str
    cable: str
    a: PlannedEnd
    b: PlannedEnd
    speed_gbps: float
    width: int  # InfiniBand lanes (4 for 4x); 0 on Ethernet
    lane: str  # InfiniBand lane generation (NDR); "" on Ethernet
    split: bool = False  # on a half of a split switch port: checked to the switch b, not to its port number

    @property
    def rate(self) -> str:
        """As ibnetdiscover prints it: 4xNDR."""
        return f"{self.width}x{self.lane}" if self.width else f"{self.speed_gbps:g}G"


_PART_PORTS: dict[int, tuple[object, dict[str, PortInfo]]] = {}


def _part_ports(part: object) -> dict[str, PortInfo]:
    """Port name -> PortInfo for one catalog part, computed once per part (parts hold lists, so they are
    keyed by identity, as gpucluster.catalog.ports does)."""
    entry = _PART_PORTS.get(id(part))
    if entry is None or entry[0] is not part:
        entry = _PART_PORTS[id(part)] = (part, _port_table(part))
    return entry[1]


def _port_table(part: object) -> dict[str, PortInfo]:
    table: dict[str, PortInfo] = {}
    ib_number = 0
    halves: list[tuple[str, str, int, object]] = []  # (half, its whole port, 1 or 2, group)
    for group in getattr(part, "ports", ()):  # PDUs have no port list
        infiniband = (group.technology or "").startswith("infiniband")
        for i, (name, _cage) in enumerate(group.port_names()):
            if infiniband:
                ib_number += 1
            table[name] = PortInfo(
                group.technology,
                group.speed_gbps,
                ib_number if infiniband else 0,
                group.os_devices[i] if group.os_devices else None,
                group.netdevs[i] if group.netdevs else None,
            )
        for (whole, _cage), pair in zip(group.port_names(), group.split_port_names(), strict=False):
            halves += [(half, whole, number, group) for number, half in enumerate(pair, start=1)]
    for half, whole, number, group in halves:  # a stand-in number past the model's ports (module docstring)
        parent = table[whole].ib_port
        stand_in = ib_number + 2 * (parent - 1) + number if parent else 0
        speed = getattr(group, "speed_gbps", 0.0) / 2
        table.setdefault(half, PortInfo(getattr(group, "technology", None), speed, stand_in, None, None, True))
    return table


_NO_PORT_INFO = PortInfo(None, 0.0, 0, None, None)


def port_info(plan: Plan, device: str, port: str) -> PortInfo:
    """What the catalog says of a device's port (nothing for parts without a port list, such as PDUs)."""
    return _part_ports(plan.part(device)).get(port, _NO_PORT_INFO)


def is_infiniband(plan: Plan, link: Link) -> bool:
    """Both ends are InfiniBand ports (so ibnetdiscover, not LLDP, sees the link)."""
    a, b = port_info(plan, link.a_device, link.a_port), port_info(plan, link.b_device, link.b_port)
    return a.infiniband and b.infiniband


def hca_name(info: PortInfo, port: str) -> str:
    """The HCA's name in its node description: the RDMA device, else the port's hardware name."""
    return info.os_device or port


def _ib_node(device: str, port: str, info: PortInfo, switch: bool) -> tuple[str, str, bool]:
    """(node description, port number, is a switch) of an InfiniBand port."""
    if switch:
        return device, info.ib_port_text, True
    return f"{device} {hca_name(info, port)}"[:IB_NODE_DESCRIPTION_BYTES], "1", False


def _lldp_port(device: str, port: str, info: PortInfo, switch: bool) -> tuple[str, str, bool]:
    """(system name, port id, is a switch) of an Ethernet port as LLDP reports it."""
    if switch:
        return device, port, True
    return device, info.netdev or port, False


def planned_links(plan: Plan, network: str) -> Iterator[PlannedLink]:
    """Every link of one network, named as discovery names its ends (InfiniBand or LLDP, by the ports), with the id
    of the cable that carries it. A device's port table and role are looked up once per device (a 131,072-GPU
    compute fabric has half a million links), and the named tuples made by tuple.__new__ as their _make does (their
    own __new__ is Python, which took a fifth of the time)."""
    found_in = queries(plan)
    positions, plan_cables = found_in.link_cables, plan.cables
    devices, links = plan.devices, plan.links
    tables: dict[str, tuple[dict[str, PortInfo], bool]] = {}  # device -> (its port table, is a switch)
    new = tuple.__new__

    def table(device: str) -> tuple[dict[str, PortInfo], bool]:
        found = tables[device] = (_part_ports(plan.part(device)), devices[device].role == "switch")
        return found

    for index in found_in.link_indexes(network):
        link = links[index]
        a_device, a_port, b_device, b_port = link.a_device, link.a_port, link.b_device, link.b_port
        a_ports, a_switch = tables.get(a_device) or table(a_device)
        b_ports, b_switch = tables.get(b_device) or table(b_device)
        a_info = a_ports.get(a_port, _NO_PORT_INFO)
        b_info = b_ports.get(b_port, _NO_PORT_INFO)
        if a_info.infiniband and b_info.infiniband:
            a = new(PlannedEnd, (a_device, a_port, *_ib_node(a_device, a_port, a_info, a_switch)))
            b = new(PlannedEnd, (b_device, b_port, *_ib_node(b_device, b_port, b_info, b_switch)))
            lane = IB_TECHNOLOGY_LANE.get(a_info.technology or "", "")
            width = round(link.speed_gbps / IB_LANE_GBPS[lane]) if lane else 0
        else:
            a = new(PlannedEnd, (a_device, a_port, *_lldp_port(a_device, a_port, a_info, a_switch)))
            b = new(PlannedEnd, (b_device, b_port, *_lldp_port(b_device, b_port, b_info, b_switch)))
            lane, width = "", 0
        split = bool(link.b_half) and b_info.split_half and bool(lane)
        position = positions[index]
        cable = plan_cables[position].id if position >= 0 else ""
        yield new(PlannedLink, (index, network, cable, a, b, link.speed_gbps, width, lane, split))


def infiniband_networks(plan: Plan) -> list[str]:
    """The plan's networks whose links are InfiniBand, in plan order."""
    found_in = queries(plan)
    return [n for n in found_in.networks() if (link := found_in.first_link(n)) and is_infiniband(plan, link)]


def ethernet_networks(plan: Plan) -> list[str]:
    """The plan's networks whose links are Ethernet, in plan order."""
    found_in = queries(plan)
    return [n for n in found_in.networks() if (link := found_in.first_link(n)) and not is_infiniband(plan, link)]
