"""The review of what changed between two revisions (review.html and review.pdf): figures, devices, links,
racks, power and the generated files, compared over two plans and their builds."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pypdf
import pytest
from click.testing import CliRunner
from conftest import DESIGNS, chromium_page, needs_chromium, planned, write_design

from gpucluster import load_design, plan_design
from gpucluster.artifacts.review import write_review
from gpucluster.cli import compare_builds, main
from gpucluster.growth.changes import PlanChanges, compare_plans

LAB6 = (DESIGNS / "lab-4-servers.yaml").read_text().replace("servers: 4\n", "servers: 6\n")
LAB6 = LAB6.replace("name: lab-4-servers", "name: lab-6-servers")


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> tuple[PlanChanges, Path]:
    """lab-4-servers against the same lab with six servers, both built (every artifact but the report)."""
    tmp = tmp_path_factory.mktemp("review")
    new_loaded = load_design(write_design(tmp, LAB6))
    changes = compare_builds(planned("lab-4-servers"), (new_loaded, plan_design(new_loaded)))
    out = tmp / "out"
    out.mkdir()
    write_review(changes, out)
    return changes, out


@pytest.mark.slow
def test_figures_devices_racks_and_links_that_changed(reviewed: tuple[PlanChanges, Path]) -> None:
    changes, _out = reviewed
    headline = {f.name: (f.old, f.new) for f in changes.bom.figures}
    assert headline["GPUs in production"] == (32, 48) and headline["Racks"] == (2, 3)
    figures = {f.name: f for f in changes.figures}
    assert (figures["compute links"].old, figures["compute links"].new) == (32, 48)
    assert figures["compute links"].changed and not figures["compute leaf switches"].changed
    assert {c.line.item for c in changes.bom.of_kind("gain")} >= {"hgx-h100-oem"}
    # the second compute rack is A02 (the central rack stands after the SU, now A03): A02 takes a compute rack's
    # three PDUs where the central rack had two
    assert changes.devices.added_text.split(",") == ["A02-pdu-c", "A03-pdu-a", "A03-pdu-b", "gpu[005-006]"]
    assert changes.devices.removed == [] and changes.racks.added == ["A03"]
    roles = {f.name: (f.old, f.new) for f in changes.devices.counts}
    assert roles["gpu-server"] == (4, 6)
    links = {f.name: (f.old, f.new) for f in changes.links.counts}
    assert links["compute host-leaf"] == (32, 48)
    kept = changes.links.unchanged + len(changes.links.modified)  # every link is kept, added or removed
    assert kept + len(changes.links.removed) == sum(f.old for f in changes.links.counts)
    assert kept + len(changes.links.added) == sum(f.new for f in changes.links.counts)
    power = {f.name: f for f in changes.power}
    assert power["Facility power, maximum"].new > power["Facility power, maximum"].old


@pytest.mark.slow
def test_generated_files_that_changed_with_a_short_diff(reviewed: tuple[PlanChanges, Path]) -> None:
    changes, _out = reviewed
    assert changes.files is not None
    by_path = {f.path: f for f in changes.files.changed}
    slurm = by_path["slurm/slurm.conf"]
    assert slurm.status == "changed" and slurm.lines_added and slurm.lines_removed
    assert "+PartitionName=gpu Nodes=gpu[001-004]" in " ".join(slurm.diff)  # two of six run Kubernetes
    assert by_path["burn-in/checklists/A02.html"].status == "added"  # the central rack stands after the SU
    assert by_path["power.xlsx"].note == "binary" and not by_path["power.xlsx"].diff
    assert changes.files.unchanged > 0 and "monitoring/rules/gpu-alerts.yml" not in by_path  # same in both builds
    assert all(len(f.diff) <= 60 for f in changes.files.changed)


def test_no_change_is_reported_between_a_design_and_itself(tmp_path: Path) -> None:
    _l, plan = planned("lab-4-servers")
    changes = compare_plans(plan, plan)
    assert not changes.devices.any and not changes.links.any and not changes.racks.any
    assert not any(f.changed for f in changes.figures + changes.power)
    assert changes.files is None and not changes.bom.lines


@pytest.mark.external
@needs_chromium
def test_review_loads_in_chromium_without_console_errors_or_requests(reviewed: tuple[PlanChanges, Path]) -> None:
    _changes, out = reviewed
    url = (out / "review.html").as_uri()
    with chromium_page(url) as (page, problems, requests):
        headings = page.eval_on_selector_all("section h2", "els => els.map(e => e.textContent)")
        diffs = page.locator("pre.diff").count()
    assert problems == [] and requests == [url]
    assert headings == ["Figures", "Devices", "Links", "Racks", "Power", "BOM lines", "Generated files"]
    assert diffs >= 10


@pytest.mark.external
@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="pdftoppm (poppler-utils) is not installed")
def test_review_pdf_renders_and_holds_the_changes(reviewed: tuple[PlanChanges, Path], tmp_path: Path) -> None:
    _changes, out = reviewed
    reader = pypdf.PdfReader(out / "review.pdf")
    text = re.sub(r"\s+", " ", " ".join(page.extract_text() for page in reader.pages))
    assert "lab-4-servers → lab-6-servers" in text
    assert "GPUs in production 32 48 +16" in text and "compute links 32 48 +16" in text
    assert "gpu[005-006]" in text and "slurm/slurm.conf" in text
    subprocess.run(["pdftoppm", "-r", "20", "-png", str(out / "review.pdf"), str(tmp_path / "p")], check=True)
    assert len(list(tmp_path.glob("p-*.png"))) == len(reader.pages) >= 3


def test_diff_command_writes_the_review_beside_the_bom_diff(tmp_path: Path) -> None:
    new = write_design(tmp_path, LAB6)
    old = DESIGNS / "lab-4-servers.yaml"
    result = CliRunner().invoke(main, ["diff", str(old), str(new), "-o", str(tmp_path / "out"), "--no-files"])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "out" / "lab-4-servers-vs-lab-6-servers"
    for name in ("review.html", "review.pdf", "bom-diff.xlsx"):
        assert f"wrote {folder / name}" in result.output
    html = (folder / "review.html").read_text()
    assert "Generated files" not in html and "BOM lines" in html and "hgx-h100-oem" in html
    assert not list(folder.glob(".*.tmp"))
