"""Rack cabling printouts for the technicians who cable the cluster.

For every rack: its front elevation (every device at its U with its name) and rear elevation (the zero-U PDUs
with their feeds, each device's power supplies by PDU and the face its cables plug into), its cable ends in the
order a technician works (device by device from the top, then port by port) with both ends, media, length and part
numbers, its optics pick list and power cords, and a sheet of cable labels (one per cable end in the rack).
Written as ``cabling/racks/<rack>.pdf``, ``.html`` and ``.svg`` (the elevations), plus ``cabling/cluster.pdf``
(an overview and the cluster's pick list, then every rack's pages, with a bookmark per rack),
``cabling/cluster.html`` and ``cabling/pick-list.csv`` (every rack's transceivers and power cords).

Both renderings come from one page model (:mod:`.pages`, :func:`rack_pages`): the HTML and SVG from Jinja
templates, the PDF drawn with ReportLab (:mod:`.pdf`). This module writes the files.
"""

from __future__ import annotations

import io
import multiprocessing
import os
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
from gpucluster.artifacts.tables import GuardedCsvWriter
from gpucluster.design.load import LoadedDesign
from gpucluster.errors import sigterm_default
from gpucluster.formats.templating import render
from gpucluster.plan.model import Plan
from gpucluster.runtime.progress import track

PICK_LIST = "pick-list.csv"  # the cluster's pick list, rack by rack (cabling/)


def write(plan: Plan, loaded: LoadedDesign, folder: Path) -> None:
    out = folder / FOLDER
    (out / "racks").mkdir(parents=True, exist_ok=True)
    pages = rack_pages(plan)
    paper = plan.design.site.paper
    picks = pick_list(plan, pages)
    with open(out / PICK_LIST, "w", encoding="utf-8", newline="") as handle:
        writer = GuardedCsvWriter(handle)
        writer.writerow(PICK_COLUMNS)
        writer.writerows(picks)
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
    _write_racks(plan, pages, out, paper, picks)


def rack_html(page: RackPage, paper: str, elevation_svg: str) -> str:
    return render(
        "cabling-rack.html.j2",
        page=page,
        elevation=Markup(elevation_svg),
        paper=paper,
        columns=CABLE_COLUMNS,
        label_columns=LABEL_COLUMNS,
    )


PARALLEL_MIN_ENDS = 2000  # cable ends in all the racks' pages above which the racks are rendered in a process pool
_JOBS: tuple[dict[str, RackPage], str, Path] | None = None  # handed to forked workers without pickling


def _write_racks(
    plan: Plan, pages: dict[str, RackPage], out: Path, paper: str, picks: list[tuple[str, str, str, str, int]]
) -> None:
    """Each rack's SVG, HTML and PDF (in parallel on a large plan), then the cluster PDF: an overview,
    then the racks' own pages, so the two can never differ."""
    global _JOBS
    names = sorted(pages, key=lambda n: -len(pages[n].ends))  # largest first balances the workers
    workers = min(os.cpu_count() or 1, len(names))
    total_ends = sum(len(p.ends) for p in pages.values())
    _JOBS = (pages, paper, out / "racks")
    try:
        if workers > 1 and total_ends > PARALLEL_MIN_ENDS and "fork" in multiprocessing.get_all_start_methods():
            with multiprocessing.get_context("fork").Pool(workers, initializer=sigterm_default) as pool:
                for _done in track(pool.imap_unordered(_render_rack, names), len(names), "racks"):
                    pass
        else:
            for name in track(names, len(names), "racks"):
                _render_rack(name)
    finally:
        _JOBS = None
    writer = PdfWriter()
    writer.append(io.BytesIO(overview_pdf(plan, pages, paper, picks)), outline_item="Overview")
    for name in pages:
        writer.append(out / "racks" / f"{name}.pdf", outline_item=f"Rack {name}")
    writer.add_metadata({"/Title": f"{plan.name} rack cabling", "/Creator": "gpucluster"})
    writer._ID = None  # no random file identifier: same design, same bytes
    with open(out / "cluster.pdf", "wb") as handle:
        writer.write(handle)


def _render_rack(name: str) -> None:
    assert _JOBS is not None
    pages, paper, folder = _JOBS
    page = pages[name]
    svg = render("rack-elevation.svg.j2", page=page)
    (folder / f"{name}.svg").write_text(svg, encoding="utf-8")
    (folder / f"{name}.html").write_text(rack_html(page, paper, svg), encoding="utf-8")
    (folder / f"{name}.pdf").write_bytes(rack_pdf(page, paper))
