"""The out-of-band management network: every BMC, switch and appliance management port and PDU on 1G
access switches per cluster of racks, two uplinks each to the aggregation switches.

Its size depends on the PDUs (each has a network port), the PDUs on each rack's load, and that load
on the access switches standing in the rack: rack space for the switches is reserved first, growing
until it covers every port, and the real switches take the reserved slots once the network is built.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from gpucluster.catalog.load import Catalog
from gpucluster.catalog.ports import device_ports
from gpucluster.catalog.schema import Pdu, Switch
from gpucluster.plan.fabric import ClosResult, HostPort, LeafGroup, build_clos
from gpucluster.plan.model import Device, Plan
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
        for role in ("bmc", "mgmt"):
            if role in pools:
                ports.extend(
                    HostPort(
                        device.name, name, 0, pools[role].speed_gbps, purpose="bmc" if role == "bmc" else "management"
                    )
                    for name in pools[role].names
                )
    return ports


def _build(plan: Plan, r: Resolved, groups: list[LeafGroup]) -> ClosResult:
    """1G out-of-band access switches, two uplinks each to the aggregation pair."""
    return build_clos(
        plan,
        network="oob",
        groups=groups,
        leaf_part=r.oob_switch,
        upper_part=r.oob_aggregation_switch,
        leaf_uplinks=2,
        min_top_switches=2,
    )


def reserve_oob_switches(
    plan: Plan,
    planner: RackPlanner,
    r: Resolved,
    count_pdus: Callable[[float, list[Device], bool], tuple[Pdu, int]],
    in_rack: dict[str, list[Device]] | None = None,
) -> dict[str, list[Device]]:
    """Reserve rack space for the out-of-band switches each cluster needs.

    Their number depends on the PDUs (each has a network port), and the PDUs on the rack load,
    which the switches add to: grow the reservation until it covers every port. A rack-scale system
    brings its own access switches (``in_rack``: NVLink domain -> the slots of its in-rack switches),
    which serve its rack alone.
    """
    access_ports = sum(g.port_count for g in r.oob_switch.port_groups("access"))
    reserved: dict[str, list[Device]] = dict(in_rack or {})
    catalog = planner.catalog

    def ports(cluster: Cluster) -> int:
        racks = [rack for rack in cluster.racks if not rack.system]
        devices = [d for rack in racks for d in rack.devices if not d.name.startswith("~")]
        pdus = sum(count_pdus(rack.power_max_w, rack.devices, rack.purpose == "compute")[1] for rack in racks)
        return len(oob_ports(plan, catalog, devices)) + pdus

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
    clusters = [planner.clusters[name] for name in floor_order(planner) if name != "central"]
    for cluster in clusters:
        while (count := needed(cluster)) > len(reserved.get(cluster.name, [])):
            reserve(cluster, r.oob_switch.id, "network", count, cluster.name)
    order = floor_order(planner)
    while True:
        count = needed(central)
        reserve(central, r.oob_switch.id, "management", count, "central")
        leaves = [(planner.clusters[name].su, len(reserved.get(name, []))) for name in order]
        systems = _system_racks(planner, order)
        leaves += [(rack.su, len(reserved[domain])) for rack in systems if (domain := rack.nvlink_domain)]
        upper = _oob_upper_switches(r, leaves)
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
    scratch = Plan.scratch("scratch")
    access = sum(g.port_count for g in r.oob_switch.port_groups("access"))
    groups = [
        LeafGroup(f"g{i}", [HostPort(f"h{i}-{j}", "p", 0, 1.0) for j in range(access * n)], su=su)
        for i, (su, n) in enumerate(leaves)
        if n
    ]
    return sum(t.switches for t in _build(scratch, r, groups).tiers if t.tier > 1)


def build_oob_network(
    plan: Plan, planner: RackPlanner, r: Resolved, order: list[str], reserved: dict[str, list[Device]]
) -> None:
    """Connect every BMC, management port and PDU to its cluster's access switches, then put the real
    switches into the reserved slots."""
    groups = []
    for name in order:
        cluster = planner.clusters[name]
        devices = [d for rack in cluster.racks if not rack.system for d in rack.devices if not d.name.startswith("~")]
        rack_names = {d.rack for d in devices}
        devices += [plan.devices[p] for rack in sorted(rack_names) for p in plan.racks[rack].pdus]
        groups.append(LeafGroup(name, oob_ports(plan, planner.catalog, devices), su=cluster.su))
    systems = _system_racks(planner, order)
    for rack in systems:
        devices = [d for d in rack.devices if not d.name.startswith("~")]
        groups.append(LeafGroup(str(rack.nvlink_domain), oob_ports(plan, planner.catalog, devices), su=rack.su))
    result = _build(plan, r, groups)
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
