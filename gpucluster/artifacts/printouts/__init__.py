"""Rack cabling printouts for the technicians who cable the cluster: per rack ``cabling/racks/<rack>.pdf``,
``.html`` and ``.svg`` (the elevations), and ``cabling/cluster.pdf``, ``cluster.html`` and ``pick-list.csv``.
One page model (:mod:`.pages`) renders as HTML and SVG (Jinja) and as PDF (ReportLab, :mod:`.pdf`).
"""

from __future__ import annotations

import io
from pathlib import Path

from markupsafe import Markup
from pypdf import PdfWriter

from gpucluster.artifacts import cabling
from gpucluster.artifacts.cabling import FOLDER
from gpucluster.artifacts.printouts.pages import (
    CABLE_COLUMNS,
    LABEL_COLUMNS,
    PICK_COLUMNS,
    RackPage,
    pick_list,
    rack_pages,
)
from gpucluster.artifacts.printouts.pdf import overview_pdf, rack_pdf
from gpucluster.design.load import LoadedDesign
from gpucluster.formats.tables import GuardedCsvWriter
from gpucluster.formats.templating import render
from gpucluster.plan.model import PhysicalPlan, Plan
from gpucluster.runtime.progress import track

PICK_LIST = "pick-list.csv"  # the cluster's pick list, rack by rack (cabling/)


def write(plan: PhysicalPlan, loaded: LoadedDesign, folder: Path) -> None:
    pages = rack_pages(plan)
    _write_racks(pages, folder, plan.design.site.paper)
    _write_cluster(plan, pages, folder)


def parts(plan: PhysicalPlan) -> list[str]:
    """The racks' files in batches (a job each), then the cluster's, which binds the racks' PDFs into one."""
    return [*(f"racks-{batch}" for batch in range(1, len(_batches(plan)) + 1)), "cluster"]


def part_needs(plan: PhysicalPlan, part: str) -> tuple[str, ...]:
    return tuple(parts(plan)[:-1]) if part == "cluster" else ()


def write_part(plan: PhysicalPlan, loaded: LoadedDesign, folder: Path, part: str) -> None:
    if part == "cluster":
        _write_cluster(plan, rack_pages(plan), folder)
    else:
        racks = _batches(plan)[int(part.removeprefix("racks-")) - 1]
        _write_racks(rack_pages(plan, set(racks)), folder, plan.design.site.paper)


RACK_BATCHES = 4  # jobs the racks' files are split into, on a plan with more than BATCHED_MIN_CABLES cables
BATCHED_MIN_CABLES = 1000


def _batches(plan: Plan) -> list[list[str]]:
    """The racks in turn among the batches (neighbouring racks hold alike loads, so the batches come out even)."""
    batches = RACK_BATCHES if len(plan.cables) > BATCHED_MIN_CABLES else 1
    names = list(plan.racks)
    return [names[batch::batches] for batch in range(min(batches, len(names)) or 1)]


def _write_cluster(plan: PhysicalPlan, pages: dict[str, RackPage], folder: Path) -> None:
    """The cluster's pick list, HTML page and PDF: an overview, then the racks' own PDFs, so the two never differ."""
    out = folder / FOLDER
    paper = plan.design.site.paper
    picks = pick_list(plan, pages)
    with open(out / PICK_LIST, "w", encoding="utf-8", newline="") as handle:
        rows = GuardedCsvWriter(handle)
        rows.writerow(PICK_COLUMNS)
        rows.writerows(picks)
    (out / "cluster.html").write_text(
        render(
            "cabling-cluster.html.j2",
            plan=plan,
            pages=list(pages.values()),
            picks=picks,
            pick_columns=PICK_COLUMNS,
            pick_list=PICK_LIST,
            paper=paper,
            workbooks=[cabling.workbook_name(network) for network in cabling.parts(plan) if network != "csv"],
        ),
        encoding="utf-8",
    )
    writer = PdfWriter()
    writer.append(io.BytesIO(overview_pdf(plan, pages, paper, picks)), outline_item="Overview")
    for name in pages:
        writer.append(out / "racks" / f"{name}.pdf", outline_item=f"Rack {name}")
    writer.add_metadata({"/Title": f"{plan.name} rack cabling", "/Creator": "gpucluster"})
    writer._ID = None  # no random file identifier: same design, same bytes
    with open(out / "cluster.pdf", "wb") as handle:
        writer.write(handle)


def _write_racks(pages: dict[str, RackPage], folder: Path, paper: str) -> None:
    out = folder / FOLDER / "racks"
    out.mkdir(parents=True, exist_ok=True)
    for page in track(pages.values(), len(pages), "racks"):
        svg = render("rack-elevation.svg.j2", page=page)
        (out / f"{page.rack.name}.svg").write_text(svg, encoding="utf-8")
        (out / f"{page.rack.name}.html").write_text(rack_html(page, paper, svg), encoding="utf-8")
        (out / f"{page.rack.name}.pdf").write_bytes(rack_pdf(page, paper))


def rack_html(page: RackPage, paper: str, elevation_svg: str) -> str:
    return render(
        "cabling-rack.html.j2",
        page=page,
        elevation=Markup(elevation_svg),
        paper=paper,
        columns=CABLE_COLUMNS,
        label_columns=LABEL_COLUMNS,
    )
