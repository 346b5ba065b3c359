"""The physical-plan stage: a validated design becomes devices, racks, links and cables (and, from them, graphs).

The later stages (derived models, design rules) run in gpucluster/pipeline.py; nothing here imports them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from typing import Any

from gpucluster.catalog.load import Catalog
from gpucluster.catalog.ports import port_details
from gpucluster.catalog.schema import AnyPart, GpuServer, Pdu, Rack
from gpucluster.design.load import LoadedDesign
from gpucluster.errors import DesignError, Problem
from gpucluster.plan.cables import NoCableFits, add_cables
from gpucluster.plan.fabric import ClosResult, merge_planes
from gpucluster.plan.lock import Lock, keep_locked_cable_ids, keep_locked_ports, place_under_lock
from gpucluster.plan.model import (
    Device,
    ExistingLinksRecord,
    FilesystemAsked,
    FilesystemRecord,
    Finding,
    ObjectStorageAsked,
    PhysicalPlan,
    Plan,
    PlanDraft,
    Settings,
)
from gpucluster.plan.networks import (
    INBAND_LEAF_UPLINKS,
    Resolved,
    ResolvedFilesystem,
    add_appliances,
    add_gpu_servers,
    build_compute_fabric,
    build_inband,
    build_storage_network,
)
from gpucluster.plan.oob import build_oob_network, reserve_oob_switches
from gpucluster.plan.power.circuits import choose_pdu, pdus_needed, pdus_to_keep_psus
from gpucluster.plan.power.cooling import cooling_capacity_kw, liquid_heat_w
from gpucluster.plan.power.draw import add_optics_power, optics_allowance_w
from gpucluster.plan.rack_scale import add_nvlink_links, add_rack_systems, place_rack_systems
from gpucluster.plan.racks import (
    RackPlanner,
    add_pdus,
    assign_nvlink_domains,
    floor_order,
    pack_devices,
    rack_fit,
    rack_inlets,
    servers_per_rack,
)
from gpucluster.plan.resolve import existing_parts, filesystem_entries, resolve, switch_technology

__all__ = ["Progress", "build_physical_plan"]

Progress = Callable[[str], None]


def _pdus(loaded: LoadedDesign, catalog: Catalog) -> tuple[Pdu, Pdu]:
    """The PDU of the racks with GPU servers, from the site's feed (a located error when none takes it), and the PDU
    of the other racks: the one made for them (the RA's PX3-5747V-V2: many C13 outlets
    for C14 inlets), else the same."""
    site = loaded.design.site
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
    return pdu, choose_pdu(catalog, feed, site.non_compute_pdu, compute=False) or pdu


def build_physical_plan(
    loaded: LoadedDesign, say: Progress, lock: Lock | None = None, linked: Callable[[Plan], None] | None = None
) -> PhysicalPlan:
    """The physical plan of a loaded design: devices, racks, links, cables and device power (complete: no later stage
    changes them; the graphs are made from it when first read: graphs). Under a `lock` (plan/lock.py) what the
    lock holds keeps its place, ports and cable ids. `linked` is called with the draft once its devices, racks and
    links are complete, before its cables are chosen."""
    design, catalog = loaded.design, loaded.catalog
    r = resolve(loaded)
    catalog = _with_existing_parts(loaded, catalog, r.server)
    plan = PlanDraft(name=design.name, design=design, settings=_settings(r), catalog_parts=catalog.parts)
    site = design.site
    feed = site.power_feed
    pdu, other_pdu = _pdus(loaded, catalog)
    plan.settings.pdu = pdu.id
    plan.settings.non_compute_pdu = other_pdu.id

    say("servers and appliances")
    system = r.rack_system
    domains = []
    if system is not None:
        domains = add_rack_systems(plan, r, design.compute.hostname_prefix)
        add_nvlink_links(plan, system, domains)  # the backplane: network nvlink, counted, never cabled
        plan.settings.rack_system = system.id
        plan.settings.nvlink_domains = len(domains)
    else:
        add_gpu_servers(plan, r, design.compute.hostname_prefix)
    add_appliances(plan, r)
    plan.findings += _scalable_unit_warnings(plan, r) + _unnamed_rail_interfaces(r)
    say("compute fabric")
    fabric = build_compute_fabric(plan, r, catalog)
    plan.tiers += merge_planes(fabric)
    plan.findings += _manager_leaf_findings(fabric, r)
    say("storage network")
    plan.tiers += build_storage_network(plan, r, catalog).tiers
    say("in-band management network")
    inband = build_inband(plan, r, catalog)
    plan.tiers += inband.tiers
    # the in-band core ports its growth reserve keeps for the leaves to come, which out-of-band uplinks leave free
    inband_reserved_uplinks = inband.reserved_leaves * INBAND_LEAF_UPLINKS

    say("racks")
    rack_part = catalog.get(site.rack, Rack)
    optics_w = optics_allowance_w(plan, catalog)
    planner = RackPlanner(catalog, site, rack_part, optics_w)
    server_w = r.server.power_max_w + max((optics_w.get(d.name, 0.0) for d in plan.gpu_nodes()), default=0)
    in_rack: dict[str, list[Device]] = {}
    if system is not None:
        per_rack = system.compute_trays
        try:
            in_rack = place_rack_systems(plan, planner, system, domains)
        except ValueError as exc:
            raise DesignError([Problem(*loaded.where("compute", "server"), "compute.server", str(exc))]) from None
    else:
        per_rack, packing = _servers_per_rack(loaded, plan, r, planner, server_w)
        plan.findings += packing
    plan.settings.servers_per_rack = per_rack
    try:
        pack_devices(plan, planner, per_rack)
    except ValueError as exc:
        raise DesignError([Problem(*loaded.where("site"), "site", str(exc))]) from None

    # each part's PDU spread once: racks are counted many times over while the out-of-band switches find room
    spread_of = cache(lambda part_id: pdus_to_keep_psus(catalog.parts.get(part_id)))

    def count_pdus(load_w: float, devices: list[Device], compute: bool) -> tuple[Pdu, int]:
        model = pdu if compute else other_pdu
        spread = max(map(spread_of, {d.part for d in devices}), default=1)
        return model, pdus_needed(load_w, rack_inlets(catalog.parts, devices), model, feed, spread)

    say("out-of-band management network")
    placeholders = reserve_oob_switches(plan, planner, r, count_pdus, in_rack, inband_reserved_uplinks)
    planner.layout(plan, floor_order(planner, r.final_scalable_units))
    assign_nvlink_domains(plan)
    slots = {slot.name: slot for reserved in placeholders.values() for slot in reserved}
    add_pdus(plan, count_pdus, feed.redundancy, reserved=slots)
    build_oob_network(plan, planner, r, placeholders, inband_reserved_uplinks)
    place_existing_hand_offs(plan)  # beside its leaves (a lock then keeps it where it stood)
    if lock is not None:
        say("plan lock")
        pitch_mm = site.rack_pitch_mm or rack_part.width_mm
        place_under_lock(plan, lock, planner.power_w, planner.budget_w, site.racks_per_row, pitch_mm, site.row_pitch_mm)
        keep_locked_ports(plan, lock)

    if linked is not None:
        linked(plan)
    say("cables")
    _add_cables(loaded, plan, r, catalog)
    if lock is not None:
        keep_locked_cable_ids(plan, lock)
    plan.device_power = add_optics_power(plan)
    plan.findings += unweighed_parts(plan)
    return _completed(plan)


def _completed(plan: PlanDraft) -> PhysicalPlan:
    """The draft's content as the physical plan, its containers handed over (not copied: no one writes them after)."""
    return PhysicalPlan(
        name=plan.name,
        design=plan.design,
        settings=plan.settings,
        devices=plan.devices,
        links=plan.links,
        cables=plan.cables,
        racks=plan.racks,
        tiers=plan.tiers,
        planner_findings=plan.findings,
        catalog_parts=plan.catalog_parts,
        device_power=plan.device_power,
    )


def _with_existing_parts(loaded: LoadedDesign, catalog: Catalog, server: GpuServer) -> Catalog:
    """The catalog with the parts the design's existing filesystems' hand-offs stand for and the server as the design
    names its interfaces (compute.rail_interfaces), both from the design."""
    existing: dict[str, AnyPart] = {**existing_parts(loaded)}
    if server != catalog.parts[server.id]:
        existing[server.id] = server
    if not existing:
        return catalog
    origin = {**catalog.origin, **dict.fromkeys(existing, str(loaded.path))}
    return Catalog({**catalog.parts, **existing}, catalog.source_text, origin)


def _add_cables(loaded: LoadedDesign, plan: PlanDraft, r: Resolved, catalog: Catalog) -> None:
    """Every link's cable; a link no catalog cable reaches is an error where the design can fix it."""
    try:
        add_cables(plan, catalog, loaded.design.site.cabling)
    except NoCableFits as exc:
        loc = _cable_problem_at(loaded, plan, r, exc)
        hint = (
            ""
            if loc == ("site",)
            else "; the catalog has no cable between these ports at this length: for an existing filesystem state the "
            "ports it has (links: speed_gbps, cage_type) or a shorter links.run_length_m; for a new one choose a block "
            "whose ports the storage leaves' cables reach"
        )
        raise DesignError([Problem(*loaded.where(*loc), ".".join(map(str, loc)), f"{exc}{hint}")]) from None


def place_existing_hand_offs(plan: Plan) -> None:
    """An existing filesystem's links arrive at the rack of the storage leaves they join: its hand-off device
    stands there, zero-U and outside the rack's elevation (the filesystem itself stands where the site has it; its
    cable run is the design's links.run_length_m)."""
    for device in plan.devices_with("existing-storage"):
        leaf = next(link.b_device for link in plan.links if link.a_device == device.name)
        device.rack = plan.devices[leaf].rack


def _cable_problem_at(loaded: LoadedDesign, plan: Plan, r: Resolved, exc: NoCableFits) -> tuple[str | int, ...]:
    """Where a link no catalog cable reaches is fixed: a filesystem's or object store's link at that storage
    entry (its block, or an existing one's links), any other at site (its cabling and room)."""
    for (path, entry), fs in zip(filesystem_entries(loaded.design), r.filesystems, strict=False):
        if exc.device == fs.device_prefix or exc.device.startswith(f"{fs.device_prefix}-"):
            if fs.existing:
                return (*path, "links", "cage_type" if entry.links and entry.links.cage_type else "speed_gbps")
            return (*path, "block" if entry.block else "kind")
    if plan.devices.get(exc.device) is not None and plan.devices[exc.device].role == "object-storage":
        return ("object_storage", "block")
    return ("site",)


def _servers_per_rack(
    loaded: LoadedDesign, plan: Plan, r: Resolved, planner: RackPlanner, server_w: float
) -> tuple[int, list[Finding]]:
    """GPU servers per compute rack: ``site.servers_per_rack`` when the architect sets it (within the power
    budget and the height; beyond the cooling the rule warns), else the most that fit power, height and
    cooling and divide the SU evenly, with an advisory when that leaves budget unused that a setting would use."""
    site = planner.site
    heat_w = server_w if site.cooling == "liquid" else server_w - liquid_heat_w(r.server, server_w)
    fit = rack_fit(
        r.server.u_height, server_w, heat_w, planner.height_u, planner.budget_w, cooling_capacity_kw(site) * 1000
    )
    each = f"{r.server.id} ({server_w / 1000:.2f} kW each with its optics, {r.server.u_height:g}U)"
    if min(fit.power, fit.height) == 0:
        _fail_at(
            loaded,
            ("site", "rack_power_budget_kw"),
            f"one {r.server.model} ({r.server.power_max_w / 1000:.1f} kW, {server_w / 1000:.2f} kW with its optics, "
            f"{r.server.u_height:g}U) does not fit a {planner.height_u}U rack with a {site.rack_power_budget_kw:g} kW "
            "budget",
        )
    most = fit.most if fit.cooling > 0 else min(fit.power, fit.height)  # beyond the cooling: the rule warns
    plan.settings.servers_per_rack_fit = most  # the most power, height and cooling allow
    if site.servers_per_rack is not None:
        n = site.servers_per_rack
        if n > min(fit.power, fit.height):
            limit = "power budget" if fit.power < fit.height else "rack height"
            _fail_at(
                loaded,
                ("site", "servers_per_rack"),
                f"{n} x {each} need {n * server_w / 1000:.1f} kW and {n * r.server.u_height:g}U; the {limit} "
                f"({site.rack_power_budget_kw:g} kW, {planner.height_u}U) takes at most {min(fit.power, fit.height)}",
            )
        return n, []
    chosen = servers_per_rack(most, r.su_servers)
    if chosen >= most:
        return chosen, []
    racks_now, racks_full = (_compute_racks(plan, n) for n in (chosen, most))
    return chosen, [
        Finding(
            "planning",
            "advisory",
            f"compute racks hold {chosen} x {r.server.id} ({chosen * server_w / 1000:.1f} kW of the "
            f"{site.rack_power_budget_kw:g} kW budget) so each {r.su_servers}-server SU divides evenly; {most} fit "
            f"the budget, height and {site.cooling} cooling: site.servers_per_rack: {most} packs them in "
            f"{racks_full} compute racks instead of {racks_now}",
            "site.servers_per_rack",
        )
    ]


def _compute_racks(plan: Plan, per_rack: int) -> int:
    """Compute racks when each SU's servers fill racks of ``per_rack`` (as pack_devices packs them)."""
    per_su: dict[int, int] = {}
    for server in plan.gpu_nodes():
        per_su[server.su or 1] = per_su.get(server.su or 1, 0) + 1
    return sum(math.ceil(n / per_rack) for n in per_su.values())


def _fail_at(loaded: LoadedDesign, loc: tuple[str, ...], message: str) -> None:
    raise DesignError([Problem(*loaded.where(*loc), ".".join(loc), message)])


def _scalable_unit_warnings(plan: Plan, r: Resolved) -> list[Finding]:
    """A nearly empty last scalable unit still needs a leaf per rail: say what it costs and which design
    fields would fill the units before it exactly."""
    per_su: dict[int, int] = {}
    for server in plan.gpu_nodes():
        per_su[server.su or 1] = per_su.get(server.su or 1, 0) + 1
    last = max(per_su)
    if not (last > 1 and per_su[last] * 2 < r.su_servers):
        return []
    slots = (last - 1) * r.su_servers
    taken = r.su_manager_slots
    production, spares = r.production_servers, r.spare_servers
    fixes = []
    if production + taken <= slots:
        fixes.append(f"compute.spare_servers: {slots - taken - production} (the free slots of {last - 1} units)")
    elif taken and production <= slots and r.compute_switch.subnet_manager:
        fixes.append(
            f"compute_fabric.fabric_managers: 0 (the {r.compute_switch.id} switches run an on-board subnet manager; "
            f"no UFM slot) with compute.spare_servers: {slots - production}"
        )
    if taken and production <= slots:
        keep = "" if production + spares <= slots else f" with compute.spare_servers: {slots - production}"
        fixes.append(
            "compute_fabric.fabric_manager_ports: own-leaf (the fabric managers on a leaf of their own outside the "
            f"SUs; its uplinks need free ports on the tier above){keep}"
        )
    fits = slots - taken - spares
    if fits > 0:
        fixes.append(f"compute.servers: {fits} (compute.gpus: {fits * r.server.gpu.count})")
    down_ports = r.compute_switch.radix * r.compute_oversubscription / (1 + r.compute_oversubscription)
    wider = math.ceil((production + spares + taken) / (last - 1))
    if wider <= down_ports:
        fixes.append(
            f"compute_fabric.scalable_unit_servers: {wider} (a {r.compute_switch.id} leaf serves {down_ports:g})"
        )
    return [
        Finding(
            "planning",
            "warning",
            f"scalable unit {last} holds {per_su[last]} of {r.su_servers} servers but needs its own {r.rails} leaves "
            f"and their uplinks; {last - 1} units hold {slots} slots ({production} servers + {spares} spares"
            + (f" + {taken} fabric-manager slot{'s' if taken > 1 else ''}" if taken else "")
            + " need "
            + f"{production + spares + taken}). To fill {last - 1} units exactly, set "
            + ("; or ".join(fixes) if fixes else "fewer servers or spares"),
            f"su{last:02d}",
        )
    ]


def _unnamed_rail_interfaces(r: Resolved) -> list[Finding]:
    """RoCE in a pod needs each rail's interface by name (its network's device selector, its netplan); a server
    whose catalog entry names none (OEM servers) gets one shared RDMA resource and the address table only."""
    named = [d.plane_netdevs if r.planes > 1 else d.netdev_on(True) for d in port_details(r.server, "compute")]
    if r.compute_technology != "roce" or all(named):
        return []
    return [
        Finding(
            "planning",
            "warning",
            f"the catalog does not name {r.server.id}'s compute interfaces, so pods get one shared RDMA resource "
            "without per-rail networks or addresses, and hosts get switches/hosts/rail-addresses.csv without "
            "netplan: set compute.rail_interfaces to the names `ip link` shows on one server, in rail order",
            "compute",
        )
    ]


def _manager_leaf_findings(fabric: list[ClosResult], r: Resolved) -> list[Finding]:
    """Fabric managers on a leaf of their own need free ports on the tier above; where the rail leaves fill it
    (4 full QM9700 SUs fill 16 spines), the top tier grows: say so, and what the RA's server slot costs instead."""
    extra = sum(result.service_top_switches for result in fabric)
    if not extra:
        return []
    return [
        Finding(
            "planning",
            "warning",
            f"the fabric managers' own leaf needs {extra} more top-tier {r.compute_switch.id} switches: the rail "
            "leaves' uplinks fill the tier above. compute_fabric.fabric_manager_ports: su-slot puts them on SU 1's "
            "leaves in place of one server instead, as the DGX SuperPOD RA does",
            "compute_fabric.fabric_manager_ports",
        )
    ]


def _object_storage_delivered(r: Resolved) -> dict[str, Any]:
    """Object storage as delivered (its own blocks, or its share of the filesystem's) and as asked."""
    if r.object_capacity_asked_tb is None:
        return {"object_storage_capacity_tb": None, "object_storage_read_gbytes_per_s": None}
    if r.object_shared:
        assert r.pfs_block is not None  # resolve refuses a shared store on an existing filesystem
        capacity, read = r.object_capacity_asked_tb, r.pfs_blocks * r.pfs_block.read_gbytes_per_s
    else:
        assert r.object_block is not None
        capacity = r.object_blocks * r.object_block.capacity_tb
        read = r.object_blocks * r.object_block.read_gbytes_per_s
    return {
        "object_storage_capacity_tb": capacity,
        "object_storage_read_gbytes_per_s": read,
        "object_storage_asked": ObjectStorageAsked(
            capacity_tb=r.object_capacity_asked_tb, throughput_gbytes_per_s=r.object_throughput_asked_gbytes_per_s
        ),
    }


def unweighed_parts(plan: Plan) -> list[Finding]:
    """Rack weights (BOM, printouts, floor loading) add the catalog's weight_kg of every racked part: a part
    without one would weigh nothing there, so say which and how many."""
    missing: dict[str, int] = {}
    for device in plan.devices.values():
        part = plan.catalog_parts.get(device.part)
        racked = device.rack and part is not None and getattr(part, "u_height", None)
        system = plan.catalog_parts.get(plan.racks[device.rack].rack_system or "") if device.rack else None
        if getattr(system, "weight_kg", None):
            continue  # a rack-scale system's published loaded weight holds its trays and shelves
        if racked and not getattr(part, "weight_kg", None):
            missing[device.part] = missing.get(device.part, 0) + 1
    if not missing:
        return []
    parts = ", ".join(f"{n} x {part}" for part, n in sorted(missing.items()))
    return [
        Finding(
            "catalog",
            "warning",
            f"rack weights leave out {sum(missing.values())} devices the catalog gives no weight for ({parts}): "
            "add weight_kg from the vendor's datasheet in a design catalog file (catalog:)",
            "weight_kg",
        )
    ]


def filesystem_records(r: Resolved) -> list[FilesystemRecord]:
    """Every filesystem as delivered (a new one's blocks' figures) or as stated (an existing one's)."""
    fallback = ResolvedFilesystem("pfs", "", "", "pfs", r.pfs_block, r.pfs_blocks, None, None, None)
    records = []
    for fs in r.filesystems or (fallback,):
        block, links = fs.block, fs.links
        asked = FilesystemAsked(
            capacity_tb=fs.capacity_tb,
            read_gbytes_per_s=fs.read_gbytes_per_s,
            write_gbytes_per_s=fs.write_gbytes_per_s,
            basis=fs.throughput_basis,
            capacity_basis=fs.capacity_basis,
        )
        records.append(
            FilesystemRecord(
                name=fs.name,
                kind=fs.kind,
                mount=fs.mount,
                existing=block is None,
                device_prefix=fs.device_prefix,
                block=block.id if block else None,
                blocks=fs.blocks,
                capacity_tb=fs.blocks * block.capacity_tb if block else fs.capacity_tb,
                read_gbytes_per_s=fs.blocks * block.read_gbytes_per_s if block else fs.read_gbytes_per_s,
                write_gbytes_per_s=fs.blocks * block.write_gbytes_per_s if block else fs.write_gbytes_per_s,
                asked=asked,
                links=ExistingLinksRecord(
                    count=links.count,
                    speed_gbps=links.speed_gbps,
                    network=links.network,
                    cage_type=fs.cage_type,
                    run_length_m=links.run_length_m,
                )
                if links
                else None,
            )
        )
    return records


def _settings(r: Resolved) -> Settings:
    delivered = filesystem_records(r)
    return Settings(
        server=r.server.id,
        gpus_per_server=r.server.gpu.count,
        gpu_model=r.server.gpu.model,
        production_servers=r.production_servers,
        spare_servers=r.spare_servers,
        scalable_unit_servers=r.su_servers,
        rails=r.rails,
        compute_planes=r.planes,
        compute_technology=switch_technology(r.compute_technology),
        compute_fabric=r.compute_technology,
        compute_switch=r.compute_switch.id,
        compute_oversubscription=r.compute_oversubscription,
        fabric_manager=r.fabric_manager.id if r.fabric_manager else None,
        fabric_managers=r.fabric_managers,
        fabric_manager_ports="own-leaf" if r.fabric_manager_leaf else ("su-slot" if r.fabric_managers else None),
        storage_fabric_manager=r.storage_fabric_manager.id if r.storage_fabric_manager else None,
        storage_fabric_managers=r.storage_fabric_managers,
        storage_technology=r.storage_switch.technology,
        storage_switch=r.storage_switch.id,
        parallel_filesystem_block=r.pfs_block.id if r.pfs_block else "",
        parallel_filesystem_blocks=r.pfs_blocks,
        # as delivered: what the planned blocks give (the design's figures are under *_asked); an existing one's
        # as stated (its throughput, where not stated, its links' line rate)
        parallel_filesystem_read_gbytes_per_s=delivered[0]["read_gbytes_per_s"] or 0.0,
        parallel_filesystem_write_gbytes_per_s=delivered[0]["write_gbytes_per_s"] or 0.0,
        parallel_filesystem_capacity_tb=delivered[0]["capacity_tb"] or 0.0,
        parallel_filesystem_asked=FilesystemAsked(
            capacity_tb=r.pfs_capacity_asked_tb,
            read_gbytes_per_s=r.pfs_read_gbytes_per_s,
            write_gbytes_per_s=r.pfs_write_gbytes_per_s,
            basis=r.pfs_throughput_basis,
            capacity_basis=r.pfs_capacity_basis,
        ),
        filesystems=delivered if len(delivered) > 1 or delivered[0]["existing"] else None,
        object_storage_block=r.object_block.id if r.object_block else None,
        object_storage_blocks=r.object_blocks,
        object_storage_shared=r.object_shared,
        **_object_storage_delivered(r),
        inband_technology="ethernet",
        inband_switch=r.inband_switch.id,
        inband_oversubscription=r.inband_oversubscription,
        oob_technology="ethernet",
        oob_switch=r.oob_switch.id,
        oob_aggregation_switch=r.oob_aggregation_switch.id,
        # the growth reserve: what the spines, central racks and floor are planned for (equal: none)
        scalable_units=r.scalable_units,
        final_scalable_units=r.final_scalable_units or r.scalable_units,
        storage_final_scalable_units=r.storage_final_scalable_units or r.scalable_units,
    )
