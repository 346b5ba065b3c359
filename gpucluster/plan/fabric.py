"""Folded-Clos (fat-tree) construction, generalised the way the DGX SuperPOD RA builds its fabrics.

Host ports arrive in *leaf groups* (the compute fabric's: one per scalable unit and rail, so the tree is
rail-optimized), each on as many leaves as its oversubscription needs; tiers are then added until one reaches
every child below it. That top tier has the fewest ``T`` switches whose ports suffice and that divide every
child's uplinks evenly (the RA's tables, 16 spines and not 12 for a 3-SU H100 fabric); below it, children are
grouped in blocks of ``radix/2`` (whole scalable units where possible), each block with one switch per child
uplink position, half its ports down and half up, as in a k-ary n-tree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import NamedTuple

from gpucluster.catalog.ports import PortPool, device_ports
from gpucluster.catalog.schema import Switch
from gpucluster.plan.model import Device, Link, NetworkName, Plan, PlanDraft, Tier

TIER_NAMES = ("leaf", "spine", "core", "supercore", "tier5", "tier6")


@dataclass(frozen=True, slots=True)
class HostPort:
    """A host port that must attach to a leaf."""

    device: str
    port: str
    cage: int
    speed_gbps: float
    rail: int | None = None
    purpose: str = "gpu"
    cage_type: str = ""  # the host's cage: what module or cable end it takes


# Host cages that take a single-port 400G module which runs at 200G on one leg of a 1:2 splitter fibre (NVIDIA
# MMA4Z00-NS400 / MMA1Z00-NS400: "200Gb/s mode: Using 2-channels and 1:2 splitter ... fiber cables (MFP7E20)").
# A QSFP56 host (HDR-era, e.g. DDN AI400X2) takes a whole switch port instead, as the RA's 2 x 200G AOC cables it.
SPLITTER_HOST_CAGES = frozenset({"osfp", "qsfp112"})


def splits_onto(host: HostPort, pool: PortPool) -> bool:
    """A host port that runs at half a switch port's speed or less takes one half of a split port (a 1:2 splitter
    fibre, NVIDIA MFP7E20) rather than a whole 400G port on a straight fibre."""
    return bool(pool.halves) and host.speed_gbps * 2 <= pool.speed_gbps and host.cage_type in SPLITTER_HOST_CAGES


@cache  # once per switch model and role: every leaf of a fabric asks it of the same pool
def _cage_splits_whole(pool: PortPool) -> bool:
    """The split halves reuse the whole ports' names (Cumulus: swp1s0-s1 at 2x, swp1s0-s3 at 4x), so a cage is
    broken out one way: all its ports whole, or all split."""
    names = set(pool.names)
    return any(half in names for pair in pool.halves for half in pair)


@dataclass
class _Placer:
    """Hosts placed one by one on a leaf's ports: two consecutive hosts that split share a port's halves; where a
    cage breaks out whole, a cage holds whole ports or halves, never both."""

    pool: PortPool
    whole_cages: bool
    per_cage: int
    port: int = 0  # the next free port
    open_half: int = -1  # a split port whose second half is free
    cage_split: tuple[int, bool] = (-1, False)  # the current cage and whether it is split

    @classmethod
    def on(cls, pool: PortPool) -> _Placer:
        return cls(pool, _cage_splits_whole(pool), pool.cages.count(pool.cages[0]) if pool.cages else 1)

    def place(self, host: HostPort) -> tuple[int, int]:
        """(port index, half: 0 whole, 1 or 2) for the next host."""
        split = splits_onto(host, self.pool)
        if split and self.open_half >= 0:
            placed, self.open_half = (self.open_half, 2), -1
            return placed
        self.open_half = -1
        cage = self.port // self.per_cage
        if self.whole_cages and self.port % self.per_cage and self.cage_split == (cage, not split):
            cage += 1
            self.port = cage * self.per_cage
        self.cage_split = (cage, split)
        placed = (self.port, 1 if split else 0)
        if split:
            self.open_half = self.port
        self.port += 1
        return placed

    def copy(self) -> _Placer:
        return _Placer(self.pool, self.whole_cages, self.per_cage, self.port, self.open_half, self.cage_split)


def _placements(hosts: Sequence[HostPort], pool: PortPool) -> list[tuple[int, int]]:
    """(port index, half) for each host in order: half 0 = the whole port; 1 and 2 = the halves of a split port."""
    if not _any_splits(hosts, pool):  # each host takes the next whole port
        return [(i, 0) for i in range(len(hosts))]
    placer = _Placer.on(pool)
    return [placer.place(host) for host in hosts]


def port_slots(hosts: Sequence[HostPort], pool: PortPool) -> int:
    """Logical switch ports the hosts take (a split port serves two; a cage that breaks out whole may skip ports)."""
    if not _any_splits(hosts, pool):  # each host takes the next whole port
        return len(hosts)
    return max(index for index, _half in _placements(hosts, pool)) + 1


def _any_splits(hosts: Sequence[HostPort], pool: PortPool) -> bool:
    """Whether any of the hosts takes half of a split port (else a placer only counts whole ports, one per host)."""
    return bool(pool.halves) and any(splits_onto(h, pool) for h in hosts)


def _slices(hosts: list[HostPort], leaves: int, pool: PortPool) -> list[list[HostPort]]:
    """The hosts cut into consecutive runs, one per leaf, each taking about the same number of ports."""
    if not _any_splits(hosts, pool):
        per_leaf = math.ceil(len(hosts) / leaves)
        return [hosts[i * per_leaf : (i + 1) * per_leaf] for i in range(leaves)]
    target = math.ceil(port_slots(hosts, pool) / leaves)
    runs: list[list[HostPort]] = [[]]
    placer = _Placer.on(pool)
    for host in hosts:
        trial = placer.copy()
        trial.place(host)
        if runs[-1] and trial.port > target:
            runs.append([])
            trial = _Placer.on(pool)
            trial.place(host)
        placer = trial
        runs[-1].append(host)
    return runs


@dataclass
class LeafGroup:
    """Host ports that share leaves (e.g. one rail of one scalable unit)."""

    label: str  # used in leaf names, e.g. "su01-r1"
    ports: list[HostPort]
    oversubscription: float = 1.0
    su: int | None = None
    rail: int | None = None
    # A service leaf (fabric managers outside the SUs): its few host ports need only a few uplinks, one to each of as
    # many top switches, outside the uniform uplink count the rail leaves spread evenly (two-tier fabrics)
    service: bool = False
    # name its leaves <label>-1, -2 ... even when one leaf serves it (names that stay as the cluster grows)
    numbered: bool = False


def _pool(part: Switch, *roles: str) -> PortPool:
    pools = device_ports(part)
    for role in roles:
        if role in pools:
            return pools[role]
    raise ValueError(f"{part.id} has no {' or '.join(roles)} ports")


def leaf_host_ports(leaf_part: Switch, oversubscription: float = 1.0) -> int:
    """Host ports a leaf takes while keeping its oversubscription: what sizes a rail group (an SN5600's 128 x 400G
    serve 64 hosts, as the Spectrum-X B300 RA groups them; a QM9700's 64 x 400G serve 32)."""
    if leaf_part.port_groups("access"):
        return len(_pool(leaf_part, "access"))
    pool = _pool(leaf_part, "fabric")
    ports = len(pool)
    return max(1, math.floor(ports * oversubscription / (1 + oversubscription)))


@dataclass
class _Child:
    """A leaf or a block of the tier below, seen from above: its ordered uplink ports."""

    uplinks: list[tuple[str, str, int]]  # (device, port, cage)
    su: int | None
    speed_gbps: float
    service: bool = False  # one uplink to each of as many top switches, outside the even spread


@dataclass
class ClosResult:
    tiers: list[Tier] = field(default_factory=list)
    leaves: dict[str, list[str]] = field(default_factory=dict)  # group label -> leaf names
    service_top_switches: int = 0  # top-tier switches added only for service leaves' uplinks (no free port)
    reserved_leaves: int = 0  # leaves of the growth reserve the tiers above have ports for


def build_clos(
    plan: PlanDraft,
    *,
    network: NetworkName,
    groups: Sequence[LeafGroup],
    leaf_part: Switch,
    upper_part: Switch | None = None,
    leaf_uplinks: int | None = None,
    min_top_switches: int = 1,
    plane: int | None = None,
    fewest_upper_switches: bool = False,
    top: Sequence[Device] = (),
    one_switch: bool = True,
    final_units: int | None = None,
    final_groups: Sequence[LeafGroup] = (),
) -> ClosResult:
    """Add the switches and links of one network to the plan and return its tiers.

    ``upper_part`` (default ``leaf_part``) forms the tiers above the leaves. A leaf with separate access and uplink
    ports (SN2201) takes ``leaf_uplinks`` of its uplinks (default all); on other leaves ``leaf_uplinks`` is the
    fewest a leaf takes, so leaves with an odd host count still give the tier above an even number to spread.
    ``plane`` builds one plane of a multi-plane fabric (switches ``<network>-p<plane>-...``).
    ``fewest_upper_switches`` (rack-scale SuperPODs): a leaf takes the uplink count that needs the fewest switches
    above it (29 hosts on 30 uplinks over 10 spines, not 32 over 16), and the tier above takes blocks of radix/2 in
    order across scalable units. ``top``: another network's top switches that take the leaves' uplinks on their
    free ports (the RA's out-of-band uplinks into the in-band core). ``one_switch=False`` keeps each group on
    leaves of its own (a bonded pair's two sides).

    The growth reserve, the RA's way of growing a SuperPOD: ``final_units`` builds the tiers above the leaves for
    that many units, each child's uplinks on ports that do not depend on today's count; ``final_groups`` (the
    groups at the final size, stand-ins for the hosts to come) builds the whole final network and cuts it to
    today's hosts (_keep_built), so every phase is a subset of one plan and a later phase only adds.
    """
    if final_groups:
        first_link, first_device = len(plan.links), len(plan.devices)
        final = build_clos(
            plan,
            network=network,
            groups=final_groups,
            leaf_part=leaf_part,
            upper_part=upper_part,
            leaf_uplinks=leaf_uplinks,
            min_top_switches=min_top_switches,
            plane=plane,
            fewest_upper_switches=fewest_upper_switches,
            top=top,
            one_switch=one_switch,
        )
        return _keep_built(plan, final, first_link, first_device)
    upper_part = upper_part or leaf_part
    prefix = f"{network}-p{plane}" if plane else network

    def name_of(tier_name: str, suffix: str) -> str:
        return f"{prefix}-{tier_name}-{suffix}"

    separate_uplinks = bool(leaf_part.port_groups("access"))
    down_pool = _pool(leaf_part, "access", "fabric")
    up_pool = _pool(leaf_part, "uplink", "fabric") if separate_uplinks else down_pool
    groups = [g for g in groups if g.ports]
    result = ClosResult()
    if not groups:
        return result
    units = sorted({g.su for g in groups if g.su is not None})
    growing = bool(final_units and final_units > len(units))
    growth = _Growth(growing, final_units or 0, units, down_pool)

    # One switch is enough: every host port on a single leaf, no uplinks needed.
    if one_switch and not growing and port_slots([p for g in groups for p in g.ports], down_pool) <= len(down_pool):
        _one_leaf(plan, network, groups, leaf_part, down_pool, name_of("leaf", "01"), plane, result)
        return result

    leaves = _size_leaves(
        groups, down_pool, up_pool, upper_part, separate_uplinks, leaf_uplinks, fewest_upper_switches, growth
    )
    if leaves.uplinks > len(up_pool):
        raise ValueError(f"{leaf_part.id}: {leaves.uplinks} uplinks needed, {len(up_pool)} available")
    up_speed = _uplink_speed(plan, up_pool, upper_part, top)
    pools = (down_pool, up_pool)
    children = _add_leaves(plan, network, groups, leaf_part, leaves, pools, up_speed, name_of, plane, result)
    reserve = _reserved_leaves(growth, groups, leaves.split, leaves.caps, leaves.capacity)
    result.reserved_leaves = reserve
    if top:
        _uplink_to(plan, network, children, list(top), result)
        return result
    above = (min_top_switches, plane, not fewest_upper_switches, reserve)  # top switches, plane, SU-aligned, reserve
    _build_upper_tiers(plan, network, children, upper_part, name_of, result, *above)
    return result


def _uplink_speed(plan: Plan, up_pool: PortPool, upper_part: Switch, top: Sequence[Device]) -> float:
    """A leaf uplink's speed: its port's, or the tier above's where that is slower (another network's top)."""
    if top:
        return min(up_pool.speed_gbps, *(_pool(plan.catalog_part(d.part, Switch), "fabric").speed_gbps for d in top))
    return min(up_pool.speed_gbps, _pool(upper_part, "fabric").speed_gbps)


def _keep_built(plan: Plan, final: ClosResult, first_link: int, first_device: int) -> ClosResult:
    """A network built at its final size (its links from ``first_link``, its switches from ``first_device`` on)
    cut to the hosts the plan has now and, tier by tier, the switches they reach: every port stays where the final
    plan put it; the tiers' figures count what is kept."""
    links = plan.links[first_link:]
    kept: set[str] = set()
    kept_links: list[Link] = []
    for tier in sorted({link.tier for link in links}):  # hosts first, then each tier's uplinks
        for link in links:
            if link.tier == tier and (link.a_device in kept if tier else link.a_device in plan.devices):
                kept.add(link.b_device)
                kept_links.append(link)
    kept_ids = {id(link) for link in kept_links}
    plan.links[first_link:] = [link for link in links if id(link) in kept_ids]
    added = list(plan.devices)[first_device:]
    for name in added:
        if name not in kept:
            del plan.devices[name]
    leaves = {label: [n for n in names if n in kept] for label, names in final.leaves.items()}
    result = ClosResult(
        leaves={label: names for label, names in leaves.items() if names},
        service_top_switches=final.service_top_switches,
        reserved_leaves=sum(len(names) for names in final.leaves.values()) - sum(map(len, leaves.values())),
    )
    for built in final.tiers:
        down = [link for link in kept_links if link.tier == built.tier - 1]
        up = [link for link in kept_links if link.tier == built.tier]
        result.tiers.append(
            replace(
                built,
                switches=sum(1 for name in added if name in kept and plan.devices[name].tier == built.tier),
                down_links=len(down),
                up_links=len(up) if built.up_links else 0,
                down_gbps=sum(link.speed_gbps for link in down),
                up_gbps=built.up_gbps * len(up) / built.up_links if built.up_links else 0.0,
            )
        )
    return result


class _Growth(NamedTuple):
    """A network's growth reserve in whole units: the units it will serve at its final size."""

    growing: bool
    final_units: int
    units: list[int]  # the units (groups' su) served now
    down_pool: PortPool


@dataclass
class _Leaves:
    """How a network's groups split over leaves: host ports per leaf, each leaf's hosts, and the uplink count."""

    capacity: int  # host-facing ports of a leaf
    caps: dict[int, int]  # id(group) -> host ports a leaf of it takes
    slices: dict[int, list[list[HostPort]]]  # id(group) -> each of its leaves' hosts
    split: dict[int, int]  # id(group) -> its leaves
    service: dict[int, bool]  # id(group) -> a service leaf with its own few uplinks
    uplinks: int  # every other leaf's uplinks
    separate_uplinks: bool  # uplink ports of its own (an access switch), else uplinks from its fabric ports


def _reserved_leaves(
    growth: _Growth, groups: list[LeafGroup], split: dict[int, int], caps: dict[int, int], capacity: int
) -> int:
    """The growth reserve's leaves: a unit's leaves (its rails'; a rack-scale fabric's one fabric-manager leaf
    comes once) for each unit still to come."""
    if not growth.growing:
        return 0
    railed = [g for g in groups if g.rail is not None] or groups
    per_unit = max(sum(split[id(g)] for g in railed if g.su == unit) for unit in growth.units)
    return (growth.final_units - len(growth.units)) * per_unit


def _one_leaf(
    plan: PlanDraft,
    network: NetworkName,
    groups: list[LeafGroup],
    leaf_part: Switch,
    down_pool: PortPool,
    name: str,
    plane: int | None,
    result: ClosResult,
) -> None:
    """Every host port on a single leaf: a network of one switch, no uplinks."""
    leaf = _add_switch(plan, name, leaf_part, network, 1, groups[0], plane)
    leaf.su = groups[0].su if len(groups) == 1 else None
    leaf.rail = groups[0].rail if len(groups) == 1 else None
    result.leaves = {g.label: [leaf.name] for g in groups}
    down_gbps = _attach_hosts(plan, network, leaf.name, down_pool, [p for g in groups for p in g.ports], plane)
    total_ports = sum(len(g.ports) for g in groups)
    result.tiers.append(Tier(network, 1, "leaf", leaf_part.id, 1, total_ports, 0, down_gbps, 0.0, plane))


def _size_leaves(
    groups: list[LeafGroup],
    down_pool: PortPool,
    up_pool: PortPool,
    upper_part: Switch,
    separate_uplinks: bool,
    leaf_uplinks: int | None,
    fewest_upper_switches: bool,
    growth: _Growth,
) -> _Leaves:
    """Split each group so every leaf keeps its oversubscription, with one uplink count for all leaves (the tiers
    above need uniform children). A service leaf keeps its own few uplinks where the fabric has two tiers (every
    leaf reaches the top); above that it takes the common count like any leaf."""
    capacity = len(down_pool)
    two_tier = sum(math.ceil(port_slots(g.ports, down_pool) / capacity) for g in groups) <= len(
        _pool(upper_part, "fabric")
    )
    service = {id(g): g.service and two_tier for g in groups}
    rail_groups = [g for g in groups if not service[id(g)]] or groups
    caps = {
        id(g): capacity
        if separate_uplinks
        else max(1, math.floor(capacity * g.oversubscription / (1 + g.oversubscription)))
        for g in groups
    }
    demand = {id(g): port_slots(g.ports, down_pool) for g in groups}
    while True:
        slices = {id(g): _slices(g.ports, math.ceil(demand[id(g)] / caps[id(g)]), down_pool) for g in groups}
        split = {id(g): len(slices[id(g)]) for g in groups}
        used = {id(g): max(port_slots(run, down_pool) for run in slices[id(g)]) for g in groups}
        if separate_uplinks:
            uplinks = leaf_uplinks or len(up_pool)
            break
        uplinks = max(math.ceil(used[id(g)] / g.oversubscription) for g in rail_groups)
        uplinks = max(uplinks, min(leaf_uplinks or 0, capacity - max(used.values())))
        if fewest_upper_switches:
            leaves = sum(split.values()) + _reserved_leaves(growth, groups, split, caps, capacity)
            uplinks = min(
                range(uplinks, max(uplinks, capacity - max(used.values())) + 1),
                key=lambda u: (upper_switch_count(leaves, u, len(_pool(upper_part, "fabric"))), u),
            )
        too_full = [g for g in rail_groups if used[id(g)] + uplinks > capacity]
        if not too_full:
            break
        for g in too_full:
            caps[id(g)] = capacity - uplinks
    return _Leaves(capacity, caps, slices, split, service, uplinks, separate_uplinks)


def _add_leaves(
    plan: PlanDraft,
    network: NetworkName,
    groups: list[LeafGroup],
    leaf_part: Switch,
    leaves: _Leaves,
    pools: tuple[PortPool, PortPool],
    up_speed: float,
    name_of: Callable[[str, str], str],
    plane: int | None,
    result: ClosResult,
) -> list[_Child]:
    """Every group's leaves with their hosts attached (pools: the leaf's host-facing and uplink ports), as children
    of the tier above (their uplink ports in order); the leaf tier goes into the result."""
    down_pool, up_pool = pools
    separate_uplinks = leaves.separate_uplinks
    capacity, uplinks = leaves.capacity, leaves.uplinks
    children: list[_Child] = []
    up_links = 0
    down_links = 0
    down_gbps = 0.0
    for g in groups:
        names = []
        count = leaves.split[id(g)]
        # leaves with uplink ports of their own (out-of-band access switches) fill one after another, so a group
        # that grows keeps its hosts where they are; fabric leaves share the hosts evenly (one uplink count)
        fill = leaves.caps[id(g)] if separate_uplinks and not down_pool.halves else 0
        for i in range(count):
            # the first leaf keeps the group's name when the group grows to several: a phase adds "-2", "-3" ...;
            # a numbered group's leaves are <label>-1, -2 ... from the first
            suffix = f"{g.label}-{i + 1}" if g.numbered or i else g.label
            leaf = _add_switch(plan, name_of("leaf", suffix), leaf_part, network, 1, g, plane)
            names.append(leaf.name)
            hosts = g.ports[i * fill : (i + 1) * fill] if fill else leaves.slices[id(g)][i]
            down_gbps += _attach_hosts(plan, network, leaf.name, down_pool, hosts, plane)
            down_links += len(hosts)
            own = uplinks
            if leaves.service[id(g)] and not separate_uplinks:  # as its hosts need, at least two (one per top switch)
                ports = port_slots(hosts, down_pool)
                own = min(capacity - ports, max(2, math.ceil(ports / g.oversubscription)))
            first_up = 0 if separate_uplinks else len(up_pool) - own
            ups = [(leaf.name, up_pool.names[j], up_pool.cages[j]) for j in range(first_up, first_up + own)]
            children.append(_Child(ups, g.su, up_pool.speed_gbps, leaves.service[id(g)]))
            up_links += own
        result.leaves[g.label] = names
    if len(groups) > 1 and all(g.numbered for g in groups):
        # numbered groups are the sides of leaf pairs (in-band a/b): the tier above takes them pair by pair
        # (a-1, b-1, a-2, b-2 ...), so a pair added as the cluster grows takes the ports after the others
        order = {id(c): (i, k) for k, g in enumerate(groups) for i, c in enumerate(_of_group(children, result, g))}
        children.sort(key=lambda c: order.get(id(c), (len(children), 0)))
    leaf_total = sum(leaves.split.values())
    result.tiers.append(
        Tier(network, 1, "leaf", leaf_part.id, leaf_total, down_links, up_links, down_gbps, up_links * up_speed, plane)
    )
    return children


def _of_group(children: list[_Child], result: ClosResult, group: LeafGroup) -> list[_Child]:
    """A group's leaves as children of the tier above, in order."""
    names = set(result.leaves[group.label])
    return [c for c in children if c.uplinks and c.uplinks[0][0] in names]


def upper_switch_count(leaves: int, uplinks: int, radix: int) -> int:
    """The switches the tiers above ``leaves`` leaves of ``uplinks`` uplinks each need, as _build_upper_tiers
    builds them with blocks taken in order (no scalable unit boundary): what a leaf's uplink count is chosen by."""
    children, per_child, total = leaves, uplinks, 0
    while children > radix:
        size = radix // 2
        blocks = math.ceil(children / size)
        total += blocks * per_child  # one switch per uplink position of each block
        children, per_child = blocks, per_child * min(size, children)
    fitting = [t for t in _divisors(per_child) if children * per_child / t <= radix]
    return total + (fitting[0] if fitting else radix * radix)


def free_ports(plan: Plan, switch: Device) -> list[int]:
    """Indexes into a switch's fabric pool of the ports no link uses yet."""
    pool = _pool(plan.catalog_part(switch.part, Switch), "fabric")
    used = {link.a_port for link in plan.links if link.a_device == switch.name}
    used |= {link.b_port for link in plan.links if link.b_device == switch.name}
    return [i for i, name in enumerate(pool.names) if name not in used]


def _uplink_to(plan: Plan, network: NetworkName, children: list[_Child], top: list[Device], result: ClosResult) -> None:
    """Each child's uplinks spread in turn over existing top switches, on their free ports, as one more tier."""
    free = {switch.name: free_ports(plan, switch) for switch in top}
    pools = {switch.name: _pool(plan.catalog_part(switch.part, Switch), "fabric") for switch in top}
    links = 0
    gbps = 0.0
    for child in children:
        for j, lower in enumerate(child.uplinks):
            switch = top[j % len(top)]
            if not free[switch.name]:
                raise ValueError(f"{switch.name} has no free port for {network} uplinks")
            speed = min(child.speed_gbps, pools[switch.name].speed_gbps)
            # the highest free ports first: where they are does not depend on how many leaves take the low ports
            # (the in-band core's growth reserve keeps the ports after its leaves' free for the leaves to come)
            _uplink(plan, network, 2, lower, switch.name, pools[switch.name], free[switch.name].pop(), speed)
            links += 1
            gbps += speed
    result.tiers.append(Tier(network, 2, TIER_NAMES[1], top[0].part, len(top), links, 0, gbps, 0.0))


def _build_upper_tiers(
    plan: PlanDraft,
    network: NetworkName,
    children: list[_Child],
    part: Switch,
    name_of: Callable[[str, str], str],
    result: ClosResult,
    min_top_switches: int,
    plane: int | None,
    su_aligned: bool = True,
    reserve: int = 0,
) -> None:
    """The tiers above the leaves; `reserve` children more are to come (the growth reserve)."""
    pool = _pool(part, "fabric")
    radix = len(pool)
    tier = 2
    while True:
        tier_name = TIER_NAMES[tier - 1]
        final = len(children) + reserve
        if final <= radix:
            _build_top(
                plan, network, children, part, pool, tier, tier_name, name_of, result, min_top_switches, plane, reserve
            )
            return
        blocks = (
            _blocks(children, radix // 2)
            if su_aligned
            else [children[i : i + radix // 2] for i in range(0, len(children), radix // 2)]
        )
        # a block that will fill up later takes its final uplinks now: half the switch up, as when it is full
        block_size = radix // 2 if reserve else max(len(b) for b in blocks)
        positions = len(children[0].uplinks)
        if any(len(c.uplinks) != positions for c in children):
            raise ValueError("children of a blocked tier need equal uplink counts")
        next_children: list[_Child] = []
        switches = links = 0
        speed = min(children[0].speed_gbps, pool.speed_gbps)
        bw = len(str(len(blocks)))
        pw = len(str(positions))
        for b_index, block in enumerate(blocks, start=1):
            block_uplinks: list[tuple[str, str, int]] = []
            su = block[0].su if all(c.su == block[0].su for c in block) else None
            for j in range(positions):
                suffix = f"{b_index:0{max(2, bw)}d}-{j + 1:0{max(2, pw)}d}"
                switch = _add_switch(plan, name_of(tier_name, suffix), part, network, tier, None, plane)
                switch.pod = b_index
                switch.su = su
                switches += 1
                for c_index, child in enumerate(block):
                    _uplink(plan, network, tier, child.uplinks[j], switch.name, pool, c_index, speed, plane)
                    links += 1
                for k in range(block_size):
                    port_index = radix - block_size + k
                    block_uplinks.append((switch.name, pool.names[port_index], pool.cages[port_index]))
            next_children.append(_Child(block_uplinks, su, pool.speed_gbps))
        ups = switches * block_size
        row = Tier(network, tier, tier_name, part.id, switches, links, ups, links * speed, ups * pool.speed_gbps, plane)
        result.tiers.append(row)
        reserve = max(0, math.ceil(final / (radix // 2)) - len(blocks)) if reserve else 0
        children = next_children
        tier += 1


def _build_top(
    plan: PlanDraft,
    network: NetworkName,
    children: list[_Child],
    part: Switch,
    pool: PortPool,
    tier: int,
    tier_name: str,
    name_of: Callable[[str, str], str],
    result: ClosResult,
    min_top_switches: int,
    plane: int | None,
    reserve: int = 0,
) -> None:
    radix = len(pool)
    spread = [c for c in children if not c.service]
    services = [c for c in children if c.service]
    common = math.gcd(*(len(c.uplinks) for c in spread))
    # the growth reserve's leaves take uplinks like the others: the top tier is sized for them from the start
    total = sum(len(c.uplinks) for c in spread) + reserve * len(spread[-1].uplinks)
    service_total = sum(len(c.uplinks) for c in services)
    widest = max((len(c.uplinks) for c in services), default=0)
    fitting = [t for t in _divisors(common) if total / t + math.ceil(service_total / t) <= radix and t >= widest]
    top = next((t for t in fitting if t >= min_top_switches), fitting[-1] if fitting else 0)
    if not top:
        raise ValueError("cannot build a top tier")
    if services:  # what the rail leaves alone would need: the difference is the service leaves' cost
        alone = [t for t in _divisors(common) if total / t <= radix]
        result.service_top_switches = top - next((t for t in alone if t >= min_top_switches), alone[-1])
    width = max(2, len(str(top)))
    switches = [
        _add_switch(plan, name_of(tier_name, f"{t + 1:0{width}d}"), part, network, tier, None, plane)
        for t in range(top)
    ]
    next_port = [0] * top
    speed = min(children[0].speed_gbps, pool.speed_gbps)
    links = 0
    for child in spread:
        per_switch = len(child.uplinks) // top
        for j, (device, port, cage) in enumerate(child.uplinks):
            t = j // per_switch
            _uplink(plan, network, tier, (device, port, cage), switches[t].name, pool, next_port[t], speed, plane)
            next_port[t] += 1
            links += 1
    if reserve and spread:  # the service leaves take ports after the growth reserve's leaves
        next_port = [p + reserve * (len(spread[-1].uplinks) // top) for p in next_port]
    for child in services:  # each uplink to a different top switch, the least used first
        targets = sorted(range(top), key=lambda t: (next_port[t], t))[: len(child.uplinks)]
        for (device, port, cage), t in zip(child.uplinks, sorted(targets), strict=True):
            _uplink(plan, network, tier, (device, port, cage), switches[t].name, pool, next_port[t], speed, plane)
            next_port[t] += 1
            links += 1
    result.tiers.append(Tier(network, tier, tier_name, part.id, top, links, 0, links * speed, 0.0, plane))


def merge_planes(results: Sequence[ClosResult]) -> list[Tier]:
    """The network-wide tiers of a fabric built plane by plane: each tier's switches, links and bandwidth
    summed over the planes (identical planes keep each tier's oversubscription)."""
    if len(results) == 1:
        return list(results[0].tiers)
    merged: list[Tier] = []
    summed = ("switches", "down_links", "up_links", "down_gbps", "up_gbps")
    for tiers in zip(*(r.tiers for r in results), strict=True):
        first = tiers[0]
        sums = [sum(getattr(t, name) for t in tiers) for name in summed]
        merged.append(Tier(first.network, first.tier, first.name, first.switch_part, *sums))
    return merged


def _uplink(
    plan: Plan,
    network: NetworkName,
    tier: int,
    lower: tuple[str, str, int],
    switch: str,
    pool: PortPool,
    port_index: int,
    speed_gbps: float,
    plane: int | None = None,
) -> None:
    """One link from a lower switch's uplink (device, port, cage) to a port of a switch of `tier`."""
    device, port, cage = lower
    # positional, as _attach_hosts builds its links (no rail, purpose fabric, never a split half)
    plan.links.append(
        Link(network, tier - 1, device, port, switch, pool.names[port_index], speed_gbps, cage, pool.cages[port_index],
             None, "fabric", plane)
    )  # fmt: skip


def _blocks(children: list[_Child], size: int) -> list[list[_Child]]:
    """Group children into blocks of at most `size`, keeping a scalable unit's children together."""
    runs: list[list[_Child]] = []
    for child in children:
        if runs and child.su is not None and runs[-1][0].su == child.su:
            runs[-1].append(child)
        else:
            runs.append([child])
    blocks: list[list[_Child]] = [[]]
    for run in runs:
        if len(run) > size:
            for i in range(0, len(run), size):
                blocks.append(run[i : i + size])
            continue
        if len(blocks[-1]) + len(run) > size:
            blocks.append([])
        blocks[-1].extend(run)
    return [b for b in blocks if b]


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _add_switch(
    plan: PlanDraft,
    name: str,
    part: Switch,
    network: NetworkName,
    tier: int,
    group: LeafGroup | None,
    plane: int | None = None,
) -> Device:
    return plan.add(
        Device(
            name=name,
            part=part.id,
            role="switch",
            u_height=part.u_height,
            network=network,
            tier=tier,
            su=group.su if group else None,
            rail=group.rail if group else None,
            plane=plane,
        )
    )


def _attach_hosts(
    plan: Plan, network: NetworkName, leaf: str, pool: PortPool, hosts: Sequence[HostPort], plane: int | None = None
) -> float:
    """Host ports on a leaf's first ports, in order (two hosts that split a port on its two halves); returns the
    Gb/s they bring down."""
    down_gbps = 0.0
    for host, (index, half) in zip(hosts, _placements(hosts, pool), strict=True):
        port = pool.names[index] if half == 0 else pool.halves[index][half - 1]
        speed = min(host.speed_gbps, pool.speed_gbps if half == 0 else pool.speed_gbps / 2)
        down_gbps += speed
        # positional: Link's fields in order (network, tier, a device and port, b device and port, speed, a and b
        # cage, rail, purpose, plane, b half); keywords cost more over a million links at 131,072 GPUs
        plan.links.append(
            Link(
                network, 0, host.device, host.port, leaf, port, speed, host.cage, pool.cages[index], host.rail,
                host.purpose, plane, half,
            )
        )  # fmt: skip
    return down_gbps
