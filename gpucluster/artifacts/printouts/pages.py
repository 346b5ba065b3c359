"""The page model of the rack printouts, plain typed data the HTML and SVG templates and the PDF drawing
(printouts/pdf.py) render alike."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field

from gpucluster.analyse.bom import cord_model
from gpucluster.plan.labels import JOIN, Locator, cable_connectors
from gpucluster.plan.model import Plan, RackPlan
from gpucluster.plan.power.cords import PowerCord, power_cords, rack_feeds
from gpucluster.plan.power.draw import cage_modules
from gpucluster.plan.registry import elevation_fill

LABEL_COLUMNS = 3  # cable labels across a sheet
CABLE_COLUMNS = ("Cable", "U", "Device", "Port", "Far rack", "U", "Far device", "Far port", "Media", "m", "Cable P/N")


@dataclass(frozen=True, slots=True)
class Slot:
    """A device in the elevation."""

    u: int  # lowest unit (1 = bottom)
    height_u: float
    name: str
    model: str
    role: str

    @property
    def fill(self) -> str:
        return elevation_fill(self.role)


@dataclass(frozen=True, slots=True)
class EndRow:
    """One cable end in the rack: where it plugs in here, and where its other end goes."""

    cable_id: str
    u: str
    device: str
    ports: str
    far_rack: str
    far_u: str
    far_device: str
    far_ports: str
    media: str
    length_m: float
    part_number: str
    near_id: str  # TIA-606 identifiers, for the label
    far_id: str

    def cells(self) -> tuple[str, ...]:
        return (
            self.cable_id,
            self.u,
            self.device,
            self.ports,
            self.far_rack,
            self.far_u,
            self.far_device,
            self.far_ports,
            self.media.upper(),
            f"{self.length_m:g}",
            self.part_number,
        )


@dataclass(frozen=True, slots=True)
class RearSlot:
    """A device seen from the rack's rear: where its power cords go and which face its cables plug into."""

    u: int
    height_u: float
    name: str
    role: str
    psus: str  # "6 PSU: a 2, b 2, c 2" (PDU suffix and cords), "" without PSUs
    cable_side: str  # "rear" or "front": the face its ports are on, as mounted
    cable_ends: int

    @property
    def fill(self) -> str:
        return elevation_fill(self.role)

    def text(self) -> str:
        cables = f"{self.cable_ends} cable ends at the {self.cable_side}" if self.cable_ends else ""
        return "  ".join(p for p in (self.name, self.psus, cables) if p)


@dataclass(frozen=True, slots=True)
class RearPdu:
    """A zero-U PDU on the rear of the rack: its name, model, feed and the cords plugged into it."""

    name: str
    model: str
    feed: str
    cords: int

    @property
    def suffix(self) -> str:
        return self.name.rsplit("-", 1)[-1]


def cable_side(part: object, role: str) -> str:
    """The rack face a device's ports are on: the rear, but for a C2P switch (airflow front-to-rear: its ports face
    the cold aisle; a P2C switch is mounted ports to the hot aisle, so its air flows with the servers')."""
    if role == "switch" and getattr(part, "airflow", "") == "front-to-rear":
        return "front"
    return "rear"


@dataclass(slots=True)
class RackPage:
    """Everything one rack's printout shows."""

    rack: RackPlan
    title: str
    slots: list[Slot] = field(default_factory=list)
    zero_u: list[Slot] = field(default_factory=list)
    ends: list[EndRow] = field(default_factory=list)
    cords: list[PowerCord] = field(default_factory=list)  # PSU -> PDU outlet, for the installer who plugs them
    optics: list[tuple[str, ...]] = field(default_factory=list)  # pick list: device, part number, model, modules, cages
    rear: list[RearSlot] = field(default_factory=list)  # the rear elevation, top device first
    rear_pdus: list[RearPdu] = field(default_factory=list)


OPTICS_COLUMNS = ("Device", "Part number", "Model", "Modules", "Cages")


def number_ranges(numbers: list[int]) -> str:
    """1, 2, 3, 5 -> '1-3, 5': a device's cages, or SUs, read at a glance."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


CORD_COLUMNS = ("Device", "PSU", "Feed", "PDU", "Outlet")


def cord_cells(cord: PowerCord) -> tuple[str, ...]:
    return (cord.device, str(cord.psu), cord.feed, cord.pdu, cord.outlet)


def rack_pages(plan: Plan, racks: Collection[str] | None = None) -> dict[str, RackPage]:
    """The page model of every rack (or of the `racks` named, in plan order)."""
    design = plan.design
    locate = Locator(plan)
    parts = plan.catalog_parts
    pages: dict[str, RackPage] = {}
    for rack in plan.racks.values():
        if racks is not None and rack.name not in racks:
            continue
        what = rack.purpose + (f", SU {rack.su}" if rack.su else "")
        page = pages[rack.name] = RackPage(rack, f"{design.name} · {design.site.name} · rack {rack.name} ({what})")
        for name in [*rack.devices, *rack.pdus]:
            device = plan.devices[name]
            slot = Slot(device.u_position, device.u_height, name, getattr(parts[device.part], "model", ""), device.role)
            (page.slots if device.u_position else page.zero_u).append(slot)
        page.slots.sort(key=lambda s: -s.u)
    order = _port_order(plan)
    keyed: dict[str, list[tuple[tuple[int, str, int, str], EndRow]]] = defaultdict(list)  # rack -> (order, row)
    for cable in plan.cables:
        ends = ((plan.links[i].a_device, plan.links[i].b_device) for i in cable.links)
        if racks is not None and not any(plan.devices[end].rack in pages for pair in ends for end in pair):
            continue
        a, bs = cable_connectors(plan, cable)
        part_number = cable.part_number or parts[cable.cable_part].model
        connectors = [(a, bs), *((b, (a,)) for b in bs)]
        for near, fars in connectors:
            device = plan.devices[near.device]
            far_devices = [plan.devices[f.device] for f in fars]
            row = EndRow(
                cable.id,
                locate.unit(device),
                near.device,
                near.port_names,
                JOIN.join(d.rack for d in far_devices),
                JOIN.join(locate.unit(d) for d in far_devices),
                JOIN.join(f.device for f in fars),
                JOIN.join(f.port_names for f in fars),
                cable.media,
                cable.length_m,
                part_number,
                locate.identifier(near),
                JOIN.join(locate.identifier(f) for f in fars),
            )
            key = (-device.u_position, near.device, order[device.part].get(near.ports[0], 1 << 20), near.ports[0])
            if device.rack in pages:
                keyed[device.rack].append((key, row))
    for rack_name, rows in keyed.items():
        rows.sort(key=lambda item: item[0])
        pages[rack_name].ends = [row for _, row in rows]
    for cord in power_cords(plan):
        if plan.devices[cord.device].rack in pages:
            pages[plan.devices[cord.device].rack].cords.append(cord)
    picks: dict[tuple[str, str], list[int]] = defaultdict(list)
    for (holder, cage), module in cage_modules(plan).items():
        if module.transceiver and plan.devices[holder].rack in pages:
            picks[(holder, module.part)].append(cage)
    for (holder, optic), cages in picks.items():
        pages[plan.devices[holder].rack].optics.append(
            (
                holder,
                getattr(parts[optic], "part_number", None) or "",
                getattr(parts[optic], "model", optic),
                str(len(cages)),
                number_ranges(cages),
            )
        )
    slot_order = {name: i for page in pages.values() for i, name in enumerate(s.name for s in page.slots)}
    for page in pages.values():
        page.optics.sort(key=lambda row: (slot_order.get(row[0], 1 << 20), row[0], row[1]))
        _rear(plan, page)
    return pages


def _rear(plan: Plan, page: RackPage) -> None:
    by_device: dict[str, dict[str, int]] = defaultdict(dict)
    by_pdu: dict[str, int] = defaultdict(int)
    for cord in page.cords:
        suffix = cord.pdu.rsplit("-", 1)[-1]
        by_device[cord.device][suffix] = by_device[cord.device].get(suffix, 0) + 1
        by_pdu[cord.pdu] += 1
    feeds = {pdu: feed for feed, pdus in rack_feeds(plan, page.rack).items() for pdu in pdus}
    page.rear_pdus = [
        RearPdu(name, str(getattr(plan.part(name), "model", "")), feeds.get(name, ""), by_pdu[name])
        for name in page.rack.pdus
    ]
    ends: dict[str, int] = defaultdict(int)
    for end in page.ends:
        ends[end.device] += 1
    for slot in page.slots:
        psus = getattr(plan.part(slot.name), "psus", None)
        spread = by_device.get(slot.name, {})
        text = (
            f"{psus.count} PSU: " + ", ".join(f"{pdu} {n}" for pdu, n in sorted(spread.items()))
            if psus and spread
            else ""
        )
        side = cable_side(plan.part(slot.name), slot.role)
        page.rear.append(RearSlot(slot.u, slot.height_u, slot.name, slot.role, text, side, ends.get(slot.name, 0)))


PICK_COLUMNS = ("Rack", "Kind", "Part number", "Model", "Quantity")


def pick_list(plan: Plan, pages: dict[str, RackPage]) -> list[tuple[str, str, str, str, int]]:
    """Each rack's transceivers by part and power cords by type: over all racks, the BOM's lines of them."""
    rows: list[tuple[str, str, str, str, int]] = []
    for name, page in pages.items():
        optics: dict[tuple[str, str], int] = defaultdict(int)
        for _device, part_number, model, modules, _cages in page.optics:
            optics[(part_number, model)] += int(modules)
        rows += [(name, "transceiver", pn, model, n) for (pn, model), n in sorted(optics.items())]
        cords: dict[str, int] = defaultdict(int)
        for cord in page.cords:
            if cord_type := cord_model(plan, cord):
                cords[cord_type] += 1
        rows += [(name, "power cord", "", cord_type, n) for cord_type, n in sorted(cords.items())]
    return rows


def _port_order(plan: Plan) -> dict[str, dict[str, int]]:
    """Per part, each port's position in the hardware's own port order."""
    order: dict[str, dict[str, int]] = {}
    for part_id in {d.part for d in plan.devices.values()}:
        names: dict[str, int] = {}
        for group in getattr(plan.catalog_parts[part_id], "ports", []):
            for name, _cage in group.port_names():
                names.setdefault(name, len(names))
        order[part_id] = names
    return order
