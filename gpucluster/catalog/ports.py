"""A part's ports as the plan uses them: by role, in rail order, with unique cage numbers."""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.catalog.schema import AnyPart, Nic, PortGroup, RackMounted

_HasPorts = AnyPart | RackMounted  # any catalog part: those without ports (racks, cables, optics, PDUs) have none


@dataclass(frozen=True)
class PortPool:
    """The ordered port names and cages of one role on one switch model."""

    names: tuple[str, ...]
    cages: tuple[int, ...]
    speed_gbps: float
    halves: tuple[tuple[str, str], ...] = ()  # per port, its two half-speed ports when it splits (switches)
    cage_type: str = ""  # of the role's first group: what a host port plugs into

    def __len__(self) -> int:
        return len(self.names)


_DEVICE_PORTS: dict[int, tuple[object, dict[str, PortPool]]] = {}


def device_ports(part: _HasPorts) -> dict[str, PortPool]:
    """Cached :func:`_device_ports` (catalog parts hold lists, so they are keyed by identity)."""
    entry = _DEVICE_PORTS.get(id(part))
    if entry is None or entry[0] is not part:
        entry = _DEVICE_PORTS[id(part)] = (part, _device_ports(part))
    return entry[1]


def _device_ports(part: _HasPorts) -> dict[str, PortPool]:
    """A part's logical ports by role, named as the hardware names them. Names are shared strings,
    so a plan of millions of ports holds each name once per part."""
    groups = _groups(part)
    roles = dict.fromkeys(group.role for group in groups)
    speeds = {group.role: group.speed_gbps for group in reversed(groups)}
    pools: dict[str, PortPool] = {}
    for role in roles:
        details = port_details(part, role)
        of_role = [group for group in groups if group.role == role]
        split = {
            name: pair for g in of_role for (name, _c), pair in zip(g.port_names(), g.split_port_names(), strict=False)
        }
        halves = tuple(split[d.name] for d in details) if len(split) == len(details) else ()
        pools[role] = PortPool(
            tuple(d.name for d in details), tuple(d.cage for d in details), speeds[role], halves, of_role[0].cage_type
        )
    return pools


@dataclass(frozen=True)
class PortDetail:
    """One host port with what the operating system calls it (for NCCL, Slurm, monitoring)."""

    name: str
    cage: int
    rail: int | None
    os_device: str | None  # RDMA device, e.g. mlx5_0
    netdev: str | None  # network interface, e.g. ibp24s0
    ethernet_netdev: str | None = None  # the interface when a VPI port runs Ethernet, e.g. enp24s0np0
    pci_device_id: str | None = None  # the adapter's PCI device ID, e.g. 1021 (ConnectX-7)

    technology: str | None = None  # what the port group speaks natively (its netdevs are named for it)
    plane_netdevs: tuple[str, ...] | None = None  # per Ethernet plane, the interface of the plane's PF (plane 1 first)

    def netdev_on(self, ethernet: bool) -> str | None:
        """The port's interface name on a fabric of the given kind: a VPI port is named for its link type
        (DGX H100: ibp24s0 on InfiniBand, enp24s0np0 on Ethernet)."""
        if ethernet and self.technology != "ethernet":
            return self.ethernet_netdev
        return self.netdev


def port_details(part: _HasPorts, role: str) -> list[PortDetail]:
    """A part's ports of one role, in the order the plan uses them (compute ports in rail order),
    with cage numbers unique across the device (each group numbered on from the cages before it)."""
    details: list[PortDetail] = []
    offset = 0
    for group in _groups(part):
        if group.role == role:
            for i, (name, cage) in enumerate(group.port_names()):
                rail = group.rails[i] if group.rails else (len(details) + 1 if role == "compute" else None)
                os_device = group.os_devices[i] if group.os_devices else None
                netdev = group.netdevs[i] if group.netdevs else None
                ethernet_netdev = group.ethernet_netdevs[i] if group.ethernet_netdevs else None
                details.append(
                    PortDetail(
                        name,
                        offset + cage,
                        rail,
                        os_device,
                        netdev,
                        ethernet_netdev,
                        group.pci_device_id,
                        group.technology,
                        tuple(group.plane_netdevs[i]) if group.plane_netdevs else None,
                    )
                )
        offset += group.cages
    if role == "compute":
        details.sort(key=lambda d: d.rail or 0)
    return details


def _groups(part: _HasPorts) -> list[PortGroup]:
    return part.ports if isinstance(part, RackMounted | Nic) else []
