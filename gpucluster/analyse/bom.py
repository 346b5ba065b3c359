"""The bill of materials: every orderable thing in the plan, counted once, as line items.

Quantities come only from the plan (devices, racks, cables and the optics at cable ends);
vendor, model, part number, power, weight and U only from the catalog; prices only from the
buyer's price list. Transceivers are counted per occupied cage, so one twin-port transceiver
serving two links (and two cables) is one transceiver; a twin-port copper cable or a 1:2
splitter is one cable carrying two links.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpucluster.analyse.totals import link_tier_name, tier_name
from gpucluster.catalog.schema import Pdu, RackSystem, Transceiver
from gpucluster.design.load import LoadedDesign
from gpucluster.inputs.prices import PriceList, load_price_list
from gpucluster.plan.model import AnalysedPlan, Device, Plan, Settings
from gpucluster.plan.power.circuits import OUTLET_FOR_INLET, circuit_kind
from gpucluster.plan.power.cooling import COOLING_SOURCES, cooling_capacity_kw
from gpucluster.plan.power.cords import PowerCord, power_cords
from gpucluster.plan.power.draw import cage_modules, device_powers, module_power_w
from gpucluster.plan.registry import NETWORK_INFO, NETWORK_NAMES, ROLES, control_plane_node

# Sections in the order a buyer reads them; (key, title).
SECTIONS: tuple[tuple[str, str], ...] = (
    ("compute", "Compute"),
    ("compute-fabric", "Compute fabric"),
    ("storage-network", "Storage network"),
    ("management-networks", "Management networks"),
    ("storage", "Storage"),
    ("cables-optics", "Cables and optics"),
    ("racks-power", "Racks and power"),
    ("spares", "Spares"),
    ("spare-optics", "Spare optics and cables"),
    ("software-support", "Software and support"),
)
SECTION_TITLES = dict(SECTIONS)
_SECTION_ORDER = {key: i for i, (key, _title) in enumerate(SECTIONS)}


@dataclass(frozen=True, slots=True)
class BomLine:
    """One orderable line: a part, how many, and its per-unit facts (None where they do not apply)."""

    section: str  # a key of SECTIONS
    kind: str  # the device role, or rack / cable / transceiver
    item: str  # catalog id
    quantity: int
    network: str = ""  # compute / storage / inband / oob for switches, cables and optics
    vendor: str = ""
    model: str = ""
    part_number: str = ""  # "" where the catalog has none (never invented)
    description: str = ""
    media: str = ""  # cables and transceivers
    length_m: float | None = None  # cables: the orderable length
    power_typical_w: float | None = None
    power_max_w: float | None = None
    weight_kg: float | None = None
    u_height: float | None = None
    unit_price: float | None = None
    currency: str = ""
    notes: str = ""
    included_in: str = ""  # catalog id of the rack-scale system this line ships in (not ordered on its own)

    @property
    def key(self) -> tuple[str, str, str, str, str, float]:
        """What makes two lines the same orderable thing (for comparing two BOMs)."""
        return (self.section, self.network, self.kind, self.item, self.part_number, self.length_m or 0.0)

    def extended(self, per_unit: float | None) -> float | None:
        return None if per_unit is None else per_unit * self.quantity

    @property
    def extended_price(self) -> float | None:
        return self.extended(self.unit_price)


@dataclass
class Bom:
    """The line items of one plan, in section order, with the counts every BOM view quotes."""

    name: str
    description: str
    lines: list[BomLine]
    counts: dict[str, float] = field(default_factory=dict)  # GPUs, servers, switches ... (label -> number)
    price_list: str | None = None  # the price list's file name, when the design names one

    def section_lines(self, section: str) -> list[BomLine]:
        return [line for line in self.lines if line.section == section]

    def sections(self) -> Iterator[tuple[str, str, list[BomLine]]]:
        """(key, title, lines) of each section that has lines, in SECTIONS order: what every per-section view walks."""
        for key, title in SECTIONS:
            if lines := self.section_lines(key):
                yield key, title, lines

    def total(self, attribute: str, section: str | None = None) -> float:
        """Sum of an extended figure (power_max_w, weight_kg, u_height, quantity) over lines."""
        lines = self.lines if section is None else self.section_lines(section)
        if attribute == "quantity":
            return float(sum(line.quantity for line in lines))
        return sum((line.extended(getattr(line, attribute)) or 0.0 for line in lines), 0.0)

    def price_totals(self, section: str | None = None) -> dict[str, float]:
        """Extended price per currency (only priced lines count)."""
        totals: dict[str, float] = defaultdict(float)
        for line in self.lines:
            if line.extended_price is not None and (section is None or line.section == section):
                totals[line.currency] += line.extended_price
        return dict(sorted(totals.items()))

    def unpriced(self) -> list[BomLine]:
        return [line for line in self.lines if line.unit_price is None] if self.price_list else []


def bom_for(plan: AnalysedPlan, loaded: LoadedDesign) -> Bom:
    """The BOM of a planned design, priced from the design's price list when it names one."""
    prices = None
    if loaded.design.bom.price_list is not None:
        prices = load_price_list(Path(loaded.path).parent / loaded.design.bom.price_list)
    return build_bom(plan, prices)


def build_bom(plan: AnalysedPlan, prices: PriceList | None = None) -> Bom:
    """Count everything in the plan into line items (sorted: section, kind, network, model, length)."""
    lines = [*_device_lines(plan), *_rack_lines(plan), *_cable_lines(plan), *_transceiver_lines(plan)]
    lines += _spare_optics_lines(plan, lines)
    lines += [*_power_cord_lines(plan), *_rail_lines(plan), *_rear_door_lines(plan), *_software_lines(plan)]
    if prices is not None:
        lines = [_priced(line, prices) for line in lines]
    lines.sort(key=_sort_key)
    return Bom(
        name=plan.name,
        description=str(getattr(plan.design, "description", "")),
        lines=lines,
        counts=_counts(plan, lines),
        price_list=prices.path.name if prices is not None else None,
    )


_KIND_ORDER = tuple(ROLES)  # device lines in the registry's order; racks, cables and optics after them
_NETWORK_ORDER = (*NETWORK_NAMES, "")


def _sort_key(line: BomLine) -> tuple[int, int, int, str, str, float, str]:
    kind = _KIND_ORDER.index(line.kind) if line.kind in _KIND_ORDER else len(_KIND_ORDER)
    network = _NETWORK_ORDER.index(line.network)
    return (_SECTION_ORDER[line.section], network, kind, line.kind, line.model, line.length_m or 0.0, line.part_number)


def _priced(line: BomLine, prices: PriceList) -> BomLine:
    price = prices.price(line.part_number, line.item)
    if price is None:
        return line
    notes = _joined(line.notes, f"price: {price.note}" if price.note else "")
    return replace(line, unit_price=price.unit_price, currency=price.currency, notes=notes)


def _joined(*notes: str) -> str:
    return "; ".join(note for note in notes if note)


_SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)(?<!approx)\.\s")


DESCRIPTION_CHARS = 160


def short_description(text: str) -> str:
    """The first sentence of a catalog description, cut short: the rest is for engineers, not for the order."""
    text = " ".join(text.split())
    match = _SENTENCE_END.search(text)
    first = text[: match.start() + 1] if match else text
    if len(first) <= DESCRIPTION_CHARS:
        return first
    return first[: DESCRIPTION_CHARS - 3].rsplit(" ", 1)[0].rstrip(",;:(") + "..."


def _part_line(plan: Plan, section: str, kind: str, part_id: str, quantity: int, **facts: Any) -> BomLine:
    """A line of a catalog part: vendor, model, part number and description from the catalog, `facts` over them."""
    part = plan.catalog_parts[part_id]
    catalog = {
        "vendor": str(getattr(part, "vendor", "")),
        "model": str(getattr(part, "model", "")),
        "part_number": str(getattr(part, "part_number", None) or ""),
        "description": short_description(str(getattr(part, "description", ""))),
    }
    return BomLine(section, kind, part_id, quantity, **(catalog | facts))


# A system the catalog has no sourced part number for (never invented): the order needs the vendor's SKU.
PART_NUMBER_TO_CONFIRM = "part number to confirm with vendor"


def _rack_system_of(plan: Plan, device: Device) -> str | None:
    """The catalog id of the rack-scale system a device ships in (its trays, shelves and in-rack switches)."""
    return plan.racks[device.rack].rack_system if device.rack else None


def _device_lines(plan: Plan) -> list[BomLine]:
    """One line per (section, network, part). Devices inside a rack-scale system get lines marked as included (for
    checking and spares: the system's line is what is ordered), with their power but no weight (the system's)."""
    groups: dict[tuple[str, str, str, str, str], list[Device]] = defaultdict(list)
    for device in plan.devices.values():
        if not ROLES[device.role].bought:  # the site's own (an existing filesystem's hand-off): nothing to order
            continue
        system = _rack_system_of(plan, device) or ""
        if system:
            section = "compute"
        elif device.role == "switch":
            section = NETWORK_INFO[device.network or "compute"].bom_section
        elif device.spare:
            section = "spares"
        elif device.role == "fabric-manager" and device.network:  # the storage fabric's UFM
            section = NETWORK_INFO[device.network].bom_section
        else:
            section = ROLES[device.role].bom_section
        groups[(section, device.role, device.network or "", device.part, system)].append(device)
    return [_device_line(plan, key, devices) for key, devices in groups.items()]


def _device_notes(role: str, network: str, part: object, devices: list[Device], spares: bool) -> str:
    if role == "switch":
        tiers = Counter(d.tier or 1 for d in devices)
        return f"{NETWORK_INFO[network].short}: " + ", ".join(f"{tier_name(t)} {n}" for t, n in sorted(tiers.items()))
    if ROLES[role].gpu_node:
        gpus = getattr(getattr(part, "gpu", None), "count", 0)
        notes = f"{len(devices) * gpus:,} GPUs"
        return notes + " (hot spares, racked and cabled)" if spares else notes
    if role == "pdu":
        return f"in {len({d.rack for d in devices}):,} racks"
    if role == "management-server":
        kinds = Counter(node.label for d in devices if (node := control_plane_node(d.name)) is not None)
        if len(kinds) > 1:  # a rack-scale design's control plane: what each server runs
            return "; ".join(f"{label} {n}" for label, n in kinds.items())
    return ""


def _device_line(plan: Plan, key: tuple[str, str, str, str, str], devices: list[Device]) -> BomLine:
    section, role, network, part_id, system_id = key
    part = plan.catalog_parts[part_id]
    notes = _device_notes(role, network, part, devices, section == "spares")
    facts: dict[str, Any] = {"weight_kg": getattr(part, "weight_kg", None)}
    if system_id:
        system = plan.catalog_part(system_id, RackSystem)
        per_rack = len(devices) // len({d.rack for d in devices})
        notes = _joined(
            notes, f"included in the {system.model} rack system ({per_rack} per rack): not ordered separately"
        )
        # the rack ships with them: no separate SKU (an in-rack SN2201 is DC-fed, unlike the AC SKU) and no weight
        facts = {"part_number": "", "weight_kg": None}
    elif not getattr(part, "part_number", None):
        notes = _joined(notes, PART_NUMBER_TO_CONFIRM)
    return _part_line(
        plan,
        section,
        role,
        part_id,
        len(devices),
        network=network if role == "switch" else "",
        power_typical_w=float(getattr(part, "power_typical_w", 0.0)),
        power_max_w=float(getattr(part, "power_max_w", 0.0)),
        u_height=float(getattr(part, "u_height", 0.0)),
        notes=notes,
        included_in=system_id,
        **facts,
    )


def _rack_lines(plan: AnalysedPlan) -> list[BomLine]:
    """The racks by part and the rack-scale systems; a system's own rack (MGX, busbar, manifolds) ships with it."""
    by_part: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    systems: Counter[str] = Counter()
    for rack in plan.racks.values():
        by_part[(rack.part, rack.rack_system or "")][rack.purpose] += 1
        if rack.rack_system:
            systems[rack.rack_system] += 1
    lines = [_rack_system_line(plan, system_id, count) for system_id, count in sorted(systems.items())]
    lines += _cdu_lines(plan)
    lines += _coolant_lines(plan, systems)
    for (part_id, system_id), purposes in by_part.items():
        notes = ", ".join(f"{purpose} {n}" for purpose, n in sorted(purposes.items()))
        weight = getattr(plan.catalog_parts[part_id], "weight_kg", None)
        if system_id:
            model = plan.catalog_part(system_id, RackSystem).model
            notes += f"; included in the {model} rack system: not ordered separately"
            weight = None
        quantity = sum(purposes.values())
        lines.append(
            _part_line(
                plan, "racks-power", "rack", part_id, quantity, weight_kg=weight, notes=notes, included_in=system_id
            )
        )
    return lines


def _rack_system_line(plan: Plan, system_id: str, count: int) -> BomLine:
    """A rack-scale system is ordered as one line; its trays, shelves and in-rack switches are itemised as included."""
    system = plan.catalog_part(system_id, RackSystem)
    contents = (
        f"{system.compute_trays} compute trays, {system.nvlink_switch_trays} NVLink switch trays, "
        f"{system.power_shelves} power shelves, {system.management_switches} management switches per rack, "
        "itemised below as included; NVLink backplane, busbar, rails, manifolds and blind-mate quick disconnects "
        "included"
    )
    notes = contents if system.part_number else _joined(contents, PART_NUMBER_TO_CONFIRM)
    return _part_line(plan, "compute", "rack-system", system_id, count, weight_kg=system.weight_kg, notes=notes)


def _cdu_lines(plan: AnalysedPlan) -> list[BomLine]:
    """Coolant distribution units for the liquid-cooled rack systems (N+1 per scalable unit, analyse/budget.py)."""
    from gpucluster.analyse.budget import power_budget  # the budget reads the plan's rules; import on use

    if not any(rack.rack_system for rack in plan.racks.values()):
        return []
    units: Counter[str] = Counter()
    notes: dict[str, list[str]] = defaultdict(list)
    for group in power_budget(plan).cdus:
        units[group.cdu] += group.units
        notes[group.cdu].append(f"{group.name}: {group.needed}+1 for {group.racks} racks")
    return [
        _part_line(plan, "racks-power", "cdu", cdu, n, notes="; ".join(notes[cdu])) for cdu, n in sorted(units.items())
    ]


def _coolant_lines(plan: Plan, systems: Counter[str]) -> list[BomLine]:
    """The rack systems' in-rack liquid-cooling parts (manifolds, quick disconnects, hoses): they ship with the
    system, so the line is for checking and spares."""
    per_part: Counter[str] = Counter()
    notes: dict[str, list[str]] = defaultdict(list)
    shipped_in: dict[str, set[str]] = defaultdict(set)
    for system_id, racks in sorted(systems.items()):
        system = plan.catalog_part(system_id, RackSystem)
        for count in system.coolant_parts:
            shipped_in[count.part].add(system_id)
            per_rack = system.coolant_per_rack(count)
            per_part[count.part] += racks * per_rack
            where = "per rack" if count.per == "rack" else f"{count.count} per {count.per}"
            notes[count.part].append(f"{per_rack} per {system.model} rack ({where})")
    return [
        _part_line(
            plan,
            "racks-power",
            "coolant-part",
            part_id,
            n,
            weight_kg=getattr(plan.catalog_parts[part_id], "weight_kg", None),
            notes="; ".join(notes[part_id]) + "; ships with the rack system: not ordered separately",
            included_in=" ".join(sorted(shipped_in[part_id])),
        )
        for part_id, n in sorted(per_part.items())
    ]


def _cable_lines(plan: Plan) -> list[BomLine]:
    """One line per (network, cable part, orderable length): the part number differs by length."""
    links = plan.links
    counts: Counter[tuple[str, str, str, float, int]] = Counter(
        (cable.network, cable.cable_part, cable.part_number or "", cable.length_m, links[cable.links[0]].tier)
        for cable in plan.cables
    )
    groups: dict[tuple[str, str, str, float], Counter[str]] = defaultdict(Counter)
    for (network, part_id, part_number, length_m, tier), count in counts.items():
        groups[(network, part_id, part_number, length_m)][link_tier_name(tier)] += count
    lines = []
    for (network, part_id, part_number, length_m), tiers in groups.items():
        part = plan.catalog_parts[part_id]
        per_m = getattr(part, "weight_kg_per_m", None)
        weight = per_m * length_m if per_m is not None else None
        facts: dict[str, Any] = {"part_number": part_number, "length_m": length_m, "weight_kg": weight}
        per_end_w = float(getattr(part, "power_per_end_w", 0.0) or 0.0)
        if per_end_w:  # an active cable draws at each of its ends: one near cage, `split` far cages
            facts["power_typical_w"] = facts["power_max_w"] = per_end_w * (1 + int(getattr(part, "split", 1)))
        lines.append(_optics_line(plan, "cable", network, part_id, tiers, **facts))
    return lines


def _optics_line(
    plan: Plan, kind: str, network: str, part_id: str, breakdown: Counter[str], prefix: str = "", **facts: object
) -> BomLine:
    """A cable or transceiver line; `breakdown` (where they are: link tiers, device roles) makes the notes."""
    media = str(getattr(plan.catalog_parts[part_id], "media", ""))
    notes = prefix + ", ".join(f"{where} {n}" for where, n in sorted(breakdown.items()))
    quantity = sum(breakdown.values())
    return _part_line(
        plan, "cables-optics", kind, part_id, quantity, network=network, media=media, notes=notes, **facts
    )


def _transceiver_lines(plan: Plan) -> list[BomLine]:
    """One line per (network, transceiver, power mode), a module per cage as the power budget counts them: modules
    on 1:2 splitter legs run in 200G mode, at their lower power, on a line of their own."""
    devices = plan.devices
    per_device: Counter[tuple[str, str, float, float, str]] = Counter(
        (module.network, module.part, module.typical_w, module.max_w, device)
        for (device, _cage), module in cage_modules(plan).items()
        if module.transceiver
    )
    groups: dict[tuple[str, str, float, float], Counter[str]] = defaultdict(Counter)
    for (network, optic, typical, maximum, device), count in per_device.items():
        groups[(network, optic, typical, maximum)][devices[device].role] += count
    lines = []
    for (network, optic, typical, maximum), roles in groups.items():
        leg = maximum != module_power_w(plan.catalog_part(optic, Transceiver))[1]
        power = {"power_typical_w": typical, "power_max_w": maximum}
        prefix = "on 1:2 splitter legs (200G mode) in " if leg else "in "
        lines.append(_optics_line(plan, "transceiver", network, optic, roles, prefix, **power))
    return lines


def _generic(section: str, kind: str, item: str, model: str, quantity: int, description: str, notes: str) -> BomLine:
    """A line for a part the catalog does not hold (a cord, a licence): no vendor or part number is invented."""
    return BomLine(section, kind, item, quantity, model=model, description=description, notes=notes)


def _spare_optics_lines(plan: Plan, lines: list[BomLine]) -> list[BomLine]:
    """Spares of every transceiver and cable line: the design's share, rounded up; not installed, so no power."""
    share = float(getattr(getattr(plan.design, "bom", None), "spare_optics_fraction", 0.0))
    if share <= 0:
        return []
    spares = []
    for line in lines:
        if line.kind not in ("transceiver", "cable"):
            continue
        count = math.ceil(line.quantity * share - 1e-9)
        spares.append(
            replace(
                line,
                section="spare-optics",
                kind=f"{line.kind}-spare",
                quantity=count,
                power_typical_w=None,
                power_max_w=None,
                weight_kg=None,
                notes=f"{share:.0%} of the {line.quantity:,} installed (bom.spare_optics_fraction)",
            )
        )
    return spares


# IEC 60320: the plug that fits each outlet (the connector that fits an inlet is its mating outlet's type)
PLUG_FOR_OUTLET = {"C13": "C14", "C19": "C20", "C15": "C16", "C21": "C22"}


def cord_model(plan: Plan, cord: PowerCord) -> str | None:
    """What a PSU's cord is, by its two ends ('IEC 60320 C20 plug to C19 connector power cord'); None for an inlet
    that takes no IEC cord."""
    ends = _cord_ends(plan.part(cord.device), cord.outlet)
    return f"IEC 60320 {ends[0]} plug to {ends[1]} connector power cord" if ends else None


def _cord_ends(part: object, outlet_name: str) -> tuple[str, str] | None:
    """The plug that fits the PDU outlet and the connector that fits the PSU inlet."""
    inlet = getattr(getattr(part, "psus", None), "inlet", "")
    outlet = outlet_name.split("-", 1)[0]
    if inlet not in OUTLET_FOR_INLET or outlet not in PLUG_FOR_OUTLET:
        return None
    return PLUG_FOR_OUTLET[outlet], OUTLET_FOR_INLET[inlet]


def _power_cord_lines(plan: Plan) -> list[BomLine]:
    """One power cord per PSU, by its two ends (C20 to C19, or C20 to C13 where a C14 inlet takes a C19 outlet),
    and each PDU's input on a site circuit."""
    devices = plan.devices
    ends: Counter[tuple[str, str]] = Counter((devices[cord.device].part, cord.outlet) for cord in power_cords(plan))
    kinds: Counter[tuple[str, str]] = Counter()  # per (device part, outlet type): 150,000 cords at 131,072 GPUs
    for (part_id, outlet), count in ends.items():
        if cord := _cord_ends(plan.catalog_parts[part_id], outlet):
            kinds[cord] += count
    lines = [
        _generic(
            "racks-power",
            "power-cord",
            f"iec-{plug.lower()}-{connector.lower()}-cord",
            f"IEC 60320 {plug} plug to {connector} connector power cord",
            count,
            f"PSU cord, {plug} into a PDU outlet, {connector} into the power supply; zero-U PDU in the same rack",
            "one per power supply (power_cords: PSU to PDU outlet); length to suit the rack",
        )
        for (plug, connector), count in sorted(kinds.items())
    ]
    feed = plan.design.site.power_feed
    by_circuit: Counter[str] = Counter(
        circuit_kind(feed, plan.part_as(name, Pdu)) for rack in plan.racks.values() for name in rack.pdus
    )
    lines += [
        _generic(
            "racks-power",
            "pdu-circuit",
            "pdu-input-circuit",
            f"PDU input on a {kind} circuit",
            count,
            f"one site circuit with a receptacle for each PDU's input plug ({kind})",
            "site electrical work; the catalog does not give the PDUs' input plug type: match the receptacle to it",
        )
        for kind, count in sorted(by_circuit.items())
    ]
    return lines


def _rail_lines(plan: Plan) -> list[BomLine]:
    """A rack rail kit per rack-mounted device, by model; nothing that ships inside a rack-scale system (its
    trays, power shelves and in-rack switches come mounted in its rack)."""
    models: Counter[str] = Counter(
        d.part
        for d in plan.devices.values()
        if d.role != "pdu" and not _rack_system_of(plan, d) and float(getattr(plan.part(d.name), "u_height", 0.0)) > 0
    )
    lines = []
    for part_id, count in sorted(models.items()):
        part = plan.catalog_parts[part_id]
        lines.append(
            _generic(
                "racks-power",
                "rail-kit",
                f"{part_id}-rails",
                f"Rack rail kit for {getattr(part, 'model', part_id)}",
                count,
                f"rails for a {float(getattr(part, 'u_height', 0)):g}U {getattr(part, 'model', part_id)}",
                "the vendor's kit for the model; order with the system unless its package includes one",
            )
        )
    return lines


def _rear_door_lines(plan: Plan) -> list[BomLine]:
    """Where the site cools with rear doors, one active rear-door heat exchanger per rack (a rack-scale system's rack
    is liquid-cooled and has none), rated for the site's per-rack cooling capacity."""
    site = plan.design.site
    if site.cooling != "rear-door":
        return []
    racks = [r for r in plan.racks.values() if not r.rack_system]
    if not racks:
        return []
    capacity = cooling_capacity_kw(site)
    hottest = max(r.power_max_w for r in racks) / 1000
    return [
        _generic(
            "racks-power",
            "rear-door-hx",
            "rear-door-heat-exchanger",
            f"Active rear-door heat exchanger, at least {capacity:g} kW",
            len(racks),
            f"one per rack, for the rack's size; rated for the site's {capacity:g} kW per rack "
            f"(site.cooling_capacity_kw; hottest rack {hottest:.1f} kW)",
            f"capacity band: {COOLING_SOURCES['rear-door']}",
        )
    ]


# Software and support the RA names, as quantity lines (no prices: the buyer's price list prices them by item)
H100_RA_SOFTWARE = "DGX SuperPOD H100 RA (RA-11333-001), System Design, Table 2 and Appendix A Table 7"


def _software_lines(plan: AnalysedPlan) -> list[BomLine]:
    """Support and software licences counted from the plan, each with the unit it is counted in."""
    devices = list(plan.devices.values())
    servers = plan.gpu_nodes()
    dgx = [d for d in servers if str(getattr(plan.part(d.name), "model", "")).upper().startswith("DGX")]
    managed = len(servers) + sum(1 for d in devices if d.role == "management-server") if servers else 0
    cumulus = [
        d
        for d in devices
        if d.role == "switch"
        and getattr(plan.part(d.name), "technology", "") == "ethernet"
        and str(getattr(plan.part(d.name), "vendor", "")).upper() == "NVIDIA"
    ]
    # (kind, item, model, quantity, unit, notes): a line where the quantity is not 0
    counted = [
        (
            "support",
            "nvidia-enterprise-support-dgx",
            "NVIDIA Enterprise Support (NVES) for DGX systems",
            len(dgx),
            "hardware and software support per DGX system (term to choose)",
            f"{H100_RA_SOFTWARE}: full system support is provided by NVES",
        ),
        (
            "licence",
            "nvidia-ai-enterprise",
            "NVIDIA AI Enterprise",
            plan.totals.gpus if servers else 0,
            "per GPU",
            f"included with DGX SuperPOD ({H100_RA_SOFTWARE})"
            if dgx and len(dgx) == len(servers)
            else "counted per GPU: confirm the licensing unit with NVIDIA",
        ),
        (
            "licence",
            "nvidia-base-command-manager",
            "NVIDIA Base Command Manager",
            managed,
            "nodes it provisions and manages: GPU servers and head nodes",
            f"the RA's cluster manager ({H100_RA_SOFTWARE}); confirm the licensing unit with NVIDIA",
        ),
        (
            "licence",
            "nvidia-ufm-enterprise",
            "NVIDIA UFM Enterprise software and support",
            sum(1 for d in devices if d.role == "fabric-manager"),
            "per UFM appliance (the compute and storage fabrics' managers)",
            f"UFM Enterprise Edition manages the InfiniBand fabrics ({H100_RA_SOFTWARE}, Table 1)",
        ),
        (
            "licence",
            "nvidia-cumulus-linux",
            "NVIDIA Cumulus Linux",
            len(cumulus),
            "per Spectrum Ethernet switch (in-band, out-of-band, Ethernet storage or RoCE fabric)",
            f"the RA's Ethernet switch part numbers are 'with Cumulus Linux' ({H100_RA_SOFTWARE}); support per switch",
        ),
    ]
    lines = [_generic("software-support", *line) for line in counted if line[3]]
    for what, block_id, blocks in _storage_blocks(plan.settings):
        if not block_id or not blocks:
            continue
        block = plan.catalog_parts[block_id]
        model = getattr(block, "model", block_id)
        lines.append(
            _generic(
                "software-support",
                "licence",
                f"{block_id}-software",
                f"{model}: {what} software and support",
                blocks,
                f"per {model} building block ({', '.join(getattr(block, 'filesystems', []))})",
                "the storage vendor's software subscription and support for each block; quantity from the plan",
            )
        )
    return lines


def _storage_blocks(s: Settings) -> list[tuple[str, str, int]]:
    """Each storage system's blocks (what, block, count): every new filesystem's, then the object store's (an
    existing filesystem has none to license)."""
    filesystems = [("parallel filesystem", s.parallel_filesystem_block, s.parallel_filesystem_blocks)]
    if s.filesystems is not None:
        filesystems = [(f"filesystem {fs['name']}", fs["block"] or "", fs["blocks"]) for fs in s.filesystems]
    return [*filesystems, ("object storage", s.object_storage_block or "", s.object_storage_blocks)]


def _counts(plan: AnalysedPlan, lines: list[BomLine]) -> dict[str, float]:
    """The headline figures (from the plan's totals, and from the lines for optics and PDUs)."""
    t = plan.totals
    counts: dict[str, float] = {
        "GPUs": t.gpus,
        "GPUs in production": t.production_gpus,
        "GPU servers": t.servers,
        "GPU servers in production": t.production_servers,
        "Hot-spare GPU servers": t.spare_servers,
        "Scalable units": t.scalable_units,
    }
    for network, tiers in t.switches.items():
        if tiers:
            counts[f"Switches, {NETWORK_INFO[network].short}"] = sum(tiers.values())
    counts["Switches"] = t.switches_total
    counts["Cables"] = t.cables
    counts["Transceivers"] = sum(line.quantity for line in lines if line.kind == "transceiver")
    counts["Racks"] = t.racks
    counts["PDUs"] = sum(line.quantity for line in lines if line.kind == "pdu")
    included_w = sum(p.optics_max_w for p in device_powers(plan).values() if p.optics_in_catalog_max)
    counts[OPTICS_INCLUDED] = included_w / 1000
    counts["IT power, typical (kW)"] = t.it_power_typical_kw
    counts["IT power, maximum (kW)"] = t.it_power_max_kw
    return counts


# The line items give every part's catalog power, optics included; a switch whose catalog maximum
# already covers its optics (QM9700: "with active cables") does not draw them twice, so the IT load
# (plan totals, gpucluster/plan/power.py) is the lines' maximum less these.
OPTICS_INCLUDED = "Optics within switch maxima (kW)"
