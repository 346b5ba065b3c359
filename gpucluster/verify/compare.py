"""Compare what discovery found with the plan's links, and name each difference by cable label, rack,
rack unit and port: miswired links (expected and found peer of both ends), two cables crossed (one
finding), missing links, unexpected links, and links up at the wrong width or speed."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gpucluster.catalog.schema import RackMounted
from gpucluster.plan.labels import Locator
from gpucluster.plan.model import Plan
from gpucluster.verify.discovery import Discovery, FoundLink, PortKey
from gpucluster.verify.expected import PlannedEnd, PlannedLink, port_info

KINDS: tuple[str, ...] = ("swapped", "miswired", "missing", "unexpected", "wrong-width", "wrong-speed")
JOIN = " + "  # between the values of the two cables of a swapped pair (as the cable schedule joins them)


@dataclass(frozen=True, slots=True)
class Finding:
    """One difference between the fabric and the plan, located for the installer."""

    kind: str
    network: str
    cable: str  # cable label(s)
    a_rack: str
    a_u: str
    a_device: str
    a_port: str
    a_label: str  # TIA-606 identifier of the port, as printed on the cable
    b_rack: str
    b_u: str
    b_device: str
    b_port: str
    b_label: str
    expected: str
    found: str
    action: str


COLUMNS: tuple[str, ...] = tuple(Finding.__dataclass_fields__)


@dataclass
class NetworkResult:
    """The outcome for one network: how many planned links were checked and what differs."""

    network: str
    source: str
    planned_links: int
    checked_links: int
    findings: list[Finding] = field(default_factory=list)
    unknown_nodes: list[str] = field(default_factory=list)  # discovered names that name nothing in the plan
    # links on halves of split switch ports, checked to the switch but not to its port number (not documented)
    split_unchecked: list[PlannedLink] = field(default_factory=list)
    duplicate_nodes: list[str] = field(default_factory=list)  # descriptions two or more nodes carry


class Names:
    """Every port of every planned link of some networks, by the name discovery gives it (node, port), so
    a found port is recognised even when it belongs to another network's plan (a cable on the wrong fabric)."""

    def __init__(self, plan: Plan, links_by_network: dict[str, list[PlannedLink]]):
        self.plan = plan
        self.locate = Locator(plan)
        self.ends: dict[PortKey, tuple[PlannedLink, PlannedEnd]] = {}
        self.node_device: dict[str, str] = {}
        # (network, host node) -> its planned ports, each with its link
        self.host_ends: dict[tuple[str, str], list[tuple[PlannedLink, PlannedEnd]]] = {}
        for network, links in links_by_network.items():
            for planned in links:
                for end in (planned.a, planned.b):
                    self.node_device[end.node] = end.device
                    if planned.split and end is planned.b:  # a split half's number is a stand-in: never matched
                        continue
                    self.ends[(end.node, end.node_port)] = (planned, end)
                    if not end.switch:
                        self.host_ends.setdefault((network, end.node), []).append((planned, end))
        self._ib_port_names: dict[str, dict[str, str]] = {}

    def node(self, name: str) -> str:
        """A discovered node name as the plan names it: exact, or with a DNS domain dropped from the host
        name (``gpu001.example.com mlx5_0`` -> ``gpu001 mlx5_0``)."""
        if name in self.node_device:
            return name
        host, space, rest = name.partition(" ")
        if "." in host:
            short = host.split(".", 1)[0] + space + rest
            if short in self.node_device:
                return short
        return name

    def port(self, key: PortKey, network: str, lldp: bool) -> PortKey:
        """A found port as the plan names it. LLDP from a host may give the port's hardware name instead of
        its interface name, or an id the plan cannot know (a BMC's): the host's only port on the network."""
        node = self.node(key[0])
        canonical = (node, key[1])
        if canonical in self.ends or not lldp:
            return canonical
        candidates = self.host_ends.get((network, node), [])
        for _planned, end in candidates:
            if key[1] == end.port:
                return (node, end.node_port)
        if len(candidates) == 1:
            return (node, candidates[0][1].node_port)
        return canonical

    def resolve(self, links: list[FoundLink], network: str, lldp: bool) -> list[tuple[PortKey, PortKey, FoundLink]]:
        """Both ends of every found link as the plan names them.

        LLDP from a host whose interface names the catalog does not give cannot tell that host's ports apart.
        Such a neighbour is taken as the planned port when it is the planned host at the switch port the plan
        gives it; else as the host's one planned port on this switch that no other switch port has shown."""
        resolved = []
        pending = []
        for link in links:
            a, b = self.port(link.a, network, lldp), self.port(link.b, network, lldp)
            if lldp and b not in self.ends and a in self.ends:
                planned, end = self.ends[a]
                other = planned.b if end is planned.a else planned.a
                if other.node == b[0] and not other.switch and other.node_port == other.port:
                    b = (other.node, other.node_port)
            if lldp and b not in self.ends and (network, b[0]) in self.host_ends:
                pending.append((a, b, link))
            else:
                resolved.append((a, b, link))
        seen = {key for a, b, _link in resolved for key in (a, b)}
        for a, b, link in pending:
            unseen = [
                end
                for planned, end in self.host_ends[(network, b[0])]
                if end.node_port == end.port
                and a[0] in (planned.a.node, planned.b.node)
                and (end.node, end.node_port) not in seen
            ]
            if len(unseen) == 1:
                b = (unseen[0].node, unseen[0].node_port)
                seen.add(b)
            resolved.append((a, b, link))
        return resolved

    def describe(self, key: PortKey | None) -> str:
        """A found port in the plan's words: 'gpu001 OSFP4P2 (A04 U09)', or what discovery called it."""
        if key is None:
            return "nothing (port dark)"
        planned = self.ends.get(key)
        if planned is not None:
            _link, end = planned
            return f"{end.device} {end.port} ({self._where(end.device)})"
        device = self.node_device.get(key[0])
        if device is not None:
            name = self.port_name(device, key[1])
            return f"{device} {name} ({self._where(device)}; not a planned port)"
        return f'"{key[0]}" port {key[1]} (not in the plan)'

    def _where(self, device: str) -> str:
        d = self.plan.devices[device]
        return f"{d.rack} U{self.locate.unit(d)}"

    def port_name(self, device: str, number: str) -> str:
        """An InfiniBand port number of a planned device by its hardware name; an LLDP port id as it is."""
        names = self._ib_port_names.get(device)
        if names is None:
            names = self._ib_port_names[device] = {}
            part = self.plan.part_as(device, RackMounted)
            for group in part.ports:
                for name, _cage in group.port_names():
                    info = port_info(self.plan, device, name)
                    if info.ib_port:
                        names[str(info.ib_port)] = f"{name} (port {info.ib_port})"
        return names.get(number, f"port {number}")

    def end_columns(self, end: PlannedEnd) -> EndColumns:
        d = self.plan.devices[end.device]
        return d.rack, self.locate.unit(d), end.device, end.port, self.locate.prefix(end.device) + end.port

    def planned_text(self, end: PlannedEnd) -> str:
        return f"{end.device} {end.port} ({self._where(end.device)})"


def _finding(
    names: Names, kind: str, planned: Iterable[PlannedLink], expected: str, found: str, action: str
) -> Finding:
    """A finding of one or two planned cables, each end column's values joined in cable order."""
    links = list(planned)
    a = _joined([names.end_columns(p.a) for p in links])
    b = _joined([names.end_columns(p.b) for p in links])
    return Finding(kind, links[0].network, JOIN.join(p.cable for p in links), *a, *b, expected, found, action)


EndColumns = tuple[str, str, str, str, str]  # rack, U, device, port, TIA-606 label


def _joined(ends: Sequence[EndColumns]) -> EndColumns:
    rack, u, device, port, label = (JOIN.join(values) for values in zip(*ends, strict=True))
    return rack, u, device, port, label


def compare(plan: Plan, network: str, planned: list[PlannedLink], names: Names, found: Discovery) -> NetworkResult:
    """The findings of one network: every planned link checked against the discovered links."""
    lldp = found.kind == "lldp"
    peer: dict[PortKey, tuple[PortKey, FoundLink]] = {}
    resolved = names.resolve(found.links, network, lldp)
    for a, b, link in resolved:
        peer[a] = (b, link)
        peer[b] = (a, link)

    def observable(p: PlannedLink) -> bool:
        return not lldp or p.a.node in found.reporters or p.b.node in found.reporters

    checked = [p for p in planned if observable(p)]
    result = NetworkResult(network, found.source, len(planned), len(checked))
    key_of = {id(p): ((p.a.node, p.a.node_port), (p.b.node, p.b.node_port)) for p in checked}
    wrong: list[PlannedLink] = []
    for p in checked:
        a, b = key_of[id(p)]
        at_a, at_b = peer.get(a), peer.get(b)
        if p.split:
            result.findings += _split_finding(names, p, at_a)
            result.split_unchecked.append(p)
        elif at_a is not None and at_a[0] == b:
            rate = _rate_finding(names, p, at_a[1])
            if rate is not None:
                result.findings.append(rate)
        elif at_a is None and at_b is None:
            result.findings.append(
                _finding(
                    names,
                    "missing",
                    [p],
                    f"{names.planned_text(p.a)} <-> {names.planned_text(p.b)}",
                    "no link at either end",
                    f"plug in cable {p.cable} at both ends; if it is in, check its optics and the cable",
                )
            )
        else:
            wrong.append(p)
    result.findings += _miswired(names, wrong, peer)
    result.findings += _unexpected(names, network, resolved)
    known = set(names.node_device)
    result.unknown_nodes = sorted(n for n in found.nodes if names.node(n) not in known)
    result.duplicate_nodes = sorted(found.duplicates)
    result.findings.sort(key=lambda f: (KINDS.index(f.kind), f.cable, f.a_device, f.a_port))
    return result


def _split_finding(names: Names, p: PlannedLink, at_host: tuple[PortKey, FoundLink] | None) -> list[Finding]:
    """A link on a split switch port's half, checked as far as the documents allow: its host port is up and
    reaches the planned switch (at a port number nobody documents, so any port of it)."""
    if at_host is None:
        return [
            _finding(
                names,
                "missing",
                [p],
                f"{names.planned_text(p.a)} <-> {names.planned_text(p.b)}",
                "no link at the host end",
                f"plug in splitter leg {p.cable} at {p.a.device} {p.a.port} and its other end into {p.b.device} "
                f"{p.b.port.rsplit('/', 1)[0]} (a port split in two); if it is in, check the optics and the split",
            )
        ]
    far, link = at_host
    if far[0] != p.b.node:
        return [
            _finding(
                names,
                "miswired",
                [p],
                f"A {names.planned_text(p.a)} -> {names.planned_text(p.b)}",
                f"A -> {names.describe(far)}",
                f"trace cable {p.cable} and plug its switch end into {p.b.device} {p.b.port.rsplit('/', 1)[0]}",
            )
        ]
    rate = _rate_finding(names, p, link)
    return [rate] if rate is not None else []


def _rate_finding(names: Names, p: PlannedLink, link: FoundLink) -> Finding | None:
    """A link up between the right ports, but at another width or speed than planned."""
    where = f"{names.planned_text(p.a)} <-> {names.planned_text(p.b)}"
    action = f"reseat cable {p.cable}; if it stays degraded, replace the cable and its optics"
    if p.width and link.width:
        if link.width != p.width:
            return _finding(names, "wrong-width", [p], f"{p.rate} {where}", f"{link.width}x{link.lane}", action)
        if link.lane and link.lane != p.lane:
            return _finding(names, "wrong-speed", [p], f"{p.rate} {where}", f"{link.width}x{link.lane}", action)
    elif not p.width and link.speed_gbps and abs(link.speed_gbps - p.speed_gbps) > 1e-9:
        return _finding(
            names, "wrong-speed", [p], f"{p.speed_gbps:g} Gb/s {where}", f"{link.speed_gbps:g} Gb/s", action
        )
    return None


def _miswired(names: Names, wrong: list[PlannedLink], peer: dict[PortKey, tuple[PortKey, FoundLink]]) -> list[Finding]:
    """Planned links whose ends are plugged elsewhere; two cables crossed with each other are one finding."""
    ends = {}
    for p in wrong:
        ends[(p.a.node, p.a.node_port)] = (p, "a")
        ends[(p.b.node, p.b.node_port)] = (p, "b")

    def found_peer(end: PlannedEnd) -> PortKey | None:
        entry = peer.get((end.node, end.node_port))
        return entry[0] if entry else None

    findings: list[Finding] = []
    done: set[int] = set()
    for p in wrong:
        if p.link in done:
            continue
        pa, pb = found_peer(p.a), found_peer(p.b)
        partner = ends.get(pa) if pa is not None else None
        if partner is not None and partner[0].link != p.link and partner[1] == "b":
            q = partner[0]
            if found_peer(q.a) == (p.b.node, p.b.node_port):  # a1-b2 and a2-b1: crossed
                done.update((p.link, q.link))
                first, second = sorted((p, q), key=lambda x: x.cable)
                findings.append(
                    _finding(
                        names,
                        "swapped",
                        [first, second],
                        f"{first.cable}: {names.planned_text(first.a)} <-> {names.planned_text(first.b)}; "
                        f"{second.cable}: {names.planned_text(second.a)} <-> {names.planned_text(second.b)}",
                        f"{names.planned_text(first.a)} <-> {names.planned_text(second.b)}; "
                        f"{names.planned_text(second.a)} <-> {names.planned_text(first.b)}",
                        f"swap the plugs of {first.cable} and {second.cable} at one end: at {first.b.device} "
                        f"{first.b.port} and {second.b.device} {second.b.port}",
                    )
                )
                continue
        done.add(p.link)
        findings.append(
            _finding(
                names,
                "miswired",
                [p],
                f"A {names.planned_text(p.a)} -> {names.planned_text(p.b)}; "
                f"B {names.planned_text(p.b)} -> {names.planned_text(p.a)}",
                f"A -> {names.describe(pa)}; B -> {names.describe(pb)}",
                f"trace cable {p.cable} and plug its ends into {p.a.device} {p.a.port} and {p.b.device} {p.b.port}",
            )
        )
    return findings


def _unexpected(names: Names, network: str, resolved: list[tuple[PortKey, PortKey, FoundLink]]) -> list[Finding]:
    """Found links with neither end a planned port: a cable the plan does not have."""
    findings = []
    seen: set[tuple[PortKey, PortKey]] = set()
    for a, b, _link in resolved:
        if a in names.ends or b in names.ends or (a, b) in seen or (b, a) in seen:
            continue
        seen.add((a, b))
        columns: list[EndColumns] = []
        for key in (a, b):
            device = names.node_device.get(key[0])
            if device is not None:
                d = names.plan.devices[device]
                unit = names.locate.unit(d)
                columns.append((d.rack, unit, device, names.port_name(device, key[1]), ""))
            else:
                columns.append(("", "", key[0], key[1], ""))
        found = f"{names.describe(a)} <-> {names.describe(b)}"
        action = "remove this cable, or add the link to the design"
        findings.append(Finding("unexpected", network, "", *columns[0], *columns[1], "no link", found, action))
    return findings
