"""The plan's stages: plain typed data that every artifact is a view of.

The planner fills a PlanDraft (plan/ only) and makes from it, once, a PhysicalPlan; the pipeline derives an
AnalysedPlan from that (gpucluster/pipeline.py). Each stage is a Plan (the reads they share); the two records are
frozen, and no stage's result is stored on an earlier stage.

Devices stand in racks at U positions; links join (device, port) to (device, port) on one of the
networks (plan/registry.py); cables carry one or more links (a twin-port copper cable carries two;
backplane links have none). The networkx graphs are derived from the links, one per network.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Literal, TypedDict, TypeVar

from gpucluster.catalog.schema import AnyPart
from gpucluster.design.schema import Compute, Design
from gpucluster.plan.facts import BurnInTest, CheckpointFacts, DevicePower, RuleFacts
from gpucluster.plan.registry import NETWORK_INFO, NETWORK_NAMES, ROLES, is_gpu_node

PartT = TypeVar("PartT")

NetworkName = str  # a key of plan/registry.py NETWORK_INFO
NETWORKS: tuple[NetworkName, ...] = NETWORK_NAMES
DeviceRole = str  # a key of plan/registry.py ROLES

Severity = Literal["error", "warning", "advisory", "ok"]
RULE_PREFIX = "rule:"  # design rules' findings (gpucluster/analyse/rules.py) carry their rule's name after this prefix


@dataclass(slots=True)
class Device:
    """One physical box (or zero-U PDU) in the plan."""

    name: str
    part: str  # catalog id
    role: DeviceRole
    rack: str = ""
    u_position: int = 0  # lowest rack unit occupied (1 = bottom); 0 for zero-U devices
    u_height: float = 0
    su: int | None = None  # scalable unit (1-based) for GPU servers and their leaves
    network: NetworkName | None = None  # for switches: the network they belong to
    tier: int | None = None  # for switches: 1 = leaf, 2 = spine, 3 = core, ...
    rail: int | None = None  # for compute leaves: the rail (1-based) they serve
    spare: bool = False  # hot-spare GPU server
    pod: int | None = None  # for switches above the leaf: the block of the tier below they serve
    plane: int | None = None  # for switches of a multi-plane compute fabric: the plane (1-based)
    nvlink_domain: str | None = None  # GPU servers and trays of a rack-scale system: the NVLink domain they share


@dataclass(slots=True)
class Link:
    """One logical connection between two ports, at one speed, on one network."""

    network: NetworkName
    tier: int  # 0 = host to leaf, 1 = leaf to spine, 2 = spine to core, ...
    a_device: str
    a_port: str
    b_device: str
    b_port: str
    speed_gbps: float
    a_cage: int = 0  # 1-based cage on device a (0 when the port has no cage, e.g. RJ45)
    b_cage: int = 0
    rail: int | None = None  # compute host links: the GPU's rail
    purpose: str = "gpu"  # gpu | storage | fabric-manager | management | bmc | uplink
    plane: int | None = None  # multi-plane compute fabrics: the plane the link belongs to
    b_half: int = 0  # 1 or 2: the b end (a switch) is that half of a logical port split in two (a 1:2 splitter)


@dataclass(slots=True)
class Cable:
    """A physical cable: its media, orderable length, part and the optics at each end."""

    id: str
    network: NetworkName
    links: tuple[int, ...]  # indexes into Plan.links
    media: str  # dac | acc | aoc | mmf | smf | cat6
    cable_part: str  # catalog id
    part_number: str | None
    length_m: float  # orderable length
    run_length_m: float  # routed length before rounding up
    a_transceiver: str | None = None  # catalog id at the a-end cage(s), None for copper
    b_transceiver: str | None = None


@dataclass(slots=True)
class RackPlan:
    """A rack on the floor, in a row, with its contents and load."""

    name: str  # e.g. "A07"
    part: str
    row: int  # 0-based
    position: int  # 0-based within the row
    x_mm: float
    y_mm: float
    purpose: str  # compute | network | storage | management
    height_u: int
    su: int | None = None
    devices: list[str] = field(default_factory=list)
    power_max_w: float = 0.0
    power_typical_w: float = 0.0
    pdus: list[str] = field(default_factory=list)
    rack_system: str | None = None  # catalog id of the rack-scale system this rack is (its shelves replace PDUs)
    nvlink_domain: str | None = None  # the NVLink domain the rack holds (a rack-scale system's)


@dataclass(slots=True)
class Tier:
    """One tier of a network's switches, with its bandwidth up and down."""

    network: NetworkName
    tier: int
    name: str  # leaf | spine | core | super-core ...
    switch_part: str
    switches: int
    down_links: int
    up_links: int
    down_gbps: float
    up_gbps: float
    plane: int | None = None  # multi-plane compute fabrics: each plane has its own tiers

    @property
    def oversubscription(self) -> float:
        return self.down_gbps / self.up_gbps if self.up_gbps else 1.0


@dataclass(slots=True)
class Finding:
    """A design-rule result or a warning, with its reason."""

    rule: str
    severity: Severity
    message: str
    subject: str = ""  # what it is about: a rack, a network, the design


class FilesystemAsked(TypedDict):
    """The parallel filesystem the design asked for (its own figures, or the RA's level per SU), and on what basis."""

    capacity_tb: float | None
    read_gbytes_per_s: float | None  # None: no throughput target (a capacity alone was asked)
    write_gbytes_per_s: float | None
    basis: str
    capacity_basis: str  # how a capacity not asked was derived, with its arithmetic; "" when asked


class ExistingLinksRecord(TypedDict):
    """An existing filesystem's client-facing links as the design states them."""

    count: int
    speed_gbps: float
    network: str  # infiniband | ethernet
    cage_type: str
    run_length_m: float


class FilesystemRecord(TypedDict):
    """One filesystem the GPU nodes mount: new (its blocks, bought) or existing (the site's, reached over its
    stated links, not bought); figures as delivered (new) or as stated (existing)."""

    name: str
    kind: str
    mount: str
    existing: bool
    device_prefix: str  # its blocks are <prefix>-01 ...; an existing one's link hand-off is the device <prefix>
    block: str | None  # catalog id (new)
    blocks: int
    capacity_tb: float | None
    read_gbytes_per_s: float | None
    write_gbytes_per_s: float | None
    asked: FilesystemAsked  # what the design asked (existing: stated) and on what basis
    links: ExistingLinksRecord | None  # existing: its links


class ObjectStorageAsked(TypedDict):
    """The object storage the design asked for."""

    capacity_tb: float | None
    throughput_gbytes_per_s: float | None


class Reachability(TypedDict):
    """Whether every host of a network reaches every other over its switches, and in how many pieces they stand."""

    all_hosts_reach_each_other: bool
    switch_components: int


class TierSummary(TypedDict):
    """One tier of a network as its analysis reports it (a Tier, with its oversubscription; None without uplinks)."""

    tier: int
    name: str
    switch_part: str
    switches: int
    down_links: int
    up_links: int
    down_gbps: float
    up_gbps: float
    oversubscription: float | None


class Hops(TypedDict, total=False):
    """Switches a packet crosses between two host ports; empty where the hosts do not all reach each other."""

    max_switch_hops: int
    from_first_leaf: dict[str, int]  # hops (as text) -> host ports at that distance from the first leaf


class ServiceLoss(TypedDict):
    """What hosts cut off by a failure cost beyond themselves: GPU servers, storage blocks, whole services."""

    servers_cut_off: int
    storage_blocks_cut_off: int
    services_lost: list[str]


class SwitchFailure(TypedDict):
    """What the failure of a tier's first switch costs (plan.json keeps this key order)."""

    switch: str
    host_ports_cut_off: int
    hosts_losing_a_port: int
    hosts_cut_off: int
    servers_cut_off: int
    storage_blocks_cut_off: int
    services_lost: list[str]
    still_connected: bool
    tier_bandwidth_lost_fraction: float


class LeafFailure(TypedDict, total=False):
    """The single leaf whose failure costs most; empty for a network without leaves."""

    switch: str
    hosts_cut_off: int
    servers_cut_off: int
    storage_blocks_cut_off: int
    services_lost: list[str]


class PlaneAnalysis(TypedDict):
    """One plane of a multi-plane fabric: its reachability, host ports and hops."""

    all_hosts_reach_each_other: bool
    switch_components: int
    host_ports: int
    hops: Hops


class PlaneFailure(TypedDict):
    """What losing one whole plane costs: its host ports, hosts cut off, and the bandwidth share kept."""

    plane: int
    host_ports_lost: int
    hosts_cut_off: int
    bandwidth_kept_fraction: float


class NetworkAnalysis(TypedDict, total=False):
    """One network's graph analysis (plan/analysis.py; plan.json "analysis"): reachability, tiers, bisection, hops
    and what one failure costs; a multi-plane fabric adds its planes, the NVLink backplane its domains. Empty for a
    network the plan does not analyse (AnalysedPlan.analysis_of)."""

    all_hosts_reach_each_other: bool
    switch_components: int
    scope: str  # nvlink: "within each NVLink domain"
    domains: int  # nvlink: NVLink domains
    links: int  # nvlink: backplane links
    tiers: list[TierSummary]
    bisection_bandwidth_gbps: float
    hops: Hops
    single_switch_failure: dict[str, SwitchFailure]  # tier name -> the failure of its first switch
    worst_leaf_failure: LeafFailure
    planes: dict[str, PlaneAnalysis]  # multi-plane fabrics: plane number (as text) -> the plane
    plane_failure: PlaneFailure  # multi-plane fabrics: what losing one plane costs


@dataclass(slots=True)
class Settings:
    """What the planner resolved from the design's defaults and the catalog (plan.json "settings").

    The planner sets every field (plan/build.py); the empty defaults are those of a scratch plan.
    """

    server: str = ""  # catalog id of the GPU server
    gpus_per_server: int = 0
    gpu_model: str = ""
    production_servers: int = 0
    spare_servers: int = 0
    scalable_unit_servers: int = 0
    rails: int = 0
    compute_planes: int = 0
    compute_technology: str = ""  # what the compute switches and optics speak (RoCE runs on ethernet)
    compute_fabric: str = ""  # infiniband-ndr | infiniband-xdr | roce
    compute_switch: str = ""
    compute_oversubscription: float = 0.0
    fabric_manager: str | None = None
    fabric_managers: int = 0
    fabric_manager_ports: str | None = None  # own-leaf | su-slot (compute_fabric.fabric_manager_ports); None without
    storage_fabric_manager: str | None = None  # catalog id of an InfiniBand storage fabric's UFM appliance
    storage_fabric_managers: int = 0  # its UFM appliances (storage_network.fabric_managers)
    storage_technology: str = ""
    storage_switch: str = ""
    parallel_filesystem_block: str = ""
    parallel_filesystem_blocks: int = 0
    parallel_filesystem_read_gbytes_per_s: float = 0.0
    parallel_filesystem_write_gbytes_per_s: float = 0.0
    parallel_filesystem_capacity_tb: float = 0.0
    parallel_filesystem_asked: FilesystemAsked | None = None  # the design's figures
    object_storage_block: str | None = None
    object_storage_blocks: int = 0
    object_storage_shared: bool = False  # served by the parallel filesystem's blocks
    object_storage_capacity_tb: float | None = None  # as delivered
    object_storage_read_gbytes_per_s: float | None = None
    object_storage_asked: ObjectStorageAsked | None = None  # the design's figures, when it has object storage
    # every filesystem mounted, the parallel filesystem first; None (absent from plan.json): the parallel
    # filesystem alone, new, as the fields above give it
    filesystems: list[FilesystemRecord] | None = None
    inband_technology: str = ""
    inband_switch: str = ""
    inband_oversubscription: float = 0.0
    oob_technology: str = ""
    oob_switch: str = ""
    oob_aggregation_switch: str = ""
    pdu: str = ""  # catalog id, chosen from the site's feed
    non_compute_pdu: str = ""  # catalog id of the PDU of racks without GPU servers (site.non_compute_pdu)
    rack_system: str | None = None  # catalog id of the design's rack-scale NVLink system (GB200 NVL72 ...)
    nvlink_domains: int | None = None  # rack-scale designs: NVLink domains planned (one per rack system)
    servers_per_rack: int = 0  # GPU servers (rack-scale: compute trays) per compute rack
    servers_per_rack_fit: int | None = None  # servers the rack's power, height and cooling allow (not rack-scale)
    # the growth reserve (compute_fabric.final_scalable_units): the SUs filled now and those the spines, central
    # racks and floor are planned for (equal: no reserve)
    scalable_units: int = 0
    final_scalable_units: int = 0
    storage_final_scalable_units: int = 0

    def parallel_filesystem_label(self) -> str:
        """The parallel filesystem in a few words: its blocks (2 x ddn-ai400x2), or the site's existing one and
        the links it is reached over."""
        first = self.filesystems[0] if self.filesystems else None
        if first is not None and first["links"] is not None:
            links = first["links"]
            return f"the existing {first['name']} filesystem, {links['count']} x {links['speed_gbps']:g}G links"
        return f"{self.parallel_filesystem_blocks} x {self.parallel_filesystem_block}"

    def is_parallel_filesystem_device(self, name: str, role: str) -> bool:
        """Whether a storage-network host is the parallel filesystem's (a block, or an existing one's hand-off),
        not another filesystem's."""
        first = self.filesystems[0] if self.filesystems else None
        if first is None:
            return role == "storage"
        prefix = first["device_prefix"]
        return name == prefix if first["existing"] else role == "storage" and name.startswith(f"{prefix}-")

    def technology(self, network: str) -> str | None:
        """The technology a network's switches and optics speak (None for a network without one, e.g. NVLink)."""
        return {
            "compute": self.compute_technology,
            "storage": self.storage_technology,
            "inband": self.inband_technology,
            "oob": self.oob_technology,
        }.get(network)

    def as_json(self) -> dict[str, object]:
        """plan.json's "settings": every field, less those that only some designs have (absent, not null)."""
        record = asdict(self)
        for name in _ABSENT_WHEN_NONE:
            if record[name] is None:
                del record[name]
        return record


# Settings fields plan.json leaves out (rather than writing null) for a design without them
_ABSENT_WHEN_NONE = (
    "object_storage_asked",
    "filesystems",
    "rack_system",
    "nvlink_domains",
    "servers_per_rack_fit",
)


@dataclass(slots=True)
class Totals:
    """Counts every view quotes (analyse/totals.py; plan.json "totals")."""

    servers: int = 0
    production_servers: int = 0
    spare_servers: int = 0
    gpus: int = 0
    production_gpus: int = 0
    scalable_units: int = 0
    switches: dict[str, dict[str, int]] = field(default_factory=dict)  # network -> tier name -> switches
    switches_total: int = 0
    links: dict[str, dict[str, int]] = field(default_factory=dict)  # network -> "host-leaf"... -> links
    links_total: int = 0
    cables: int = 0
    cables_by_media: dict[str, int] = field(default_factory=dict)
    racks: int = 0
    racks_by_purpose: dict[str, int] = field(default_factory=dict)
    devices_by_role: dict[str, int] = field(default_factory=dict)
    it_power_max_kw: float = 0.0
    it_power_typical_kw: float = 0.0

    def as_json(self) -> dict[str, object]:
        return asdict(self)


class Plan:
    """What every stage of a plan has, and the reads they share: a planner's draft (PlanDraft), the physical plan
    (PhysicalPlan) and the analysed plan (AnalysedPlan) are each a Plan. The fields are the stages' own; here they
    are read-only."""

    __slots__ = ()

    if TYPE_CHECKING:

        @property
        def name(self) -> str: ...
        @property
        def design(self) -> Design: ...
        @property
        def settings(self) -> Settings: ...
        @property
        def devices(self) -> dict[str, Device]: ...
        @property
        def links(self) -> list[Link]: ...
        @property
        def cables(self) -> list[Cable]: ...
        @property
        def racks(self) -> dict[str, RackPlan]: ...
        @property
        def tiers(self) -> list[Tier]: ...
        @property
        def catalog_parts(self) -> dict[str, AnyPart]: ...
        @property
        def device_power(self) -> dict[str, DevicePower]: ...
        @property
        def memo_key(self) -> Plan:
            """What values made from this plan are kept under (plan/memo.py): the plan whose devices, links,
            cables and racks these are."""

    def part_as(self, device: str, kind: type[PartT]) -> PartT:
        """A device's catalog part, known to be of a kind (a GPU server's GpuServer, a switch's Switch ...)."""
        return self.catalog_part(self.devices[device].part, kind)

    def catalog_part(self, part_id: str, kind: type[PartT]) -> PartT:
        """A catalog part by id, known to be of a kind."""
        part = self.catalog_parts[part_id]
        if not isinstance(part, kind):
            raise TypeError(f"catalog part {part_id} is a {type(part).__name__}, not a {kind.__name__}")
        return part

    def part(self, device: str) -> AnyPart:
        """The catalog part of a device in the plan."""
        return self.catalog_parts[self.devices[device].part]

    def devices_with(self, role: str) -> list[Device]:
        return [d for d in self.devices.values() if d.role == role]

    def gpu_nodes(self) -> list[Device]:
        """The GPU nodes (GPU servers and rack-scale compute trays, registry Role.gpu_node), in plan order."""
        return [d for d in self.devices.values() if is_gpu_node(d.role)]

    def switches(self, network: str, tier: int | None = None) -> list[Device]:
        return [
            d
            for d in self.devices.values()
            if d.role == "switch" and d.network == network and (tier is None or d.tier == tier)
        ]

    def networks(self) -> list[NetworkName]:
        """The plan's networks in registry order: those every design has, and any other that has links."""
        used = {link.network for link in self.links}
        return [name for name in NETWORKS if NETWORK_INFO[name].every_design or name in used]


@dataclass(slots=True, weakref_slot=True)
class PlanDraft(Plan):
    """The planner's working state (plan/build.py and the plan/ modules it calls fill it in place); outside plan/ a
    plan is a PhysicalPlan or an AnalysedPlan, which nothing changes."""

    name: str
    design: Design
    settings: Settings = field(default_factory=Settings)
    devices: dict[str, Device] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    cables: list[Cable] = field(default_factory=list)
    racks: dict[str, RackPlan] = field(default_factory=dict)
    tiers: list[Tier] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # the planner's warnings and advisories
    catalog_parts: dict[str, AnyPart] = field(default_factory=dict, repr=False)  # part id -> catalog part
    # device name -> its draw with optics (plan/power/draw.py), computed once with the cables
    device_power: dict[str, DevicePower] = field(default_factory=dict, repr=False)

    @classmethod
    def scratch(cls, name: str) -> PlanDraft:
        """A draft that only holds one network's devices and links (fabric dry runs, tests): no design."""
        return cls(name=name, design=Design.model_construct(name=name, compute=Compute.model_construct()))

    @property
    def memo_key(self) -> Plan:
        return self

    def add(self, device: Device) -> Device:
        if device.name in self.devices:
            raise ValueError(f"duplicate device name {device.name}")
        if device.role not in ROLES:
            raise ValueError(f"{device.name}: unknown device role {device.role!r} (plan/registry.py ROLES)")
        if device.network is not None and device.network not in NETWORK_INFO:
            raise ValueError(f"{device.name}: unknown network {device.network!r} (plan/registry.py NETWORK_INFO)")
        self.devices[device.name] = device
        return device


@dataclass(frozen=True, slots=True, weakref_slot=True, kw_only=True)
class PhysicalPlan(Plan):
    """The physical plan of one design: devices in racks, links, cables, tiers and device power, with the
    planner's findings (plan/build.py build_physical_plan makes it once, complete). Its containers are the
    planner's own; nothing writes them after."""

    name: str
    design: Design
    settings: Settings
    devices: dict[str, Device]
    links: list[Link]
    cables: list[Cable]
    racks: dict[str, RackPlan]
    tiers: list[Tier]
    planner_findings: list[Finding]  # the planner's warnings and advisories
    catalog_parts: dict[str, AnyPart] = field(repr=False)  # part id -> catalog part
    device_power: dict[str, DevicePower] = field(repr=False)  # device name -> its draw with optics

    @property
    def memo_key(self) -> Plan:
        return self


@dataclass(frozen=True, slots=True, kw_only=True)
class AnalysedPlan(PhysicalPlan):
    """A physical plan with what is derived from it: the graph analyses, totals, the checkpoint and failure model,
    the burn-in plan, the design rules' facts and every finding (gpucluster/pipeline.py analyse_plan makes it).
    The plan every view reads; a changed plan is a changed PhysicalPlan (its `made_from`), analysed again."""

    analysis: dict[str, NetworkAnalysis]  # network -> its graph analysis
    totals: Totals
    checkpoint: CheckpointFacts | None  # the checkpoint and failure model's summary (plain JSON)
    burn_in: list[BurnInTest] = field(repr=False)  # the burn-in tests in the order to run them
    facts: RuleFacts  # what the design rules read (analyse/rules.py)
    findings: list[Finding]  # the planner's findings, then the design rules' results
    made_from: PhysicalPlan = field(repr=False, compare=False)  # the physical plan analysed
    # whether its physical content is made_from's own (then what is made from one holds for the other); False for a
    # copy with some of it replaced (dataclasses.replace, in tests)
    _as_made: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        made = self.made_from
        object.__setattr__(self, "_as_made", all(getattr(self, name) is getattr(made, name) for name in PHYSICAL))

    @property
    def memo_key(self) -> Plan:
        return self.made_from if self._as_made else self

    def analysis_of(self, network: str) -> NetworkAnalysis:
        """A network's graph analysis, empty for a network the plan has none of."""
        return self.analysis.get(network) or NetworkAnalysis()

    def settings_json(self) -> dict[str, object]:
        """plan.json's "settings": the planner's settings and the checkpoint model's summary (when there is one)."""
        record = self.settings.as_json()
        if self.checkpoint is not None:
            record["checkpoint"] = self.checkpoint
        return record


PHYSICAL: tuple[str, ...] = tuple(f.name for f in fields(PhysicalPlan))  # a physical plan's fields, in order
