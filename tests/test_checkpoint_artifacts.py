"""checkpoint.md, the goodput chart, `gpucluster simulate`, and simulation.html in headless Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DESIGNS, chromium_page, needs_chromium, planned

from gpucluster import write_artifacts
from gpucluster.cli import main


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    loaded, plan = planned("superpod-h200-4su")
    out = tmp_path_factory.mktemp("out")
    return write_artifacts(plan, loaded, out, ["checkpoint", "simulation"])


def test_checkpoint_summary_names_size_write_time_intervals_and_spares(built: Path) -> None:
    text = (built / "checkpoint.md").read_text()
    assert "**0.98 TB**" in text and "limited by parallel filesystem write" in text
    assert re.search(r"Young \(1974\).*\*\*28\.\d min\*\*", text)  # 0.98 TB at the 130 GB/s two AI400X2 write
    assert re.search(r"Daly \(2006\).*\*\*28\.\d min\*\*", text)
    assert "| 60.1 min | design |" in text and "spare servers" in text
    assert "Assumed workload" not in text


def test_chart_is_written_as_png_and_svg_and_is_the_same_every_build(built: Path, tmp_path: Path) -> None:
    loaded, plan = planned("superpod-h200-4su")
    again = write_artifacts(plan, loaded, tmp_path, ["checkpoint", "simulation"])
    for name in ("checkpoint-goodput.svg", "checkpoint-goodput.png", "checkpoint.md", "simulation.html"):
        assert (built / name).read_bytes() == (again / name).read_bytes(), name
    assert (built / "checkpoint-goodput.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    svg = (built / "checkpoint-goodput.svg").read_text()
    assert "<dc:date>" not in svg and "goodput (%)" in svg


def test_simulate_prints_the_interval_comparison() -> None:
    result = CliRunner().invoke(
        main, ["simulate", str(DESIGNS / "superpod-h200-4su.yaml"), "--runs", "50", "--days", "20"]
    )
    assert result.exit_code == 0, result.output
    assert "job MTBF 53.1 h" in result.output and "50 runs of 20 days" in result.output
    rows = [line for line in result.output.splitlines() if re.match(r"\s+[\d.]+ (min|h|s) ", line)]
    assert len(rows) >= 5 and any("Daly" in row for row in rows) and any("design" in row for row in rows)


def test_simulate_compares_the_intervals_asked_for() -> None:
    design = str(DESIGNS / "superpod-h100-1su.yaml")
    result = CliRunner().invoke(main, ["simulate", design, "--runs", "20", "--interval", "30", "--interval", "240"])
    assert result.exit_code == 0, result.output
    assert re.search(r"^\s+(29|30)\.\d min", result.output, re.M) and re.search(r"^\s+4\.0 h", result.output, re.M)


def test_simulation_page_is_self_contained(built: Path) -> None:
    html = (built / "simulation.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<link" not in html and "@import" not in html and "<script src" not in html


@pytest.mark.external
@needs_chromium
def test_simulation_page_runs_in_chromium_and_the_interval_control_changes_the_work_lost(built: Path) -> None:
    with chromium_page((built / "simulation.html").as_uri()) as (page, problems, requests):
        page.wait_for_timeout(400)
        before = page.text_content("#lost-gpu-hours")
        assert before and before.endswith("GPU-h") and page.text_content("#interval-label") == "60.1 min"
        page.locator("#interval").fill("1000")  # the longest interval: far more work lost per failure
        page.wait_for_timeout(200)
        after = page.text_content("#lost-gpu-hours")
        assert after != before
        assert float(after.split()[0].replace(",", "")) > float(before.split()[0].replace(",", ""))
        assert page.locator("#comparison tbody tr").count() == 2
        failures = int(page.text_content("#failures") or "0")
        page.click("#fail")
        assert int(page.text_content("#failures") or "0") == failures + 1
        assert page.text_content("#phase").startswith("t = ")
    assert problems == []
    assert requests == [(built / "simulation.html").as_uri()]
