"""The decision summary (summary.html, summary.pdf): two or three pages for every example design, on the site's
paper, with the plan's own figures, escaped design text and nothing drawn off the page."""

from __future__ import annotations

import html as html_module
import re
import shutil
import subprocess
from pathlib import Path

import pypdf
import pytest
from conftest import DESIGNS, chromium_page, needs_chromium, planned, write_design
from PIL import Image

from gpucluster import load_design, plan_design, write_artifacts
from gpucluster.analyse.bom import bom_for, build_bom
from gpucluster.artifacts import ARTIFACTS, Artifact, decision
from gpucluster.artifacts.report import report_html
from gpucluster.plan.model import AnalysedPlan
from gpucluster.training import analyse_checkpoints

EXAMPLES = sorted(p.stem for p in DESIGNS.glob("*.yaml"))
SMALL = "lab-4-servers"
POINTS_PER_MM = 72 / 25.4
PAGE_POINTS = {"A4": (595.276, 841.89), "Letter": (612.0, 792.0)}


def _summary(name: str, tmp_path: Path) -> Path:
    loaded, plan = planned(name)
    decision.write(plan, loaded, tmp_path)
    return tmp_path


def _text(page: str) -> str:
    """The page's visible text, tags dropped and entities read, spaces collapsed."""
    return re.sub(r"\s+", " ", html_module.unescape(re.sub(r"<[^>]+>", " ", page)))


@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n == SMALL else [pytest.mark.slow]) for n in EXAMPLES])
def test_the_decision_summary_is_two_or_three_pages_for_every_example_design(name: str, tmp_path: Path) -> None:
    pages = len(pypdf.PdfReader(_summary(name, tmp_path) / decision.PDF).pages)
    assert 2 <= pages <= 3


@pytest.mark.parametrize(("paper", "size"), [("a4", "A4"), ("letter", "Letter")])
def test_the_summary_and_the_report_print_on_the_sites_paper(paper: str, size: str, tmp_path: Path) -> None:
    text = (DESIGNS / f"{SMALL}.yaml").read_text(encoding="utf-8")
    text = text.replace("site:\n", f"site:\n  paper: {paper}\n", 1)
    loaded = load_design(write_design(tmp_path, text))
    plan = plan_design(loaded)
    folder = write_artifacts(plan, loaded, tmp_path / "out", only=["decision-summary", "report"])
    portrait = PAGE_POINTS[size]
    for name, expected in (("summary.pdf", portrait), ("report.pdf", portrait[::-1])):  # the report is landscape
        for page in pypdf.PdfReader(folder / name).pages:
            box = page.mediabox
            assert (float(box.width), float(box.height)) == pytest.approx(expected, abs=0.5), name


def test_the_summary_shows_the_plans_own_figures(tmp_path: Path) -> None:
    _loaded, plan = planned("b200-roce-2su")
    page = _text(decision.summary_html(plan, build_bom(plan)))
    t = plan.totals
    checkpoint = analyse_checkpoints(plan)
    for figure in (
        f"GPUs {t.gpus:,} ",
        f"Racks {t.racks:,} ",
        f"Cables {t.cables:,} ",
        f"IT power, peak {t.it_power_max_kw:,.1f} kW",
        f"IT power, typical {t.it_power_typical_kw:,.1f} kW",
        f"Goodput {checkpoint.goodput:.1%}",
        f"Parallel filesystem {plan.settings.parallel_filesystem_capacity_tb:,.0f} TB",
    ):
        assert figure in page
    for _network, tiers in t.switches.items():
        if tiers:
            assert f"switches {sum(tiers.values()):,} " in page
    assert "No prices are known" in page  # no price list: said plainly, no figure invented


def test_the_summary_states_the_time_to_train_of_the_designs_workload(tmp_path: Path) -> None:
    _loaded, plan = planned("superpod-h200-4su")
    checkpoint = analyse_checkpoints(plan)
    page = _text(decision.summary_html(plan, build_bom(plan)))
    if checkpoint.time_to_train_days is None:
        assert "Time to train not given" in page
    else:
        assert f"Time to train {checkpoint.time_to_train_days:,.1f} days" in page


def test_a_priced_design_shows_its_totals_by_group_and_what_is_unpriced(tmp_path: Path) -> None:
    (tmp_path / "prices.csv").write_text(
        "part_number,unit_price,currency,note\nhgx-h100-oem,250000,USD,\n920-9B210-00FN-0M0,28500,USD,\n",
        encoding="utf-8",
    )
    design = (DESIGNS / f"{SMALL}.yaml").read_text(encoding="utf-8")
    loaded = load_design(write_design(tmp_path, design + "bom: {price_list: prices.csv}\n"))
    plan = plan_design(loaded)
    bom = bom_for(plan, loaded)
    page = _text(decision.summary_html(plan, bom))
    assert f"Total {bom.price_totals()['USD']:,.0f}" in page
    assert f"{len(bom.unpriced()):,} of them not on the list" in page
    compute = sum(line.extended_price or 0 for line in bom.section_lines("compute"))
    assert f"{compute:,.0f}" in page


def test_hostile_design_text_is_escaped_in_the_summary(tmp_path: Path) -> None:
    hostile = '<script>alert(1)</script><img src=x onerror=alert(2)> & "quoted"'
    design = (DESIGNS / f"{SMALL}.yaml").read_text(encoding="utf-8")
    design = re.sub(r"(?m)^description: .*$", f"description: '{hostile}'", design)
    loaded = load_design(write_design(tmp_path, design))
    plan = plan_design(loaded)
    page = decision.summary_html(plan, build_bom(plan))
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_summary_is_the_same_bytes_every_build(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = _summary(SMALL, tmp_path / "a"), _summary(SMALL, tmp_path / "b")
    for name in (decision.HTML, decision.PDF):
        assert (first / name).read_bytes() == (second / name).read_bytes()


def test_the_decision_summary_is_in_the_one_artifact_registry() -> None:
    assert ARTIFACTS["decision-summary"] == Artifact("gpucluster.artifacts.decision", AnalysedPlan)


def test_the_report_on_a4_is_unchanged_by_the_paper_setting(tmp_path: Path) -> None:
    """The report's page is A4 landscape unless the site says Letter (the default design's bytes kept)."""
    _loaded, plan = planned(SMALL)
    assert "@page { size: A4 landscape;" in report_html(plan, tmp_path)


@pytest.mark.external
@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="pdftoppm (poppler-utils) is not installed")
@pytest.mark.parametrize("name", ["b200-roce-2su", "gb300-nvl72-4su"])
def test_nothing_on_the_summary_pages_is_drawn_into_the_side_margins(name: str, tmp_path: Path) -> None:
    """Rendered as PNG, each page's left and right margins (less 4 mm) are blank: no table or word runs off."""
    folder = _summary(name, tmp_path)
    subprocess.run(["pdftoppm", "-r", "50", "-png", str(folder / decision.PDF), str(tmp_path / "page")], check=True)
    pages = sorted(tmp_path.glob("page-*.png"))
    assert 2 <= len(pages) <= 3
    for path in pages:
        image = Image.open(path).convert("L")
        margin = round(10 * POINTS_PER_MM * 50 / 72)  # 10 of the page's 14 mm margin, in pixels at 50 dpi
        width, height = image.size
        for box in ((0, 0, margin, height), (width - margin, 0, width, height)):
            assert image.crop(box).getextrema()[0] >= 250, f"{path.name}: ink in the margin {box}"


@pytest.mark.external
@needs_chromium
def test_the_summary_loads_in_chromium_without_console_errors_or_network_requests(tmp_path: Path) -> None:
    url = (_summary(SMALL, tmp_path) / decision.HTML).as_uri()
    with chromium_page(url) as (page, problems, requests):
        sections = page.eval_on_selector_all("section h2", "els => els.map(e => e.textContent)")
    assert problems == []
    assert requests == [url]
    assert sections == [
        "What is bought",
        "What it costs",
        "Power, cooling and floor space",
        "Time to train and goodput",
        "Main risks and deviations",
        "Growth headroom",
    ]
