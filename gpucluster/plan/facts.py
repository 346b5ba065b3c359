"""Plain-data records the plan holds for later stages, typed here below the plan so that plan/model.py names them
without importing the stages that fill them. The design-rule facts: the summary of a plan the rules read (rules.py
builds it, plan.json "facts" holds it, the Pulumi policy pack receives it as the cluster component's properties),
so the rules, the checkpoint model and the burn-in plan that fill it agree on every key; the burn-in tests; each
device's draw.

A key marked NotRequired is left out rather than set to None where its value is unknown or does not apply: Pulumi
drops None-valued properties, and a rule reads an absent key as unknown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict


class OversubscriptionFact(TypedDict):
    """A compute-fabric tier with uplinks and its down:up ratio."""

    tier: str
    ratio: float


class RackSystemFacts(TypedDict):
    """A rack-scale system's power shelves and what they deliver (None without a power feed in the design)."""

    system: str
    shelves: int
    shelf_kw: float
    redundancy: str
    usable_kw: float | None
    nameplate_kw: float
    circuit_kw: float | None


class RackFacts(TypedDict):
    """One rack's load; its weight on the floor where the catalog completes it and the design has a site; its
    circuits where it has PDUs and the design a power feed; its shelves where it is a rack-scale system."""

    name: str
    purpose: str
    power_max_kw: float
    power_typical_kw: float
    liquid_max_kw: float
    loaded_weight_kg: NotRequired[float]
    floor_cell_mm: NotRequired[list[int]]
    floor_load_kpa: NotRequired[float]
    circuits_per_feed: NotRequired[int]
    circuit_capacity_kw: NotRequired[float]
    outlets_ok: NotRequired[bool]
    rack_system: NotRequired[RackSystemFacts]


class FeedLossFacts(TypedDict):
    """Devices of one model that cannot run at full power when one PDU or feed of their rack is lost."""

    part: str
    devices: int
    psus: int
    surviving_psus: int
    surviving_kw: float
    split: str
    max_kw: float
    typical_kw: float


class FabricFeedLoss(TypedDict):
    """A network whose every switch is of a model that one feed loss stops: the whole fabric goes down with it."""

    network: str
    part: str
    switches: int


class BurnInFacts(TypedDict):
    """What the burn-in plan tests and covers."""

    tests: int
    stages: int
    servers: int
    servers_covered: int
    compute_host_links: int
    links_covered: int


class SlowHostLink(TypedDict):
    """One kind of host port linked below its own speed, with a count and one example naming both ends."""

    network: str
    host_part: str
    host_gbps: float
    switch_part: str
    link_gbps: float
    links: int
    example: str


class HalfSpeedLink(TypedDict):
    """One kind of host port at half a whole InfiniBand port's speed or less on a straight cable (no NVIDIA pairing
    found), with a count and one example naming both ends."""

    network: str
    host_part: str
    switch_part: str
    link_gbps: float
    port_gbps: float
    cable_part: str
    links: int
    example: str


class IncompatibleLink(TypedDict):
    """One kind of cabled link whose two ends cannot come up together (a port and the module or cable at its end
    speak different generations, or the two ports do), with a count, one example and the fix."""

    network: str
    part: str  # the device whose port the mismatch is at
    port_technology: str
    other: str  # what it meets: a module, a cable or the far port
    other_technology: str
    cable_part: str
    links: int
    example: str
    fix: str


class OverlongCable(TypedDict):
    """One kind of cable (network, catalog part, orderable length) ordered at more than twice its routed run, with
    a count, the largest ratio of ordered length to run, and one example."""

    network: str
    cable_part: str
    length_m: float
    cables: int
    worst_ratio: float
    example: str


class SubnetManagerFacts(TypedDict):
    """An InfiniBand network and what can run its subnet manager."""

    network: str
    switch: str | None
    switch_subnet_manager: bool
    fabric_managers: int
    fabric_manager: NotRequired[str | None]  # only with fabric-manager appliances


class SpareFacts(TypedDict):
    """Spare servers against the servers in repair at once, at the workload's confidence."""

    needed: int
    have: int
    confidence: float
    repair_hours: float


class DomainSpares(TypedDict):
    """Rack-scale systems: in-rack spare trays outside each job segment, and spare racks beyond that."""

    racks: int
    segment: int
    in_rack_spares: int
    p_rack_short: float
    spare_racks_needed: int
    spare_racks_have: int


class TrainingFacts(TypedDict, total=False):
    """The workload against the plan (training/model.py); what is not known is left out."""

    tokens_b: float
    target_days: float
    mfu: float
    gpus: int
    gpu_model: str
    compute_days: float
    goodput: float
    time_to_train_days: float
    gpus_needed: int
    step_seconds: float
    load_seconds: float
    sync_seconds: float
    dataset_tb: float
    filesystem_capacity_tb: float
    filesystem: str


class CheckpointFacts(TypedDict):
    """The checkpoint and failure model's summary (training/checkpoint.py; also plan.json settings.checkpoint)."""

    workload: Literal["assumed", "design"]
    model_parameters_b: float
    checkpoint_tb: float
    mode: str
    write_seconds: float
    stall_seconds: float
    interval_seconds: float
    interval_from: str
    write_bottleneck: str
    write_gbytes_per_s: float
    mtbf_hours: float | None
    daly_interval_seconds: float | None
    goodput: float
    goodput_at_daly: float
    training: TrainingFacts
    spares: SpareFacts
    domain_spares: NotRequired[DomainSpares]  # rack-scale systems only


class RuleFacts(TypedDict):
    """Everything the design rules read, in plan.json's key order."""

    compute_fabric_link_purposes: dict[str, int]
    non_compute_links_on_compute_switches: int
    compute_oversubscription: list[OversubscriptionFact]
    racks: list[RackFacts]
    floor_rating_kpa: float | None
    rack_power_budget_kw: float | None
    power_redundancy: str | None
    feed_loss: list[FeedLossFacts]
    fabric_feed_loss: list[FabricFeedLoss]
    cooling: str | None
    cooling_capacity_kw: float | None
    spare_servers: int
    production_servers: int
    burn_in_plan: BurnInFacts
    checkpoint: CheckpointFacts | None
    slow_host_links: list[SlowHostLink]
    unsplit_half_speed_links: list[HalfSpeedLink]
    incompatible_links: list[IncompatibleLink]
    overlong_cables: list[OverlongCable]
    subnet_managers: list[SubnetManagerFacts]


@dataclass(frozen=True, slots=True)
class BurnInTest:
    """One acceptance test with its pass threshold, as the expected-results list holds it."""

    id: str
    stage: int
    test: str
    scope: str
    subject: str
    nodes: tuple[str, ...]
    racks: tuple[str, ...]
    metric: str
    comparison: str  # ">=" or "=="
    threshold: float | str
    unit: str
    source: str
    command: str
    rail: int | None = None  # link and rail tests: the rail
    links: tuple[str, ...] = ()  # compute links the test measures: "server port -> leaf port (cable)"


@dataclass(frozen=True, slots=True)
class DevicePower:
    """One device's draw in watts, its optics shown apart."""

    typical_w: float
    max_w: float
    catalog_typical_w: float
    catalog_max_w: float
    optics_typical_w: float  # modules and active-cable ends in its cages
    optics_max_w: float
    optics_in_catalog_max: bool  # the catalog maximum already covers the optics
