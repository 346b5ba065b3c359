"""review.html and review.pdf: what changed between two revisions of a design, for the reviewer (written by
`gpucluster diff` beside bom-diff.xlsx), in report.html's page style."""

from __future__ import annotations

import os
from pathlib import Path

import hostlist
from markupsafe import Markup

from gpucluster.artifacts._pdf import write_pdf
from gpucluster.artifacts.compare import shown
from gpucluster.formats.templating import render
from gpucluster.growth.changes import MAX_LISTED, Figure, PlanChanges

HTML = "review.html"
PDF = "review.pdf"


def write_review(changes: PlanChanges, folder: Path) -> list[Path]:
    """Write review.html and review.pdf into `folder`, each replacing the old file only once it is complete."""
    html = review_html(changes)
    html_path, pdf_path = folder / HTML, folder / PDF
    staging = folder / f".{HTML}.tmp"
    staging.write_text(html, encoding="utf-8")
    os.replace(staging, html_path)
    staging = folder / f".{PDF}.tmp"
    write_pdf(html, staging)
    os.replace(staging, pdf_path)
    return [html_path, pdf_path]


def review_html(changes: PlanChanges) -> str:
    bom_figures = [
        Figure(f.name, f.old, f.new, digits=0 if float(f.old).is_integer() and float(f.new).is_integer() else 1)
        for f in changes.bom.figures
    ]
    return render(
        "report/review.html",
        c=changes,
        bom=changes.bom,
        bom_figures=bom_figures,
        listed=MAX_LISTED,
        number=shown,
        signed=_signed,
        style=Markup(render("report/style.css")),
        hosts=host_names,
    )


def host_names(names: list[str]) -> str:
    """Names as a host list (gpu[065-096]), cut short; "none" for none."""
    if not names:
        return "none"
    text: str = hostlist.collect_hostlist(names)  # hostlist has no type information
    return text if len(text) <= 600 else text[:597] + "..."


def _signed(value: float | None, digits: int = 0) -> str:
    """A change as compare.shown prints a delta; nothing for a change that does not apply."""
    return "" if value is None else shown(value, digits, delta=True)
