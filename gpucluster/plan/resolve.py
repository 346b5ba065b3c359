"""Filling a design's defaults from the catalog: the settings the planner actually builds with."""

from __future__ import annotations

import math
from typing import NamedTuple, NoReturn

from gpucluster.catalog.load import Catalog
from gpucluster.catalog.ports import port_details
from gpucluster.catalog.schema import Appliance, GpuServer, RackSystem, StorageBlock, Switch
from gpucluster.design.load import LoadedDesign
from gpucluster.design.schema import RESERVED_FILESYSTEM_NAMES, Design, ParallelFilesystem
from gpucluster.errors import DesignError, Problem
from gpucluster.inputs.limits import MAX_GPUS, MAX_STORAGE_BLOCKS
from gpucluster.plan.networks import (
    Resolved,
    ResolvedFilesystem,
    existing_part,
    inband_oversubscription,
    manager_slots,
    technology_of,
)
from gpucluster.plan.registry import control_plane_names

# DGX SuperPOD H100 RA (RA-11333-001), Table 6 "Guidelines for storage performance": single-SU
# aggregate read/write in GB/s per level (the 4-SU rows are four times the reads, 60/160/500, and round the writes
# up, 30/80/250). The RA publishes no capacity per SU or per GPU (its storage sections give throughput only; the
# B200, GB200 and B300 RAs likewise), so a filesystem without capacity_tb gets what the blocks its throughput
# needs hold: a derived figure the summary, report and deviations name with its arithmetic.
SU_STORAGE_GBYTES_PER_S = {"good": (15.0, 7.0), "better": (40.0, 20.0), "best": (125.0, 62.0)}
SU_STORAGE_SOURCE = "NVIDIA DGX SuperPOD RA (DGX H100) RA-11333-001, Table 6"  # named in the summary's storage target

DEFAULT_SWITCH = {"infiniband-ndr": "qm9700", "infiniband-xdr": "q3400-ra", "roce": "sn5600", "ethernet": "sn5600"}
DEFAULT_FABRIC_MANAGER = {"infiniband-ndr": "ufm-enterprise-ndr", "infiniband-xdr": "ufm-enterprise-xdr"}
# DGX SuperPOD RA (DGX GB200), Architecture: "each SU contains 8 DGX GB200 systems".
RACK_SYSTEMS_PER_SU = 8


def switch_technology(fabric: str) -> str:
    """The technology a fabric's switches and optics speak: RoCE runs on Ethernet."""
    return "ethernet" if fabric == "roce" else fabric


class _Compute(NamedTuple):
    """The GPU servers the design asks for: the server (a rack-scale system's tray), how many, per SU."""

    system: RackSystem | None
    server: GpuServer
    rails: int
    production: int
    su: int


class _Fabric(NamedTuple):
    """The compute fabric's technology, switch, fabric managers and planes."""

    technology: str
    switch: Switch
    manager: Appliance | None
    managers: int
    own_leaf: bool
    planes: int


class _StorageNetwork(NamedTuple):
    """The storage network's switch and, on InfiniBand, its own fabric managers."""

    switch: Switch
    manager: Appliance | None
    managers: int


class _Management(NamedTuple):
    """The in-band and out-of-band management switches."""

    inband: Switch
    oob: Switch
    oob_aggregation: Switch


def resolve(loaded: LoadedDesign) -> Resolved:
    """The design with every default filled in, each part checked against the catalog where the design names it."""
    design, catalog = loaded.design, loaded.catalog
    compute = _compute(loaded)
    system, server, rails, production, su = compute
    fabric = _compute_fabric(loaded, server)
    server = _with_rail_interfaces(loaded, server, rails, fabric.planes, fabric.technology == "roce")
    manager, managers, own_leaf = fabric.manager, fabric.managers, fabric.own_leaf
    if manager is not None and not own_leaf and manager_slots(manager, managers, rails) >= su:
        _fail(
            loaded,
            ("compute_fabric", "scalable_unit_servers"),
            f"{managers} x {manager.id} take {manager_slots(manager, managers, rails)} server slots of scalable unit "
            f"1, which holds {su}: no server would fit; use larger scalable units or fewer fabric managers",
        )
    spares = _spares(loaded, compute, fabric)
    storage = _storage_network(loaded, server, fabric)
    filesystems, shared = _filesystems(loaded, (production + spares) / su, storage.switch)
    filesystem = filesystems[0]
    spec = design.object_storage
    object_block, object_blocks = _object_storage(loaded) if spec and not shared else (None, 0)
    management = _management(loaded, server, object_block)
    check_scheduler(loaded, production, server.gpu.count)
    units, final, storage_final = _scalable_units(loaded, compute, fabric, spares)
    pfs = design.parallel_filesystem
    mgmt = design.management
    # a rack-scale system runs under Mission Control: its control plane as the RA lists it, unless the design
    # sets its own count of management servers
    asked = "management_servers" in mgmt.model_fields_set
    control_plane = control_plane_names(design.scheduler.kind) if system is not None and not asked else ()
    return Resolved(
        server=server,
        production_servers=production,
        spare_servers=spares,
        su_servers=su,
        rails=rails,
        planes=fabric.planes,
        compute_technology=fabric.technology,
        compute_switch=fabric.switch,
        compute_oversubscription=design.compute_fabric.oversubscription,
        fabric_manager=manager,
        fabric_managers=managers if manager else 0,
        fabric_manager_leaf=own_leaf and manager is not None,
        storage_fabric_manager=storage.manager,
        storage_fabric_managers=storage.managers if storage.manager else 0,
        storage_switch=storage.switch,
        storage_server_oversubscription=_server_storage_oversubscription(loaded, compute.system),
        combined_storage_inband=bool(compute.system and compute.system.storage_inband_fabric == "combined"),
        storage_block_oversubscription=design.storage_network.storage_oversubscription,
        pfs_block=filesystem.block,
        pfs_blocks=filesystem.blocks,
        pfs_read_gbytes_per_s=filesystem.read_gbytes_per_s,
        pfs_write_gbytes_per_s=filesystem.write_gbytes_per_s,
        pfs_capacity_tb=filesystem.blocks * filesystem.block.capacity_tb
        if filesystem.block
        else filesystem.capacity_tb or 0.0,
        object_block=object_block,
        object_blocks=object_blocks,
        inband_switch=management.inband,
        inband_oversubscription=inband_oversubscription(management.inband),
        oob_switch=management.oob,
        oob_aggregation_switch=management.oob_aggregation,
        management_server=catalog.get(mgmt.management_server, Appliance),
        management_servers=len(control_plane) or mgmt.management_servers,
        management_server_names=control_plane,
        pfs_capacity_asked_tb=pfs.capacity_tb,
        pfs_throughput_basis=filesystem.throughput_basis,
        pfs_capacity_basis=filesystem.capacity_basis,
        object_capacity_asked_tb=spec.capacity_tb if spec else None,
        object_throughput_asked_gbytes_per_s=spec.throughput_gbytes_per_s if spec else None,
        object_shared=shared,
        rack_system=system,
        scalable_units=units,
        final_scalable_units=final,
        storage_final_scalable_units=storage_final,
        filesystems=tuple(filesystems),
    )


def _compute(loaded: LoadedDesign) -> _Compute:
    """The GPU server and how many the design asks for: whole servers (whole racks of a rack-scale system), each
    with compute, storage and in-band ports, within the largest supported cluster."""
    design, catalog = loaded.design, loaded.catalog
    named = catalog.parts[design.compute.server]
    system = named if isinstance(named, RackSystem) else None
    server = catalog.get(system.compute_tray if system else design.compute.server, GpuServer)
    if system is None:
        _refuse_a_lone_tray(loaded, server)
    rails = sum(g.port_count for g in server.port_groups("compute"))
    if rails == 0:
        _fail(loaded, ("compute", "server"), f"{server.id} has no compute-fabric ports in the catalog")
    for role, network in (("storage", "storage network"), ("inband", "in-band management network")):
        if not server.port_groups(role):
            message = f"{server.id} has no {role} ports in the catalog; the plan puts every GPU server on the {network}"
            _fail(loaded, ("compute", "server"), message)
    production = _production_servers(loaded, server)
    su = design.compute_fabric.scalable_unit_servers
    if system is not None:
        su = _rack_system_sizes(loaded, system, server, production)
    return _Compute(system, server, rails, production, su)


def _with_rail_interfaces(
    loaded: LoadedDesign, server: GpuServer, rails: int, planes: int, ethernet: bool
) -> GpuServer:
    """The server with the compute interface names the design gives (compute.rail_interfaces): an OEM server's names
    are not published, so the site reads them off one server and every view (netplan, per-rail networks) takes them
    from the plan's copy of the part, as it takes a catalog's."""
    names = loaded.design.compute.rail_interfaces
    if names is None:
        return server
    where = ("compute", "rail_interfaces")
    if len(names) != rails:
        _fail(
            loaded,
            where,
            f"{server.id} has {rails} compute ports: name {rails} interfaces in rail order, not {len(names)}",
        )
    for index, entry in enumerate(names):
        if planes > 1 and (isinstance(entry, str) or len(entry) != planes):
            _fail(
                loaded,
                (*where, index),
                f"the compute fabric has {planes} planes: give each rail a list of {planes} names",
            )
        if planes == 1 and not isinstance(entry, str):
            _fail(loaded, (*where, index), "the compute fabric has one plane: give each rail one name")
    flat = [name for entry in names for name in ([entry] if isinstance(entry, str) else entry)]
    if len(set(flat)) != len(flat):
        _fail(loaded, where, "each interface name may be given once")
    rail_of = {detail.name: detail.rail or 0 for detail in port_details(server, "compute")}  # the catalog's rule
    ports = []
    for group in server.ports:
        if group.role == "compute":
            field = "netdevs" if not ethernet or group.technology == "ethernet" else "ethernet_netdevs"
            picked = [names[rail_of[name] - 1] for name, _cage in group.port_names()]
            group = group.model_copy(update={"plane_netdevs" if planes > 1 else field: picked})
        ports.append(group)
    return server.model_copy(update={"ports": ports})


def _production_servers(loaded: LoadedDesign, server: GpuServer) -> int:
    """The production servers: as many as asked, or the GPUs asked in whole servers; at most MAX_GPUS."""
    design = loaded.design
    if design.compute.servers is not None:
        production = design.compute.servers
    else:
        gpus = design.compute.gpus or 0
        if gpus % server.gpu.count:
            _fail(
                loaded,
                ("compute", "gpus"),
                f"{gpus} GPUs is not a whole number of {server.model} servers ({server.gpu.count} GPUs each); "
                f"use {gpus // server.gpu.count * server.gpu.count or server.gpu.count} or "
                f"{math.ceil(gpus / server.gpu.count) * server.gpu.count}",
            )
        production = gpus // server.gpu.count
    count_field = ("compute", "servers") if design.compute.servers is not None else ("compute", "gpus")
    if production * server.gpu.count > MAX_GPUS:
        _fail(
            loaded,
            count_field,
            f"{production:,} {server.model} servers hold {production * server.gpu.count:,} GPUs; the largest "
            f"supported cluster is {MAX_GPUS:,} GPUs ({MAX_GPUS // server.gpu.count:,} of these servers)",
        )
    return production


def _server_storage_oversubscription(loaded: LoadedDesign, system: RackSystem | None) -> float:
    """The servers' storage leaves' down:up: the design's when it sets it, else a combined storage and in-band
    fabric's own figure from the rack system (the GB200 RA's 5:3), else the design's default."""
    network = loaded.design.storage_network
    own = system.storage_inband_oversubscription if system else None
    if own is not None and "server_oversubscription" not in network.model_fields_set:
        return own
    return network.server_oversubscription


def _compute_fabric(loaded: LoadedDesign, server: GpuServer) -> _Fabric:
    """The compute fabric's technology (the design's, else the servers' ports'), a switch that speaks it, the fabric
    managers (UFM on InfiniBand only) and the planes."""
    fabric, catalog = loaded.design.compute_fabric, loaded.catalog
    port_technology = technology_of(server.port_groups("compute")) or "infiniband-ndr"
    technology = fabric.technology or ("roce" if port_technology == "ethernet" else port_technology)
    compute_switch = _switch(loaded, ("compute_fabric", "switch"), fabric.switch or DEFAULT_SWITCH[technology])
    wanted = switch_technology(technology)
    if compute_switch.technology != wanted:
        message = f"{compute_switch.id} is a {compute_switch.technology} switch; the compute fabric is {technology}"
        _fail(loaded, ("compute_fabric", "switch"), message)
    _has_fabric_ports(loaded, ("compute_fabric", "switch"), compute_switch, "the compute fabric")
    manager: Appliance | None = None
    managers = fabric.fabric_managers
    if fabric.fabric_manager == "auto":
        manager_id = DEFAULT_FABRIC_MANAGER.get(technology)
        if manager_id and manager_id not in catalog.parts:
            manager_id = DEFAULT_FABRIC_MANAGER["infiniband-ndr"]
    else:
        manager_id = fabric.fabric_manager
    if manager_id and managers:
        if technology == "roce":
            _fail(loaded, ("compute_fabric", "fabric_manager"), "UFM manages InfiniBand fabrics; use null for RoCE")
        manager = catalog.get(manager_id, Appliance)
    planes = _planes(loaded, server, technology)
    own_leaf = fabric.fabric_manager_ports == "own-leaf"
    return _Fabric(technology, compute_switch, manager, managers, own_leaf, planes)


def _spares(loaded: LoadedDesign, compute: _Compute, fabric: _Fabric) -> int:
    """The hot spares: the design's (whole racks of a rack-scale system, at most one per server), else one per SU."""
    system, _server, rails, production, su = compute
    spares = loaded.design.compute.spare_servers
    if system is not None:
        spares = spares or 0
        if spares % system.compute_trays:
            _fail(
                loaded,
                ("compute", "spare_servers"),
                f"{spares} spare trays is not a whole number of {system.model} racks ({system.compute_trays} "
                "trays each): a rack-scale system is bought and placed whole; give spare racks' trays or 0",
            )
    elif spares is None:
        manager = fabric.manager
        spares = default_spares(
            production, su, rails, manager, fabric.managers if manager and not fabric.own_leaf else 0
        )
    elif spares > production:
        message = (
            f"{spares} hot spares for {production} production servers; at most one spare per server ({production})"
        )
        _fail(loaded, ("compute", "spare_servers"), message)
    return spares


def _storage_network(loaded: LoadedDesign, server: GpuServer, fabric: _Fabric) -> _StorageNetwork:
    """The storage network's switch and fabric managers."""
    storage_network = loaded.design.storage_network
    storage_port_technology = technology_of(server.port_groups("storage")) or "infiniband-ndr"
    storage_technology = storage_network.technology or storage_port_technology
    storage_switch = _switch(
        loaded, ("storage_network", "switch"), storage_network.switch or DEFAULT_SWITCH[storage_technology]
    )
    _has_fabric_ports(loaded, ("storage_network", "switch"), storage_switch, "the storage network")
    # an InfiniBand storage fabric is a subnet of its own with its own UFM pair (H100 RA Table 7: 4 UFM appliances,
    # Table 8: UFM-leaf splitters and UFM transceivers on both fabrics)
    storage_managers = storage_network.fabric_managers
    if storage_managers is None:
        storage_managers = fabric.managers if fabric.manager else 0
    storage_manager: Appliance | None = None
    if storage_managers and storage_switch.technology in DEFAULT_FABRIC_MANAGER:
        storage_manager = loaded.catalog.get(DEFAULT_FABRIC_MANAGER[storage_switch.technology], Appliance)
    elif storage_managers and storage_network.fabric_managers:
        _fail(loaded, ("storage_network", "fabric_managers"), "UFM manages InfiniBand fabrics; use 0 on Ethernet")
    return _StorageNetwork(storage_switch, storage_manager, storage_managers)


def filesystem_entries(design: Design) -> list[tuple[tuple[str | int, ...], ParallelFilesystem]]:
    """Every filesystem of a design with where it stands in the file: the parallel filesystem first."""
    further = [(("filesystems", i), fs) for i, fs in enumerate(design.filesystems)]
    return [(("parallel_filesystem",), design.parallel_filesystem), *further]


def _filesystems(loaded: LoadedDesign, su_count: float, switch: Switch) -> tuple[list[ResolvedFilesystem], bool]:
    """Every filesystem planned (new: its blocks; existing: its links) and whether the object store shares the
    parallel filesystem's blocks."""
    spec = loaded.design.object_storage
    shared = bool(spec and spec.shared_with_parallel_filesystem)
    names = _filesystem_names(loaded)
    result = []
    for (where, fs), (name, mount) in zip(filesystem_entries(loaded.design), names, strict=True):
        primary = where == ("parallel_filesystem",)
        prefix = "pfs" if primary and not fs.existing else name  # new parallel filesystem blocks: pfs-01 ...
        if fs.existing:
            if primary and shared:
                _fail(
                    loaded,
                    ("object_storage", "shared_with_parallel_filesystem"),
                    "the parallel filesystem is the site's existing one, so this plan has no blocks to serve S3 "
                    "from: drop shared_with_parallel_filesystem (the object store then gets blocks of its own)",
                )
            _existing_links_speak(loaded, where, fs, switch)
            result.append(_existing_filesystem(where, fs, (name, mount, prefix)))
        else:
            result.append(
                _new_filesystem(loaded, where, fs, su_count, switch, (name, mount, prefix), shared and primary)
            )
    return result, shared


def _filesystem_names(loaded: LoadedDesign) -> list[tuple[str, str]]:
    """Each filesystem's name and mount point: named (further filesystems must be), unique, not a name the
    plan's own devices start with."""
    seen: dict[tuple[str, str], str] = {}
    result = []
    for where, fs in filesystem_entries(loaded.design):
        if fs.name is None and where[0] == "filesystems":
            _fail(loaded, where, "a further filesystem needs a name (its devices and mount point carry it), e.g. home")
        name = fs.name or fs.kind
        mount = fs.mount or f"/{name}"
        if fs.name in RESERVED_FILESYSTEM_NAMES:
            allowed = ", ".join(RESERVED_FILESYSTEM_NAMES)
            _fail(loaded, (*where, "name"), f"{fs.name!r} starts the plan's own device names ({allowed}); use another")
        for key, value in (("name", name), ("mount", mount)):
            if (key, value) in seen:
                _fail(loaded, (*where, key), f"{value!r} is already the {key} of {seen[(key, value)]}; use another")
            seen[(key, value)] = ".".join(map(str, where))
        result.append((name, mount))
    return result


def _new_filesystem(
    loaded: LoadedDesign,
    where: tuple[str | int, ...],
    fs: ParallelFilesystem,
    su_count: float,
    switch: Switch,
    names: tuple[str, str, str],
    shared: bool,
) -> ResolvedFilesystem:
    """A new filesystem's blocks: enough for the capacity and the throughput asked, with a shared S3 store's on
    top, of a block whose ports speak the storage network's kind."""
    loc = (*where, "block" if fs.block else "kind")
    block = _storage_block(loaded, fs.block, fs.kind, "parallel-filesystem", loc, switch.technology)
    _speaks_the_storage_network(loaded, loc, block, fs.kind, switch)
    read, write, throughput_basis = throughput_target(fs, su_count)
    spec = loaded.design.object_storage
    if spec and shared:
        if spec.block:
            _fail(loaded, ("object_storage", "block"), "a shared object store has no blocks of its own: drop block")
        if "s3" not in block.filesystems:
            _fail(
                loaded,
                ("object_storage", "shared_with_parallel_filesystem"),
                f"{block.id} serves {', '.join(block.filesystems)}, not S3; only a platform that serves files and "
                "objects from one store (e.g. VAST) can share",
            )
    # a shared object store takes its capacity and throughput from the filesystem's blocks
    shared_tb = spec.capacity_tb if spec and shared else 0.0
    shared_read = (spec.throughput_gbytes_per_s or 0.0) if spec and shared else 0.0
    blocks = _blocks(
        loaded,
        block,
        {
            (*where, "read_gbytes_per_s"): ((read or 0.0) + shared_read) / block.read_gbytes_per_s,
            (*where, "write_gbytes_per_s"): (write or 0.0) / block.write_gbytes_per_s,
            (*where, "capacity_tb"): ((fs.capacity_tb or 0) + shared_tb) / block.capacity_tb,
        },
    )
    capacity_basis = ""
    if not fs.capacity_tb:
        needs = ((read or 0.0) + shared_read, write or 0.0, shared_tb, blocks * block.capacity_tb)
        capacity_basis = default_capacity_basis(
            block, blocks, *needs, field=".".join(map(str, (*where, "capacity_tb")))
        )
    name, mount, prefix = names
    return ResolvedFilesystem(
        name, fs.kind, mount, prefix, block, blocks, read, write, fs.capacity_tb, throughput_basis, capacity_basis
    )


def existing_parts(loaded: LoadedDesign) -> dict[str, StorageBlock]:
    """The parts the design's existing filesystems' hand-offs stand for (their stated links as ports), beside the
    catalog's: the plan and a plan lock name them."""
    parts = {}
    names = _filesystem_names(loaded)
    for (where, fs), (name, mount) in zip(filesystem_entries(loaded.design), names, strict=True):
        if fs.existing:
            part = existing_part(_existing_filesystem(where, fs, (name, mount, name)))
            parts[part.id] = part
    return parts


def _existing_links_speak(
    loaded: LoadedDesign, where: tuple[str | int, ...], fs: ParallelFilesystem, switch: Switch
) -> None:
    """An existing filesystem's links join the storage network only if they speak what it speaks."""
    links = fs.links
    assert links is not None  # the schema requires links of an existing filesystem
    network = _family(switch.technology)
    if links.network != network:
        _fail(
            loaded,
            (*where, "links", "network"),
            f"the existing {fs.kind} filesystem's links speak {links.network}; the storage network is "
            f"{switch.technology} ({switch.id}), so they cannot join it. What works: storage_network.technology: "
            f"{'infiniband-ndr' if links.network == 'infiniband' else 'ethernet'}, or links the filesystem has on "
            f"{network} (e.g. through its {network} gateways or routers)",
        )


def _existing_filesystem(
    where: tuple[str | int, ...], fs: ParallelFilesystem, names: tuple[str, str, str]
) -> ResolvedFilesystem:
    """The site's existing filesystem: not bought; reached over its stated links. Its throughput is what the
    design states, else its links' line rate (an upper bound, named so)."""
    links = fs.links
    assert links is not None  # the schema requires links of an existing filesystem
    line_rate = links.count * links.speed_gbps / 8
    basis = (
        "the design's figures"
        if fs.read_gbytes_per_s and fs.write_gbytes_per_s
        else f"its links' line rate ({links.count} x {links.speed_gbps}G = {line_rate:,.0f} GB/s), an upper bound "
        "where the design states no figure"
    )
    read = fs.read_gbytes_per_s or line_rate
    write = fs.write_gbytes_per_s or line_rate
    cage = links.cage_type or _default_cage(links.speed_gbps, links.network)
    name, mount, prefix = names
    return ResolvedFilesystem(
        name, fs.kind, mount, prefix, None, 0, read, write, fs.capacity_tb, basis, "", links=links, cage_type=cage
    )


def _default_cage(speed_gbps: float, network: str) -> str:
    """The cage a port of this speed usually has: QSFP28 at 100G, QSFP56 for HDR/NDR200 InfiniBand, QSFP112 for
    200GbE (as on ConnectX-7 200G adapters), OSFP at 400G and above."""
    if speed_gbps <= 100:
        return "qsfp28"
    if speed_gbps <= 200:
        return "qsfp56" if network == "infiniband" else "qsfp112"
    return "osfp"


def _family(technology: str | None) -> str:
    """infiniband or ethernet: what a port or switch of this technology joins."""
    return "infiniband" if technology and technology.startswith("infiniband") else "ethernet"


def _speaks_the_storage_network(
    loaded: LoadedDesign, loc: tuple[str | int, ...], block: StorageBlock, kind: str, switch: Switch
) -> None:
    """A block whose storage ports speak one network kind only (the catalog says which) cannot join a storage
    network of the other: say so, and what would work."""
    technology = technology_of(block.port_groups("storage"))
    network = _family(switch.technology)
    if technology is None or _family(technology) == network:
        return
    ports = ", ".join(f"{g.port_count} x {g.speed_gbps:g}G {g.cage_type}" for g in block.port_groups("storage"))
    others = [
        b.id
        for b in loaded.catalog.of_kind(StorageBlock)
        if b.tier == "parallel-filesystem"
        and any(fs.startswith(kind) for fs in b.filesystems)
        and _family(technology_of(b.port_groups("storage")) or switch.technology) == network
    ]
    instead = (
        f"block: {' or '.join(others)}"
        if others
        else f"a {kind} block whose ports speak {network} (the catalog has none: add one in a design catalog file, "
        "catalog:)"
    )
    _fail(
        loaded,
        loc,
        f"{block.id}'s storage ports ({ports}) speak {_family(technology)} only (catalog: {technology}); the storage "
        f"network is {switch.technology} ({switch.id}). What works: storage_network.technology: {technology}, or "
        f"{instead}, or, for a filesystem the site has, existing: true with the links it has on {network}",
    )


def throughput_target(pfs: ParallelFilesystem, su_count: float) -> tuple[float | None, float | None, str]:
    """The read and write target a filesystem is sized for and where it comes from. A performance level stated
    (or nothing stated at all: the RA gives throughput per SU and no capacity) gives the RA's per-SU figures for
    what the design does not state; figures stated alone are the target, nothing added beside them; a capacity
    alone sets no throughput target (the delivered throughput is shown, not a target imposed)."""
    stated = pfs.model_fields_set & {"read_gbytes_per_s", "write_gbytes_per_s", "performance_level"}
    if not stated and pfs.capacity_tb:
        return None, None, ""
    if stated and "performance_level" not in stated:
        return pfs.read_gbytes_per_s, pfs.write_gbytes_per_s, "the design's figures"
    level_read, level_write = SU_STORAGE_GBYTES_PER_S[pfs.performance_level]
    read = pfs.read_gbytes_per_s or level_read * su_count
    write = pfs.write_gbytes_per_s or level_write * su_count
    if pfs.read_gbytes_per_s and pfs.write_gbytes_per_s:
        return read, write, "the design's figures"
    return (
        read,
        write,
        f"the RA's '{pfs.performance_level}' level: {level_read:g}/{level_write:g} GB/s per SU "
        f"x {su_count:.3g} SUs ({SU_STORAGE_SOURCE})",
    )


def _object_storage(loaded: LoadedDesign) -> tuple[StorageBlock, int]:
    """An object store of its own: its block and the blocks its capacity and throughput need."""
    spec = loaded.design.object_storage
    assert spec is not None
    object_block = _storage_block(loaded, spec.block, None, "object", ("object_storage", "block"))
    object_blocks = _blocks(
        loaded,
        object_block,
        {
            ("object_storage", "capacity_tb"): spec.capacity_tb / object_block.capacity_tb,
            ("object_storage", "throughput_gbytes_per_s"): (spec.throughput_gbytes_per_s or 0)
            / object_block.read_gbytes_per_s,
        },
    )
    return object_block, object_blocks


def _management(loaded: LoadedDesign, server: GpuServer, object_block: StorageBlock | None) -> _Management:
    """The in-band switch (fast enough for the fastest in-band port) and the out-of-band access and aggregation
    switches."""
    mgmt, catalog = loaded.design.management, loaded.catalog
    # the fastest port the in-band network takes: the servers' and head nodes' in-band ports and the object store's
    # (its S3 traffic runs on in-band); 200G ports take SN5600 ports split in two by 1:2 splitter fibres
    head_node = catalog.get(mgmt.management_server, Appliance)
    groups = server.port_groups("inband") + head_node.port_groups("inband")
    groups += object_block.port_groups("storage") if object_block else []
    inband_speed = max((g.speed_gbps for g in groups), default=100)
    inband_switch = _switch(
        loaded, ("management", "inband_switch"), mgmt.inband_switch or ("sn4600c" if inband_speed <= 100 else "sn5600")
    )
    _has_fabric_ports(loaded, ("management", "inband_switch"), inband_switch, "the in-band management network")
    oob_switch = _switch(loaded, ("management", "oob_switch"), mgmt.oob_switch)
    oob_ports = {role: sum(g.port_count for g in oob_switch.port_groups(role)) for role in ("access", "uplink")}
    if oob_ports["access"] == 0 or oob_ports["uplink"] + oob_switch.radix < 2:
        message = f"{oob_switch.id} has no access ports and two uplinks for the out-of-band network (e.g. sn2201)"
        _fail(loaded, ("management", "oob_switch"), message)
    oob_aggregation = _switch(loaded, ("management", "oob_aggregation_switch"), mgmt.oob_aggregation_switch)
    _has_fabric_ports(loaded, ("management", "oob_aggregation_switch"), oob_aggregation, "the out-of-band uplinks")
    return _Management(inband_switch, oob_switch, oob_aggregation)


def _scalable_units(loaded: LoadedDesign, compute: _Compute, fabric: _Fabric, spares: int) -> tuple[int, int, int]:
    """The SUs filled now, and the growth reserves of the compute fabric and of the storage network."""
    system, server, rails, production, su = compute
    manager = fabric.manager
    # the UFM's server slots in SU 1 (none on their own leaf or beside a rack-scale SU's trays)
    taken = (
        0 if system is not None or fabric.own_leaf else manager_slots(manager, fabric.managers if manager else 0, rails)
    )
    units = math.ceil((production + spares + taken) / su)
    final = _final_units(
        loaded, ("compute_fabric", "final_scalable_units"), loaded.design.compute_fabric.final_scalable_units, units
    )
    if final * su * server.gpu.count > MAX_GPUS:
        _fail(
            loaded,
            ("compute_fabric", "final_scalable_units"),
            f"{final} scalable units of {su} x {server.model} hold {final * su * server.gpu.count:,} GPUs; the "
            f"largest supported cluster is {MAX_GPUS:,} GPUs: at most {MAX_GPUS // (su * server.gpu.count)} "
            "scalable units",
        )
    storage_final = _final_units(
        loaded,
        ("storage_network", "final_scalable_units"),
        loaded.design.storage_network.final_scalable_units or final or None,
        units,
    )
    return units, final, storage_final


def default_capacity_basis(
    block: StorageBlock,
    blocks: int,
    read: float,
    write: float,
    shared_tb: float,
    capacity_tb: float,
    field: str = "parallel_filesystem.capacity_tb",
) -> str:
    """How a filesystem without capacity_tb got its capacity: the blocks its throughput needs (the RA gives
    throughput per SU and no capacity), each with the catalog's usable capacity, with the arithmetic."""
    needs = f"{read:,.0f}/{block.read_gbytes_per_s:g} read and {write:,.0f}/{block.write_gbytes_per_s:g} write"
    share = f", and the shared S3 store's {shared_tb:,.0f} TB" if shared_tb else ""
    return (
        f"capacity derived, as the RA gives storage throughput per SU and no capacity: {blocks} x {block.id} "
        f"(the blocks the throughput needs: {needs} GB/s per block, rounded up{share}) x {block.capacity_tb:,g} TB "
        f"usable each = {capacity_tb:,.0f} TB; set {field} for the datasets and checkpoints"
    )


def _final_units(loaded: LoadedDesign, loc: tuple[str, ...], final: int | None, units: int) -> int:
    """A growth reserve (0: none), never below the scalable units the design fills now."""
    if final is None:
        return 0
    if final < units:
        _fail(
            loaded,
            loc,
            f"{final} is fewer than the {units} scalable units this design already fills (servers, spares and "
            f"fabric-manager slots); the final size is at least {units}",
        )
    # kept when the design fills it: the last phase is planned as the earlier ones planned it (a partly filled
    # last SU, and the floor and the tiers above the leaves as the final hall has them)
    return final


def _planes(loaded: LoadedDesign, server: GpuServer, technology: str) -> int:
    """Compute-fabric planes: the design's, or the server's Spectrum-X default on RoCE (2 on ConnectX-8, whose
    800G port runs as 2 x 400GbE, one per plane: DGX B300 RA, network fabrics), else one."""
    asked = loaded.design.compute_fabric.planes
    native = next((g.ethernet_planes for g in server.port_groups("compute") if g.ethernet_planes), None)
    if technology != "roce":
        if asked and asked > 1:
            _fail(loaded, ("compute_fabric", "planes"), f"planes split Ethernet ports; this fabric is {technology}")
        return 1
    if asked is None:
        return native or 1
    if asked != (native or 1):
        can = f"splits into {native} planes" if native else "does not split into planes"
        _fail(loaded, ("compute_fabric", "planes"), f"{server.id}'s compute port {can}; use {native or 1}")
    return asked


def _refuse_a_lone_tray(loaded: LoadedDesign, server: GpuServer) -> None:
    """A tray of a rack-scale system only exists inside its rack: a design names the system."""
    systems = [p for p in loaded.catalog.of_kind(RackSystem) if p.compute_tray == server.id]
    if systems:
        _fail(
            loaded,
            ("compute", "server"),
            f"{server.id} is a compute tray of the {systems[0].model}; name the rack-scale system "
            f"({', '.join(s.id for s in systems)}), which is placed whole",
        )


def _rack_system_sizes(loaded: LoadedDesign, system: RackSystem, tray: GpuServer, trays: int) -> int:
    """Whole racks only (one rack, one NVLink domain), and scalable units of whole racks: 8 racks per SU as the
    GB200 SuperPOD RA unless the design says otherwise. Returns the trays of one scalable unit."""
    per_rack = system.compute_trays
    if trays % per_rack:
        gpus = per_rack * tray.gpu.count
        racks = trays / per_rack
        _fail(
            loaded,
            ("compute", "gpus" if loaded.design.compute.gpus is not None else "servers"),
            f"{trays * tray.gpu.count} GPUs ({trays} trays) is not a whole number of {system.model} racks "
            f"({gpus} GPUs, {per_rack} trays each); use {math.floor(racks) * gpus or gpus} or "
            f"{math.ceil(racks) * gpus} GPUs",
        )
    fabric = loaded.design.compute_fabric
    if "scalable_unit_servers" not in fabric.model_fields_set:
        return RACK_SYSTEMS_PER_SU * per_rack
    if fabric.scalable_unit_servers % per_rack:
        _fail(
            loaded,
            ("compute_fabric", "scalable_unit_servers"),
            f"a scalable unit of {system.model} racks holds whole racks: a multiple of {per_rack} trays "
            f"(the RA's SU is {RACK_SYSTEMS_PER_SU} racks = {RACK_SYSTEMS_PER_SU * per_rack} trays)",
        )
    return fabric.scalable_unit_servers


def default_spares(production: int, su: int, rails: int, manager: Appliance | None, managers: int) -> int:
    """One hot spare per scalable unit, in slots the production servers leave free: never a new SU
    just for spares (its leaves would cost more than the spare)."""
    taken = manager_slots(manager, managers, rails)
    units = math.ceil((production + taken) / su)
    free = units * su - taken - production
    return min(units, free)


def _switch(loaded: LoadedDesign, loc: tuple[str, ...], part_id: str) -> Switch:
    try:
        return loaded.catalog.get(part_id, Switch)
    except KeyError:
        _fail(loaded, loc, f"switch {part_id!r} is not in the catalog")


def _storage_block(
    loaded: LoadedDesign,
    part_id: str | None,
    kind: str | None,
    tier: str,
    loc: tuple[str | int, ...],
    network: str | None = None,
) -> StorageBlock:
    """The block the design names (of the tier and kind), else the catalog's first that fits, preferring one whose
    storage ports speak the storage network's kind."""
    catalog: Catalog = loaded.catalog
    if part_id:
        if not isinstance(catalog.parts.get(part_id), StorageBlock):
            known = ", ".join(b.id for b in catalog.of_kind(StorageBlock) if b.tier == tier)
            _fail(loaded, loc, f"storage building block {part_id!r} is not in the catalog; its {tier} blocks: {known}")
        block = catalog.get(part_id, StorageBlock)
        if block.tier != tier:
            _fail(loaded, loc, f"{part_id} is a {block.tier} block, not {tier}")
        if kind and not any(fs.startswith(kind) for fs in block.filesystems):
            _fail(loaded, loc, f"{part_id} serves {', '.join(block.filesystems)}, not {kind}")
        return block
    fitting = [
        b
        for b in catalog.of_kind(StorageBlock)
        if b.tier == tier and (kind is None or any(fs.startswith(kind) for fs in b.filesystems))
    ]
    if not fitting:
        _fail(loaded, loc, f"the catalog has no {tier} building block for {kind or 'object storage'}")
    speaking = [b for b in fitting if _family(technology_of(b.port_groups("storage")) or network) == _family(network)]
    return (speaking or fitting)[0]


def _has_fabric_ports(loaded: LoadedDesign, loc: tuple[str, ...], switch: Switch, network: str) -> None:
    """A switch that carries a network's tiers needs ports that go down or up (an access switch such as the
    SN2201 has only 1G edge ports and a few uplinks)."""
    if switch.radix == 0:
        _fail(
            loaded,
            loc,
            f"{switch.id} has no fabric ports (role 'fabric') in the catalog, so it cannot carry {network}; "
            "choose a switch with fabric ports",
        )


def _blocks(loaded: LoadedDesign, block: StorageBlock, needs: dict[tuple[str | int, ...], float]) -> int:
    """The building blocks that meet every need (capacity, read, write), each need given as blocks; more than
    MAX_STORAGE_BLOCKS is refused at the field that asks for them."""
    loc, most = max(needs.items(), key=lambda item: item[1])
    if most > MAX_STORAGE_BLOCKS:
        _fail(
            loaded,
            loc,
            f"needs {most:,.0f} {block.id} building blocks; at most {MAX_STORAGE_BLOCKS:,} are supported "
            "(use a smaller value or a larger building block)",
        )
    return max(1, *(math.ceil(need) for need in needs.values()))


def _fail(loaded: LoadedDesign, loc: tuple[str | int, ...], message: str) -> NoReturn:
    raise DesignError([Problem(*loaded.where(*loc), ".".join(map(str, loc)), message)])


def check_scheduler(loaded: LoadedDesign, production_servers: int, gpus_per_server: int) -> None:
    """Scheduler settings that depend on the cluster's size: the split leaves servers on both sides, and the
    teams' quotas fit the GPUs Kubernetes runs."""
    scheduler = loaded.design.scheduler
    kubernetes_servers = production_servers
    if scheduler.kind == "both":
        kubernetes_servers = scheduler.kubernetes_servers or 0
        if kubernetes_servers >= production_servers:
            message = (
                f"{kubernetes_servers} leaves no production server for Slurm; the design has {production_servers} "
                f"(use at most {production_servers - 1})"
            )
            _fail(loaded, ("scheduler", "kubernetes_servers"), message)
    gpus = kubernetes_servers * gpus_per_server
    quota = sum(t.gpus for t in scheduler.kubernetes.teams)
    if quota > gpus:
        message = f"the teams' quotas add up to {quota} GPUs; Kubernetes runs {gpus} production GPUs"
        _fail(loaded, ("scheduler", "kubernetes", "teams"), message)
