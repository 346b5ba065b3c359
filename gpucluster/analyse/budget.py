"""The power-and-cooling budget: per device, rack, row, scalable unit and site, from the plan alone.

Its formulas are in docs/artifacts.md (Power and cooling) and docs/rack-scale.md (coolant flow, CDUs); each
constant's source stands beside it. In-row CDUs draw their
catalog electrical input (the N+1 spare ASSUMED running), added beside the IT load the PUE multiplies; a unit whose
draw is not published adds nothing and the views say so.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from gpucluster.catalog.schema import Cdu, FlowPoint, Pdu, RackSystem
from gpucluster.design.schema import Site
from gpucluster.plan.memo import per_plan
from gpucluster.plan.model import RULE_PREFIX, AnalysedPlan, Finding, Plan
from gpucluster.plan.power.circuits import RackCircuits, circuit_kind, circuit_kva, circuit_w, rack_circuits
from gpucluster.plan.power.cooling import COOLING_SOURCES, cooling_against_site, cooling_capacity_kw, cooling_needed
from gpucluster.plan.power.draw import DevicePower, device_powers, rack_devices
from gpucluster.plan.registry import is_gpu_node

# 1 W = 3.412142 BTU(IT)/h (1 BTU/h = 0.29307107 W); insideHPC's airflow formula uses 3,412.
BTU_PER_H_PER_W = 3.412142
BTU_PER_H_PER_TON = 12_000.0  # 1 refrigeration ton = 12,000 BTU/h = 3.517 kW (ANSI/IIR R-1)
AIR_SENSIBLE_HEAT_FACTOR = 1.085  # BTU/h per CFM per °F for standard air (insideHPC, Dell)
FAHRENHEIT_PER_KELVIN = 1.8
M3_PER_FT3 = 0.028316846592  # exact: 1 ft = 0.3048 m
HOURS_PER_YEAR = 8760.0  # 365 days x 24 h
WATER_KJ_PER_KG_K = 4.18  # specific heat of water at 20-40 °C, 4.18 kJ/(kg K) (engineering tables)
WATER_KG_PER_L = 0.996  # density of water at about 30 °C
CDU_SPARES = 1  # N+1 coolant distribution units per group of racks they serve

SOURCES = {
    "BTU/h per W": "insideHPC, Calculating CFMs for HPC power and cooling (3,412 BTU/h per kW): "
    "https://insidehpc.com/2011/04/calculating-cfms-for-hpc-power-and-cooling/",
    "refrigeration ton": "1 TR = 12,000 BTU/h = 3.517 kW: https://globalcalcs.com/en/conversion/refrigeration-ton-converter/",
    "airflow": "CFM = 3,412 x kW / (1.085 x dT °F): insideHPC (above); "
    "https://fanacdc.com/how-to-calculate-cfm-for-server-racks-and-data-center-cabinets",
    "circuit": "P = sqrt(3) x V_LL x I (three-phase), V x I (single-phase); continuous load at most 80 % of the "
    "breaker (NEC): https://cal53.calculator.city/3-phase-pdu-calculator/ ; 415 V 3-phase 60 A = 34.5 kW at 80 %, "
    "matching the Raritan PX3-5878's 34.5 kVA (https://d3b2us605ptvk2.cloudfront.net/product-selector/pdus/PX3-5878I2R-P1Q1R1/PX3-5878I2R-P1Q1R1A5D5_spec.pdf)",
    "coolant flow": "Q = P / (c_p x dT): water c_p 4.18 kJ/(kg K), 0.996 kg/L; published rack flows in the catalog "
    "(OCP MGX 130 L/min per 120 kW rack, Lenovo GB300 flow by supply temperature: the catalog's rack_scale.yaml, "
    "sources OCP_MGX_R and LENOVO_GB300_R)",
    "PUE": "facility power / IT power; industry average 1.56-1.58 (Uptime Institute 2023-2024), hyperscale 1.1-1.2: "
    "https://intelligence.uptimeinstitute.com/resource/large-data-centers-are-mostly-more-efficient-analysis-confirms",
    "switch maximum with optics": "QM9700 1.72 kW max with active cables, 0.747 kW typical with passive cables "
    "(NVIDIA QM97x0 specifications, https://networking-docs.nvidia.com/qm97x0hw/specifications)",
    **{f"{kind} cooling capacity": source for kind, source in COOLING_SOURCES.items()},
}


def btu_per_h(watts: float) -> float:
    return watts * BTU_PER_H_PER_W


def refrigeration_tons(watts: float) -> float:
    return btu_per_h(watts) / BTU_PER_H_PER_TON


def airflow_cfm(watts: float, rise_k: float) -> float:
    """Air that carries `watts` of heat away at a temperature rise of `rise_k` kelvin."""
    return btu_per_h(watts) / (AIR_SENSIBLE_HEAT_FACTOR * rise_k * FAHRENHEIT_PER_KELVIN)


def cfm_to_m3_per_h(cfm: float) -> float:
    return cfm * 60.0 * M3_PER_FT3


def water_flow_l_per_min(watts: float, rise_k: float) -> float:
    """Water that carries `watts` of heat away at a temperature rise of `rise_k` kelvin."""
    return watts / 1000.0 / (WATER_KJ_PER_KG_K * rise_k) / WATER_KG_PER_L * 60.0


def flow_at_supply(points: list[FlowPoint], supply_c: float) -> float | None:
    """The published rack flow at a supply temperature, linear between the table's points; None outside it."""
    table = sorted((p.supply_c, p.flow_l_per_min) for p in points)
    for (t0, f0), (t1, f1) in itertools.pairwise(table):
        if t0 <= supply_c <= t1:
            return f0 + (f1 - f0) * (supply_c - t0) / (t1 - t0)
    if table and supply_c == table[0][0]:
        return table[0][1]
    return None


@dataclass(frozen=True, slots=True)
class RackCoolant:
    """The liquid loop of one rack-scale system's rack: one flow, at the site's supply temperature, and the
    temperature rise that flow gives for the rack's liquid heat."""

    rack: str
    system: str  # catalog id
    su: int | None
    liquid_w: float
    air_w: float
    flow_l_per_min: float
    basis: str  # where the flow comes from (the vendor's figure, or the design's rise)
    supply_c: float | None  # the site's coolant supply temperature, where the design states it
    rise_k: float  # coolant temperature rise across the rack at that flow (water)


@dataclass(frozen=True, slots=True)
class CduGroup:
    """The coolant distribution units serving one scalable unit's liquid-cooled racks."""

    name: str  # "SU 1"
    cdu: str  # catalog id
    racks: int
    liquid_w: float
    flow_l_per_min: float
    needed: int  # units for the racks and the heat
    units: int  # with the spare (N+1)
    capacity_w: float  # of the units without the spare
    power_w: float | None  # every unit's electrical input (catalog); None: the unit's draw is not published


@dataclass(frozen=True, slots=True)
class Load:
    """A heat and power load in watts (maximum and typical) with its liquid share."""

    max_w: float = 0.0
    typical_w: float = 0.0
    liquid_w: float = 0.0  # at maximum
    optics_max_w: float = 0.0

    @property
    def air_w(self) -> float:
        return self.max_w - self.liquid_w

    def __add__(self, other: Load) -> Load:
        return Load(
            self.max_w + other.max_w,
            self.typical_w + other.typical_w,
            self.liquid_w + other.liquid_w,
            self.optics_max_w + other.optics_max_w,
        )


@dataclass(frozen=True, slots=True)
class DeviceBudget:
    name: str
    part: str
    role: str
    rack: str
    power: DevicePower
    cooling: str  # air | liquid
    liquid_fraction: float
    liquid_w: float


@dataclass(frozen=True, slots=True)
class RackBudget:
    name: str
    row: str
    purpose: str
    su: int | None
    devices: int  # excluding PDUs
    load: Load
    circuits: RackCircuits
    cooling_needed: str  # air | rear-door | liquid
    cooling_use: str  # the heat the site's cooling takes of its capacity (plan/power.py cooling_against_site)
    findings: tuple[Finding, ...]


@dataclass(frozen=True, slots=True)
class GroupBudget:
    """A row or a scalable unit."""

    name: str
    racks: int
    load: Load
    circuits: int
    servers: int = 0
    servers_catalog_max_w: float = 0.0  # GPU servers at their catalog maximum (the vendors' published figures)
    servers_max_w: float = 0.0  # GPU servers with their optics


@dataclass(frozen=True, slots=True)
class CircuitKind:
    kind: str  # "415 V 3-phase 60 A"
    feed: str
    circuits: int
    usable_w: float  # per circuit


@dataclass
class Budget:
    name: str
    site: Site
    rise_k: float
    pue: float
    devices: list[DeviceBudget]
    racks: list[RackBudget]
    rows: list[GroupBudget]
    sus: list[GroupBudget]
    total: Load
    circuit_kinds: list[CircuitKind]
    cooling_capacity_kw: float
    pdu: str  # PDU model (catalog id)
    pdu_kva: float  # its input rating
    circuit_usable_w: float  # continuous power one circuit carries (feed and PDU)
    findings: list[Finding] = field(default_factory=list)
    non_compute_pdu: str = ""  # the PDU model of racks without GPU servers (catalog id)
    coolant: list[RackCoolant] = field(default_factory=list)  # liquid-cooled rack systems
    cdus: list[CduGroup] = field(default_factory=list)

    @property
    def cdus_w(self) -> float:
        """The in-row CDUs' published electrical input (units whose draw is not published add nothing)."""
        return sum(g.power_w or 0.0 for g in self.cdus)

    @property
    def facility_max_w(self) -> float:
        return (self.total.max_w + self.cdus_w) * self.pue

    @property
    def facility_typical_w(self) -> float:
        return (self.total.typical_w + self.cdus_w) * self.pue

    @property
    def annual_energy_mwh(self) -> float:
        return self.facility_typical_w * HOURS_PER_YEAR / 1e6

    @property
    def annual_cost(self) -> float | None:
        price = self.site.electricity_price_per_kwh
        return None if price is None else self.annual_energy_mwh * 1000.0 * price

    @property
    def feed_loads_w(self) -> dict[str, float]:
        """Per feed, what it carries at the racks' maxima when another feed is lost: each rack's maximum shared by
        the circuits it keeps (2N: the whole IT maximum on each feed; N+1: a rack's load over its PDUs less one)."""
        loads: dict[str, float] = defaultdict(float)
        for rack in self.racks:
            c = rack.circuits
            if c.carrying:
                for feed in c.feeds:
                    loads[feed] += c.circuits_per_feed * rack.load.max_w / c.carrying
        return dict(sorted(loads.items()))

    @property
    def feed_max_w(self) -> float:
        """What each feed must be able to carry: the whole IT maximum with 2N, all of it with N."""
        return self.total.max_w


@per_plan
def kept_power_budget(plan: AnalysedPlan) -> Budget:
    """power_budget(plan) made once per plan for the writers, which read it again and again: not to be changed."""
    return power_budget(plan)


def power_budget(plan: AnalysedPlan) -> Budget:
    """The whole budget of a plan: one pass over devices, cables and racks."""
    site = plan.design.site
    feed = site.power_feed
    powers = device_powers(plan)
    pdu = plan.catalog_part(plan.settings.pdu, Pdu)
    devices = _device_budgets(plan, powers)
    by_name = {d.name: d for d in devices}
    rule_findings = [
        f
        for f in plan.findings
        if f.rule in (RULE_PREFIX + "rack-power-and-cooling", RULE_PREFIX + "rack-power-distribution")
    ]
    by_subject: dict[str, list[Finding]] = defaultdict(list)
    for finding in rule_findings:
        by_subject[finding.subject].append(finding)
    racks = []
    for rack in plan.racks.values():
        load = _rack_load([by_name[n] for n in rack_devices(rack)])
        racks.append(
            RackBudget(
                name=rack.name,
                row=_row_name(rack.name),
                purpose=rack.purpose,
                su=rack.su,
                devices=len(rack.devices),
                load=load,
                circuits=rack_circuits(plan, rack, feed),
                cooling_needed=cooling_needed(load.air_w / 1000, load.liquid_w / 1000),
                cooling_use=cooling_against_site(
                    load.air_w / 1000, load.liquid_w / 1000, site.cooling, cooling_capacity_kw(site)
                ),
                findings=tuple(by_subject.get(rack.name, ())),
            )
        )
    rows = _groups(racks, lambda r: r.row, by_name, plan)
    sus = _groups([r for r in racks if r.su is not None], lambda r: f"SU {r.su}", by_name, plan)
    coolant = _coolant(plan, racks, site)
    cdus = _cdus(plan, coolant, site)
    return Budget(
        coolant=coolant,
        cdus=cdus,
        name=plan.name,
        site=site,
        rise_k=site.air_temperature_rise_k,
        pue=site.pue,
        devices=devices,
        racks=racks,
        rows=rows,
        sus=sus,
        total=sum((r.load for r in racks), Load()),
        circuit_kinds=_circuit_kinds(plan, racks),
        cooling_capacity_kw=cooling_capacity_kw(site),
        pdu=pdu.id,
        pdu_kva=circuit_kva(pdu.voltage_v, pdu.phases, pdu.current_a),
        circuit_usable_w=circuit_w(pdu, feed),
        findings=[f for f in rule_findings if f.severity != "ok"],
        non_compute_pdu=plan.settings.non_compute_pdu or pdu.id,
    )


def _coolant(plan: Plan, racks: list[RackBudget], site: Site) -> list[RackCoolant]:
    result = []
    for budget in racks:
        rack = plan.racks[budget.name]
        if not rack.rack_system or budget.load.liquid_w <= 0:
            continue
        system = plan.catalog_part(rack.rack_system, RackSystem)
        liquid = budget.load.liquid_w
        flow, basis = rack_flow(system, site, budget.load.max_w, liquid)
        rise = liquid / 1000.0 / (WATER_KJ_PER_KG_K * flow / 60.0 * WATER_KG_PER_L)
        result.append(
            RackCoolant(
                rack.name, system.id, rack.su, liquid, budget.load.air_w, flow, basis, site.coolant_supply_c, rise
            )
        )
    return result


def rack_flow(system: RackSystem, site: Site, rack_w: float, liquid_w: float) -> tuple[float, str]:
    """One coolant flow per rack and where it comes from (the module's docstring). The published flow per kW is of
    the whole rack, not of its liquid share (OCP MGX: 130 L/min for a 120 kW rack)."""
    if site.coolant_supply_c is not None:
        published = flow_at_supply(system.coolant_flow_by_supply, site.coolant_supply_c)
        if published is not None:
            return published, f"vendor's flow at {site.coolant_supply_c:g} °C supply (catalog)"
    if site.coolant_temperature_rise_k:
        rise = site.coolant_temperature_rise_k
        return water_flow_l_per_min(liquid_w, rise), f"water at the design's {rise:g} K rise"
    per_kw = system.coolant_flow_l_per_min_per_kw
    return rack_w / 1000.0 * per_kw, f"{per_kw:g} L/min per kW of rack power (catalog)"


def choose_cdu(plan: Plan, site: Site, racks: int, liquid_w: float) -> Cdu:
    """The design's CDU, or the smallest in-row unit that serves `racks` racks and `liquid_w` with one unit."""
    parts = plan.catalog_parts
    if site.cdu != "auto":
        return plan.catalog_part(site.cdu, Cdu)
    units = sorted(
        (p for p in parts.values() if isinstance(p, Cdu) and p.placement == "in-row"),
        key=lambda u: (u.capacity_kw, u.id),
    )
    fitting = [u for u in units if (u.max_racks or racks) >= racks and u.capacity_kw * 1000 >= liquid_w]
    return fitting[0] if fitting else units[-1]


def _cdus(plan: Plan, coolant: list[RackCoolant], site: Site) -> list[CduGroup]:
    groups: dict[int | None, list[RackCoolant]] = defaultdict(list)
    for rack in coolant:
        groups[rack.su].append(rack)
    result = []
    for su, members in sorted(groups.items(), key=lambda item: item[0] or 0):
        liquid = sum(r.liquid_w for r in members)
        unit = choose_cdu(plan, site, len(members), liquid)
        needed = max(
            math.ceil(len(members) / unit.max_racks) if unit.max_racks else 1,
            math.ceil(liquid / (unit.capacity_kw * 1000)),
        )
        result.append(
            CduGroup(
                name=f"SU {su}" if su is not None else "cluster",
                cdu=unit.id,
                racks=len(members),
                liquid_w=liquid,
                flow_l_per_min=sum(r.flow_l_per_min for r in members),
                needed=needed,
                units=needed + CDU_SPARES,
                capacity_w=needed * unit.capacity_kw * 1000,
                power_w=None if unit.power_w is None else (needed + CDU_SPARES) * unit.power_w,
            )
        )
    return result


def _device_budgets(plan: Plan, powers: dict[str, DevicePower]) -> list[DeviceBudget]:
    """Every device's budget, by name; each part's cooling read once (150,000 devices at 131,072 GPUs)."""
    cooling_of: dict[str, tuple[str, float]] = {}  # part -> (method, liquid fraction)
    devices = plan.devices
    result = []
    for name in sorted(devices):
        device = devices[name]
        if device.part not in cooling_of:
            cooling = getattr(plan.catalog_parts[device.part], "cooling", None)
            fraction = cooling.liquid_fraction if cooling is not None and cooling.method == "liquid" else 0.0
            cooling_of[device.part] = (cooling.method if cooling is not None else "air", fraction)
        method, fraction = cooling_of[device.part]
        power = powers[name]
        # liquid_w as liquid_heat_w gives it, with the part's cooling read once
        result.append(
            DeviceBudget(
                name, device.part, device.role, device.rack, power, method, fraction, power.catalog_max_w * fraction
            )
        )
    return result


def _rack_load(devices: list[DeviceBudget]) -> Load:
    """The sum of the devices' loads (added in their order, as Load + Load adds)."""
    max_w = typical_w = liquid_w = optics_max_w = 0.0
    for device in devices:
        power = device.power
        max_w += power.max_w
        typical_w += power.typical_w
        liquid_w += device.liquid_w
        optics_max_w += power.optics_max_w
    return Load(max_w, typical_w, liquid_w, optics_max_w)


def _groups(
    racks: list[RackBudget], key: Callable[[RackBudget], str], by_name: dict[str, DeviceBudget], plan: Plan
) -> list[GroupBudget]:
    grouped: dict[str, list[RackBudget]] = defaultdict(list)
    for rack in racks:
        grouped[key(rack)].append(rack)
    result = []
    for name, members in grouped.items():
        servers = [by_name[n] for r in members for n in plan.racks[r.name].devices if is_gpu_node(by_name[n].role)]
        result.append(
            GroupBudget(
                name=name,
                racks=len(members),
                load=sum((r.load for r in members), Load()),
                circuits=sum(r.circuits.circuits for r in members),
                servers=len(servers),
                servers_catalog_max_w=sum(s.power.catalog_max_w for s in servers),
                servers_max_w=sum(s.power.max_w for s in servers),
            )
        )
    return sorted(result, key=lambda g: (len(g.name), g.name))


def _circuit_kinds(plan: Plan, racks: list[RackBudget]) -> list[CircuitKind]:
    feed = plan.design.site.power_feed
    counts: dict[tuple[str, str, float], int] = defaultdict(int)
    for rack in racks:
        pdus = plan.racks[rack.name].pdus
        if plan.racks[rack.name].rack_system:
            kind = f"{feed.voltage_v:g} V {feed.phases}-phase {feed.breaker_a:g} A, one per power shelf"
        elif not pdus:
            continue
        else:
            kind = circuit_kind(feed, plan.part_as(pdus[0], Pdu))
        for feed_name in rack.circuits.feeds:
            counts[(kind, feed_name, rack.circuits.circuit_usable_w)] += rack.circuits.circuits_per_feed
    return [CircuitKind(kind, feed_name, n, usable) for (kind, feed_name, usable), n in sorted(counts.items())]


def _row_name(rack: str) -> str:
    return rack.rstrip("0123456789")
