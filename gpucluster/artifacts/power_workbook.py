"""power.xlsx: the power-and-cooling budget as a live workbook. The design's inputs and the constants are named
cells on the Summary sheet and every derived figure a formula over them, so an architect can change an input and
read the result; each formula carries its computed value, so the file reads correctly before recalculation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlsxwriter.utility import xl_rowcol_to_cell
from xlsxwriter.workbook import Workbook
from xlsxwriter.worksheet import Worksheet

from gpucluster.analyse import budget as b
from gpucluster.analyse.budget import Budget
from gpucluster.formats.tables import FormulaSheet, cell_writers, new_workbook
from gpucluster.runtime.progress import track

_INPUT_ROW0 = 3  # first row (0-based) of the inputs block


def write_workbook(budget: Budget, path: Path) -> None:
    workbook = new_workbook(path, f"{budget.name} power and cooling")
    formats = _Formats(workbook)
    summary = workbook.add_worksheet("Summary", FormulaSheet)
    racks = workbook.add_worksheet("Racks", FormulaSheet)
    rows = workbook.add_worksheet("Rows", FormulaSheet)
    sus = workbook.add_worksheet("Scalable units", FormulaSheet)
    devices = workbook.add_worksheet("Devices", FormulaSheet)
    circuits = workbook.add_worksheet("Circuits", FormulaSheet)
    sources = workbook.add_worksheet("Sources", FormulaSheet)
    values = _inputs(budget)
    _write_inputs(workbook, summary, formats, values)
    last = _write_racks(racks, formats, budget, values)
    _write_summary(summary, formats, budget, values, last)
    _write_groups(rows, formats, budget.rows, "Row", "B", last, values)
    _write_groups(sus, formats, budget.sus, "Scalable unit", "D", last, values)
    _write_devices(devices, formats, budget)
    _write_circuits(circuits, formats, budget)
    _write_sources(sources, formats)
    workbook.close()


class _Formats:
    def __init__(self, workbook: Workbook):
        self.head = workbook.add_format({"bold": True, "bg_color": "#DDE5F0", "border": 1, "text_wrap": True})
        self.title = workbook.add_format({"bold": True, "font_size": 14})
        self.bold = workbook.add_format({"bold": True})
        self.kw = workbook.add_format({"num_format": "#,##0.00"})
        self.int = workbook.add_format({"num_format": "#,##0"})
        self.input = workbook.add_format({"bg_color": "#FFF2CC", "num_format": "General"})
        self.wrap = workbook.add_format({"text_wrap": True, "valign": "top"})


@dataclass(frozen=True)
class _Formula:
    text: str
    value: float


def _inputs(budget: Budget) -> dict[str, tuple[str, object, str]]:
    """name -> (label, value, unit); named cells on the Summary sheet, inputs first."""
    site, feed = budget.site, budget.site.power_feed
    return {
        "PUE": ("PUE (facility power / IT power)", budget.pue, ""),
        "PRICE_PER_KWH": (
            f"Electricity price per kWh ({site.currency})",
            site.electricity_price_per_kwh if site.electricity_price_per_kwh is not None else "",
            site.currency,
        ),
        "RISE_K": ("Air temperature rise across the equipment", budget.rise_k, "K"),
        "FEED_V": ("Circuit voltage (line-to-line for three-phase)", feed.voltage_v, "V"),
        "FEED_PHASES": ("Phases", feed.phases, ""),
        "FEED_A": ("Breaker", feed.breaker_a, "A"),
        "LOAD_FRACTION": ("Continuous-load fraction of the breaker", feed.continuous_load_fraction, ""),
        "PDU_KVA": (f"PDU input rating ({budget.pdu})", budget.pdu_kva, "kVA"),
        "CIRCUIT_KW": (
            "Usable power per circuit (the smaller of circuit and PDU, x fraction)",
            _Formula(
                "=MIN(IF(FEED_PHASES=3,SQRT(3),1)*FEED_V*FEED_A/1000,PDU_KVA)*LOAD_FRACTION",
                budget.circuit_usable_w / 1000,
            ),
            "kW",
        ),
        "BTU_PER_W": ("BTU/h per watt", b.BTU_PER_H_PER_W, "BTU/h/W"),
        "BTU_PER_TON": ("BTU/h per refrigeration ton", b.BTU_PER_H_PER_TON, "BTU/h"),
        "AIR_FACTOR": ("Sensible heat of standard air", b.AIR_SENSIBLE_HEAT_FACTOR, "BTU/h per CFM per °F"),
        "F_PER_K": ("°F per K (temperature difference)", b.FAHRENHEIT_PER_KELVIN, ""),
        "M3_PER_FT3": ("m³ per ft³", b.M3_PER_FT3, ""),
        "HOURS_PER_YEAR": ("Hours per year", b.HOURS_PER_YEAR, "h"),
    }


def _write_inputs(workbook: Workbook, sheet: Worksheet, f: _Formats, values: dict[str, Any]) -> None:
    sheet.write(0, 0, "Power and cooling budget", f.title)
    sheet.write(
        _INPUT_ROW0 - 1, 0, "Inputs (from the design) and constants; change a yellow cell to recalculate", f.bold
    )
    for i, (name, (label, value, unit)) in enumerate(values.items()):
        row = _INPUT_ROW0 + i
        sheet.write(row, 0, label)
        if isinstance(value, _Formula):
            sheet.write_formula(row, 1, value.text, f.kw, value.value)
        else:
            sheet.write(row, 1, value, f.input)
        sheet.write(row, 2, unit)
        workbook.define_name(name, f"=Summary!{xl_rowcol_to_cell(row, 1, row_abs=True, col_abs=True)}")
    sheet.set_column(0, 0, 52)
    sheet.set_column(1, 1, 16)
    sheet.set_column(2, 2, 22)


# Racks sheet headers in column order, A to Z (the formulas below name the columns by letter)
_RACK_COLUMNS = [
    *("Rack", "Row", "Purpose", "SU", "Devices", "IT typical kW", "IT max kW", "Optics kW (in max)"),
    *("To liquid kW", "To air kW", "Rack budget kW", "Feeds (2 = A/B, 3 = A/B/C)", "Circuits per feed", "Circuits"),
    *("Usable kW per circuit", "Capacity kW (a feed lost)", "Headroom kW", "kW per circuit, all feeds up"),
    *("kW per circuit, a feed lost", "A per line, a feed lost", "Heat BTU/h", "Refrigeration tons", "Airflow CFM"),
    *("Airflow m³/h", "Cooling needed", "Findings"),
]


def _phase_factor(phases: int) -> float:
    return math.sqrt(3) if phases == 3 else 1.0


def _write_racks(sheet: Worksheet, f: _Formats, budget: Budget, values: dict[str, Any]) -> int:
    """One row per rack; returns the last data row (1-based, for ranges)."""
    sheet.write_row(0, 0, _RACK_COLUMNS, f.head)
    feed = budget.site.power_feed
    rise = budget.rise_k
    cells = cell_writers(sheet)  # a row per rack, 26 cells each: no A1-notation decorator
    write_string, write_number, write_formula = cells.text, cells.number, cells.formula
    for i, rack in enumerate(budget.racks):
        r = i + 2  # 1-based row number in formulas
        row = r - 1
        load, c = rack.load, rack.circuits
        max_kw, liquid_kw = load.max_w / 1000, load.liquid_w / 1000
        feeds, per_feed, usable = len(c.feeds), c.circuits_per_feed, c.circuit_usable_w / 1000
        circuits = feeds * per_feed
        per_circuit = max_kw / circuits if circuits else 0.0
        carrying = c.carrying
        one_feed = max_kw / carrying if carrying else 0.0
        amps = one_feed * 1000 / (_phase_factor(feed.phases) * feed.voltage_v)
        heat = max_kw * 1000 * b.BTU_PER_H_PER_W
        cfm = b.airflow_cfm(load.air_w, rise)  # only the heat going to air moves air
        write_string(row, 0, rack.name)
        write_string(row, 1, rack.row)
        write_string(row, 2, rack.purpose)
        if rack.su is not None:
            write_number(row, 3, rack.su)
        write_number(row, 4, rack.devices)
        write_number(row, 5, load.typical_w / 1000, f.kw)
        write_number(row, 6, max_kw, f.kw)
        write_number(row, 7, load.optics_max_w / 1000, f.kw)
        write_number(row, 8, liquid_kw, f.kw)
        write_formula(row, 9, f"=G{r}-I{r}", f.kw, max_kw - liquid_kw)
        write_number(row, 10, budget.site.rack_power_budget_kw, f.kw)
        write_number(row, 11, feeds)
        write_number(row, 12, per_feed)
        write_formula(row, 13, f"=L{r}*M{r}", f.int, circuits)
        write_formula(row, 14, f"=IF(N{r}>0,CIRCUIT_KW,0)", f.kw, usable)
        write_formula(row, 15, f"={carrying}*O{r}", f.kw, carrying * usable)
        write_formula(row, 16, f"=P{r}-G{r}", f.kw, carrying * usable - max_kw)
        write_formula(row, 17, f"=IF(N{r}>0,G{r}/N{r},0)", f.kw, per_circuit)
        write_formula(row, 18, f"=IF({carrying}>0,G{r}/{carrying},0)", f.kw, one_feed)
        write_formula(row, 19, f"=S{r}*1000/(IF(FEED_PHASES=3,SQRT(3),1)*FEED_V)", f.kw, amps)
        write_formula(row, 20, f"=G{r}*1000*BTU_PER_W", f.int, heat)
        write_formula(row, 21, f"=U{r}/BTU_PER_TON", f.kw, heat / b.BTU_PER_H_PER_TON)
        write_formula(row, 22, f"=J{r}*1000*BTU_PER_W/(AIR_FACTOR*RISE_K*F_PER_K)", f.int, cfm)
        write_formula(row, 23, f"=W{r}*60*M3_PER_FT3", f.int, cfm * 60 * b.M3_PER_FT3)
        write_string(row, 24, rack.cooling_needed)
        write_string(row, 25, "; ".join(finding.message for finding in rack.findings))
    sheet.freeze_panes(1, 1)
    sheet.set_row(0, 45)
    sheet.set_column(0, 24, 11)
    sheet.set_column(25, 25, 60)
    last = len(budget.racks) + 1
    sheet.autofilter(0, 0, last - 1, len(_RACK_COLUMNS) - 1)
    return last


def _sum(column: str, last: int) -> str:
    return f"SUM(Racks!{column}2:{column}{last})"


def _write_summary(sheet: Worksheet, f: _Formats, budget: Budget, values: dict[str, Any], last: int) -> None:
    total = budget.total
    heat = total.max_w * b.BTU_PER_H_PER_W
    cfm = b.airflow_cfm(total.air_w, budget.rise_k)
    energy = budget.annual_energy_mwh
    cost = budget.annual_cost
    by_feed: dict[str, int] = {}
    for kind in budget.circuit_kinds:
        by_feed[kind.feed] = by_feed.get(kind.feed, 0) + kind.circuits
    rows: list[tuple[str, str, float | str, str]] = [
        ("IT load, typical", f"={_sum('F', last)}", total.typical_w / 1000, "kW"),
        ("IT load, maximum", f"={_sum('G', last)}", total.max_w / 1000, "kW"),
        ("  of which optics", f"={_sum('H', last)}", total.optics_max_w / 1000, "kW"),
        ("  to liquid", f"={_sum('I', last)}", total.liquid_w / 1000, "kW"),
        ("  to air", f"={_sum('J', last)}", total.air_w / 1000, "kW"),
        ("Facility power, typical (IT x PUE)", "=B{typ}*PUE", budget.facility_typical_w / 1000, "kW"),
        ("Facility power, maximum (IT x PUE)", "=B{max}*PUE", budget.facility_max_w / 1000, "kW"),
        ("Annual energy (typical IT x PUE x hours)", "=B{typ}*PUE*HOURS_PER_YEAR/1000", energy, "MWh"),
        (
            "Annual energy cost",
            '=IF(PRICE_PER_KWH="","",B{energy}*1000*PRICE_PER_KWH)',
            cost if cost is not None else "",
            budget.site.currency,
        ),
        ("Heat load at maximum", f"={_sum('U', last)}", heat, "BTU/h"),
        ("Heat load at maximum", f"={_sum('V', last)}", heat / b.BTU_PER_H_PER_TON, "refrigeration tons"),
        ("Airflow at the temperature rise", f"={_sum('W', last)}", cfm, "CFM"),
        ("Airflow at the temperature rise", f"={_sum('X', last)}", cfm * 60 * b.M3_PER_FT3, "m³/h"),
        ("Circuits, all feeds", f"={_sum('N', last)}", sum(by_feed.values()), "circuits"),
        *((f"Circuits, feed {feed}", f"={n}", n, "circuits") for feed, n in sorted(by_feed.items())),
        ("Racks", f"=COUNTA(Racks!A2:A{last})", len(budget.racks), "racks"),
    ]
    start = _INPUT_ROW0 + len(values) + 2
    sheet.write(start - 1, 0, "Results", f.bold)
    refs = {"typ": start + 1, "max": start + 2, "energy": start + 8}
    for i, (label, formula, value, unit) in enumerate(rows):
        row = start + i
        sheet.write(row, 0, label)
        sheet.write_formula(row, 1, formula.format(**refs), f.kw, value)
        sheet.write(row, 2, unit)


def _write_groups(
    sheet: Worksheet,
    f: _Formats,
    groups: list[b.GroupBudget],
    label: str,
    column: str,
    last: int,
    values: dict[str, Any],
) -> None:
    """Rows or scalable units: sums over the Racks sheet by its row (B) or SU (D) column."""
    headers = [label, "Racks", "IT typical kW", "IT max kW", "To liquid kW", "To air kW", "Circuits", "Heat BTU/h"]
    headers += ["Refrigeration tons", "Airflow CFM", "Airflow m³/h", "GPU servers", "Servers, catalog max kW"]
    headers += ["Servers with optics kW"]
    sheet.write_row(0, 0, headers, f.head)
    keys = f"Racks!{column}2:{column}{last}"
    for i, group in enumerate(groups):
        r = i + 2
        row = r - 1
        key = group.name if column == "B" else int(group.name.split()[-1])
        criterion = f"A{r}"
        load = group.load
        heat = load.max_w * b.BTU_PER_H_PER_W
        cfm = heat / (b.AIR_SENSIBLE_HEAT_FACTOR * values["RISE_K"][1] * b.FAHRENHEIT_PER_KELVIN)

        def sumif(col: str, criterion: str = criterion) -> str:
            return f"=SUMIF({keys},{criterion},Racks!{col}2:{col}{last})"

        sheet.write(row, 0, key)
        sheet.write_formula(row, 1, f"=COUNTIF({keys},{criterion})", f.int, group.racks)
        sheet.write_formula(row, 2, sumif("F"), f.kw, load.typical_w / 1000)
        sheet.write_formula(row, 3, sumif("G"), f.kw, load.max_w / 1000)
        sheet.write_formula(row, 4, sumif("I"), f.kw, load.liquid_w / 1000)
        sheet.write_formula(row, 5, sumif("J"), f.kw, load.air_w / 1000)
        sheet.write_formula(row, 6, sumif("N"), f.int, group.circuits)
        sheet.write_formula(row, 7, sumif("U"), f.int, heat)
        sheet.write_formula(row, 8, sumif("V"), f.kw, heat / b.BTU_PER_H_PER_TON)
        sheet.write_formula(row, 9, sumif("W"), f.int, cfm)
        sheet.write_formula(row, 10, sumif("X"), f.int, cfm * 60 * b.M3_PER_FT3)
        sheet.write_number(row, 11, group.servers)
        sheet.write_number(row, 12, group.servers_catalog_max_w / 1000, f.kw)
        sheet.write_number(row, 13, group.servers_max_w / 1000, f.kw)
    sheet.set_row(0, 30)
    sheet.set_column(0, len(headers) - 1, 13)
    sheet.freeze_panes(1, 1)


def _write_devices(sheet: Worksheet, f: _Formats, budget: Budget) -> None:
    headers = ["Device", "Part", "Role", "Rack", "Catalog typical W", "Catalog max W", "Optics typical W"]
    headers += ["Optics max W", "Catalog max includes optics", "Typical W", "Max W", "Cooling", "Liquid fraction"]
    headers += ["To liquid W"]
    sheet.write_row(0, 0, headers, f.head)
    cells = cell_writers(sheet)  # a row per device: no A1-notation decorator
    write_string, write_number, write_formula, write_boolean = cells
    for i, device in enumerate(track(budget.devices, len(budget.devices), "devices")):
        r = i + 2
        row = r - 1
        p = device.power
        write_string(row, 0, device.name)
        write_string(row, 1, device.part)
        write_string(row, 2, device.role)
        write_string(row, 3, device.rack)
        write_number(row, 4, p.catalog_typical_w)
        write_number(row, 5, p.catalog_max_w)
        write_number(row, 6, p.optics_typical_w)
        write_number(row, 7, p.optics_max_w)
        write_boolean(row, 8, p.optics_in_catalog_max)
        write_formula(row, 10, f"=F{r}+IF(I{r},0,H{r})", None, p.max_w)
        write_formula(row, 9, f"=MIN(E{r}+G{r},K{r})", None, p.typical_w)
        write_string(row, 11, device.cooling)
        write_number(row, 12, device.liquid_fraction)
        write_formula(row, 13, f"=F{r}*M{r}", None, device.liquid_w)
    sheet.set_row(0, 30)
    sheet.set_column(0, 0, 22)
    sheet.set_column(1, 1, 30)
    sheet.set_column(2, len(headers) - 1, 12)
    sheet.freeze_panes(1, 1)
    sheet.autofilter(0, 0, len(budget.devices), len(headers) - 1)


def _write_circuits(sheet: Worksheet, f: _Formats, budget: Budget) -> None:
    headers = ["Circuit", "Feed", "Circuits", "Usable kW each", "Usable kW in total"]
    sheet.write_row(0, 0, headers, f.head)
    for i, kind in enumerate(budget.circuit_kinds):
        r = i + 2
        sheet.write_string(r - 1, 0, kind.kind)
        sheet.write_string(r - 1, 1, kind.feed)
        sheet.write_number(r - 1, 2, kind.circuits)
        sheet.write_number(r - 1, 3, kind.usable_w / 1000, f.kw)
        sheet.write_formula(r - 1, 4, f"=C{r}*D{r}", f.kw, kind.circuits * kind.usable_w / 1000)
    sheet.set_column(0, 0, 24)
    sheet.set_column(1, 4, 14)


def _write_sources(sheet: Worksheet, f: _Formats) -> None:
    sheet.write_row(0, 0, ("Constant or rule", "Source"), f.head)
    for i, (name, source) in enumerate(b.SOURCES.items()):
        sheet.write_string(i + 1, 0, name)
        sheet.write_string(i + 1, 1, source, f.wrap)
    sheet.set_column(0, 0, 28)
    sheet.set_column(1, 1, 120)
