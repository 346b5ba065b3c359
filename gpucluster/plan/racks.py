"""Racks on the floor: every device at a U position, racks in rows with floor coordinates.

Racks come in clusters: one per scalable unit (the SU's network rack in the middle of its compute racks, so
server-to-leaf runs stay short) and a central one (top tiers, storage, management) in the middle of the hall.
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from networkx.utils import UnionFind

from gpucluster.catalog.load import Catalog
from gpucluster.catalog.schema import Pdu, Rack
from gpucluster.design.schema import Site
from gpucluster.plan.model import Device, Plan, PlanDraft, RackPlan
from gpucluster.plan.registry import NETWORK_INFO, ROLES


@dataclass
class _Rack:
    purpose: str
    su: int | None
    height_u: int
    devices: list[Device] = field(default_factory=list)
    next_u: int = 1
    power_max_w: float = 0.0
    part: str | None = None  # the rack's catalog id when not the site's (a rack-scale system ships in its own)
    system: str | None = None  # catalog id of the rack-scale system the rack is
    nvlink_domain: str | None = None

    def fits(self, device: Device, power_w: float, budget_w: float) -> bool:
        return self.has_room(math.ceil(device.u_height), power_w, budget_w)

    def has_room(self, units: int, power_w: float, budget_w: float) -> bool:
        """Whether `units` more rack units drawing `power_w` more fit above the devices already in."""
        return self.next_u + units - 1 <= self.height_u and self.power_max_w + power_w <= budget_w


@dataclass
class Cluster:
    """Racks that belong together on the floor (a scalable unit, or the central services)."""

    name: str
    su: int | None
    racks: list[_Rack] = field(default_factory=list)


@dataclass(frozen=True)
class RackFit:
    """How many GPU servers one compute rack takes by each limit."""

    power: int  # within site.rack_power_budget_kw (maximum draw with optics)
    height: int  # within the rack's U
    cooling: int  # within the heat the site's cooling removes per rack

    @property
    def most(self) -> int:
        return min(self.power, self.height, self.cooling)


def rack_fit(
    server_u: float, server_w: float, server_heat_w: float, rack_height_u: int, budget_w: float, cooling_w: float
) -> RackFit:
    """Servers per rack by power budget, height and cooling (``server_heat_w``: the heat the site's cooling
    takes from one server, its whole draw on a liquid-cooled site, its air-side share otherwise)."""
    cooling = int(cooling_w // server_heat_w) if server_heat_w > 0 else 1 << 16
    return RackFit(int(budget_w // server_w), int(rack_height_u // server_u), cooling)


def servers_per_rack(fit: int, su: int) -> int:
    """The largest count that fits and divides the scalable unit evenly, as the RA lays SUs out (four DGX H100 or
    two DGX B200 a rack), unless that leaves racks half empty (then the largest that fits)."""
    if fit <= 0:
        return 0
    dividing = [n for n in range(fit, 0, -1) if su % n == 0]
    return dividing[0] if dividing and dividing[0] * 2 > fit else fit


class RackPlanner:
    """Packs devices into the racks of each cluster, bottom up, within U and power budget."""

    def __init__(self, catalog: Catalog, site: Site, rack_part: Rack, optics_w: Mapping[str, float] | None = None):
        self.catalog = catalog
        self.optics_w = optics_w or {}  # device -> the most its optics can add (plan.power.draw.optics_allowance_w)
        self.site = site
        self.rack_part = rack_part
        self.height_u = site.rack_height_u or rack_part.u_height
        self.budget_w = site.rack_power_budget_kw * 1000.0
        self.clusters: dict[str, Cluster] = {}

    def power_w(self, device: Device) -> float:
        return float(getattr(self.catalog.parts[device.part], "power_max_w", 0.0)) + self.optics_w.get(device.name, 0.0)

    def cluster(self, name: str, su: int | None = None) -> Cluster:
        return self.clusters.setdefault(name, Cluster(name, su))

    def new_rack(self, cluster: Cluster, purpose: str) -> _Rack:
        rack = _Rack(purpose, cluster.su, self.height_u)
        cluster.racks.append(rack)
        return rack

    def place(self, cluster: Cluster, purpose: str, device: Device, new: bool = False) -> _Rack:
        power = self.power_w(device)
        candidates = [r for r in cluster.racks if r.purpose == purpose]
        rack = candidates[-1] if candidates and not new else None
        if rack is None or not rack.fits(device, power, self.budget_w):
            rack = self.new_rack(cluster, purpose)
            if not rack.fits(device, power, self.budget_w):
                raise ValueError(
                    f"{device.name} ({device.part}, {power / 1000:.1f} kW, {device.u_height}U) does not fit an empty "
                    f"{self.height_u}U rack with a {self.budget_w / 1000:.1f} kW budget"
                )
        return self.put(rack, device, power)

    def put(self, rack: _Rack, device: Device, power_w: float | None = None) -> _Rack:
        """A device at the next free U of a rack that has room for it."""
        rack.devices.append(device)
        device.u_position = rack.next_u
        rack.next_u += math.ceil(device.u_height)
        rack.power_max_w += self.power_w(device) if power_w is None else power_w
        return rack

    def rack_with_room(self, racks: list[_Rack], devices: list[Device]) -> _Rack | None:
        """The first rack with room (U and power budget) for all the devices together, or None."""
        units = sum(math.ceil(d.u_height) for d in devices)
        power = sum(self.power_w(d) for d in devices)
        return next((rack for rack in racks if rack.has_room(units, power, self.budget_w)), None)

    def layout(self, plan: Plan, order: list[str]) -> None:
        """Name the racks by row and position, give them floor coordinates and record them in the plan: network racks
        in the middle of their cluster, clusters in rows in order, one longer than a row snaking through its rows."""
        pitch = self.site.rack_pitch_mm or self.rack_part.width_mm
        per_row = self.site.racks_per_row
        row, position = 0, 0
        reserved_width = max((len(c.racks) for n, c in self.clusters.items() if n != CENTRAL and c.su), default=0)
        for index, name in enumerate(order):
            after = order[index + 1 :]
            if name not in self.clusters:
                # a scalable unit of the growth reserve: its floor space is kept free, as wide as the widest unit
                if position and position + reserved_width > per_row:
                    row, position = row + 1, 0
                position += reserved_width
                while position > per_row:
                    row, position = row + 1, position - per_row
                continue
            cluster = self.clusters[name]
            if name == CENTRAL:
                # the central racks start a row of their own when scalable units follow them, and the units after
                # them start the next row: a change to storage or management never moves a unit's racks, and the
                # compute fabric's racks come first among the central ones, so it never moves them either
                racks = sorted(cluster.racks, key=lambda rack: _purpose_rank(rack.purpose))
                if position and after:
                    row, position = row + 1, 0
            else:
                racks = _network_in_middle(cluster.racks)
                if position and position + len(racks) > per_row:
                    row, position = row + 1, 0
            first_row = None
            for rack in racks:
                if position == per_row:
                    row, position = row + 1, 0
                first_row = row if first_row is None else first_row
                # a cluster longer than a row snakes through its rows (each row runs back the way the one before
                # came), so racks filled one after another stand side by side or across one aisle, never a row
                # apart: a storage appliance's splitter cable to its leaf reaches 30 m at most
                at = per_row - 1 - position if (row - first_row) % 2 else position
                name_at = rack_name(row, at)
                plan.racks[name_at] = RackPlan(
                    name=name_at,
                    part=rack.part or self.rack_part.id,
                    row=row,
                    position=at,
                    x_mm=float(at * pitch),
                    y_mm=float(row * self.site.row_pitch_mm),  # floats, as a lock reads them back
                    purpose=rack.purpose,
                    height_u=rack.height_u,
                    su=rack.su,
                    devices=[d.name for d in rack.devices],
                    power_max_w=rack.power_max_w,
                    power_typical_w=sum(
                        float(getattr(self.catalog.parts[d.part], "power_typical_w", 0.0)) for d in rack.devices
                    ),
                    rack_system=rack.system,
                    nvlink_domain=rack.nvlink_domain,
                )
                for device in rack.devices:
                    device.rack = name_at
                position += 1
            reversed_row = first_row is not None and (row - first_row) % 2 == 1
            if ((name == CENTRAL and after) or reversed_row) and position:
                row, position = row + 1, 0  # (a row run backwards has its free positions at its start)


CENTRAL = "central"  # the cluster of the hall's central racks (top tiers, storage, management)
_CENTRAL_ORDER = ("network", "management", "storage")  # the central racks' order on the floor


def _purpose_rank(purpose: str) -> int:
    return _CENTRAL_ORDER.index(purpose) if purpose in _CENTRAL_ORDER else len(_CENTRAL_ORDER)


def _network_in_middle(racks: list[_Rack]) -> list[_Rack]:
    compute = [r for r in racks if r.purpose == "compute"]
    other = [r for r in racks if r.purpose != "compute"]
    if not compute:
        return racks
    half = (len(compute) + 1) // 2
    return compute[:half] + other + compute[half:]


def _row_letters(row: int) -> str:
    name = ""
    row += 1
    while row:
        row, rem = divmod(row - 1, 26)
        name = string.ascii_uppercase[rem] + name
    return name


def rack_name(row: int, position: int) -> str:
    """A rack's name from its 0-based row and position: A01, B12 ..., AA01 after row Z."""
    return f"{_row_letters(row)}{position + 1:02d}"


def add_pdus(
    plan: PlanDraft,
    count_for: Callable[[float, list[Device], bool], tuple[Pdu, int]],
    redundancy: str,
    reserved: dict[str, Device],
) -> None:
    """Zero-U PDUs in every rack, of the model and count its kind, load, outlets and redundancy need (`count_for`),
    named after their feeds; `reserved` holds the placeholders standing where out-of-band switches will go."""
    for rack in plan.racks.values():
        if rack.rack_system:
            continue  # power shelves on the rack's busbar, no PDUs
        devices = [plan.devices[n] if n in plan.devices else reserved[n] for n in rack.devices]
        pdu, count = count_for(rack.power_max_w, devices, rack.purpose == "compute")
        for suffix in pdu_suffixes(count, redundancy):
            device = plan.add(Device(f"{rack.name}-pdu-{suffix}", pdu.id, "pdu", rack=rack.name))
            rack.pdus.append(device.name)


def pdu_feeds(count: int, redundancy: str) -> list[str]:
    """The feed of each of a rack's PDUs, in their order: 2N alternates A and B; N+1 puts each on its own feed
    (A, B, C ...); N has the one feed A."""
    if redundancy == "2N":
        return ["AB"[i % 2] for i in range(count)]
    if redundancy == "N+1":
        return [_row_letters(i) for i in range(count)]
    return ["A"] * count


def pdu_suffixes(count: int, redundancy: str) -> list[str]:
    """How a rack's PDUs are named after their feeds: a1, b1, a2 ... (2N); a, b, c (N+1); 1, 2 ... (N)."""
    if redundancy == "2N":
        return [f"{'ab'[i % 2]}{i // 2 + 1}" for i in range(count)]
    if redundancy == "N+1":
        return [_row_letters(i).lower() for i in range(count)]
    return [str(i + 1) for i in range(count)]


def rack_inlets(parts: Mapping[str, object], devices: list[Device]) -> dict[str, int]:
    """Power-supply inlets in a rack by IEC type (C20, C14 ...), for PDU outlet counts; `parts` maps
    catalog ids to parts (a catalog's or a plan's)."""
    inlets: dict[str, int] = {}
    for device in devices:
        psus = getattr(parts.get(device.part), "psus", None)
        if psus:
            inlets[psus.inlet] = inlets.get(psus.inlet, 0) + psus.count
    return inlets


_CENTRAL_ROLES = ("storage", "management-server", "object-storage")  # stand in the hall's central racks
_CENTRAL_SPARE_U = 2  # room kept for the out-of-band switches when the central devices share one rack


def pack_devices(plan: Plan, planner: RackPlanner, per_rack: int) -> None:
    """Servers into compute racks by SU; each SU's leaves into its network rack; the spines of a pod
    (a block of SUs under a higher tier) beside that pod's SUs; the top tiers and services central."""
    central = planner.cluster(CENTRAL)
    pod_sus: dict[str, set[int]] = {}
    served: dict[str, set[int]] = {}  # leaf -> the SUs of the hosts it serves
    storage_hosts: list[tuple[str, str]] = []  # (host, leaf) of every storage-network host link
    for link in plan.links:
        if link.tier == 1:
            leaf = plan.devices[link.a_device]
            if leaf.su is not None:
                pod_sus.setdefault(link.b_device, set()).add(leaf.su)
        elif link.tier == 0:
            if link.network == "storage":
                storage_hosts.append((link.a_device, link.b_device))
            if (host_su := plan.devices[link.a_device].su) is not None:
                served.setdefault(link.b_device, set()).add(host_su)
    by_su: dict[int, list[Device]] = {}
    for device in plan.gpu_nodes():
        if device.nvlink_domain is not None:
            continue  # a rack-scale system's tray, placed with its rack (plan/rack_scale.py)
        by_su.setdefault(device.su or 1, []).append(device)
    for su, servers in sorted(by_su.items()):
        cluster = planner.cluster(f"su{su:02d}", su)
        for i, server in enumerate(servers):
            planner.place(cluster, "compute", server, new=i % per_rack == 0)
    for device in plan.devices.values():
        if device.role == "switch" and device.tier == 1 and device.su is not None:
            # a leaf several SUs share (a rail group: an SN5600 serves 64 hosts, so smaller SUs share its rails)
            # stands in the network rack of the middle SU it serves, not the first: 17 SUs of four servers one
            # to a rack in rows of four put SU 17's servers 101 m from SU 1's rack, beyond every host optic
            sus = sorted(served.get(device.name, ())) or [device.su]
            home = sus[(len(sus) - 1) // 2]
            planner.place(planner.cluster(f"su{home:02d}", home), "network", device)
    central_devices: list[tuple[str, Device]] = []
    for device in plan.devices.values():
        if device.role == "switch" and device.tier == 2 and device.pod is not None and device.name in pod_sus:
            # beside its last SU; with a growth reserve beside its first (the pod's last SU changes as it fills,
            # its first never does, so the spine racks keep their cluster, floor place and switches' names)
            last = (min if plan.design.compute_fabric.final_scalable_units else max)(pod_sus[device.name])
            planner.place(planner.cluster(f"su{last:02d}-pod-{device.network}", last), "network", device)
        elif device.role == "switch" and (device.tier != 1 or device.su is None):
            central_devices.append((NETWORK_INFO[device.network or "oob"].rack_purpose, device))
        elif device.role == "fabric-manager" and device.network == "storage":
            central_devices.append((NETWORK_INFO["storage"].rack_purpose, device))  # beside the storage leaves
        elif device.role == "fabric-manager" and plan.settings.fabric_manager_ports != "own-leaf":
            # UFM appliances cable to SU 1's leaves (the RA gives them a server slot there): stand beside them
            planner.place(planner.cluster("su01", 1), ROLES[device.role].rack_purpose, device)
        elif device.role == "fabric-manager":  # on a leaf of their own outside the SUs: with the management servers
            central_devices.append((ROLES["management-server"].rack_purpose, device))
        elif device.role in _CENTRAL_ROLES:
            central_devices.append((ROLES[device.role].rack_purpose, device))
    # A small cluster's central devices share one rack (with room for its out-of-band switches);
    # larger ones get network, storage and management racks of their own.
    units = sum(math.ceil(d.u_height) for _purpose, d in central_devices) + _CENTRAL_SPARE_U
    power = sum(planner.power_w(d) for _purpose, d in central_devices)
    shared = units <= planner.height_u and power <= planner.budget_w
    if shared:
        for _purpose, device in central_devices:
            planner.place(central, "management", device)
        return
    _place_central(planner, central, _storage_beside_its_leaves(central_devices, storage_hosts))


def _place_central(planner: RackPlanner, central: Cluster, devices: list[tuple[str, Device]]) -> None:
    """The central devices of a cluster too large for one central rack: the compute fabric's top tiers in racks of
    their own, every other purpose's devices as a group into the first such rack with room for all, else racks of
    their own. The RA's management rack holds management servers, storage, UFMs and their switches together (H100
    RA Table 7: 38 racks, 32 compute, a leaf rack per SU and two more)."""
    groups: dict[str, list[Device]] = {}
    for purpose, device in devices:
        groups.setdefault(purpose, []).append(device)
    for purpose in sorted(groups, key=_purpose_rank):
        members = groups[purpose]
        if purpose != NETWORK_INFO["compute"].rack_purpose:
            shared = [r for r in central.racks if r.purpose != NETWORK_INFO["compute"].rack_purpose]
            rack = planner.rack_with_room(shared, members)
            if rack is not None:
                for device in members:
                    planner.put(rack, device)
                continue
        for device in members:
            planner.place(central, purpose, device)


def _storage_beside_its_leaves(
    central_devices: list[tuple[str, Device]], storage_hosts: list[tuple[str, str]]
) -> list[tuple[str, Device]]:
    """The central devices in placing order, each group of storage-network leaves racked right after the
    appliances (and the storage fabric's UFM) cabled to them: all appliances first put a large filesystem's leaves
    rows away, beyond the 30 m an appliance's 200G splitter cable reaches. A group (appliances and leaves joined by
    `storage_hosts`, the storage network's host links) takes the place of its first member."""
    central = {device.name for _purpose, device in central_devices}
    groups: UnionFind[str] = UnionFind()
    leaves: set[str] = set()
    for host, leaf in storage_hosts:
        if host in central and leaf in central:
            leaves.add(leaf)
            groups.union(host, leaf)
    grouped = set(groups.parents)
    members: dict[str, list[tuple[str, Device]]] = {}
    for entry in central_devices:
        if entry[1].name in grouped:
            members.setdefault(groups[entry[1].name], []).append(entry)
    ordered: list[tuple[str, Device]] = []
    for entry in central_devices:
        name = entry[1].name
        if name not in grouped:
            ordered.append(entry)
        elif (group := members.pop(groups[name], None)) is not None:  # the group's first member: the whole group
            ordered += [e for e in group if e[1].name not in leaves] + [e for e in group if e[1].name in leaves]
    return ordered


def _by_su(planner: RackPlanner, name: str) -> tuple[int, str]:
    """Clusters by SU number, not by name ("su100" sorts before "su11" as text), a pod after its last SU."""
    cluster = planner.clusters.get(name)
    return (cluster.su or 0 if cluster else int(name.removeprefix("su")), name)


def floor_order(planner: RackPlanner, final_units: int = 0) -> list[str]:
    """Scalable units in order (each pod's spine racks after its last SU), the central cluster in the middle; the
    units still to come (`final_units`) too, under names no cluster has, so the floor keeps their space free."""
    sus = [name for name in planner.clusters if name != CENTRAL]
    present = {planner.clusters[name].su for name in sus}
    sus += [f"su{unit:02d}" for unit in range(1, final_units + 1) if unit not in present]
    sus.sort(key=lambda n: _by_su(planner, n))
    half = (len(sus) + 1) // 2
    return [*sus[:half], CENTRAL, *sus[half:]]


def assign_nvlink_domains(plan: Plan) -> None:
    """Servers whose NVLink domain spans several of them share it with the ``nvlink_domain_gpus / gpus per server``
    servers racked beside them; a server that is its own domain (HGX 8-GPU) keeps ``nvlink_domain`` unset."""
    by_rack: dict[str, list[Device]] = {}
    for device in plan.gpu_nodes():
        if device.nvlink_domain is None:  # a rack-scale system's trays have theirs from plan/rack_scale.py
            by_rack.setdefault(device.rack, []).append(device)
    for rack, members in by_rack.items():
        gpu = getattr(plan.catalog_parts[members[0].part], "gpu", None)
        per_domain = gpu.nvlink_domain_gpus // gpu.count if gpu is not None else 1
        if per_domain <= 1:
            continue
        for start in range(0, len(members), per_domain):
            for device in members[start : start + per_domain]:
                device.nvlink_domain = f"{rack}-nvl{start // per_domain + 1}"


STANDARD_GRAVITY_M_PER_S2 = 9.80665  # kg to newtons (ISO 80000-3)


def loaded_weight_kg(plan: Plan, rack: RackPlan) -> float | None:
    """A rack's weight with everything in it: a rack-scale system's published loaded weight (trays, shelves,
    backplane, busbar and coolant), else the rack's own weight plus every device and PDU in it; None when a part
    gives no weight (a sum without it would understate the load)."""
    parts = plan.catalog_parts
    system = parts.get(rack.rack_system or "")
    system_kg = getattr(system, "weight_kg", None)
    if system_kg:
        return float(system_kg)
    weights = [getattr(parts.get(rack.part), "weight_kg", None)]
    weights += [getattr(parts[plan.devices[n].part], "weight_kg", None) for n in (*rack.devices, *rack.pdus)]
    known: list[float] = [w for w in weights if w is not None]
    return None if len(known) < len(weights) else float(sum(known))


def floor_load_kpa(weight_kg: float, width_mm: float, row_pitch_mm: float) -> float:
    """The distributed load a rack puts on the floor: its weight over its floor cell (its width times the row
    pitch, so half of each aisle beside it), as floor-loading assessments spread a machine's weight over its area
    and half its service clearance (IBM, "Floor construction and floor loading")."""
    return weight_kg * STANDARD_GRAVITY_M_PER_S2 / (width_mm / 1000 * row_pitch_mm / 1000) / 1000
