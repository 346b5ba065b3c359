"""compare.csv, compare.xlsx, compare.html and compare.pdf: alternatives side by side (`gpucluster compare`), one row
per figure with each design's value and its delta against the first (gpucluster/growth/compare.py). Written into a
staging folder that replaces OUT/compare-<names>/ whole (artifacts/output_folder.py), so a failed comparison leaves
the previous one as it was."""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from markupsafe import Markup

from gpucluster.artifacts import output_folder
from gpucluster.artifacts._pdf import write_pdf
from gpucluster.formats.tables import DECIMAL_1, DECIMAL_2, INTEGER, Book, Column, GuardedCsvWriter, signed
from gpucluster.formats.templating import render
from gpucluster.growth.compare import Comparison, Row, Value

CSV, XLSX, HTML, PDF = "compare.csv", "compare.xlsx", "compare.html", "compare.pdf"
MAX_FOLDER_NAME = 120  # characters of OUT/compare-a-vs-b...; longer lists of names are cut and given a digest
_FORMATS = {0: INTEGER, 1: DECIMAL_1, 2: DECIMAL_2}


def folder_name(comparison: Comparison) -> str:
    """compare-<first>-vs-<second>...; a long list is cut short and made unique by a digest of every name."""
    name = "compare-" + "-vs-".join(comparison.names)
    if len(name) <= MAX_FOLDER_NAME:
        return name
    digest = hashlib.sha256("\n".join(comparison.names).encode()).hexdigest()[:12]
    return f"{name[: MAX_FOLDER_NAME - 13].rstrip('-')}-{digest}"


def write_comparison(comparison: Comparison, out_dir: Path) -> Path:
    """Write the four files into OUT/<folder_name>/, swapped in whole once all are written; the folder."""
    final = out_dir / folder_name(comparison)
    with _staging(out_dir, final) as staging:
        write_csv(comparison, staging / CSV)
        write_xlsx(comparison, staging / XLSX)
        html = comparison_html(comparison)
        (staging / HTML).write_text(html, encoding="utf-8")
        write_pdf(html, staging / PDF)
        output_folder.swap(staging, final)
    return final


@contextlib.contextmanager
def _staging(out_dir: Path, final: Path) -> Iterator[Path]:
    """The output folder's lock held and a staging folder beside `final`, removed unless swapped in."""
    made = not out_dir.is_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        with output_folder.build_lock(out_dir):
            output_folder.recover(final)
            output_folder.remove_stale_staging(final)
            staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=out_dir))
            try:
                yield staging
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    finally:
        if made:
            output_folder.remove_if_empty(out_dir)


def headers(comparison: Comparison) -> list[str]:
    """Section, figure, unit, each design's value, then each other design's delta against the first."""
    first = comparison.names[0]
    deltas = [f"{name} vs {first}" for name in comparison.names[1:]]
    return ["Section", "Figure", "Unit", *comparison.names, *deltas]


def cells(row: Row) -> list[Value]:
    """A row's cells after the headers' first three: values, then deltas, numbers rounded to the row's digits."""
    return [_rounded(v, row.digits) for v in (*row.values, *row.deltas[1:])]


def _rounded(value: Value, digits: int) -> Value:
    if not isinstance(value, float):
        return value
    rounded = round(value, digits) + 0.0  # no -0.0
    return int(rounded) if digits == 0 else rounded


def write_csv(comparison: Comparison, path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = GuardedCsvWriter(handle)
        writer.writerow(headers(comparison))
        for row in comparison.rows:
            writer.writerow([row.section, row.name, row.unit, *("" if c is None else c for c in cells(row))])


def write_xlsx(comparison: Comparison, path: Path) -> None:
    """One table sheet of the rows (figures that differ in bold) and one of the designs compared."""
    book = Book(path, f"Compare {', '.join(comparison.names)}", "Alternatives side by side")
    designs = len(comparison.names)
    columns = [Column("Section", 22), Column("Figure", 44, wrap=True), Column("Unit", 8)]
    columns += [Column(name, 16, wrap=True) for name in headers(comparison)[3:]]
    sheet = book.table_sheet("Compare", columns, len(comparison.rows), "Alternatives side by side")
    for r, row in enumerate(comparison.rows, start=1):
        book.text(sheet, r, 0, row.section)
        book.text(sheet, r, 1, row.name, bold=row.differs, wrap=True)
        book.text(sheet, r, 2, row.unit)
        for c, value in enumerate(cells(row), start=3):
            if isinstance(value, str):
                book.text(sheet, r, c, value)
            else:
                number_format = _FORMATS.get(row.digits, DECIMAL_2)
                book.number(sheet, r, c, value, signed(number_format) if c >= 3 + designs else number_format)
    listed = book.table_sheet(
        "Designs", [Column("Design", 28), Column("File", 60), Column("Description", 80, wrap=True)], designs, "Designs"
    )
    for r, (name, file, description) in enumerate(
        zip(comparison.names, comparison.paths, comparison.descriptions, strict=True), start=1
    ):
        book.text(listed, r, 0, name)
        book.text(listed, r, 1, file)
        book.text(listed, r, 2, description, wrap=True)
    book.close()


def comparison_html(comparison: Comparison) -> str:
    return render(
        "report/compare.html",
        c=comparison,
        headers=headers(comparison),
        cells=cells,
        shown=shown,
        style=Markup(render("report/style.css")),
    )


def shown(value: Value, digits: int = 0, delta: bool = False) -> str:
    """A cell as the page prints it: numbers grouped at the row's digits (deltas signed, "=" for none), "-" for
    a figure a design does not have."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if delta:
        return "=" if round(value, digits) == 0 else f"{value:+,.{digits}f}"
    return f"{value:,.{digits}f}"
