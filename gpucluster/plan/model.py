"""The physical plan: plain typed data that every artifact is a view of.

Devices stand in racks at U positions; links join (device, port) to (device, port) on one of the
networks (plan/registry.py); cables carry one or more links (a twin-port copper cable carries two;
backplane links have none). The networkx graphs are derived from the links, one per network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import networkx as nx

from gpucluster.plan.registry import NETWORK_INFO, NETWORK_NAMES, ROLES

NetworkName = str  # a key of plan/registry.py NETWORK_INFO
NETWORKS: tuple[NetworkName, ...] = NETWORK_NAMES
DeviceRole = str  # a key of plan/registry.py ROLES

RULE_PREFIX = "rule:"  # findings from design rules (gpucluster/rules.py) carry their rule's name after this prefix


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
    severity: Literal["error", "warning", "advisory", "ok"]
    message: str
    subject: str = ""  # what it is about: a rack, a network, the design


@dataclass
class Plan:
    """The whole physical plan of one design."""

    name: str
    design: object  # the Design (typed in gpucluster.design.schema; kept loose to avoid a cycle)
    devices: dict[str, Device] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    cables: list[Cable] = field(default_factory=list)
    racks: dict[str, RackPlan] = field(default_factory=dict)
    tiers: list[Tier] = field(default_factory=list)
    graphs: dict[str, nx.Graph] = field(default_factory=dict)
    analysis: dict[str, dict] = field(default_factory=dict)
    totals: dict[str, object] = field(default_factory=dict)  # counts every view quotes (plan/totals.py)
    facts: dict[str, object] = field(default_factory=dict)  # what the design rules read (rules.py)
    findings: list[Finding] = field(default_factory=list)  # warnings and design-rule results
    settings: dict[str, object] = field(default_factory=dict)  # resolved defaults (switch models, SU size...)
    catalog_parts: dict[str, object] = field(default_factory=dict, repr=False)  # part id -> catalog part
    # device name -> its draw with optics (plan/power.py DevicePower), computed once with the cables
    device_power: dict[str, object] = field(default_factory=dict, repr=False)
    # the burn-in tests in the order to run them (gpucluster/burn_in.py BurnInTest), computed once with the plan
    burn_in: list[object] = field(default_factory=list, repr=False)

    def part(self, device: str) -> object:
        """The catalog part of a device in the plan."""
        return self.catalog_parts[self.devices[device].part]

    def add(self, device: Device) -> Device:
        if device.name in self.devices:
            raise ValueError(f"duplicate device name {device.name}")
        if device.role not in ROLES:
            raise ValueError(f"{device.name}: unknown device role {device.role!r} (plan/registry.py ROLES)")
        if device.network is not None and device.network not in NETWORK_INFO:
            raise ValueError(f"{device.name}: unknown network {device.network!r} (plan/registry.py NETWORK_INFO)")
        self.devices[device.name] = device
        return device

    def devices_with(self, role: str) -> list[Device]:
        return [d for d in self.devices.values() if d.role == role]

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

    def links_on(self, network: str) -> list[Link]:
        return [link for link in self.links if link.network == network]
