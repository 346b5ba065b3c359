"""The bill of materials: quantities reconcile with the plan and its cables, the workbook is one a
buyer (and a real spreadsheet reader) accepts, prices come only from the buyer's list, text never
becomes a formula, and the same design gives the same bytes."""

from __future__ import annotations

import csv
import dataclasses
import math
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner
from conftest import planned, write_design

from gpucluster import load_design, plan_design, write_artifacts
from gpucluster.analyse.bom import (
    OPTICS_INCLUDED,
    PART_NUMBER_TO_CONFIRM,
    SECTIONS,
    Bom,
    bom_for,
    build_bom,
    short_description,
)
from gpucluster.artifacts.plan_json import plan_document
from gpucluster.catalog.load import load_catalog
from gpucluster.cli import main
from gpucluster.design.schema import BillOfMaterials
from gpucluster.errors import DesignError
from gpucluster.inputs.prices import load_price_list
from gpucluster.plan.power.draw import device_power


def _quantity(bom: Bom, **where: object) -> int:
    return sum(line.quantity for line in bom.lines if all(getattr(line, k) == v for k, v in where.items()))


@pytest.mark.parametrize("name", ["superpod-h100-1su", "b200-roce-2su", "superpod-h200-4su"])
def test_bom_quantities_reconcile_with_plan_and_cabling(name: str) -> None:
    loaded, plan = planned(name)
    bom = build_bom(plan)
    roles = Counter(d.role for d in plan.devices.values())
    for role, count in roles.items():
        assert _quantity(bom, kind=role) == count, role
    spares = [d for d in plan.devices.values() if d.spare]
    assert _quantity(bom, section="spares") == len(spares) == plan.totals.spare_servers
    assert _quantity(bom, section="compute") == plan.totals.production_servers
    for network, tiers in plan.totals.switches.items():
        assert _quantity(bom, kind="switch", network=network) == sum(tiers.values())
    assert _quantity(bom, kind="rack") == len(plan.racks)
    # the cabling plan as written (plan.json's cable records): same parts, lengths and counts
    records = plan_document(plan, loaded)["cables"]
    written = Counter((c["network"], c["part"], c["part_number"] or "", c["length_m"]) for c in records)
    in_bom = {
        (line.network, line.item, line.part_number, line.length_m): line.quantity
        for line in bom.lines
        if line.kind == "cable"
    }
    assert in_bom == dict(written)
    assert _quantity(bom, kind="cable") == plan.totals.cables
    # one transceiver per occupied cage at every optical cable end, counted here without the BOM's code
    optical = {i for c in plan.cables if c.media in ("mmf", "smf") for i in c.links}
    cages = {(plan.links[i].a_device, plan.links[i].a_cage) for i in optical}
    cages |= {(plan.links[i].b_device, plan.links[i].b_cage) for i in optical}
    assert _quantity(bom, kind="transceiver") == len(cages)
    # power: the lines give every device's and optic's catalog figures; the IT load is that, less the
    # optics a switch's catalog maximum already covers
    powers = device_power(plan).values()
    assert bom.total("power_max_w") == pytest.approx(sum(p.catalog_max_w + p.optics_max_w for p in powers))
    assert bom.total("power_typical_w") == pytest.approx(sum(p.catalog_typical_w + p.optics_typical_w for p in powers))
    it_max_kw = bom.total("power_max_w") / 1000 - bom.counts[OPTICS_INCLUDED]
    assert it_max_kw == pytest.approx(plan.totals.it_power_max_kw, abs=0.01)
    assert bom.counts[OPTICS_INCLUDED] > 0  # the QM9700/SN5600 maxima are stated with optics
    assert bom.counts["Transceivers"] == len(cages)


def test_a_splitter_or_twin_copper_cable_is_one_cable_carrying_two_links(h200_4su) -> None:
    _loaded, plan = h200_4su
    bom = build_bom(plan)
    doubles = [c for c in plan.cables if len(c.links) == 2]
    assert doubles, "the 4-SU design uses twin-port DACs and 2x200G splitters"
    for part in {c.cable_part for c in doubles}:
        cables = [c for c in plan.cables if c.cable_part == part]
        assert _quantity(bom, kind="cable", item=part) == len(cables)
        # a splitter may leave a leg unused (an odd host on a split port): one cable, one link
        legs = plan.catalog_parts[part].split
        assert all(len(c.links) == 2 or legs == 2 for c in cables) and all(len(c.links) <= 2 for c in cables)


def test_twin_port_transceivers_counted_once_per_cage(h100_1su) -> None:
    _loaded, plan = h100_1su
    bom = build_bom(plan)
    # a DGX H100 has four twin-port compute cages: 8 links, 8 fibres, 4 transceivers
    servers = plan.totals.servers
    assert _quantity(bom, kind="transceiver", item="mma4z00-ns-flt-host-ndr") == 4 * servers
    host_fibres = sum(1 for c in plan.cables if c.network == "compute" and plan.links[c.links[0]].tier == 0)
    assert host_fibres >= 8 * servers


def test_workbook_is_one_a_buyer_accepts(tmp_path: Path, h100_1su) -> None:
    loaded, plan = h100_1su
    folder = write_artifacts(plan, loaded, tmp_path, only=["bom"])
    bom = build_bom(plan)
    book = openpyxl.load_workbook(folder / "bom.xlsx")
    values = openpyxl.load_workbook(folder / "bom.xlsx", data_only=True)
    assert book.sheetnames == ["Summary", "BOM", "Racks", "Rack contents"]
    for name in ("BOM", "Racks", "Rack contents"):
        sheet = book[name]
        assert sheet.freeze_panes == "A2"
        assert sheet.auto_filter.ref.startswith("A1:")
        assert sheet.print_title_rows == "$1:$1"
        assert sheet.column_dimensions["A"].width > 5
    for name in book.sheetnames:
        setup = book[name].page_setup
        assert setup.orientation == "landscape"
        assert book[name].sheet_properties.pageSetUpPr.fitToPage
        assert (setup.fitToWidth or 1, setup.fitToHeight) == (1, 0)  # 1 is the default, left out

    lines = book["BOM"]
    header = [c.value for c in lines[1]]
    col = {h: i + 1 for i, h in enumerate(header)}
    assert {"Section", "Vendor", "Model", "Part number", "Description", "Quantity"} <= set(header)
    per_unit = {"Typical W per unit", "Maximum W per unit", "Weight kg per unit", "U per unit"}
    assert per_unit | {"Typical W", "Maximum W", "Weight kg", "U"} <= set(header)
    assert header[0] and lines.row_dimensions[1].height > 15  # wrapped header row, tall enough
    assert lines.max_row == len(bom.lines) + 1
    for row, line in enumerate(bom.lines, start=2):
        assert lines.cell(row, col["Quantity"]).value == line.quantity
        assert lines.cell(row, col["Quantity"]).number_format == "#,##0"
        cell = lines.cell(row, col["Maximum W"])
        if line.power_max_w is None:
            assert cell.value is None
        else:
            assert cell.value.startswith("=")  # a formula ...
            stored = values["BOM"].cell(row, col["Maximum W"]).value  # ... with its value stored
            assert stored == pytest.approx(line.power_max_w * line.quantity)

    summary, summary_values = book["Summary"], values["Summary"]
    rows = {summary.cell(r, 1).value: r for r in range(1, summary.max_row + 1)}
    for key, title in SECTIONS:
        assert summary.cell(rows[title], 3).value.startswith("=SUMIF(")
        assert summary_values.cell(rows[title], 3).value == pytest.approx(bom.total("quantity", key))
    assert summary_values.cell(rows["Total"], 5).value == pytest.approx(bom.total("power_max_w") / 1000)
    figures = {summary.cell(r, 1).value: summary_values.cell(r, 2).value for r in range(1, summary.max_row + 1)}
    assert figures["GPUs"] == plan.totals.gpus
    assert figures["Racks"] == len(plan.racks)
    assert figures["Cables"] == len(plan.cables)
    assert figures["IT power, maximum (kW)"] == pytest.approx(plan.totals.it_power_max_kw, abs=0.01)
    cables_by_length = sum(
        summary_values.cell(r, 3).value
        for r in range(rows["Cables by media"] + 1, summary.max_row + 1)
        if summary.cell(r, 1).value
    )
    assert cables_by_length == len(plan.cables)

    racks, rack_values = book["Racks"], values["Racks"]
    assert racks.max_row == len(plan.racks) + 1
    by_name = {racks.cell(r, 1).value: r for r in range(2, racks.max_row + 1)}
    for rack in plan.racks.values():
        row = by_name[rack.name]
        assert racks.cell(row, 8).value.startswith("=SUM('Rack contents'!")
        assert rack_values.cell(row, 8).value == pytest.approx(rack.power_max_w / 1000)
    contents = book["Rack contents"]
    assert contents.max_row - 1 == sum(len(r.devices) + len(r.pdus) for r in plan.racks.values())


def test_csv_holds_the_line_items(tmp_path: Path, h100_1su) -> None:
    loaded, plan = h100_1su
    folder = write_artifacts(plan, loaded, tmp_path, only=["bom"])
    with open(folder / "bom.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    bom = build_bom(plan)
    assert len(rows) == len(bom.lines)
    assert [int(r["Quantity"]) for r in rows] == [line.quantity for line in bom.lines]
    assert sum(float(r["Maximum W"] or 0) for r in rows) == pytest.approx(bom.total("power_max_w"))
    optics = [r for r in rows if r["Kind"] == "transceiver"]
    assert optics and all(float(r["Maximum W per unit"]) > 0 for r in optics)
    assert "Unit price" not in rows[0]  # no price list, no price columns


def test_same_design_gives_byte_identical_bom(tmp_path: Path) -> None:
    outputs = []
    for run in ("first", "second"):
        loaded = load_design(Path("designs/lab-4-servers.yaml"))
        folder = write_artifacts(plan_design(loaded), loaded, tmp_path / run, only=["bom"])
        outputs.append(((folder / "bom.xlsx").read_bytes(), (folder / "bom.csv").read_bytes()))
    assert outputs[0] == outputs[1]


_CATALOG = """
sources:
  mine: my own rack, measured
parts:
  - kind: rack
    id: evil-rack
    vendor: "+cmd|' /C calc'!A0"
    model: "=HYPERLINK(\\"http://example.invalid\\",\\"x\\")"
    part_number: "@SUM(1+1)"
    description: "-2+3 a rack whose text looks like formulas"
    u_height: 48
    width_mm: 600
    depth_mm: 1200
    sources: {part_number: mine, u_height: mine, width_mm: mine, depth_mm: mine}
"""


def test_formula_like_text_is_written_as_text(tmp_path: Path) -> None:
    (tmp_path / "parts.yaml").write_text(_CATALOG, encoding="utf-8")
    (tmp_path / "prices.csv").write_text("part_number,unit_price,currency,note\n@SUM(1+1),100,EUR,=1+1\n")
    design = write_design(
        tmp_path,
        "name: injection\ndescription: '=cmd|calc'\ncatalog: [parts.yaml]\n"
        "site: {rack: evil-rack, rack_power_budget_kw: 50}\n"
        "compute: {server: hgx-h100-oem, servers: 2, spare_servers: 0}\n"
        "compute_fabric: {fabric_manager: null}\nmanagement: {management_servers: 1}\n"
        "bom: {price_list: prices.csv}\n",
    )
    loaded = load_design(design)
    folder = write_artifacts(plan_design(loaded), loaded, tmp_path / "out", only=["bom"])
    book = openpyxl.load_workbook(folder / "bom.xlsx")
    dangerous = {"+cmd|' /C calc'!A0", '=HYPERLINK("http://example.invalid","x")', "@SUM(1+1)", "=cmd|calc"}
    dangerous.add("-2+3 a rack whose text looks like formulas")
    found = set()
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                if isinstance(cell.value, str) and cell.value in dangerous:
                    assert cell.data_type == "s", (sheet.title, cell.coordinate)
                    assert cell.quotePrefix, (sheet.title, cell.coordinate)
                    found.add(cell.value)
    assert found == dangerous
    text = (folder / "bom.csv").read_text(encoding="utf-8")
    rows = list(csv.reader(text.splitlines()))
    cells = {cell for row in rows for cell in row}
    for value in dangerous - {"=cmd|calc"}:  # the design description is not a line-item cell
        assert "'" + value in cells
        assert value not in cells
    assert not any(cell.startswith(("=", "+", "-", "@")) for cell in cells)


def test_price_list_prices_lines_and_lists_the_rest_unpriced(tmp_path: Path) -> None:
    (tmp_path / "prices.csv").write_text(
        "part_number,unit_price,currency,note\n"
        "920-9B210-00FN-0M0,28500,USD,quote Q-1\n"  # QM9700, by vendor part number
        "hgx-h100-oem,250000,USD,\n"  # a server without a vendor part number, by catalog id
        "NVIDPD13,1800.50,EUR,\n",
        encoding="utf-8",
    )
    design = write_design(
        tmp_path,
        "name: priced\nsite: {rack_power_budget_kw: 50}\n"
        "compute: {server: hgx-h100-oem, servers: 4, spare_servers: 0}\n"
        "compute_fabric: {fabric_manager: null}\nmanagement: {management_servers: 1}\n"
        "bom: {price_list: prices.csv}\n",
    )
    loaded = load_design(design)
    plan = plan_design(loaded)
    bom = bom_for(plan, loaded)
    switches = [line for line in bom.lines if line.item == "qm9700"]
    assert switches and all(line.unit_price == 28500 and line.currency == "USD" for line in switches)
    assert "quote Q-1" in switches[0].notes
    servers = _quantity(bom, kind="gpu-server")
    qm9700 = _quantity(bom, item="qm9700")
    racks = len(plan.racks)
    assert bom.price_totals() == {"EUR": pytest.approx(1800.5 * racks), "USD": 28500 * qm9700 + 250000 * servers}
    unpriced = bom.unpriced()
    assert unpriced and all(line.unit_price is None and line.extended_price is None for line in unpriced)
    assert {line.item for line in unpriced} >= {"sn2201", "cat6-patch-1g"}

    folder = write_artifacts(plan, loaded, tmp_path / "out", only=["bom"])
    book = openpyxl.load_workbook(folder / "bom.xlsx")
    values = openpyxl.load_workbook(folder / "bom.xlsx", data_only=True)
    header = [c.value for c in book["BOM"][1]]
    price_col = header.index("Extended price") + 1
    for row, line in enumerate(bom.lines, start=2):
        cell = book["BOM"].cell(row, price_col)
        if line.unit_price is None:
            assert cell.value is None  # never invented
        else:
            assert cell.value.startswith("=")
            assert values["BOM"].cell(row, price_col).value == pytest.approx(line.extended_price)
    summary = values["Summary"]
    labels = [summary.cell(r, 1).value for r in range(1, summary.max_row + 1)]
    total_row = labels.index("Total") + 1
    headers = [summary.cell(5, c).value for c in range(1, summary.max_column + 1)]
    usd = headers.index("Price (USD)") + 1
    assert summary.cell(total_row, usd).value == pytest.approx(bom.price_totals()["USD"])
    assert any(str(label).startswith(f"Not in the price list ({len(unpriced)} lines)") for label in labels if label)
    with open(folder / "bom.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert sum(float(r["Extended price"] or 0) for r in rows if r["Currency"] == "USD") == bom.price_totals()["USD"]


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("part_number,unit_price,currency\nX,-1,USD\n", ":2:2: unit_price:", "greater than or equal to 0"),
        ("part_number,unit_price,currency\nX,12,usd\n", ":2:3: currency:", "should match pattern"),
        ("part_number,unit_price,currency\nX,1,USD\nX,2,USD\n", ":3:1: part_number:", "priced twice"),
        ("part_number,price,currency\nX,1,USD\n", ":1:2: price:", "unknown column"),
        ("part_number,unit_price,currency\nX,ten,USD\n", ":2:2: unit_price:", "valid number"),
    ],
)
def test_price_list_errors_are_located(tmp_path: Path, text: str, where: str, message: str) -> None:
    path = tmp_path / "prices.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DesignError) as error:
        load_price_list(path)
    assert any(where in str(p) and message in str(p) for p in error.value.problems), str(error.value)


def test_design_naming_a_missing_price_list_fails_validation_with_its_location(tmp_path: Path) -> None:
    design = write_design(tmp_path, "name: x\ncompute: {servers: 4}\nbom:\n  price_list: nowhere.csv\n")
    result = CliRunner().invoke(main, ["validate", str(design)])
    assert result.exit_code == 2
    assert f"{design}:4:3: bom.price_list: no such file" in result.output


def test_short_description_keeps_the_first_sentence() -> None:
    assert short_description("A switch, e.g. for leaves. More detail here.") == "A switch, e.g. for leaves."
    long = short_description("word " * 100)
    assert len(long) <= 160 and long.endswith("...")


_RECALCULATE_ON_LOAD = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema"
 xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" oor:op="fuse">
<value>0</value></prop></item>
</oor:items>
"""


@pytest.mark.external
@pytest.mark.skipif(
    not (shutil.which("soffice") or shutil.which("libreoffice")),
    reason="LibreOffice (soffice) is not installed; CI does not install it",
)
def test_libreoffice_opens_the_workbook_and_recalculates_the_stored_values(tmp_path: Path, h100_1su) -> None:
    """LibreOffice, told to recalculate every formula on load, converts the workbook to a new xlsx:
    every number it computes must equal the value we stored beside the formula."""
    loaded, plan = h100_1su
    folder = write_artifacts(plan, loaded, tmp_path, only=["bom"])
    profile = tmp_path / "profile"
    (profile / "user").mkdir(parents=True)
    (profile / "user" / "registrymodifications.xcu").write_text(_RECALCULATE_ON_LOAD, encoding="utf-8")
    converted = tmp_path / "converted"
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    subprocess.run(
        [
            str(soffice),
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--convert-to",
            "xlsx",
            "--outdir",
            str(converted),
            str(folder / "bom.xlsx"),
        ],
        check=True,
        capture_output=True,
        timeout=240,
    )
    ours = openpyxl.load_workbook(folder / "bom.xlsx")
    stored = openpyxl.load_workbook(folder / "bom.xlsx", data_only=True)
    theirs = openpyxl.load_workbook(converted / "bom.xlsx", data_only=True)
    assert theirs.sheetnames == stored.sheetnames
    formulas = 0
    for name in ours.sheetnames:
        for row in ours[name].iter_rows():
            for cell in row:
                if isinstance(cell.value, str) and cell.value.startswith("="):
                    formulas += 1
                    mine = stored[name][cell.coordinate].value
                    computed = theirs[name][cell.coordinate].value
                    assert computed == pytest.approx(mine, abs=1e-6), (name, cell.coordinate, cell.value)
    assert formulas > 100


def _bom_rows(folder: Path) -> list[dict[str, object]]:
    sheet = openpyxl.load_workbook(folder / "bom.xlsx", data_only=True)["BOM"]
    header = [c.value for c in sheet[1]]
    return [dict(zip(header, (c.value for c in row), strict=True)) for row in sheet.iter_rows(min_row=2)]


def _sum(rows: list[dict[str, object]], **where: object) -> int:
    return sum(int(r["Quantity"]) for r in rows if all(r[k] == v for k, v in where.items()))  # type: ignore[call-overload]


def test_the_bom_orders_cords_rails_rear_doors_spare_optics_and_software(tmp_path: Path, h100_1su) -> None:
    """Read back from bom.xlsx: a cord per PSU by its two plugs, a rail kit per racked device, a rear-door heat
    exchanger per rack (the design cools with rear doors), 5 % spare optics and cables per line (rounded up), a PDU
    input circuit per PDU, and support and software lines counted in their units."""
    loaded, plan = h100_1su
    rows = _bom_rows(write_artifacts(plan, loaded, tmp_path, only=["bom"]))
    devices = list(plan.devices.values())
    psus = {d.name: plan.part(d.name).psus for d in devices if getattr(plan.part(d.name), "psus", None)}
    assert _sum(rows, Kind="power-cord") == sum(p.count for p in psus.values())
    dgx = [d for d in devices if d.role == "gpu-server"]
    c20 = sum(p.count for p in psus.values() if p.inlet == "C20")
    assert _sum(rows, Kind="power-cord", Model="IEC 60320 C20 plug to C19 connector power cord") == c20 >= 6 * len(dgx)
    pdus = sum(len(r.pdus) for r in plan.racks.values())
    assert _sum(rows, Kind="pdu-circuit") == pdus
    racked = [d for d in devices if d.role != "pdu" and plan.part(d.name).u_height > 0]
    assert _sum(rows, Kind="rail-kit") == len(racked)
    assert _sum(rows, **{"Kind": "rail-kit", "Catalog id": "dgx-h100-rails"}) == len(dgx)
    assert plan.design.site.cooling == "rear-door"
    assert _sum(rows, Kind="rear-door-hx") == len(plan.racks)
    for kind in ("transceiver", "cable"):
        for line in (r for r in rows if r["Kind"] == kind):
            spare = [
                r
                for r in rows
                if r["Kind"] == f"{kind}-spare"
                and r["Catalog id"] == line["Catalog id"]
                and r["Network"] == line["Network"]
                and r["Length (m)"] == line["Length (m)"]
            ]
            assert [r["Quantity"] for r in spare] == [math.ceil(int(line["Quantity"]) * 0.05)], line  # type: ignore[call-overload]
            assert spare[0]["Maximum W"] is None and spare[0]["Section"] == "Spare optics and cables"
    software = {r["Catalog id"]: r for r in rows if r["Section"] == "Software and support"}
    assert software["nvidia-enterprise-support-dgx"]["Quantity"] == len(dgx)
    assert software["nvidia-ai-enterprise"]["Quantity"] == plan.totals.gpus
    assert software["nvidia-ufm-enterprise"]["Quantity"] == sum(1 for d in devices if d.role == "fabric-manager")
    ethernet = [d for d in devices if d.role == "switch" and plan.part(d.name).technology == "ethernet"]
    assert software["nvidia-cumulus-linux"]["Quantity"] == len(ethernet) > 0
    blocks = plan.settings.parallel_filesystem_blocks
    assert software[f"{plan.settings.parallel_filesystem_block}-software"]["Quantity"] == blocks
    assert all(r["Part number"] is None and r["Vendor"] is None for r in software.values())  # nothing invented
    assert all(r.get("Unit price") is None for r in software.values())


def test_spare_optics_follow_the_design_share(h100_1su) -> None:
    _loaded, plan = h100_1su
    none = dataclasses.replace(
        plan, design=plan.design.model_copy(update={"bom": BillOfMaterials(spare_optics_fraction=0)})
    )
    assert not [line for line in build_bom(none).lines if line.section == "spare-optics"]
    tenth = dataclasses.replace(
        plan, design=plan.design.model_copy(update={"bom": BillOfMaterials(spare_optics_fraction=0.1)})
    )
    bom = build_bom(tenth)
    installed = sum(line.quantity for line in bom.lines if line.kind == "transceiver")
    spares = sum(line.quantity for line in bom.lines if line.kind == "transceiver-spare")
    assert installed * 0.1 <= spares < installed * 0.1 + len([x for x in bom.lines if x.kind == "transceiver"])


def test_system_part_numbers_carry_their_sources() -> None:
    """The orderable systems whose part numbers were found: each with its source (RA Table 7 or labelled
    secondary); the ones not found stay empty rather than invented."""
    catalog = load_catalog()
    for part_id, number in {
        "qm9700": "920-9B210-00FN-0M0",
        "sn4600c": "920-9N302-00F7-0C2",
        "sn2201": "920-9N110-00F1-0C0",
        "sn5600": "920-9N42F-00RI-7C0",
        "dgx-b200": "DGXB-G1440+P1CMI36",
        "ufm-enterprise-ndr": "920-9B020-00FA-0D3",
        "raritan-px3-5878i2r-p1q2r1a15d5": "PX3-5878I2R-P1Q2R1A15D5",
        "raritan-px3-5747v-v2": "PX3-5747V-V2",
        "legrand-nvidpd13": "NVIDPD13",
    }.items():
        part = catalog.parts[part_id]
        assert part.part_number == number and part.sources.get("part_number"), part_id


def test_systems_without_a_sourced_part_number_are_marked_to_confirm_with_the_vendor() -> None:
    """DGX H100/H200, the AI400X2 and the head node have no part number in any source found: the catalog records
    the search, the part number stays empty, and the BOM line says it is to be confirmed with the vendor; a line
    with a part number, or a rack-scale system's tray (ordered with its rack), is not marked."""
    catalog = load_catalog()
    for part_id in ("dgx-h100", "dgx-h200", "ddn-ai400x2", "bcm-head-node"):
        assert catalog.parts[part_id].part_number is None, part_id
        assert "part number" in (catalog.citation(part_id, "part_number_search") or "").lower(), part_id
    _loaded, plan = planned("superpod-h200-4su")
    lines = {(line.section, line.item): line for line in build_bom(plan).lines}
    for key in (("compute", "dgx-h200"), ("spares", "dgx-h200"), ("storage", "ddn-ai400x2")):
        assert lines[key].part_number == "" and lines[key].notes.endswith(PART_NUMBER_TO_CONFIRM), key
    assert lines[("management-networks", "bcm-head-node")].notes == PART_NUMBER_TO_CONFIRM
    for line in lines.values():
        if line.part_number:
            assert PART_NUMBER_TO_CONFIRM not in line.notes, line.item
    _loaded, nvl72 = planned("gb200-nvl72-1su")
    marked = {line.item for line in build_bom(nvl72).lines if PART_NUMBER_TO_CONFIRM in line.notes}
    assert "gb200-nvl72" in marked and not marked & {"gb200-compute-tray", "nvlink5-switch-tray"}
