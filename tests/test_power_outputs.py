"""power.xlsx, power-cooling.md and the rack-load chart, checked with the tools that read them."""

from __future__ import annotations

import math
import shutil
import subprocess
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

import openpyxl
import pytest
from conftest import planned
from matplotlib import image

from gpucluster.analyse.budget import power_budget
from gpucluster.artifacts import power

# LibreOffice recalculates every formula on load with this setting (0 = always), not only Excel's cached values.
_RECALC_PROFILE = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" oor:op="fuse">
<value>0</value></prop></item>
</oor:items>
"""


@cache
def _written(tmp: str) -> Path:
    loaded, plan = planned("superpod-h100-1su")
    folder = Path(tmp)
    power.write(plan, loaded, folder)
    return folder


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    return _written(str(tmp_path_factory.mktemp("power")))


def test_the_power_artifact_writes_workbook_summary_and_chart(out):
    assert sorted(p.name for p in out.iterdir()) == [
        "power-cooling.md",
        "power-racks.png",
        "power-racks.svg",
        "power.xlsx",
    ]


@pytest.mark.external
def test_libreoffice_recalculates_every_formula_to_the_values_written(out, tmp_path):
    """Strip the cached values (openpyxl keeps formulas only), let LibreOffice recalculate, compare."""
    soffice = shutil.which("soffice")
    assert soffice, "LibreOffice Calc (soffice) is needed: .ci/install-tools installs it"
    formulas = openpyxl.load_workbook(out / "power.xlsx")
    formulas.save(tmp_path / "stripped.xlsx")
    profile = tmp_path / "profile"
    (profile / "user").mkdir(parents=True)
    (profile / "user" / "registrymodifications.xcu").write_text(_RECALC_PROFILE, encoding="utf-8")
    subprocess.run(
        [
            soffice,
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--convert-to",
            "xlsx",
            "--outdir",
            str(tmp_path / "recalculated"),
            str(tmp_path / "stripped.xlsx"),
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )
    ours = openpyxl.load_workbook(out / "power.xlsx", data_only=True)
    theirs = openpyxl.load_workbook(tmp_path / "recalculated" / "stripped.xlsx", data_only=True)
    checked = 0
    for sheet in formulas.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                if isinstance(cell.value, str) and cell.value.startswith("="):
                    mine = ours[sheet.title][cell.coordinate].value
                    recalculated = theirs[sheet.title][cell.coordinate].value
                    where = f"{sheet.title}!{cell.coordinate} {cell.value}"
                    if isinstance(mine, int | float):
                        assert isinstance(recalculated, int | float), where
                        assert math.isclose(mine, recalculated, rel_tol=1e-9, abs_tol=1e-9), where
                    else:
                        assert (mine or "") == (recalculated or ""), where
                    checked += 1
    assert checked > 400


def test_the_workbook_has_one_row_per_rack_and_device_and_the_plans_totals(out):
    _loaded, plan = planned("superpod-h100-1su")
    book = openpyxl.load_workbook(out / "power.xlsx", data_only=True)
    assert book.sheetnames == ["Summary", "Racks", "Rows", "Scalable units", "Devices", "Circuits", "Sources"]
    racks = [row[0] for row in book["Racks"].iter_rows(min_row=2, values_only=True)]
    assert racks == list(plan.racks)
    assert book["Devices"].max_row - 1 == len(plan.devices)
    summary = {row[0]: row[1] for row in book["Summary"].iter_rows(values_only=True) if row[0]}
    assert summary["IT load, maximum"] == pytest.approx(plan.totals.it_power_max_kw, abs=0.001)
    assert summary["PUE (facility power / IT power)"] == 1.3


def test_the_summary_gives_site_figures_circuits_and_sources(out):
    _loaded, plan = planned("superpod-h100-1su")
    budget = power_budget(plan)
    text = (out / "power-cooling.md").read_text(encoding="utf-8")
    assert f"| IT load, kW | {budget.total.typical_w / 1000:,.1f} | {budget.total.max_w / 1000:,.1f} |" in text
    assert "usable **34.5 kW** per circuit" in text
    for feed in "ABC":  # the RA's N+1: each of a compute rack's three PDUs on its own feed
        assert f"| 415 V 3-phase 60 A | {feed} |" in text
    assert "![Rack loads against their limits](power-racks.svg)" in text
    assert "Redundancy N+1" in text and "2-2-2" in text
    assert "9.9 kW" not in text  # no feed-loss finding: four PSUs of six carry a DGX H100
    assert "insidehpc.com" in text  # constants carry their sources
    for rack in plan.racks:
        assert f"| {rack} |" in text


def test_the_chart_is_a_readable_png_and_an_svg_without_dates(out):
    pixels = image.imread(out / "power-racks.png")
    assert pixels.shape[0] == 480 and pixels.shape[1] >= 800
    svg = (out / "power-racks.svg").read_text(encoding="utf-8")
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    assert "dc:date" not in svg
