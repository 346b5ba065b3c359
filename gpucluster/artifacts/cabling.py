"""The cable schedule: one row per physical cable, with both ends (rack, U, device, port and the plan's TIA-606-B
label, gpucluster/plan/labels.py), media, orderable and routed length, and the part numbers of the cable and of the
optics at each end. Written as ``cabling/cabling.csv`` (every column) and a workbook per network (per range of rows
of racks for a large one) with the columns an installer filters on: each within Excel's rows, written side by side.

A 1:2 splitter's B end is two connectors (two hosts): its multi-valued cells join them with " + " in order. A
connector that carries two ports (a twin-port cage) names both joined with "+".
"""

from __future__ import annotations

import datetime
import math
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple

from gpucluster.design.load import LoadedDesign
from gpucluster.formats.tables import GuardedCsvWriter, InlineTextSheet, new_workbook, print_setup
from gpucluster.plan.labels import JOIN, LABEL, Locator, cable_connectors, end_labels
from gpucluster.plan.memo import per_plan
from gpucluster.plan.model import NETWORKS, PhysicalPlan, Plan
from gpucluster.runtime.progress import track

FOLDER = "cabling"
_CREATED = datetime.datetime(2000, 1, 1)  # fixed document date: same design, same bytes


class CableRow(NamedTuple):
    """One physical cable, as the schedule lists it."""

    cable_id: str
    network: str
    media: str
    a_rack: str
    a_u: str
    a_device: str
    a_port: str
    a_label: str
    b_rack: str
    b_u: str
    b_device: str
    b_port: str
    b_label: str
    length_m: float
    run_length_m: float
    speed_gbps: float
    links: int
    cable_part: str
    cable_part_number: str
    a_transceiver: str
    b_transceiver: str


COLUMNS: tuple[str, ...] = CableRow._fields


def cable_rows(plan: Plan, network: str | None = None, rows: frozenset[int] | None = None) -> Iterator[CableRow]:
    """The schedule's rows in cable order (optionally one network's, and only the cables whose A end stands in the
    given rows of racks), generated: the largest schedules are written without holding them in memory."""
    return _rows_of(plan, _picked(plan, network, rows))


def _picked(plan: Plan, network: str | None, rows: frozenset[int] | None) -> Iterator[int]:
    """The positions in plan.cables of a network's cables (or every cable's) whose A end stands in `rows`. Found
    from each cable's network and A-end row worked out once (in the main process, before the writers fork), so a
    writer touches no cable but its own (a forked writer copies every page of the plan it touches)."""
    if network is None and rows is None:
        return iter(range(len(plan.cables)))
    code = NETWORKS.index(network) if network is not None else None
    return (
        i
        for i, (n, row) in enumerate(zip(*_cable_places(plan), strict=True))
        if (code is None or n == code) and (rows is None or row in rows)
    )


def _rows_of(plan: Plan, indices: Iterable[int]) -> Iterator[CableRow]:
    """The rows of the cables at `indices` (positions in plan.cables); each device's place worked out once."""
    locate = Locator(plan)
    devices, links, cables = plan.devices, plan.links, plan.cables
    part_numbers = _part_numbers(plan)
    places: dict[str, tuple[str, str, str]] = {}  # device name -> (rack, unit as printed, TIA-606 prefix)
    make_row = CableRow._make  # a row from its 21 values without namedtuple's keyword-argument __new__

    def place(name: str) -> tuple[str, str, str]:
        found = places.get(name)
        if found is None:
            device = devices[name]
            found = places[name] = (device.rack, locate.unit(device), locate.prefix(name))
        return found

    for index in indices:
        cable = cables[index]
        if len(cable.links) == 1:  # the common case, kept fast
            link = links[cable.links[0]]
            a_name, a_port, b_name, b_port = link.a_device, link.a_port, link.b_device, link.b_port
            a_rack, a_u, a_prefix = places.get(a_name) or place(a_name)
            b_rack, b_u, b_prefix = places.get(b_name) or place(b_name)
            a_id, b_id = a_prefix + a_port, b_prefix + b_port
            a_label, b_label = LABEL(a_id, b_id), LABEL(b_id, a_id)
            speed = link.speed_gbps
        else:
            a, bs = cable_connectors(plan, cable)
            a_rack, a_u, a_prefix = place(a.device)
            b_places = [place(b.device) for b in bs]
            a_id = a_prefix + a.port_names
            b_ids = [prefix + b.port_names for (_rack, _u, prefix), b in zip(b_places, bs, strict=True)]
            a_name, a_port = a.device, a.port_names
            b_rack = JOIN.join(rack for rack, _u, _prefix in b_places)
            b_u = JOIN.join(u for _rack, u, _prefix in b_places)
            b_name = JOIN.join(b.device for b in bs)
            b_port = JOIN.join(b.port_names for b in bs)
            a_label, b_label = end_labels(a_id, b_ids)
            speed = links[cable.links[0]].speed_gbps
        yield make_row(
            (
                cable.id,
                cable.network,
                cable.media,
                a_rack,
                a_u,
                a_name,
                a_port,
                a_label,
                b_rack,
                b_u,
                b_name,
                b_port,
                b_label,
                cable.length_m,
                cable.run_length_m,
                speed,
                len(cable.links),
                cable.cable_part,
                cable.part_number or "",
                part_numbers.get(cable.a_transceiver or "", ""),
                part_numbers.get(cable.b_transceiver or "", ""),
            )
        )


def _part_numbers(plan: Plan) -> dict[str, str]:
    """Catalog id -> the number to order it by (its part number, else its model)."""
    return {
        part_id: str(getattr(part, "part_number", None) or getattr(part, "model", part_id))
        for part_id, part in plan.catalog_parts.items()
    }


# Cables in one workbook before a network's schedule is split into workbooks by rows of racks: Excel holds 1,048,576
# rows, but a workbook of half a million is slow to open and filter, and parts are written side by side.
WORKBOOK_MAX_ROWS = 131_072


@dataclass(frozen=True, slots=True)
class WorkbookPart:
    """One cable workbook: a network's cables, or those of its cables whose A end stands in a range of rows."""

    name: str  # "compute", or "compute-rows-A-F": the file is cabling-<name>.xlsx
    network: str
    rows: frozenset[int] | None  # 0-based rows of racks; None: the whole network
    cables: int
    title: str  # for the sheet's header and the document title


def workbook_parts(plan: Plan, max_rows: int = WORKBOOK_MAX_ROWS) -> list[WorkbookPart]:
    """The schedule's workbooks, biggest first: one per network, and for a network of more than `max_rows` cables one
    per range of whole rows of racks (by each cable's A end, whose cable ids it carries), as few and as even as keep
    each near `max_rows`, named by their first and last row: an installer finds the workbook of the rows he cables."""
    letters = {rack.row: rack.name.rstrip("0123456789") for rack in plan.racks.values()}
    per_row: dict[str, Counter[int]] = {network: Counter() for network in NETWORKS}
    for (code, row), cables in Counter(zip(*_cable_places(plan), strict=True)).items():
        per_row[NETWORKS[code]][row] = cables
    found = []
    for network in NETWORKS:
        counts = per_row[network]
        total = sum(counts.values())
        if not total:
            continue
        if total <= max_rows:
            found.append(WorkbookPart(network, network, None, total, network))
            continue
        n = math.ceil(total / max_rows)
        ranges: dict[int, list[int]] = defaultdict(list)  # part -> its rows: a row goes where its middle cable falls
        before = 0
        for row in sorted(counts):
            ranges[min(n - 1, (2 * before + counts[row]) * n // (2 * total))].append(row)
            before += counts[row]
        for rows in ranges.values():
            first, last = letters[rows[0]], letters[rows[-1]]
            span = f"row-{first}" if first == last else f"rows-{first}-{last}"
            title = f"{network}, row {first}" if first == last else f"{network}, rows {first} to {last}"
            found.append(
                WorkbookPart(f"{network}-{span}", network, frozenset(rows), sum(counts[r] for r in rows), title)
            )
    return sorted(found, key=lambda part: -part.cables)


@per_plan
def _cable_places(plan: Plan) -> tuple[array[int], array[int]]:
    """Each cable's network (its index in NETWORKS) and its A end's row of racks: which workbook files it. Made once
    per plan (memo.per_plan): the main process finds it to hand out the jobs, and the writers it forks inherit it
    instead of each going over every cable."""
    devices, links = plan.devices, plan.links
    row_of = {rack.name: rack.row for rack in plan.racks.values()}
    code = {network: index for index, network in enumerate(NETWORKS)}
    networks, a_rows = array("b"), array("i")
    for cable in plan.cables:
        single = len(cable.links) == 1
        a_device = links[cable.links[0]].a_device if single else cable_connectors(plan, cable)[0].device
        networks.append(code[cable.network])
        a_rows.append(row_of[devices[a_device].rack])
    return networks, a_rows


_workbooks = per_plan(workbook_parts)  # the default sizes, once per plan like _cable_places


def parts(plan: PhysicalPlan) -> list[str]:
    """The schedule's independent files, biggest first: its workbooks and the CSV (the writers run them side by
    side; see gpucluster/artifacts/pool.py)."""
    return [*(part.name for part in _workbooks(plan)), "csv"]


def write(plan: PhysicalPlan, loaded: LoadedDesign, folder: Path) -> None:
    """cabling/cabling.csv and the workbooks (cabling-<network>.xlsx, or cabling-<network>-rows-<A>-<F>.xlsx)."""
    for part in parts(plan):
        write_part(plan, loaded, folder, part)


def write_part(plan: PhysicalPlan, loaded: LoadedDesign, folder: Path, part: str) -> None:
    out = folder / FOLDER
    out.mkdir(parents=True, exist_ok=True)
    if part == "csv":
        write_csv(plan, out / "cabling.csv")
    else:
        write_workbook(plan, next(p for p in _workbooks(plan) if p.name == part), out / workbook_name(part))


def workbook_name(part: str) -> str:
    return f"cabling-{part}.xlsx"


def write_csv(plan: Plan, path: Path) -> None:
    """Every column of every cable, in cable order."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = GuardedCsvWriter(handle, _CATALOG_TEXT, texts_repeat=False)  # ids and labels are each row's own
        writer.writerow(COLUMNS)
        writer.writerows(track(cable_rows(plan), len(plan.cables), "cables"))


def write_workbook(plan: Plan, part: WorkbookPart, path: Path) -> None:
    """One workbook's cables with the columns an installer sorts and filters on (XLSX_COLUMNS), in XlsxWriter's
    constant-memory mode: rows go to disk as they are written, so memory stays flat at any size."""
    network = part.network
    title = f"{plan.name} cable schedule: {part.title}"
    workbook = new_workbook(path, title, created=_CREATED, constant_memory=True)
    header = workbook.add_format({"bold": True, "bg_color": "#DDDDDD", "border": 1})
    quoted = workbook.add_format({"quote_prefix": True})  # text that looks like a formula stays text when edited
    sheet = workbook.add_worksheet(network, InlineTextSheet)
    for col, (_name, width) in enumerate(XLSX_COLUMNS):
        sheet.set_column(col, col, width)
    sheet.write_row(0, 0, [name for name, _width in XLSX_COLUMNS], header)
    sheet.freeze_panes(1, 0)
    print_setup(sheet, f"{plan.name}: {part.title} cables")
    sheet.repeat_rows(0)
    # Each row's cells at once (InlineTextSheet: XlsxWriter's cells and bytes, a fraction of its time a cell); the
    # columns that may hold catalog text get the quote prefix where it looks like a formula.
    write_guarded = sheet.write_guarded
    pick = itemgetter(*_XLSX_FIELDS)
    guarded = [c for c, i in enumerate(_XLSX_FIELDS) if i in _CATALOG_TEXT]
    r = 0
    for r, row in enumerate(track(cable_rows(plan, network, part.rows), part.cables, "cables"), start=1):
        write_guarded(r, pick(row), guarded, quoted)
    sheet.autofilter(0, 0, max(r, 1), len(XLSX_COLUMNS) - 1)
    workbook.close()


# The workbook's columns (name, width in characters): each end's rack, U, device and port, what to pull and its
# length. Labels, routed length, speed, links and optics part numbers are in the CSV.
XLSX_COLUMNS: tuple[tuple[str, float], ...] = (
    ("cable_id", 10),
    ("a_rack", 7),
    ("a_u", 5),
    ("a_device", 22),
    ("a_port", 10),
    ("b_rack", 7),
    ("b_u", 5),
    ("b_device", 22),
    ("b_port", 10),
    ("media", 6),
    ("length_m", 9),
    ("cable_part_number", 18),
)
_XLSX_FIELDS = tuple(COLUMNS.index(name) for name, _width in XLSX_COLUMNS)
# Columns whose text comes from a catalog (port names from its name formats, part numbers) and so may look like a
# formula; every other text is an id, name or label the planner makes from patterns that start with a letter or
# digit (site, hostname prefix, rack names, catalog ids), or one of a fixed vocabulary (network, media).
_CATALOG_TEXT = frozenset(
    COLUMNS.index(name) for name in ("a_port", "b_port", "cable_part_number", "a_transceiver", "b_transceiver")
)
