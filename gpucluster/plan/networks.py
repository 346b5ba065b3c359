"""The hosts and the four networks: compute fabric, storage network, in-band and out-of-band management.

Each network is its own set of switches; no storage or management link touches a compute-fabric
switch. Host ports are taken from the catalog by role (compute ports in rail order).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace

from gpucluster.catalog.load import Catalog
from gpucluster.catalog.ports import PortPool, device_ports
from gpucluster.catalog.schema import Appliance, GpuServer, PortGroup, RackMounted, RackSystem, StorageBlock, Switch
from gpucluster.design.schema import ExistingLinks
from gpucluster.plan.fabric import ClosResult, HostPort, LeafGroup, build_clos, leaf_host_ports, splits_onto
from gpucluster.plan.model import Device, Plan, PlanDraft
from gpucluster.plan.rack_fabric import RackAlignedShape, build_rack_aligned, rack_aligned_shape


@dataclass(frozen=True)
class ResolvedFilesystem:
    """One filesystem as planned: a new one's blocks and the figures it was sized for, or an existing one's
    stated links (cabled to the storage leaves, nothing bought)."""

    name: str
    kind: str
    mount: str
    device_prefix: str  # new: blocks <prefix>-01 ...; existing: the link hand-off device <prefix>
    block: StorageBlock | None  # None: existing
    blocks: int
    read_gbytes_per_s: float | None  # new: the target sized for (None: none asked); existing: as stated
    write_gbytes_per_s: float | None
    capacity_tb: float | None  # new: as asked; existing: as stated
    throughput_basis: str = ""
    capacity_basis: str = ""
    links: ExistingLinks | None = None  # existing: its client-facing links
    cage_type: str = ""  # existing: its links' cage

    @property
    def existing(self) -> bool:
        return self.block is None


@dataclass(frozen=True)
class Resolved:
    """The design with every default filled in from the catalog: what the planner actually builds."""

    server: GpuServer
    production_servers: int
    spare_servers: int
    su_servers: int
    rails: int
    planes: int  # compute fabric planes: 2 for ConnectX-8 on Spectrum-X (each GPU 2 x 400GbE, one per plane)
    compute_technology: str
    compute_switch: Switch
    compute_oversubscription: float
    fabric_manager: Appliance | None
    fabric_managers: int
    storage_switch: Switch
    storage_server_oversubscription: float
    storage_block_oversubscription: float
    pfs_block: StorageBlock | None  # None: the parallel filesystem is the site's existing one
    pfs_blocks: int
    pfs_read_gbytes_per_s: float | None  # the target sized for; None: none asked (sized by capacity)
    pfs_write_gbytes_per_s: float | None
    pfs_capacity_tb: float
    object_block: StorageBlock | None
    object_blocks: int
    inband_switch: Switch
    inband_oversubscription: float
    oob_switch: Switch
    oob_aggregation_switch: Switch
    management_server: Appliance
    management_servers: int
    # the management servers' host names where they are a rack-scale design's control plane (registry
    # CONTROL_PLANE); empty: head-01 .. head-NN
    management_server_names: tuple[str, ...] = ()
    # what the design asked of storage (the blocks above are what is delivered); None: no figure asked
    pfs_capacity_asked_tb: float | None = None
    # where the asked throughput came from: the design's own figures or the RA's per-SU level (named in views)
    pfs_throughput_basis: str = ""
    # how a filesystem without capacity_tb got its capacity (the blocks its throughput needs); "" when asked
    pfs_capacity_basis: str = ""
    object_capacity_asked_tb: float | None = None
    object_throughput_asked_gbytes_per_s: float | None = None
    object_shared: bool = False  # S3 served by the parallel filesystem's blocks (no object blocks of its own)
    rack_system: RackSystem | None = None  # the design names a rack-scale system; `server` is its compute tray
    fabric_manager_leaf: bool = False  # the fabric managers on a leaf of their own, outside the SUs
    storage_fabric_manager: Appliance | None = None  # UFM of an InfiniBand storage fabric (its own subnet)
    storage_fabric_managers: int = 0
    scalable_units: int = 1  # the SUs the servers, spares and fabric-manager slots fill now
    final_scalable_units: int = 0  # the growth reserve of the compute fabric (and in-band): SUs at the final size
    storage_final_scalable_units: int = 0  # the storage network's growth reserve
    # the trays' storage and in-band ports and the control plane's on one Ethernet fabric (network "storage"), as the
    # GB200 RA's "Storage and In-band Ethernet Fabric": no in-band network of its own
    combined_storage_inband: bool = False
    filesystems: tuple[ResolvedFilesystem, ...] = ()  # every filesystem, the parallel filesystem first

    @property
    def su_manager_slots(self) -> int:
        """Server slots of SU 1 the fabric managers take: none when they have a leaf of their own."""
        if self.fabric_manager_leaf:
            return 0
        return manager_slots(self.fabric_manager, self.fabric_managers, self.rails)

    @property
    def servers(self) -> int:
        return self.production_servers + self.spare_servers


def host_ports(device: str, part: RackMounted, role: str, purpose: str) -> list[HostPort]:
    """A device's ports of one role, in catalog (for compute: rail) order."""
    pool = device_ports(part).get(role)
    if pool is None:
        return []
    return [
        HostPort(device, name, cage, pool.speed_gbps, index + 1 if role == "compute" else None, purpose, pool.cage_type)
        for index, (name, cage) in enumerate(zip(pool.names, pool.cages, strict=True))
    ]


def technology_of(groups: list[PortGroup]) -> str | None:
    return next((g.technology for g in groups if g.technology), None)


def add_gpu_servers(plan: PlanDraft, r: Resolved, prefix: str) -> list[Device]:
    """Servers in scalable units; the fabric managers take server slots in SU 1, as in the RA (unless they have a
    leaf of their own). A last SU may hold fewer servers: it still gets its own leaves."""
    first_su_slots = r.su_servers - r.su_manager_slots
    if first_su_slots <= 0:
        raise ValueError("the fabric managers need more leaf ports than one scalable unit has")
    total = r.servers
    width = max(3, len(str(total)))
    servers = []
    su, slot = 1, 0
    for i in range(1, total + 1):
        capacity = first_su_slots if su == 1 else r.su_servers
        if slot == capacity:
            su, slot = su + 1, 0
        slot += 1
        servers.append(
            plan.add(Device(f"{prefix}{i:0{width}d}", r.server.id, "gpu-server", u_height=r.server.u_height, su=su))
        )
    # Hot spares: the last server of each scalable unit, last units first, so each SU keeps one close by.
    by_su: dict[int, list[Device]] = {}
    for server in servers:
        by_su.setdefault(server.su or 0, []).append(server)
    sus = sorted(by_su, reverse=True)
    marked = 0
    depth = 1
    while marked < r.spare_servers:
        for s in sus:
            if marked == r.spare_servers:
                break
            if depth <= len(by_su[s]):
                by_su[s][-depth].spare = True
                marked += 1
        depth += 1
    return servers


def manager_slots(manager: Appliance | None, managers: int, rails: int) -> int:
    """Server slots of SU 1 the fabric managers' compute-fabric ports take (one port per rail per slot)."""
    ports = managers * sum(g.port_count for g in manager.port_groups("fabric")) if manager else 0
    return math.ceil(ports / rails)


def add_appliances(plan: PlanDraft, r: Resolved) -> None:
    if r.fabric_manager:
        for i in range(1, r.fabric_managers + 1):
            plan.add(Device(f"ufm-{i:02d}", r.fabric_manager.id, "fabric-manager", u_height=r.fabric_manager.u_height))
    if r.storage_fabric_manager:  # the storage fabric's own UFM pair (H100 RA Table 7: 4 UFM, 2 per fabric)
        part = r.storage_fabric_manager
        for i in range(1, r.storage_fabric_managers + 1):
            plan.add(
                Device(f"ufm-storage-{i:02d}", part.id, "fabric-manager", u_height=part.u_height, network="storage")
            )
    names = r.management_server_names or tuple(f"head-{i:02d}" for i in range(1, r.management_servers + 1))
    for name in names:
        plan.add(Device(name, r.management_server.id, "management-server", u_height=r.management_server.u_height))
    add_filesystems(plan, r)
    if r.object_block:
        width = max(2, len(str(r.object_blocks)))
        for i in range(1, r.object_blocks + 1):
            plan.add(
                Device(f"obj-{i:0{width}d}", r.object_block.id, "object-storage", u_height=r.object_block.u_height)
            )


def add_filesystems(plan: PlanDraft, r: Resolved) -> None:
    """Every filesystem's devices: a new one's blocks (<prefix>-01 ...), an existing one's link hand-off (one
    zero-U device named <prefix> whose ports are its stated links; its part is not bought)."""
    fallback = ResolvedFilesystem("pfs", "", "", "pfs", r.pfs_block, r.pfs_blocks, None, None, None)
    for fs in r.filesystems or (fallback,):
        if fs.block is None:
            plan.add(Device(fs.device_prefix, existing_part(fs).id, "existing-storage"))
            continue
        width = max(2, len(str(fs.blocks)))
        for i in range(1, fs.blocks + 1):
            plan.add(Device(f"{fs.device_prefix}-{i:0{width}d}", fs.block.id, "storage", u_height=fs.block.u_height))


def existing_part(fs: ResolvedFilesystem) -> StorageBlock:
    """The part an existing filesystem's hand-off device stands for: its stated links as storage ports, no
    height, no power (the site's system, already installed and powered), its capacity and throughput as stated."""
    links = fs.links
    assert links is not None and fs.capacity_tb is not None
    return StorageBlock(
        kind="storage_block",
        id=f"existing-{fs.name}",
        vendor="the site",
        model=f"existing {fs.kind} filesystem {fs.name}",
        description="the site's filesystem, reached over the links the design states; not bought by this plan",
        tier="parallel-filesystem",
        filesystems=[fs.kind],
        capacity_tb=fs.capacity_tb,
        read_gbytes_per_s=fs.read_gbytes_per_s or 0.0,
        write_gbytes_per_s=fs.write_gbytes_per_s or 0.0,
        u_height=0,
        power_typical_w=0,
        power_max_w=0,
        ports=[
            PortGroup(
                role="storage",
                cage_type=fs.cage_type,  # type: ignore[arg-type]
                cages=links.count,
                speed_gbps=links.speed_gbps,
                name_format="link{index}",
            )
        ],
    )


def rail_group_units(r: Resolved) -> int:
    """Whole scalable units whose servers share one leaf per rail: as many as a leaf's host ports serve.

    A QM9700 leaf takes 32 hosts (one 32-server SU per rail, the InfiniBand RAs); an SN5600 or SN5610 takes
    64 at 400G, so on Spectrum-X one rail leaf serves 64 nodes (B300 RA Table 3) and two 32-server SUs of
    DGX B200 share it instead of each wasting half a leaf.
    """
    return max(1, leaf_host_ports(r.compute_switch, r.compute_oversubscription) // r.su_servers)


def compute_host_ports(device: str, part: GpuServer, planes: int) -> list[tuple[HostPort, int | None]]:
    """A server's compute ports in rail order with their plane; on a multi-plane fabric each port splits into
    one port per plane at an equal share of its speed (ConnectX-8 800G runs as 2 x 400GbE), named <port>/<plane>."""
    ports = host_ports(device, part, "compute", "gpu")
    if planes == 1:
        return [(p, None) for p in ports]
    return [
        (HostPort(p.device, f"{p.port}/{plane}", p.cage, p.speed_gbps / planes, p.rail, p.purpose, p.cage_type), plane)
        for p in ports
        for plane in range(1, planes + 1)
    ]


STAND_IN = "~final-"  # the name prefix of a host still to come, planned for by a growth reserve (never a device)


def final_gpu_nodes(plan: Plan, r: Resolved, final_units: int) -> list[tuple[str, int]]:
    """(name, SU) of every GPU node at a growth reserve's final size, in the order they fill the SUs: today's
    nodes, then stand-ins (never devices) for the nodes to come, each SU filled to its server slots as
    add_gpu_servers fills them. Today's nodes are the first of their SU, as a later phase numbers them, so a
    network planned on these hosts puts a node added later where its stand-in was."""
    nodes = [(d.name, d.su or 1) for d in plan.gpu_nodes()]
    per_su = Counter(su for _name, su in nodes)
    first_su_slots = r.su_servers - (0 if r.rack_system is not None else r.su_manager_slots)
    to_come = [
        su
        for su in range(1, final_units + 1)
        for _ in range((first_su_slots if su == 1 else r.su_servers) - per_su[su])
    ]
    stand_ins = [(f"{STAND_IN}{k}", su) for k, su in enumerate(to_come, start=1)]
    return sorted(nodes + stand_ins, key=lambda node: node[1])  # stable: today's first within each SU


def build_compute_fabric(plan: PlanDraft, r: Resolved, catalog: Catalog) -> list[ClosResult]:
    """Per plane, one leaf group per (rail group, rail): a rail-optimized fat tree whose rail groups are as
    many whole SUs as a leaf serves. Fabric managers join rails of the first rail group."""
    units = rail_group_units(r)
    # with a growth reserve the fabric is planned on the nodes of the final size (stand-ins for those to come)
    nodes = (
        final_gpu_nodes(plan, r, r.final_scalable_units)
        if r.final_scalable_units
        else [(d.name, d.su or 1) for d in plan.gpu_nodes()]
    )
    sus = sorted({su for _name, su in nodes})
    first_su = {su: sus[(i // units) * units] for i, su in enumerate(sus)}
    last_su = {first: max(s for s in sus if first_su[s] == first) for first in set(first_su.values())}

    def label(first: int, rail: int) -> str:
        last = last_su[first]
        return f"su{first:02d}-r{rail}" if last == first else f"su{first:02d}-{last:02d}-r{rail}"

    rack_scale = r.rack_system is not None
    if r.rack_system is not None and r.planes == 1 and not r.fabric_manager_leaf:
        shape = rack_aligned_shape(
            r.compute_switch, r.rack_system.compute_trays, r.su_servers // r.rack_system.compute_trays, r.rails
        )
        if shape is not None:
            return [_build_rack_aligned(plan, r, catalog, shape)]
    leaf_hosts = leaf_host_ports(r.compute_switch, r.compute_oversubscription)
    results = []
    for plane in range(1, r.planes + 1):
        groups: dict[tuple[int, int], LeafGroup] = {}
        for first in sorted(last_su):
            for rail in range(1, r.rails + 1):
                groups[(first, rail)] = LeafGroup(label(first, rail), [], r.compute_oversubscription, first, rail)
        for name, su in nodes:
            for port, port_plane in compute_host_ports(name, r.server, r.planes):
                if port_plane in (None, plane):
                    groups[(first_su[su], port.rail or 1)].ports.append(port)
        pool = device_ports(r.compute_switch)["fabric"]
        previous: LeafGroup | None = None
        for index, port in enumerate(manager_ports(plan, catalog, "compute")):
            pair = 2 if splits_onto(port, pool) else 1
            if r.fabric_manager_leaf:
                # fabric_manager_ports: own-leaf keeps every SU whole: the fabric managers get a leaf of their
                # own, of no SU (a service leaf with a few uplinks), standing with the management servers
                groups.setdefault((0, 0), LeafGroup("fm", [], r.compute_oversubscription, None, None, service=True))
                groups[(0, 0)].ports.append(port)
                continue
            if rack_scale:
                # a rack-scale SU has no server slot to give up (as the RA's UFM takes on HGX SUs): a fabric
                # manager port goes onto a free host port of a rail of the first rail group where its leaves have
                # one, else onto a leaf of their own, so no rail gains a leaf for it (the UFM pair's two ports that
                # share a split port, together)
                spare = previous if pair == 2 and index % 2 else None
                spare = spare or min(
                    (
                        g
                        for (first, _r), g in groups.items()
                        if first == sus[0] and math.ceil((len(g.ports) + 1) / leaf_hosts) == _leaves(g, leaf_hosts)
                    ),
                    key=lambda g: len(g.ports),
                    default=None,
                )
                if spare is None:
                    spare = groups.setdefault((0, 0), LeafGroup("fm", [], r.compute_oversubscription, sus[0], None))
                spare.ports.append(port)
                previous = spare
                continue
            groups[(sus[0], index // pair % r.rails + 1)].ports.append(port)
        final = bool(r.final_scalable_units)
        results.append(
            build_clos(
                plan,
                network="compute",
                groups=list(groups.values()),
                leaf_part=r.compute_switch,
                plane=plane if r.planes > 1 else None,
                fewest_upper_switches=rack_scale,
                final_groups=list(groups.values()) if final else (),
            )
        )
    return results


def _build_rack_aligned(plan: PlanDraft, r: Resolved, catalog: Catalog, shape: RackAlignedShape) -> ClosResult:
    """The GB200 RA's layout: each unit's trays grouped by rack (NVLink domain), one leaf per rack and rail."""
    racks: dict[int, dict[str, list[HostPort]]] = {}
    for tray in plan.gpu_nodes():
        ports = [p for p, _plane in compute_host_ports(tray.name, r.server, 1)]
        racks.setdefault(tray.su or 1, {}).setdefault(str(tray.nvlink_domain), []).extend(ports)
    rack_groups = {unit: list(by_rack.values()) for unit, by_rack in racks.items()}
    final = r.final_scalable_units or r.scalable_units
    managers = manager_ports(plan, catalog, "compute")
    return build_rack_aligned(plan, shape, r.compute_switch, rack_groups, managers, final)


def _leaves(group: LeafGroup, leaf_hosts: int) -> int:
    return max(1, math.ceil(len(group.ports) / leaf_hosts))


def manager_ports(plan: Plan, catalog: Catalog, network: str) -> list[HostPort]:
    """A network's fabric managers' fabric ports, each manager's first port, then each one's second ...: consecutive
    ports of different managers, so two that run at half a leaf port's speed share one split port (one 1:2 splitter
    per port pair of the UFM pair, as H100 RA Table 8 cables it) and a leaf failure leaves each manager a port."""
    per_manager = [
        host_ports(m.name, catalog.get(m.part, Appliance), "fabric", "fabric-manager")
        for m in plan.devices_with("fabric-manager")
        if (m.network or "compute") == network
    ]
    return [ports[i] for i in range(max(map(len, per_manager), default=0)) for ports in per_manager if i < len(ports)]


def build_storage_network(plan: PlanDraft, r: Resolved, catalog: Catalog) -> ClosResult:
    """Servers' storage ports (per scalable unit) and the storage blocks' ports on their own leaves, each
    dual-homed as the RA does: a host's ports alternate between an a-side and a b-side leaf group, so one
    leaf failure leaves every server and appliance with a path to the filesystem. The storage fabric's own UFM
    pair joins the appliances' leaves."""
    groups: dict[str, LeafGroup] = {}
    final = r.storage_final_scalable_units
    # with a growth reserve the network is planned on the servers of the final size (stand-ins for those to come)
    nodes = final_gpu_nodes(plan, r, final) if final else [(d.name, d.su or 1) for d in plan.gpu_nodes()]
    for name, su in nodes:
        ports = host_ports(name, r.server, "storage", "storage")
        if r.combined_storage_inband:
            ports += host_ports(name, r.server, "inband", "management")
        for index, port in enumerate(ports):
            label = f"su{su:02d}-{'ab'[index % 2]}"
            groups.setdefault(label, LeafGroup(label, [], r.storage_server_oversubscription, su)).ports.append(port)
    if r.combined_storage_inband:  # the control plane's in-band ports, on leaves of their own, a- and b-side
        for index, port in enumerate(_control_plane_ports(plan, catalog)):
            label = f"mgmt-{'ab'[index % 2]}"
            groups.setdefault(label, LeafGroup(label, [], r.storage_block_oversubscription)).ports.append(port)
    blocks = [(d, catalog.get(d.part, StorageBlock)) for d in plan.devices_with("storage")]
    blocks += [(d, existing_part(fs)) for fs in r.filesystems if fs.existing for d in [plan.devices[fs.device_prefix]]]
    for block, part in blocks:
        for index, port in enumerate(host_ports(block.name, part, "storage", "storage")):
            label = f"pfs-{'ab'[index % 2]}"
            groups.setdefault(label, LeafGroup(label, [], r.storage_block_oversubscription)).ports.append(port)
    pool = device_ports(r.storage_switch)["fabric"]
    for index, port in enumerate(manager_ports(plan, catalog, "storage")):  # beside the appliances, a- and b-side
        label = f"pfs-{'ab'[index // (2 if splits_onto(port, pool) else 1) % 2]}"
        groups.setdefault(label, LeafGroup(label, [], r.storage_block_oversubscription)).ports.append(port)
    return build_clos(
        plan,
        network="storage",
        groups=list(groups.values()),
        leaf_part=r.storage_switch,
        min_top_switches=2,
        # dual-homed from half an SU up, even where one switch has the ports (with a reserve: at the final size)
        one_switch=2 * max(r.servers, final * r.su_servers) < r.su_servers,
        final_groups=list(groups.values()) if final else (),
    )


def _control_plane_ports(plan: Plan, catalog: Catalog) -> list[HostPort]:
    """The head nodes', fabric managers' and object store's in-band ports (the object store's S3 ports), each host's
    ports in turn: what the in-band network takes besides the servers."""
    ports: list[HostPort] = []
    for role in ("management-server", "fabric-manager", "object-storage"):
        for device in plan.devices_with(role):
            part = catalog.get(device.part, RackMounted)
            port_role = "storage" if role == "object-storage" else "inband"
            ports += host_ports(device.name, part, port_role, "management")
    return ports


INBAND_LEAF_UPLINKS = 4  # H100 RA Table 8: 24 leaf-core cables for its 6 in-band leaves (2 to each of 2 cores)


def inband_oversubscription(leaf: Switch) -> float:
    """Host ports per uplink of an in-band leaf packed as the RA packs them: every port but the uplinks."""
    ports = len(device_ports(leaf)["fabric"])
    return (ports - INBAND_LEAF_UPLINKS) / INBAND_LEAF_UPLINKS


def _end_on_a_whole_splitter(
    sides: dict[str, list[HostPort]], pool: PortPool, checked: dict[str, int] | None = None
) -> None:
    """Pad each side whose last run of split-port hosts is odd with a stand-in (a half port left free), so the
    next host begins a split port: a phase that ends there leaves no 1:2 splitter with a leg for the next.
    `checked`: per side, the hosts an earlier call saw (their last run then even), so that only the hosts after
    them are looked at (a call per phase would otherwise walk every earlier phase again); updated."""
    seen = checked if checked is not None else {}
    for side, hosts in sides.items():
        run = 0
        for port in hosts[seen.get(side, 0) :]:
            run = run + 1 if splits_onto(port, pool) else 0
        if run % 2:
            hosts.append(replace(hosts[-1], device=f"{STAND_IN}gap-{side}-{len(hosts)}"))
        seen[side] = len(hosts)


def build_inband(plan: PlanDraft, r: Resolved, catalog: Catalog) -> ClosResult:
    """The in-band network as the H100 RA builds it: leaves in pairs packed with hosts across the scalable units
    (every server, then the head nodes, fabric managers and object storage; a host's bonded ports alternate
    between the a-side and the b-side leaf, so each pair serves the same hosts), each leaf with 4 uplinks, 2 to
    each of 2 top-tier switches. For 127 DGX and 4 head nodes that is the RA's 6 SN4600C leaves and 2 cores
    (Table 7: 8 in-band switches); management traffic is light, so the leaves are oversubscribed as the RA's are.
    Below half a scalable unit of servers (a lab) one switch takes every port where it can. Where storage and in-band
    share one fabric (r.combined_storage_inband) there is no in-band network: the storage network takes its hosts."""
    if r.combined_storage_inband:
        return ClosResult()
    ports: dict[str, list[HostPort]] = {"a": [], "b": []}
    others: dict[str, list[HostPort]] = {"a": [], "b": []}
    final: dict[str, list[HostPort]] = {"a": [], "b": []}  # with a growth reserve: the servers to come too
    pool = device_ports(r.inband_switch)["fabric"]
    previous_su = 1
    checked: dict[str, int] = {}  # the hosts of `final` padded so far
    for name, su in final_gpu_nodes(plan, r, r.final_scalable_units):
        if su != previous_su:  # with a growth reserve, no 1:2 splitter spans two SUs (two phases)
            _end_on_a_whole_splitter(final, pool, checked)
            previous_su = su
        for index, port in enumerate(host_ports(name, r.server, "inband", "management")):
            final["ab"[index % 2]].append(port)
            if not name.startswith(STAND_IN):
                ports["ab"[index % 2]].append(port)
    for role in ("management-server", "fabric-manager", "object-storage"):
        for device in plan.devices_with(role):
            part = catalog.get(device.part, RackMounted)
            port_role = "storage" if role == "object-storage" else "inband"
            for index, port in enumerate(host_ports(device.name, part, port_role, "management")):
                others["ab"[index % 2]].append(port)
    groups = [LeafGroup(side, ports[side] + others[side], r.inband_oversubscription, numbered=True) for side in "ab"]
    # the growth reserve: the in-band network is planned on the final size's ports, the head nodes and appliances
    # (there from the first phase) first, then the servers in the order they come, so a phase fills the leaves
    # in order, adds leaves and their uplinks and re-cables no port
    _end_on_a_whole_splitter(others, pool)  # the first server begins a split port
    final_groups = [
        LeafGroup(side, others[side] + final[side], r.inband_oversubscription, numbered=True) for side in "ab"
    ]
    return build_clos(
        plan,
        network="inband",
        groups=groups,
        leaf_part=r.inband_switch,
        leaf_uplinks=INBAND_LEAF_UPLINKS,
        min_top_switches=2,
        # from half a scalable unit up (with a reserve: at the final size), a bond's two sides on two leaves
        one_switch=2 * max(r.servers, r.final_scalable_units * r.su_servers) < r.su_servers,
        final_groups=final_groups if r.final_scalable_units else (),
    )
