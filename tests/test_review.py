"""The review of what changed between two revisions (review.html and review.pdf): figures, devices, links,
racks, power and the generated files, compared over two plans and their builds."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pypdf
import pytest
from conftest import DESIGNS, chromium_page, needs_chromium, planned, write_design

from gpucluster import load_design, plan_design, write_artifacts
from gpucluster.artifacts import ARTIFACTS
from gpucluster.artifacts.review import write_review
from gpucluster.changes import PlanChanges, compare_plans

LAB6 = (DESIGNS / "lab-4-servers.yaml").read_text().replace("servers: 4\n", "servers: 6\n")
LAB6 = LAB6.replace("name: lab-4-servers", "name: lab-6-servers")


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> tuple[PlanChanges, Path]:
    """lab-4-servers against the same lab with six servers, both built (every artifact but the report)."""
    tmp = tmp_path_factory.mktemp("review")
    old_loaded, old = planned("lab-4-servers")
    new_loaded = load_design(write_design(tmp, LAB6))
    new = plan_design(new_loaded)
    builds = [n for n in ARTIFACTS if n != "report"]
    old_folder = write_artifacts(old, old_loaded, tmp / "old", builds)
    new_folder = write_artifacts(new, new_loaded, tmp / "new", builds)
    changes = compare_plans(old, new, old_folder, new_folder)
    out = tmp / "out"
    out.mkdir()
    write_review(changes, out)
    return changes, out


def test_figures_devices_racks_and_links_that_changed(reviewed: tuple[PlanChanges, Path]) -> None:
    changes, _out = reviewed
    figures = {f.name: f for f in changes.figures}
    assert (figures["GPUs (production)"].old, figures["GPUs (production)"].new) == (32, 48)
    assert figures["GPUs (production)"].changed and not figures["Scalable units"].changed
    assert changes.devices.added_text.split(",") == ["A03-pdu-a1", "A03-pdu-b1", "gpu[005-006]"]
    assert changes.devices.removed == [] and changes.racks.added == ["A03"]
    roles = {f.name: (f.old, f.new) for f in changes.devices.counts}
    assert roles["gpu-server"] == (4, 6)
    links = {f.name: (f.old, f.new) for f in changes.links.counts}
    assert links["compute host-leaf"] == (32, 48)
    kept = changes.links.unchanged + len(changes.links.modified)  # every link is kept, added or removed
    assert kept + len(changes.links.removed) == sum(f.old for f in changes.links.counts)
    assert kept + len(changes.links.added) == sum(f.new for f in changes.links.counts)
    power = {f.name: f for f in changes.power}
    assert power["IT load, maximum"].new > power["IT load, maximum"].old


def test_generated_files_that_changed_with_a_short_diff(reviewed: tuple[PlanChanges, Path]) -> None:
    changes, _out = reviewed
    assert changes.files is not None
    by_path = {f.path: f for f in changes.files.changed}
    slurm = by_path["slurm/slurm.conf"]
    assert slurm.status == "changed" and slurm.lines_added and slurm.lines_removed
    assert "+PartitionName=gpu Nodes=gpu[001-004]" in " ".join(slurm.diff)  # two of six run Kubernetes
    assert by_path["burn-in/checklists/A03.html"].status == "added"
    assert by_path["power.xlsx"].note == "binary" and not by_path["power.xlsx"].diff
    assert changes.files.unchanged > 0 and "monitoring/rules/gpu-alerts.yml" not in by_path  # same in both builds
    assert all(len(f.diff) <= 60 for f in changes.files.changed)


def test_no_change_is_reported_between_a_design_and_itself(tmp_path: Path) -> None:
    _l, plan = planned("lab-4-servers")
    changes = compare_plans(plan, plan)
    assert not changes.devices.any and not changes.links.any and not changes.racks.any
    assert not any(f.changed for f in changes.figures + changes.power)
    assert changes.files is None


@needs_chromium
def test_review_loads_in_chromium_without_console_errors_or_requests(reviewed: tuple[PlanChanges, Path]) -> None:
    _changes, out = reviewed
    url = (out / "review.html").as_uri()
    with chromium_page(url) as (page, problems, requests):
        headings = page.eval_on_selector_all("section h2", "els => els.map(e => e.textContent)")
        diffs = page.locator("pre.diff").count()
    assert problems == [] and requests == [url]
    assert headings == ["Figures", "Devices", "Links", "Racks", "Power", "Generated files"]
    assert diffs >= 10


@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="pdftoppm (poppler-utils) is not installed")
def test_review_pdf_renders_and_holds_the_changes(reviewed: tuple[PlanChanges, Path], tmp_path: Path) -> None:
    _changes, out = reviewed
    reader = pypdf.PdfReader(out / "review.pdf")
    text = re.sub(r"\s+", " ", " ".join(page.extract_text() for page in reader.pages))
    assert "lab-4-servers → lab-6-servers" in text
    assert "GPUs (production) 32 48 +16" in text
    assert "gpu[005-006]" in text and "slurm/slurm.conf" in text
    subprocess.run(["pdftoppm", "-r", "20", "-png", str(out / "review.pdf"), str(tmp_path / "p")], check=True)
    assert len(list(tmp_path.glob("p-*.png"))) == len(reader.pages) >= 3
