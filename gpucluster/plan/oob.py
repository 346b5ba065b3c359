"""The out-of-band management network: every BMC, switch and appliance management port and PDU on 1G
access switches per cluster of racks, two uplinks each into the in-band network's top tier as the H100 RA cables
them ("two uplinks per OOB to in-band", Table 8), or to aggregation switches of its own where that tier lacks the
ports. The central racks' ports take the SUs' access switches' free ports first, so that, as in the RA's 4-SU BOM
(8 SN2201 for 4 SUs and the management racks), a central switch is added only for what is left.

Its size depends on the PDUs (each has a network port), they on each rack's load, and that on the access
switches in the rack: their rack space is reserved first, grown until it covers every port. With a growth
reserve the tier above them is planned for the final SUs (beside the core ports the in-band leaves to come
keep), so a phase adds access switches and their uplinks and re-cables no core port.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from gpucluster.catalog.load import Catalog
from gpucluster.catalog.ports import device_ports
from gpucluster.catalog.schema import Cable as CablePart
from gpucluster.catalog.schema import Pdu, Switch
from gpucluster.plan.cables import run_length_m
from gpucluster.plan.fabric import ClosResult, HostPort, LeafGroup, build_clos, free_ports
from gpucluster.plan.model import Device, Plan, PlanDraft
from gpucluster.plan.networks import Resolved
from gpucluster.plan.racks import Cluster, RackPlanner, _Rack, floor_order

PDU_NETWORK_PORT = "net"  # a rack PDU's one network port (the catalog lists no ports for PDUs)


def oob_ports(plan: Plan, catalog: Catalog, devices: list[Device]) -> list[HostPort]:
    """The out-of-band port of each device: BMCs, switch and appliance management ports, PDU network ports."""
    ports = []
    for device in devices:
        if device.role == "pdu":
            ports.append(HostPort(device.name, PDU_NETWORK_PORT, 0, 1.0, purpose="management"))
            continue
        pools = device_ports(catalog.parts[device.part])
        for role, purpose in (("bmc", "bmc"), ("mgmt", "management")):
            if (pool := pools.get(role)) is not None:
                ports += [HostPort(device.name, name, 0, pool.speed_gbps, purpose=purpose) for name in pool.names]
    return ports


def oob_port_count(catalog: Catalog, devices: list[Device]) -> int:
    """How many out-of-band ports oob_ports gives these devices, counted per part without making them (the access
    switches' reservation counts each cluster's ports again each time it grows)."""
    per_part: dict[str, int] = {}
    count = 0
    for device in devices:
        if device.role == "pdu":
            count += 1
            continue
        ports = per_part.get(device.part)
        if ports is None:
            pools = device_ports(catalog.parts[device.part])
            ports = per_part[device.part] = sum(len(pools[role].names) for role in ("bmc", "mgmt") if role in pools)
        count += ports
    return count


OOB_UPLINKS = 2  # per access switch: H100 RA Table 8, "two uplinks per OOB to in-band"


def _build(plan: PlanDraft, r: Resolved, groups: list[LeafGroup], top: list[Device] | None = None) -> ClosResult:
    """1G out-of-band access switches, two uplinks each to the in-band top tier (``top``) or the aggregation pair
    (sized for the growth reserve's final SUs)."""
    return build_clos(
        plan,
        network="oob",
        groups=groups,
        leaf_part=r.oob_switch,
        upper_part=r.oob_aggregation_switch,
        leaf_uplinks=OOB_UPLINKS,
        min_top_switches=2,
        top=top or (),
        final_units=r.final_scalable_units or None,
        # blocks of half an aggregation switch's ports taken in order, not per SU: the tiers above then grow with
        # the access switch count alone, so the reservation's dry run (on full access switches) never makes fewer
        # than the real network (SU-aligned blocks of 31 made a top tier of 31 switches where 32 made 4)
        fewest_upper_switches=True,
    )


def access_switches_to_come(r: Resolved, per_unit: list[int]) -> int:
    """The access switches the scalable units still to come will add (the growth reserve): each as many as the
    fullest unit's today."""
    return max(0, (r.final_scalable_units or 0) - r.scalable_units) * max(per_unit, default=0)


def oob_floor_order(planner: RackPlanner, r: Resolved) -> list[str]:
    """The clusters in floor order as the final hall has them (the central racks in its middle), so that the
    access switches take the same core ports in every phase."""
    return [name for name in floor_order(planner, r.final_scalable_units) if name in planner.clusters]


def inband_top(plan: Plan, r: Resolved, access_switches: int, inband_reserved_uplinks: int = 0) -> list[Device]:
    """The in-band top-tier switches when they can take every out-of-band access switch's uplinks on free ports at
    the uplinks' own speed (SN4600C cores take the SN2201's 100G uplinks, as in the RA), else none (aggregation
    switches then do). ``access_switches`` counts the final SUs'; ``inband_reserved_uplinks`` stay free."""
    switches = plan.switches("inband")
    tier = max((d.tier or 0 for d in switches), default=0)
    top = sorted((d for d in switches if d.tier == tier), key=lambda d: d.name) if tier > 1 else []
    if len(top) < 2 or access_switches <= 1:
        return []
    uplink_gbps = max((g.speed_gbps for g in r.oob_switch.port_groups("uplink")), default=0.0)
    if any(device_ports(plan.catalog_parts[d.part])["fabric"].speed_gbps != uplink_gbps for d in top):
        return []
    need = math.ceil(access_switches * OOB_UPLINKS / len(top)) + math.ceil(inband_reserved_uplinks / len(top))
    radix = len(device_ports(plan.catalog_parts[top[0].part])["fabric"])
    taken = sum(t.down_links for t in plan.tiers if t.network == "inband" and t.tier == tier)
    if radix - math.ceil(taken / len(top)) < need:  # cheap first: the tier's links, without a pass over every link
        return []
    return top if all(len(free_ports(plan, d)) >= need for d in top) else []


def reserve_oob_switches(
    plan: Plan,
    planner: RackPlanner,
    r: Resolved,
    count_pdus: Callable[[float, list[Device], bool], tuple[Pdu, int]],
    in_rack: dict[str, list[Device]] | None = None,
    inband_reserved_uplinks: int = 0,
) -> dict[str, list[Device]]:
    """Reserve rack space for the out-of-band switches each cluster needs, grown until it covers every port (the
    PDUs the switches' own load adds have ports too). ``in_rack``: NVLink domain -> the slots of a rack-scale
    system's own access switches, which serve its rack alone."""
    access_ports = _access_ports(r)
    reserved: dict[str, list[Device]] = dict(in_rack or {})
    catalog = planner.catalog

    def ports(cluster: Cluster) -> int:
        racks = [rack for rack in cluster.racks if not rack.system]
        devices = [d for rack in racks for d in rack.devices if not d.name.startswith("~")]
        pdus = sum(count_pdus(rack.power_max_w, rack.devices, rack.purpose == "compute")[1] for rack in racks)
        return oob_port_count(catalog, devices) + pdus

    def needed(cluster: Cluster) -> int:
        return math.ceil(ports(cluster) / access_ports)

    def reserve(cluster: Cluster, part_id: str, purpose: str, count: int, key: str) -> None:
        slots = reserved.setdefault(key, [])
        while len(slots) < count:
            height = planner.catalog.get(part_id, Switch).u_height
            slot = Device(f"~{key}-{len(slots)}", part_id, "switch", u_height=height)
            planner.place(cluster, purpose, slot)
            slots.append(slot)

    central = planner.cluster("central")
    reserve(central, r.oob_switch.id, "management", 1, "central")
    if not in_rack and sum(ports(c) for c in planner.clusters.values()) <= access_ports:
        return reserved  # a small cluster: one access switch, in the central racks, serves every port
    order = oob_floor_order(planner, r)
    clusters = [planner.clusters[name] for name in order if name != "central"]
    for cluster in clusters:
        while (count := needed(cluster)) > len(reserved.get(cluster.name, [])):
            reserve(cluster, r.oob_switch.id, "network", count, cluster.name)
    while True:  # the central racks' own switches are reserved; build_oob_network drops those it does not need
        count = needed(central)
        reserve(central, r.oob_switch.id, "management", count, "central")
        leaves = [
            (planner.clusters[name].su, count if name == "central" else len(reserved.get(name, []))) for name in order
        ]
        systems = _system_racks(planner, order)
        leaves += [(rack.su, len(reserved[domain])) for rack in systems if (domain := rack.nvlink_domain)]
        access = sum(n for _su, n in leaves)
        access += access_switches_to_come(r, [n for su, n in leaves if su is not None])
        upper = 0 if inband_top(plan, r, access, inband_reserved_uplinks) else _oob_upper_switches(r, leaves)
        reserve(central, r.oob_aggregation_switch.id, "management", upper, "aggregation")
        if needed(central) <= len(reserved["central"]):
            return reserved


def _system_racks(planner: RackPlanner, order: list[str]) -> list[_Rack]:
    """The racks of rack-scale systems, in floor order (each has its own out-of-band access switches)."""
    return [rack for name in order for rack in planner.clusters[name].racks if rack.system and rack.nvlink_domain]


def _oob_upper_switches(r: Resolved, leaves: list[tuple[int | None, int]]) -> int:
    """How many aggregation switches an out-of-band network needs, given (SU, access switches) per
    cluster in floor order: a dry run of the same construction on full access switches."""
    if sum(n for _su, n in leaves) <= 1:
        return 0
    scratch = PlanDraft.scratch("scratch")
    access = _access_ports(r)
    groups = [
        LeafGroup(f"g{i}", [HostPort(f"h{i}-{j}", "p", 0, 1.0) for j in range(access * n)], su=su)
        for i, (su, n) in enumerate(leaves)
        if n
    ]
    return sum(t.switches for t in _build(scratch, r, groups).tiers if t.tier > 1)


def build_oob_network(
    plan: PlanDraft,
    planner: RackPlanner,
    r: Resolved,
    reserved: dict[str, list[Device]],
    inband_reserved_uplinks: int = 0,
) -> None:
    """Connect every BMC, management port and PDU to its cluster's access switches, then put the real
    switches into the reserved slots."""
    order = oob_floor_order(planner, r)
    groups = []
    for name in order:
        cluster = planner.clusters[name]
        devices = [d for rack in cluster.racks if not rack.system for d in rack.devices if not d.name.startswith("~")]
        rack_names = {d.rack for d in devices}
        devices += [plan.devices[p] for rack in sorted(rack_names) for p in plan.racks[rack].pdus]
        # with a growth reserve, the clusters that are not an SU's own (the central racks, a pod's spine racks) take
        # core ports after those kept for the SUs to come, so that no SU's access switch takes a port of theirs
        service = bool(plan.design.compute_fabric.final_scalable_units) and name != f"su{cluster.su or 0:02d}"
        ports = oob_ports(plan, planner.catalog, devices)
        groups.append(LeafGroup(name, ports, su=None if service else cluster.su, service=service))
    if not r.final_scalable_units:  # with a growth reserve the SUs' free access ports fill as the SUs grow
        _spill_central(plan, planner.catalog, groups, reserved, _access_ports(r))
    systems = _system_racks(planner, order)
    for rack in systems:
        devices = [d for d in rack.devices if not d.name.startswith("~")]
        groups.append(LeafGroup(str(rack.nvlink_domain), oob_ports(plan, planner.catalog, devices), su=rack.su))
    per_switch = _access_ports(r)
    per_unit = [math.ceil(len(g.ports) / per_switch) for g in groups if g.su is not None and g.ports]
    access = _access_switches(groups, r) + access_switches_to_come(r, per_unit)
    result = _build(plan, r, groups, inband_top(plan, r, access, inband_reserved_uplinks))
    plan.tiers += result.tiers
    if sum(t.switches for t in result.tiers) == 1:  # one access switch serves every port
        order = ["central"]
    placed: set[str] = set()
    for name in order:
        leaves = [plan.devices[n] for n in result.leaves.get(name, []) if n not in placed]
        placed.update(d.name for d in leaves)
        _fill(plan, reserved.get(name, []), leaves)
    for rack in systems:
        _fill(
            plan, reserved[str(rack.nvlink_domain)], [plan.devices[n] for n in result.leaves[str(rack.nvlink_domain)]]
        )
    _fill(plan, reserved.get("aggregation", []), [d for d in plan.switches("oob") if (d.tier or 0) > 1])


def _access_switches(groups: list[LeafGroup], r: Resolved) -> int:
    """How many access switches build_clos makes of these groups (one when a single switch takes every port)."""
    per_switch = _access_ports(r)
    total = sum(len(g.ports) for g in groups)
    return 1 if total <= per_switch else sum(math.ceil(len(g.ports) / per_switch) for g in groups if g.ports)


def _access_ports(r: Resolved) -> int:
    return sum(g.port_count for g in r.oob_switch.port_groups("access"))


def _spill_central(
    plan: Plan, catalog: Catalog, groups: list[LeafGroup], reserved: dict[str, list[Device]], per_switch: int
) -> None:
    """Move the central racks' ports onto the free access ports of the scalable units' switches, each to the
    nearest switch with room whose copper cord reaches; the central group keeps what does not fit (its reserved
    switches that end up unused are dropped)."""
    central = next((g for g in groups if g.label == "central"), None)
    if central is None or not central.ports:
        return
    reach_m = max((c.reach_m for c in catalog.of_kind(CablePart) if c.media == "cat6"), default=0.0)
    routing = plan.design.site.cabling
    room = {
        id(g): len(reserved.get(g.label, [])) * per_switch - len(g.ports)
        for g in groups
        if g is not central and reserved.get(g.label)
    }
    targets = [g for g in groups if room.get(id(g), 0) > 0]
    target_racks = [plan.racks[reserved[g.label][0].rack] for g in targets]
    nearest: dict[str, list[int]] = {}  # central rack -> targets, nearest first
    kept: list[HostPort] = []
    for port in central.ports:
        device = plan.devices[port.device]
        order = nearest.get(device.rack)
        if order is None:
            rack = plan.racks[device.rack]
            order = nearest[device.rack] = sorted(
                range(len(targets)),
                key=lambda i: abs(target_racks[i].x_mm - rack.x_mm) + abs(target_racks[i].y_mm - rack.y_mm),
            )
        group = next((targets[i] for i in order if room[id(targets[i])] > 0), None)
        if group is None or run_length_m(plan, device, reserved[group.label][0], routing) > reach_m:
            kept.append(port)
            continue
        group.ports.append(port)
        room[id(group)] -= 1
    central.ports[:] = kept


def _fill(plan: Plan, slots: list[Device], devices: list[Device]) -> None:
    """Put the real out-of-band switches where their reservations stand; drop unused reservations."""
    if len(devices) > len(slots):
        raise AssertionError(f"{len(devices)} out-of-band switches for {len(slots)} reserved slots")
    for slot, device in zip(slots, devices, strict=False):
        device.rack, device.u_position = slot.rack, slot.u_position
        rack = plan.racks[slot.rack]
        rack.devices[rack.devices.index(slot.name)] = device.name
    for slot in slots[len(devices) :]:
        plan.racks[slot.rack].devices.remove(slot.name)
