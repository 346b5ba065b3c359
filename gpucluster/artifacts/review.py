"""review.html and review.pdf: what changed between two revisions of a design, for the reviewer (written by
`gpucluster diff` beside bom-diff.xlsx). The same page style as report.html; the PDF is rendered from the same
HTML with WeasyPrint."""

from __future__ import annotations

import os
from pathlib import Path

import hostlist
from markupsafe import Markup

from gpucluster.artifacts._pdf import write_pdf
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
    bom_figures = [Figure(f.name, f.old, f.new, digits=0 if _whole(f.old, f.new) else 1) for f in changes.bom.figures]
    return render(
        "report/review.html",
        c=changes,
        bom=changes.bom,
        bom_figures=bom_figures,
        listed=MAX_LISTED,
        number=_number,
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


def _whole(*values: float) -> bool:
    return all(float(v).is_integer() for v in values)


def _number(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def _signed(value: float | None, digits: int = 0) -> str:
    if value is None:
        return ""
    if round(value, digits) == 0:
        return "="
    return f"{value:+,.{digits}f}"
