"""The design review report: report.html in headless Chromium, report.pdf through pdftoppm and pypdf, the
drawings made from the graphs (every device while small, counted groups when large), the floor plan, and
the registry running the report after every other writer."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlparse

import pypdf
import pytest
from conftest import chromium_page, needs_chromium, planned, write_design
from PIL import Image

from gpucluster import load_design, plan_design, write_artifacts
from gpucluster.analyse.bom import bom_for, build_bom
from gpucluster.artifacts._pdf import write_pdf
from gpucluster.artifacts.drawings import DETAIL_MAX_PER_LEVEL, MAX_BOXES_PER_LEVEL, network_drawing
from gpucluster.artifacts.floor_plan import floor_plan
from gpucluster.artifacts.report import for_paper, report_html
from gpucluster.plan.analysis import graphs
from gpucluster.plan.model import NETWORKS
from gpucluster.plan.registry import NETWORK_INFO
from gpucluster.runtime.profiling import Cost

EVERY_DESIGN = [n for n in NETWORKS if NETWORK_INFO[n].every_design]  # the networks every plan draws

DESIGN = "lab-4-servers"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    loaded, plan = planned(DESIGN)
    return write_artifacts(plan, loaded, tmp_path_factory.mktemp("out"))


def _pdf_text(path: Path) -> str:
    reader = pypdf.PdfReader(path)
    return re.sub(r"\s+", " ", " ".join(page.extract_text() for page in reader.pages))


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_report_links_to_every_file_the_build_wrote(built: Path) -> None:
    html = (built / "report.html").read_text()
    links = {unquote(h) for h in re.findall(r'href="([^"#][^"]*)"', html)}
    assert links == _files(built)
    assert {"plan.json", "power.xlsx", "slurm/slurm.conf", "report.pdf"} <= links


def test_report_runs_after_the_writers_listed_after_it(tmp_path: Path) -> None:
    loaded, plan = planned(DESIGN)
    folder = write_artifacts(plan, loaded, tmp_path, ["report", "summary", "power"])
    html = (folder / "report.html").read_text()
    assert 'href="summary.md"' in html and 'href="power.xlsx"' in html and 'href="plan.json"' not in html
    assert "data:image/svg+xml;base64," in html  # the power chart, drawn by the power writer before it


def test_report_html_is_self_contained(built: Path) -> None:
    html = (built / "report.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//|file:)""", html)
    assert "<script" not in html and "<link" not in html and "@import" not in html and "url(" not in html
    assert html.count("<svg") == len(EVERY_DESIGN) + 1  # four networks and the floor plan, inline


@pytest.mark.external
@needs_chromium
def test_report_loads_in_chromium_without_console_errors_or_network_requests(built: Path) -> None:
    url = (built / "report.html").as_uri()
    with chromium_page(url) as (page, problems, requests):
        sizes = page.eval_on_selector_all(
            "svg.drawing", "els => els.map(e => [e.getBoundingClientRect().width, e.getBoundingClientRect().height])"
        )
        images = page.eval_on_selector_all("img", "els => els.map(e => e.complete && e.naturalWidth > 0)")
        sections = page.eval_on_selector_all("section h2", "els => els.map(e => e.textContent)")
    assert problems == []
    assert all(r == url or r.startswith("data:") for r in requests)
    assert len(sizes) == len(EVERY_DESIGN) + 1 and all(w > 300 and h > 50 for w, h in sizes)
    _loaded, plan = planned(DESIGN)
    purposes = {rack.purpose for rack in plan.racks.values()}
    assert images == [True] * (2 + len(purposes))  # power and goodput charts, an elevation per kind of rack
    assert sections == [
        "Warnings and design rules",
        "Deviations from the reference architecture, and assumptions",
        "Compute fabric",
        "Storage network",
        "In-band management network",
        "Out-of-band management network",
        "Floor plan and rack elevations",
        "Schedulers and teams",
        "Power and cooling",
        "Checkpoints and failures",
        "Bill of materials",
        "Artifacts",
    ]


def test_report_pdf_holds_the_key_figures_and_every_finding(built: Path) -> None:
    _loaded, plan = planned(DESIGN)
    text = _pdf_text(built / "report.pdf")
    t = plan.totals
    checkpoint = plan.checkpoint
    bisection = plan.analysis["compute"]["bisection_bandwidth_gbps"] / 1000
    for figure in (
        plan.name,
        f"{t.production_gpus:,}",
        f"{t.it_power_max_kw:,.1f} kW",
        f"{bisection:,.1f} Tb/s",
        f"{checkpoint['goodput']:.1%}",  # type: ignore[index]
        f"{checkpoint['checkpoint_tb']:.2f} TB",  # type: ignore[index]
        f"{t.cables:,}",
    ):
        assert figure in text, figure
    for finding in plan.findings:
        assert re.sub(r"\s+", " ", finding.message)[:60] in text, finding.message
    bom = build_bom(plan)
    assert f"{len(bom.lines):,} lines" in text and f"Transceivers {bom.counts['Transceivers']:,.0f}" in text


@pytest.mark.external
@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="pdftoppm (poppler-utils) is not installed")
def test_report_pdf_pages_render_with_pdftoppm(built: Path, tmp_path: Path) -> None:
    pages = len(pypdf.PdfReader(built / "report.pdf").pages)
    subprocess.run(["pdftoppm", "-r", "30", "-png", str(built / "report.pdf"), str(tmp_path / "page")], check=True)
    images = sorted(tmp_path.glob("page-*.png"))
    assert len(images) == pages >= 8
    for image in images:
        with Image.open(image) as im:
            assert im.width > im.height  # A4 landscape
            low, high = im.convert("L").getextrema()
            assert high - low > 100, image.name  # something drawn on every page


def test_report_pdf_embeds_its_fonts_and_links_beside_itself(built: Path) -> None:
    reader = pypdf.PdfReader(built / "report.pdf")
    fonts = {}
    uris = set()
    for page in reader.pages:
        for font in page["/Resources"]["/Font"].values():
            font = font.get_object()
            descendant = font["/DescendantFonts"][0].get_object() if "/DescendantFonts" in font else font
            descriptor = descendant["/FontDescriptor"].get_object()
            fonts[font["/BaseFont"]] = any(k in descriptor for k in ("/FontFile", "/FontFile2", "/FontFile3"))
        for annotation in page.get("/Annots", []):
            action = annotation.get_object().get("/A")
            if action is not None and "/URI" in action:
                uris.add(action["/URI"])
    assert fonts and all(fonts.values()), fonts
    assert any("DejaVu-Sans" in str(name) for name in fonts)
    assert uris == _files(built)  # relative links: they resolve beside the PDF wherever the folder goes
    assert all(not urlparse(uri).scheme for uri in uris)


@pytest.mark.slow
def test_report_is_the_same_every_build(built: Path, tmp_path: Path) -> None:
    loaded, plan = planned(DESIGN)
    again = write_artifacts(plan, loaded, tmp_path)
    for name in ("report.html", "report.pdf"):
        assert (built / name).read_bytes() == (again / name).read_bytes(), name


@pytest.mark.slow
def test_the_pdf_rendered_without_the_drawings_tooltips_is_the_same_bytes(built: Path, tmp_path: Path) -> None:
    """The PDF is rendered from the page less its SVG tooltips (they draw nothing on paper): the same file as from
    the whole page, and the page's own title (the PDF's) kept."""
    html = (built / "report.html").read_text()
    paper = for_paper(html)
    body = paper.partition("</head>")[2]
    assert html.count("<title>") > 10 and "<title>" not in body and "<title>" in paper
    write_pdf(html, tmp_path / "whole.pdf")
    assert (tmp_path / "whole.pdf").read_bytes() == (built / "report.pdf").read_bytes()


@pytest.mark.slow
def test_report_prepares_its_plan_views_beside_the_other_writers_and_only_its_page_runs_last(tmp_path: Path) -> None:
    """Side by side, the report's figures, drawings and tables are a job of their own that runs with the other
    writers (report:prepare); what runs after them all reads their files and renders the page: the same bytes as
    one writer after another."""
    loaded, plan = planned(DESIGN)
    names = ["report", "summary", "power", "bom", "checkpoint"]
    costs: list[Cost] = []
    side_by_side = write_artifacts(plan, loaded, tmp_path / "side-by-side", names, jobs=2, costs=costs)
    one_by_one = write_artifacts(plan, loaded, tmp_path / "one-by-one", names, jobs=1)
    finished = [cost.name for cost in costs if cost.kind == "writer"]
    assert "report:prepare" in finished and finished[-1] == "report"
    assert finished.index("report:prepare") < len(finished) - 1
    for name in ("report.html", "report.pdf"):
        assert (side_by_side / name).read_bytes() == (one_by_one / name).read_bytes(), name


def test_small_networks_draw_every_device_and_every_cable_run() -> None:
    _loaded, plan = planned("superpod-h100-1su")
    drawing = network_drawing(plan, "compute")
    graph = graphs(plan)["compute"]
    assert drawing.detailed
    assert len(drawing.boxes) == graph.number_of_nodes() and {b.devices for b in drawing.boxes} == {1}
    assert len(drawing.bundles) == graph.number_of_edges()
    assert sum(b.links for b in drawing.bundles) == sum(plan.totals.links["compute"].values())
    assert {b.lines[0] for b in drawing.boxes} == set(graph.nodes)


@pytest.mark.parametrize("network", EVERY_DESIGN)
def test_large_networks_draw_counted_groups_that_add_up_to_the_graph(network: str) -> None:
    _loaded, plan = planned("h100-16k-3tier")
    drawing = network_drawing(plan, network)
    graph = graphs(plan)[network]
    assert not drawing.detailed
    rows: dict[float, int] = {}
    for box in drawing.boxes:
        rows[box.y] = rows.get(box.y, 0) + 1
    assert max(rows.values()) <= MAX_BOXES_PER_LEVEL < graph.number_of_nodes() / DETAIL_MAX_PER_LEVEL
    assert sum(b.devices for b in drawing.boxes) == graph.number_of_nodes()
    for box in drawing.boxes:  # each box's text (below its SU, pod or "central" heading) counts what it holds
        counts = box.lines[1:] if box.bold_first else box.lines
        numbers = [w.replace(",", "") for w in " ".join(counts).split() if w.replace(",", "").isdigit()]
        assert sum(map(int, numbers)) == box.devices, box.lines
    links = sum(data["links"] for _a, _b, data in graph.edges(data=True))
    assert sum(b.links for b in drawing.bundles) <= links
    if network == "compute":  # a tree with every group on its own level: every link is drawn
        assert sum(b.links for b in drawing.bundles) == links == sum(plan.totals.links["compute"].values())
        assert any(box.lines[0].startswith("SUs ") for box in drawing.boxes)


def test_floor_plan_draws_every_rack_once_and_turns_a_deep_hall() -> None:
    _loaded, small = planned("superpod-h200-4su")
    _loaded, large = planned("h100-16k-3tier")
    wide, deep = floor_plan(small), floor_plan(large)
    assert sorted(r.name for r in wide.racks) == sorted(small.racks)
    assert sorted(r.name for r in deep.racks) == sorted(large.racks)
    assert not wide.turned and wide.labelled and deep.turned and not deep.labelled
    assert deep.width > deep.height
    assert {label for *_box, label in wide.sus} == {f"SU {n}" for n in range(1, 5)}
    a01 = next(r for r in wide.racks if r.name == "A01")
    budget = small.design.site.rack_power_budget_kw * 1000  # type: ignore[attr-defined]
    assert a01.bar_height == pytest.approx(a01.depth * small.racks["A01"].power_max_w / budget, abs=0.1)
    assert all(r.lines for r in wide.racks) and not any(r.lines for r in deep.racks)


def test_a_folder_of_many_files_is_one_linked_row(tmp_path: Path) -> None:
    _loaded, plan = planned(DESIGN)
    checklists = tmp_path / "burn-in" / "checklists"
    checklists.mkdir(parents=True)
    for n in range(1, 31):
        (checklists / f"A{n:02}.html").write_text("x")
    (tmp_path / "plan.json").write_text("{}")
    html = report_html(plan, tmp_path)
    assert 'href="burn-in/checklists/">burn-in/checklists/ (30 files, A01.html ... A30.html)</a>' in html
    assert 'href="plan.json"' in html and "A07.html" not in html


def test_a_priced_design_shows_its_bom_totals_and_what_is_unpriced(tmp_path: Path) -> None:
    (tmp_path / "prices.csv").write_text(
        "part_number,unit_price,currency,note\nhgx-h100-oem,250000,USD,\n920-9B210-00FN-0M0,28500,USD,\n",
        encoding="utf-8",
    )
    design = (Path(__file__).parents[1] / "designs" / f"{DESIGN}.yaml").read_text()
    loaded = load_design(write_design(tmp_path, design + "bom: {price_list: prices.csv}\n"))
    plan = plan_design(loaded)
    bom = bom_for(plan, loaded)
    html = report_html(plan, tmp_path, bom)
    assert f"{bom.price_totals()['USD']:,.0f} USD" in html and "priced from prices.csv" in html
    assert f"{len(bom.unpriced())} unpriced (price list prices.csv)" in html
    assert "Unpriced:</b>" in html and "SN2201" in html


def test_report_shows_the_elevation_the_printouts_drew_for_each_kind_of_rack(built: Path) -> None:
    _loaded, plan = planned(DESIGN)
    html = (built / "report.html").read_text()
    first: dict[str, str] = {}
    for name in sorted(plan.racks):
        first.setdefault(plan.racks[name].purpose, name)
    for purpose, name in first.items():
        drawn = base64.b64encode((built / "cabling" / "racks" / f"{name}.svg").read_bytes()).decode()
        assert f'src="data:image/svg+xml;base64,{drawn}"' in html, purpose
        assert f'href="cabling/racks/{name}.html"' in html


@pytest.mark.external
@pytest.mark.slow
@pytest.mark.parametrize("design", ["gb200-nvl72-1su", "superpod-h100-1su"])
def test_the_deviations_table_stays_within_the_page(design: str, tmp_path: Path) -> None:
    """The page image (pdftoppm) of the deviations table has nothing in the right margin: its columns wrap
    inside the page rather than running off it."""
    _loaded, plan = planned(design)
    pdf = tmp_path / "report.pdf"
    write_pdf(for_paper(report_html(plan, tmp_path)), pdf)
    reader = pypdf.PdfReader(pdf)
    page = next(i for i, p in enumerate(reader.pages) if "Where this plan differs" in p.extract_text()) + 1
    subprocess.run(["pdftoppm", "-f", str(page), "-l", str(page), "-r", "60", "-png", str(pdf), str(tmp_path / "d")])
    [image] = tmp_path.glob("d-*.png")
    with Image.open(image) as im:
        grey = im.convert("L")
        mm = grey.width / 297  # A4 landscape, 12 mm margins, the footer in the bottom 14 mm
        margin = grey.crop((int(grey.width - 10 * mm), 0, grey.width, int(grey.height - 15 * mm)))
        assert margin.getextrema()[0] > 240, f"page {page} draws into its right margin"
