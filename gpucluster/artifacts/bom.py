"""bom.xlsx and bom.csv: the bill of materials a buyer orders from (what is counted: gpucluster/analyse/bom.py).
Each formula carries its computed value, so viewers that do not recalculate show numbers too.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from xlsxwriter.worksheet import Worksheet

from gpucluster.analyse.bom import OPTICS_INCLUDED, SECTION_TITLES, SECTIONS, Bom, BomLine, bom_for
from gpucluster.design.load import LoadedDesign
from gpucluster.formats.tables import (
    DECIMAL_1,
    DECIMAL_2,
    INTEGER,
    PAPER_A3,
    Book,
    Column,
    GuardedCsvWriter,
    cell_writers,
    column_range,
    fit_row_height,
)
from gpucluster.formats.tables import column_letter as _letter
from gpucluster.plan.model import AnalysedPlan, Plan
from gpucluster.plan.power.draw import device_powers
from gpucluster.plan.racks import loaded_weight_kg
from gpucluster.runtime.progress import track

LINES_SHEET = "BOM"
CONTENTS_SHEET = "Rack contents"


class _Field(NamedTuple):
    """A line-item column: its header and how to get the value of one line."""

    key: str
    column: Column
    value: Callable[[BomLine], object]
    per_unit: str = ""  # for extended columns: the key of the per-unit column they multiply


def _fields(priced: bool) -> list[_Field]:
    def ext(attribute: str) -> Callable[[BomLine], object]:
        return lambda line: line.extended(getattr(line, attribute))

    fields = [
        _Field("section", Column("Section", 14, wrap=True), lambda line: SECTION_TITLES[line.section]),
        _Field("network", Column("Network", 8), lambda line: line.network),
        _Field("kind", Column("Kind", 11, wrap=True), lambda line: line.kind),
        _Field("media", Column("Media", 6), lambda line: line.media),
        _Field("length", Column("Length (m)", 7, DECIMAL_1), lambda line: line.length_m),
        _Field("item", Column("Catalog id", 16, wrap=True), lambda line: line.item),
        _Field("vendor", Column("Vendor", 9, wrap=True), lambda line: line.vendor),
        _Field("model", Column("Model", 20, wrap=True), lambda line: line.model),
        _Field("part_number", Column("Part number", 19), lambda line: line.part_number),
        _Field("description", Column("Description", 40, wrap=True), lambda line: line.description),
        _Field("quantity", Column("Quantity", 8, INTEGER), lambda line: line.quantity),
        _Field("typ_unit", Column("Typical W per unit", 9, INTEGER), lambda line: line.power_typical_w),
        _Field("typ", Column("Typical W", 10, INTEGER), ext("power_typical_w"), "typ_unit"),
        _Field("max_unit", Column("Maximum W per unit", 9, INTEGER), lambda line: line.power_max_w),
        _Field("max", Column("Maximum W", 10, INTEGER), ext("power_max_w"), "max_unit"),
        _Field("kg_unit", Column("Weight kg per unit", 8, DECIMAL_1), lambda line: line.weight_kg),
        _Field("kg", Column("Weight kg", 9, DECIMAL_1), ext("weight_kg"), "kg_unit"),
        _Field("u_unit", Column("U per unit", 6, DECIMAL_1), lambda line: line.u_height),
        _Field("u", Column("U", 6, DECIMAL_1), ext("u_height"), "u_unit"),
    ]
    if priced:
        fields += [
            _Field("price_unit", Column("Unit price", 11, DECIMAL_2), lambda line: line.unit_price),
            _Field("currency", Column("Currency", 8), lambda line: line.currency),
            _Field("price", Column("Extended price", 13, DECIMAL_2), lambda line: line.extended_price, "price_unit"),
        ]
    fields.append(_Field("notes", Column("Notes", 26, wrap=True), lambda line: line.notes))
    return fields


def write(plan: AnalysedPlan, loaded: LoadedDesign, folder: Path) -> None:
    bom = bom_for(plan, loaded)
    write_csv(bom, folder / "bom.csv")
    write_xlsx(bom, plan, folder / "bom.xlsx")


def write_csv(bom: Bom, path: Path) -> None:
    fields = _fields(bom.price_list is not None)
    with open(path, "w", encoding="utf-8", newline="") as out:
        writer = GuardedCsvWriter(out)
        writer.writerow([f.column.header for f in fields])
        for line in bom.lines:
            writer.writerow([_csv_value(f.value(line)) for f in fields])


def _csv_value(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, float):
        return int(value) if value.is_integer() else round(value, 4)
    return value


def write_xlsx(bom: Bom, plan: Plan, path: Path) -> None:
    book = Book(path, f"Bill of materials: {bom.name}", "gpucluster bill of materials")
    fields = _fields(bom.price_list is not None)
    column_of = {f.key: i for i, f in enumerate(fields)}
    _summary(book, bom, column_of)
    _lines(book, bom, fields, column_of)
    _racks(book, plan, bom.name)
    book.close()


def _lines(book: Book, bom: Bom, fields: list[_Field], column_of: dict[str, int]) -> None:
    title = f"{bom.name}: line items"
    sheet = book.table_sheet(LINES_SHEET, [f.column for f in fields], len(bom.lines), title, PAPER_A3)
    quantity = _letter(column_of["quantity"])
    for row, line in enumerate(bom.lines, start=1):
        for col, f in enumerate(fields):
            value = f.value(line)
            number = float(value) if isinstance(value, int | float) else None
            if f.per_unit and number is not None:
                formula = f"={quantity}{row + 1}*{_letter(column_of[f.per_unit])}{row + 1}"
                book.formula(sheet, row, col, formula, number, f.column.number_format)
            elif f.column.number_format:
                book.number(sheet, row, col, number, f.column.number_format)
            else:
                book.text(sheet, row, col, str(value or ""), wrap=f.column.wrap)
        fit_row_height(sheet, row, [(str(f.value(line) or ""), f.column.width) for f in fields if f.column.wrap])


def _summary(book: Book, bom: Bom, column_of: dict[str, int]) -> None:
    """Totals per section, headline figures, cables by length and the unpriced parts, one block under another."""
    sheet = book.sheet("Summary", f"{bom.name}: summary")
    currencies = sorted({line.currency for line in bom.lines if line.currency})
    widths = [26, 10, 12, 12, 12, 12, 10] + [16] * len(currencies)
    for index, width in enumerate(widths):
        sheet.set_column(index, index, width)
    last = len(bom.lines) + 1  # last data row of the line items, 1-based

    def lines_range(key: str) -> str:
        return column_range(LINES_SHEET, column_of[key], 2, last)

    book.text(sheet, 0, 0, f"Bill of materials: {bom.name}", bold=True)
    book.text(sheet, 1, 0, bom.description)
    if bom.price_list:
        book.text(sheet, 2, 0, f"Prices from {bom.price_list}; lines it does not price are listed below, unpriced.")
    else:
        book.text(sheet, 2, 0, "No price list given (design field bom.price_list): quantities only.")
    row, maximum_kw = _section_totals(book, sheet, bom, currencies, lines_range)
    row = _headline_figures(book, sheet, bom, row + 2, row + 1, maximum_kw, lines_range)
    row = _cables_by_length(book, sheet, bom, row + 2, lines_range)
    _unpriced(book, sheet, bom, row + 2)


def _section_totals(
    book: Book, sheet: Worksheet, bom: Bom, currencies: list[str], lines_range: Callable[[str], str]
) -> tuple[int, float]:
    """Totals per section from row 4 (0-based); returns the total row and the maximum kW the headline figures use."""
    row = 4
    headers = ["Section", "Lines", "Quantity", "Typical kW", "Maximum kW", "Weight kg", "U"]
    book.headers(sheet, row, headers + [f"Price ({currency})" for currency in currencies])
    first = row + 2
    section = lines_range("section")
    for key, title in SECTIONS:
        row += 1
        book.text(sheet, row, 0, title)
        crit = f"$A{row + 1}"
        book.formula(sheet, row, 1, f"=COUNTIF({section},{crit})", len(bom.section_lines(key)), INTEGER)
        for col, (field_key, attribute, scale, number_format) in enumerate(_SECTION_SUMS, start=2):
            divide = f"/{scale}" if scale != 1 else ""
            formula = f"=SUMIF({section},{crit},{lines_range(field_key)}){divide}"
            book.formula(sheet, row, col, formula, bom.total(attribute, key) / scale, number_format)
        prices = bom.price_totals(key)
        for offset, currency in enumerate(currencies):
            formula = f'=SUMIFS({lines_range("price")},{section},{crit},{lines_range("currency")},"{currency}")'
            book.formula(sheet, row, 7 + offset, formula, prices.get(currency, 0.0), DECIMAL_2)
    row += 1
    book.text(sheet, row, 0, "Total", bold=True)
    totals = [
        len(bom.lines),
        bom.total("quantity"),
        bom.total("power_typical_w") / 1000,
        bom.total("power_max_w") / 1000,
        bom.total("weight_kg"),
        bom.total("u_height"),
    ]
    totals += [bom.price_totals().get(currency, 0.0) for currency in currencies]
    formats = [INTEGER, INTEGER, DECIMAL_1, DECIMAL_1, DECIMAL_1, DECIMAL_1] + [DECIMAL_2] * len(currencies)
    for col, (value, number_format) in enumerate(zip(totals, formats, strict=True), start=1):
        letter = _letter(col)
        book.formula(sheet, row, col, f"=SUM({letter}{first}:{letter}{row})", value, number_format)
    return row, totals[3]


# The section totals' summed columns: (line-item column key, BomLine attribute, divisor, number format)
_SECTION_SUMS = (
    ("quantity", "quantity", 1, INTEGER),
    ("typ", "power_typical_w", 1000, DECIMAL_1),
    ("max", "power_max_w", 1000, DECIMAL_1),
    ("kg", "weight_kg", 1, DECIMAL_1),
    ("u", "u_height", 1, DECIMAL_1),
)
# Headline figures that are a SUMIF of the line items' quantities by kind
_FIGURE_KINDS = {"Switches": "switch", "Cables": "cable", "Transceivers": "transceiver", "Racks": "rack", "PDUs": "pdu"}


def _headline_figures(
    book: Book,
    sheet: Worksheet,
    bom: Bom,
    row: int,
    total_row: int,
    maximum_kw: float,
    lines_range: Callable[[str], str],
) -> int:
    """The headline figures from `row`, the IT power over the totals' row (`total_row`, 1-based) less the included
    optics; returns the last row."""
    book.headers(sheet, row, ("Figure", "Value"))
    included_row = 0
    for label, value in bom.counts.items():
        row += 1
        book.text(sheet, row, 0, label)
        number_format = DECIMAL_1 if "kW" in label else INTEGER
        if label in _FIGURE_KINDS:
            formula = f'=SUMIF({lines_range("kind")},"{_FIGURE_KINDS[label]}",{lines_range("quantity")})'
            book.formula(sheet, row, 1, formula, value, number_format)
        elif label == OPTICS_INCLUDED:
            book.number(sheet, row, 1, value, number_format)
            included_row = row + 1
        elif label == "IT power, maximum (kW)":
            value = maximum_kw - bom.counts[OPTICS_INCLUDED]
            book.formula(sheet, row, 1, f"=E{total_row}-B{included_row}", value, number_format)
        else:
            book.number(sheet, row, 1, value, number_format)
    return row


def _cables_by_length(book: Book, sheet: Worksheet, bom: Bom, row: int, lines_range: Callable[[str], str]) -> int:
    """Cables by media and length from `row`; returns the last row."""
    book.headers(sheet, row, ("Cables by media", "Length (m)", "Cables"))
    by_length: Counter[tuple[str, float]] = Counter()
    for line in bom.lines:
        if line.kind == "cable":
            by_length[(line.media, line.length_m or 0.0)] += line.quantity
    for (media, length_m), count in sorted(by_length.items()):
        row += 1
        book.text(sheet, row, 0, media)
        book.number(sheet, row, 1, length_m, DECIMAL_1)
        formula = (
            f'=SUMIFS({lines_range("quantity")},{lines_range("kind")},"cable",'
            f"{lines_range('media')},A{row + 1},{lines_range('length')},B{row + 1})"
        )
        book.formula(sheet, row, 2, formula, count, INTEGER)
    return row


def _unpriced(book: Book, sheet: Worksheet, bom: Bom, row: int) -> None:
    unpriced = bom.unpriced()
    if not unpriced:
        return
    book.text(sheet, row, 0, f"Not in the price list ({len(unpriced)} lines): no price is assumed", bold=True)
    row += 1
    book.headers(sheet, row, ("Section", "Catalog id", "Model", "Part number", "Quantity"))
    for line in unpriced:
        row += 1
        for col, text in enumerate((SECTION_TITLES[line.section], line.item, line.model, line.part_number)):
            book.text(sheet, row, col, text)
        book.number(sheet, row, 4, line.quantity, INTEGER)


RACK_COLUMNS = [
    Column("Rack", 8),
    Column("Purpose", 12),
    Column("SU", 5, INTEGER),
    Column("Devices", 8, INTEGER),
    Column("PDUs", 6, INTEGER),
    Column("U used", 8, DECIMAL_1),
    Column("Typical kW", 10, DECIMAL_1),
    Column("Maximum kW", 10, DECIMAL_1),
    Column("Weight kg", 10, DECIMAL_1),
    Column("Contents", 80),
]
CONTENT_COLUMNS = [
    Column("Rack", 8),
    Column("U", 5, INTEGER),
    Column("Device", 28),
    Column("Kind", 16),
    Column("Model", 30),
    Column("Part number", 22),
    Column("U height", 8, DECIMAL_1),
    Column("Maximum W with optics", 10, INTEGER),
    Column("Weight kg", 10, DECIMAL_1),
]


def _racks(book: Book, plan: Plan, name: str) -> None:
    """A row per rack (sums over its contents rows), then every device in it, bottom U first, its maximum draw with
    its optics (the power budget's rule, so a rack's sum is its planned load); ~70,000 rows at 131,072 GPUs."""
    powers = device_powers(plan)
    racks = sorted(plan.racks.values(), key=lambda r: (r.row, r.position))
    total_rows = sum(len(r.devices) + len(r.pdus) for r in racks)
    summary = book.table_sheet("Racks", RACK_COLUMNS, len(racks), f"{name}: racks")
    detail = book.table_sheet(CONTENTS_SHEET, CONTENT_COLUMNS, total_rows, f"{name}: rack contents")
    facts = _part_facts(book, plan)
    integer, decimal = book.format(INTEGER), book.format(DECIMAL_1)
    cells = cell_writers(detail)  # ~70,000 rows at scale: no A1-notation decorator
    write_string, write_number = cells.text, cells.number
    text_format = functools.cache(book.text_format)  # racks and roles repeat
    detail_row = 1
    for row, rack in enumerate(track(racks, len(racks), "racks"), start=1):
        devices = sorted((plan.devices[n] for n in rack.devices), key=lambda d: (d.u_position, d.name))
        ordered = devices + [plan.devices[n] for n in rack.pdus]
        first = detail_row + 1
        sums = [0.0, 0.0, 0.0]  # U, maximum W, kg
        # a rack-scale system's loaded weight holds its trays: they weigh nothing more on their own rows
        system_kg = loaded_weight_kg(plan, rack) if rack.rack_system else None
        models: Counter[str] = Counter()
        for device in ordered:  # a row per device: Book.text's cells, written straight (~70,000 rows at scale)
            model, part_number, (u_height, weight_kg) = facts(device.part)
            if rack.name:
                write_string(detail_row, 0, rack.name, text_format(rack.name))
            if device.u_position:
                write_number(detail_row, 1, device.u_position, integer)
            if device.name:
                write_string(detail_row, 2, device.name, book.text_format(device.name))
            if device.role:
                write_string(detail_row, 3, device.role, text_format(device.role))
            if model:
                write_string(detail_row, 4, *model)
            if part_number:
                write_string(detail_row, 5, *part_number)
            max_w = powers[device.name].max_w
            write_number(detail_row, 6, u_height, decimal)
            write_number(detail_row, 7, max_w, integer)
            sums[0] += u_height
            sums[1] += max_w
            if weight_kg is not None and system_kg is None:
                write_number(detail_row, 8, weight_kg, decimal)
                sums[2] += weight_kg
            models[model[0] if model else device.part] += 1
            detail_row += 1
        last = detail_row

        def over(col: int, first: int = first, last: int = last) -> str:
            if last < first:
                return "0"
            letter = _letter(col)
            return f"SUM('{CONTENTS_SHEET}'!{letter}{first}:{letter}{last})"

        book.text(summary, row, 0, rack.name)
        book.text(summary, row, 1, rack.purpose)
        book.number(summary, row, 2, rack.su, INTEGER)
        book.number(summary, row, 3, len(devices), INTEGER)
        book.number(summary, row, 4, len(rack.pdus), INTEGER)
        book.formula(summary, row, 5, f"={over(6)}", sums[0], DECIMAL_1)
        book.number(summary, row, 6, rack.power_typical_w / 1000, DECIMAL_1)
        book.formula(summary, row, 7, f"={over(7)}/1000", sums[1] / 1000, DECIMAL_1)
        if system_kg is None:
            book.formula(summary, row, 8, f"={over(8)}", sums[2], DECIMAL_1)
        else:
            book.number(summary, row, 8, system_kg, DECIMAL_1)
        book.text(summary, row, 9, "; ".join(f"{n} x {model}" for model, n in models.items()))


# a part's (model, format), (part number, format) and (U, kg)
_Facts = tuple[tuple[str, object] | None, tuple[str, object] | None, tuple[float, float | None]]


def _part_facts(book: Book, plan: Plan) -> Callable[[str], _Facts]:
    """A part's facts for the rack contents, looked up once per part (~70,000 rows at scale)."""

    def text(value: str) -> tuple[str, object] | None:
        return (value, book.text_format(value)) if value else None

    @functools.cache
    def facts(part_id: str) -> _Facts:
        part = plan.catalog_parts[part_id]
        figures = (float(getattr(part, "u_height", 0.0)), getattr(part, "weight_kg", None))
        return text(str(getattr(part, "model", ""))), text(str(getattr(part, "part_number", None) or "")), figures

    return facts
