"""`gpucluster diff`: what the BOM gains and loses between two designs, printed and as bom-diff.xlsx."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner
from conftest import DESIGNS, planned, write_design

from gpucluster.analyse.bom import build_bom
from gpucluster.cli import main
from gpucluster.growth.diff import diff_boms, diff_plans
from gpucluster.inputs.prices import Price, PriceList


def test_diff_of_two_designs_reports_gains_and_losses(tmp_path: Path) -> None:
    _old_loaded, old = planned("superpod-h100-1su")
    _new_loaded, new = planned("superpod-h200-4su")
    diff = diff_plans(old, new)
    old_bom, new_bom = build_bom(old), build_bom(new)
    # every line of either BOM is either unchanged or in the diff with both quantities
    old_q = {line.key: line.quantity for line in old_bom.lines}
    new_q = {line.key: line.quantity for line in new_bom.lines}
    changed = {change.line.key: (change.old_quantity, change.new_quantity) for change in diff.lines}
    for key in old_q.keys() | new_q.keys():
        if old_q.get(key, 0) != new_q.get(key, 0):
            assert changed[key] == (old_q.get(key, 0), new_q.get(key, 0))
        else:
            assert key not in changed
    gains = {change.line.item for change in diff.of_kind("gain")}
    losses = {change.line.item for change in diff.of_kind("loss")}
    assert {"dgx-h200", "qm9700"} <= gains
    assert "dgx-h100" in losses  # the H100 servers and spare go, H200 come
    figures = {f.name: f for f in diff.figures}
    assert (figures["GPUs"].old, figures["GPUs"].new) == (old.totals.gpus, new.totals.gpus)
    assert figures["IT power, maximum (kW)"].change == pytest.approx(
        new.totals.it_power_max_kw - old.totals.it_power_max_kw
    )


@pytest.mark.slow
def test_diff_command_prints_and_writes_bom_diff_xlsx(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "diff",
            str(DESIGNS / "superpod-h100-1su.yaml"),
            str(DESIGNS / "superpod-h200-4su.yaml"),
            "-o",
            str(tmp_path),
            "--no-files",  # the generated files' comparison builds both designs (tests/test_review.py checks it)
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("BOM diff: superpod-h100-1su -> superpod-h200-4su\ngains (")
    assert "losses (" in result.output
    assert "x DGX H100 (compute): 30 -> 0" in result.output
    assert "  GPUs " in result.output
    path = tmp_path / "superpod-h100-1su-vs-superpod-h200-4su" / "bom-diff.xlsx"
    assert result.output.rstrip().endswith(f"wrote {path}")

    _l, old = planned("superpod-h100-1su")
    _l, new = planned("superpod-h200-4su")
    diff = diff_plans(old, new)
    book = openpyxl.load_workbook(path)
    values = openpyxl.load_workbook(path, data_only=True)
    assert book.sheetnames == ["Figures", "Changes"]
    changes = book["Changes"]
    assert changes.freeze_panes == "A2" and changes.auto_filter.ref
    header = [c.value for c in changes[1]]
    col = {h: i + 1 for i, h in enumerate(header)}
    assert changes.max_row == len(diff.lines) + 1
    for row, change in enumerate(diff.lines, start=2):
        assert changes.cell(row, col["Change"]).value == change.kind
        assert changes.cell(row, col["Old quantity"]).value == change.old_quantity
        assert changes.cell(row, col["New quantity"]).value == change.new_quantity
        assert changes.cell(row, col["Quantity change"]).value.startswith("=")
        assert values["Changes"].cell(row, col["Quantity change"]).value == change.quantity_change
    figures = values["Figures"]
    gpus = next(r for r in range(2, figures.max_row + 1) if figures.cell(r, 1).value == "GPUs")
    assert figures.cell(gpus, 4).value == new.totals.gpus - old.totals.gpus


@pytest.mark.slow
def test_diff_of_a_design_with_itself_changes_nothing(tmp_path: Path) -> None:
    design = str(DESIGNS / "lab-4-servers.yaml")
    result = CliRunner().invoke(main, ["diff", design, design, "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "no BOM line changes" in result.output
    assert "figures:" not in result.output


def test_a_new_price_is_a_repricing_not_a_gain() -> None:
    _loaded, plan = planned("lab-4-servers")
    cheap = PriceList(Path("a.csv"), {"920-9B210-00FN-0M0": Price(20000, "USD")})
    dear = PriceList(Path("b.csv"), {"920-9B210-00FN-0M0": Price(25000, "USD")})
    diff = diff_boms(build_bom(plan, cheap), build_bom(plan, dear))
    assert {(c.kind, c.line.item) for c in diff.lines} == {("repriced", "qm9700")}
    assert all(c.quantity_change == 0 for c in diff.lines)
    switches = sum(c.new_quantity for c in diff.lines)
    price = next(f for f in diff.figures if f.name == "Price (USD)")
    assert price.change == 5000 * switches


def test_diff_rejects_a_bad_design_with_its_location(tmp_path: Path) -> None:
    bad = write_design(tmp_path, "name: bad\ncompute: {servers: 4, gpus: 8}\n")
    result = CliRunner().invoke(main, ["diff", str(DESIGNS / "lab-4-servers.yaml"), str(bad), "-o", str(tmp_path)])
    assert result.exit_code == 2
    assert f"{bad}:2:1: compute: Value error, give 'gpus' or 'servers', not both" in result.output
    assert not any(tmp_path.glob("*-vs-*"))
