"""The planner: a validated design becomes the physical plan (devices, racks, links, cables, graphs)."""

from __future__ import annotations

import math
from collections.abc import Callable

from gpucluster.catalog.schema import Rack
from gpucluster.design.load import LoadedDesign
from gpucluster.errors import DesignError, Problem
from gpucluster.plan.analysis import analyse, build_graphs
from gpucluster.plan.cables import NoCableFits, add_cables
from gpucluster.plan.fabric import HostPort, LeafGroup, build_clos
from gpucluster.plan.model import Device, Finding, Plan
from gpucluster.plan.networks import (
    Resolved,
    add_appliances,
    add_gpu_servers,
    build_compute_fabric,
    build_inband,
    build_oob,
    build_storage_network,
    oob_ports,
)
from gpucluster.plan.power import choose_pdu, pdus_needed
from gpucluster.plan.racks import Cluster, RackPlanner, add_pdus, rack_inlets, servers_per_rack
from gpucluster.plan.resolve import resolve
from gpucluster.plan.totals import totals
from gpucluster.rules import RULE_PREFIX, check_rules, rule_facts

__all__ = ["Plan", "plan_design"]

Progress = Callable[[str], None]


def plan_design(loaded: LoadedDesign, progress: Progress | None = None) -> Plan:
    """Build the whole physical plan of a loaded design."""
    say = progress or (lambda _message: None)
    design, catalog = loaded.design, loaded.catalog
    r = resolve(loaded)
    plan = Plan(name=design.name, design=design, catalog_parts=catalog.parts)
    plan.settings.update(_settings(r))
    site = design.site
    feed = site.power_feed
    pdu = choose_pdu(catalog, feed, site.pdu)
    if pdu is None:
        raise DesignError(
            [
                Problem(
                    *loaded.where("site", "power_feed"),
                    "site.power_feed",
                    f"no PDU in the catalog takes a {feed.voltage_v:g} V {feed.phases}-phase {feed.breaker_a:g} A "
                    "feed; name one with site.pdu or add one in a catalog file",
                )
            ]
        )
    plan.settings["pdu"] = pdu.id

    say("servers and appliances")
    add_gpu_servers(plan, r, design.compute.hostname_prefix)
    add_appliances(plan, r)
    plan.findings += _scalable_unit_warnings(plan, r)
    say("compute fabric")
    plan.tiers += build_compute_fabric(plan, r, catalog).tiers
    say("storage network")
    plan.tiers += build_storage_network(plan, r, catalog).tiers
    say("in-band management network")
    plan.tiers += build_inband(plan, r, catalog).tiers

    say("racks")
    rack_part = catalog.get(site.rack, Rack)
    planner = RackPlanner(catalog, site, rack_part)
    per_rack = servers_per_rack(
        r.server.u_height, r.server.power_max_w, planner.height_u, planner.budget_w, r.su_servers
    )
    if per_rack == 0:
        raise DesignError(
            [
                Problem(
                    *loaded.where("site", "rack_power_budget_kw"),
                    "site.rack_power_budget_kw",
                    f"one {r.server.model} ({r.server.power_max_w / 1000:.1f} kW, {r.server.u_height:g}U) does not "
                    f"fit a {planner.height_u}U rack with a {site.rack_power_budget_kw:g} kW budget",
                )
            ]
        )
    plan.settings["servers_per_rack"] = per_rack
    try:
        _pack(plan, planner, per_rack)
    except ValueError as exc:
        raise DesignError([Problem(*loaded.where("site"), "site", str(exc))]) from None

    def count_pdus(load_w: float, inlets: dict[str, int]) -> int:
        return pdus_needed(load_w, inlets, pdu, feed)

    say("out-of-band management network")
    placeholders = _reserve_oob(plan, planner, r, count_pdus)
    order = _floor_order(planner)
    planner.layout(plan, order)
    slots = {slot.name: slot for reserved in placeholders.values() for slot in reserved}
    add_pdus(plan, catalog, pdu, count_pdus, two_feeds=feed.redundancy == "2N", reserved=slots)
    _build_oob(plan, planner, r, order, placeholders)

    say("cables")
    try:
        add_cables(plan, catalog, site.cabling)
    except NoCableFits as exc:
        raise DesignError([Problem(*loaded.where("site"), "site", str(exc))]) from None
    say("graph analyses")
    plan.graphs = build_graphs(plan)
    plan.analysis = analyse(plan)
    plan.totals = totals(plan)
    refresh_findings(plan)
    return plan


def refresh_findings(plan: Plan) -> None:
    """Recompute the rule facts and the design-rule findings (after a later stage adds facts, e.g. a
    burn-in plan or checkpoint figures, to plan.settings)."""
    plan.facts = rule_facts(plan)
    plan.findings = [f for f in plan.findings if not f.rule.startswith(RULE_PREFIX)] + [
        Finding(RULE_PREFIX + f.rule, f.severity, f.message, f.subject) for f in check_rules(plan.facts)
    ]


def _scalable_unit_warnings(plan: Plan, r: Resolved) -> list[Finding]:
    """A nearly empty last scalable unit still needs a leaf per rail: say what it costs."""
    per_su: dict[int, int] = {}
    for server in plan.devices_with("gpu-server"):
        per_su[server.su or 1] = per_su.get(server.su or 1, 0) + 1
    last = max(per_su)
    if last > 1 and per_su[last] * 2 < r.su_servers:
        return [
            Finding(
                "planning",
                "warning",
                f"scalable unit {last} holds {per_su[last]} of {r.su_servers} servers but needs its own "
                f"{r.rails} leaves; {sum(per_su.values()) - per_su[last]} servers fill {last - 1} units exactly",
                f"su{last:02d}",
            )
        ]
    return []


def _settings(r: Resolved) -> dict[str, object]:
    return {
        "server": r.server.id,
        "gpus_per_server": r.server.gpu.count,
        "gpu_model": r.server.gpu.model,
        "production_servers": r.production_servers,
        "spare_servers": r.spare_servers,
        "scalable_unit_servers": r.su_servers,
        "rails": r.rails,
        "compute_technology": "ethernet" if r.compute_technology == "roce" else r.compute_technology,
        "compute_fabric": r.compute_technology,
        "compute_switch": r.compute_switch.id,
        "compute_oversubscription": r.compute_oversubscription,
        "fabric_manager": r.fabric_manager.id if r.fabric_manager else None,
        "fabric_managers": r.fabric_managers,
        "storage_technology": r.storage_switch.technology,
        "storage_switch": r.storage_switch.id,
        "parallel_filesystem_block": r.pfs_block.id,
        "parallel_filesystem_blocks": r.pfs_blocks,
        "parallel_filesystem_read_gbytes_per_s": r.pfs_read_gbytes_per_s,
        "parallel_filesystem_write_gbytes_per_s": r.pfs_write_gbytes_per_s,
        "parallel_filesystem_capacity_tb": r.pfs_capacity_tb,
        "object_storage_block": r.object_block.id if r.object_block else None,
        "object_storage_blocks": r.object_blocks,
        "inband_technology": "ethernet",
        "inband_switch": r.inband_switch.id,
        "inband_oversubscription": r.inband_oversubscription,
        "oob_technology": "ethernet",
        "oob_switch": r.oob_switch.id,
        "oob_aggregation_switch": r.oob_aggregation_switch.id,
    }


def _pack(plan: Plan, planner: RackPlanner, per_rack: int) -> None:
    """Servers into compute racks by SU; each SU's leaves into its network rack; the spines of a pod
    (a block of SUs under a higher tier) beside that pod's SUs; the top tiers and services central."""
    central = planner.cluster("central")
    pod_sus: dict[str, set[int]] = {}
    for link in plan.links:
        if link.tier == 1:
            leaf = plan.devices[link.a_device]
            if leaf.su is not None:
                pod_sus.setdefault(link.b_device, set()).add(leaf.su)
    by_su: dict[int, list[Device]] = {}
    for device in plan.devices_with("gpu-server"):
        by_su.setdefault(device.su or 1, []).append(device)
    for su, servers in sorted(by_su.items()):
        cluster = planner.cluster(f"su{su:02d}", su)
        for i, server in enumerate(servers):
            planner.place(cluster, "compute", server, new=i % per_rack == 0)
    for device in plan.devices.values():
        if device.role == "switch" and device.tier == 1 and device.su is not None:
            planner.place(planner.cluster(f"su{device.su:02d}", device.su), "network", device)
    for device in plan.devices.values():
        if device.role == "switch" and device.tier == 2 and device.pod is not None and device.name in pod_sus:
            last = max(pod_sus[device.name])
            planner.cluster(f"su{last:02d}-pod-{device.network}", last).su = last
            planner.place(planner.cluster(f"su{last:02d}-pod-{device.network}", last), "network", device)
        elif device.role == "switch" and (device.tier != 1 or device.su is None):
            purpose = {"compute": "network", "storage": "storage"}.get(device.network or "", "management")
            planner.place(central, purpose, device)
        elif device.role == "storage":
            planner.place(central, "storage", device)
        elif device.role in ("management-server", "fabric-manager", "object-storage"):
            planner.place(central, "management", device)


def _reserve_oob(
    plan: Plan, planner: RackPlanner, r: Resolved, count_pdus: Callable[[float, dict[str, int]], int]
) -> dict[str, list[Device]]:
    """Reserve rack space for the out-of-band switches each cluster needs.

    Their number depends on the PDUs (each has a network port), and the PDUs on the rack load,
    which the switches add to: grow the reservation until it covers every port.
    """
    access_ports = sum(g.port_count for g in r.oob_switch.port_groups("access"))
    reserved: dict[str, list[Device]] = {}
    catalog = planner.catalog

    def needed(cluster: Cluster) -> int:
        devices = [d for rack in cluster.racks for d in rack.devices if not d.name.startswith("~")]
        ports = len(oob_ports(plan, catalog, devices))
        pdus = sum(count_pdus(rack.power_max_w, rack_inlets(catalog, rack.devices)) for rack in cluster.racks)
        return math.ceil((ports + pdus) / access_ports)

    def reserve(cluster: Cluster, part_id: str, purpose: str, count: int, key: str) -> None:
        slots = reserved.setdefault(key, [])
        while len(slots) < count:
            slot = Device(f"~{key}-{len(slots)}", part_id, "switch", u_height=planner.catalog.parts[part_id].u_height)
            planner.place(cluster, purpose, slot)
            slots.append(slot)

    clusters = [c for name, c in sorted(planner.clusters.items()) if name != "central"]
    for cluster in clusters:
        while (count := needed(cluster)) > len(reserved.get(cluster.name, [])):
            reserve(cluster, r.oob_switch.id, "network", count, cluster.name)
    central = planner.cluster("central")
    order = _floor_order(planner)
    while True:
        count = needed(central)
        reserve(central, r.oob_switch.id, "management", count, "central")
        leaves = [(planner.clusters[name].su, len(reserved.get(name, []))) for name in order]
        upper = _oob_upper_switches(r, leaves)
        reserve(central, r.oob_aggregation_switch.id, "management", upper, "aggregation")
        if needed(central) <= len(reserved["central"]):
            return reserved


def _oob_upper_switches(r: Resolved, leaves: list[tuple[int | None, int]]) -> int:
    """How many aggregation switches an out-of-band network needs, given (SU, access switches) per
    cluster in floor order: a dry run of the same construction on full access switches."""
    if sum(n for _su, n in leaves) <= 1:
        return 0
    scratch = Plan(name="scratch", design=None)
    access = sum(g.port_count for g in r.oob_switch.port_groups("access"))
    groups = [
        LeafGroup(f"g{i}", [HostPort(f"h{i}-{j}", "p", 0, 1.0) for j in range(access * n)], su=su)
        for i, (su, n) in enumerate(leaves)
        if n
    ]
    result = build_clos(
        scratch,
        network="oob",
        groups=groups,
        leaf_part=r.oob_switch,
        upper_part=r.oob_aggregation_switch,
        leaf_uplinks=2,
        min_top_switches=2,
    )
    return sum(t.switches for t in result.tiers if t.tier > 1)


def _floor_order(planner: RackPlanner) -> list[str]:
    """Scalable units in order (each pod's spine racks after its last SU) with the central cluster in
    the middle of the hall."""
    sus = sorted(name for name in planner.clusters if name != "central")
    half = len(sus) // 2
    return [*sus[:half], "central", *sus[half:]]


def _build_oob(
    plan: Plan, planner: RackPlanner, r: Resolved, order: list[str], reserved: dict[str, list[Device]]
) -> None:
    """Connect every BMC, management port and PDU to its cluster's access switches, then put the real
    switches into the reserved slots."""
    groups = []
    for name in order:
        cluster = planner.clusters[name]
        devices = [d for rack in cluster.racks for d in rack.devices if not d.name.startswith("~")]
        rack_names = {d.rack for d in devices}
        devices += [plan.devices[p] for rack in sorted(rack_names) for p in plan.racks[rack].pdus]
        groups.append(LeafGroup(name, oob_ports(plan, planner.catalog, devices), su=cluster.su))
    result = build_oob(plan, r, groups)
    plan.tiers += result.tiers
    placed: set[str] = set()
    for name in order:
        leaves = [plan.devices[n] for n in result.leaves.get(name, []) if n not in placed]
        placed.update(d.name for d in leaves)
        _fill(plan, reserved.get(name, []), leaves)
    _fill(plan, reserved.get("aggregation", []), [d for d in plan.switches("oob") if (d.tier or 0) > 1])
    for rack in plan.racks.values():
        devices = [plan.devices[n] for n in rack.devices]
        rack.power_max_w = sum(planner.power_w(d) for d in devices)
        rack.power_typical_w = sum(
            float(getattr(planner.catalog.parts[d.part], "power_typical_w", 0.0)) for d in devices
        )


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
