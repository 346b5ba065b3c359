"""Workbooks: fixed document properties (same design, same bytes), the formats our tables share, sheets a buyer can
filter and print, and text that can never become a formula (guard.py)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import xlsxwriter
from xlsxwriter.format import Format
from xlsxwriter.utility import xl_col_to_name
from xlsxwriter.workbook import Workbook
from xlsxwriter.worksheet import Worksheet

from gpucluster.formats.tables.fast_sheets import FormulaSheet
from gpucluster.formats.tables.guard import needs_quote

# Document timestamp: fixed, so a workbook depends on its design only (XlsxWriter already fixes the zip entries'
# dates to 1980-01-01).
CREATED = datetime(2024, 1, 1)
PAPER_A4, PAPER_A3 = 9, 8  # Excel paper codes

# Number formats
INTEGER = "#,##0"
DECIMAL_1 = "#,##0.0"
DECIMAL_2 = "#,##0.00"


def signed(number_format: str) -> str:
    """The format with an explicit + on increases (for change columns)."""
    return f"+{number_format};-{number_format};{number_format.replace('#,##', '')}"


def new_workbook(
    path: Path,
    title: str,
    *,
    subject: str = "",
    author: str = "",
    created: datetime = CREATED,
    constant_memory: bool = False,
) -> Workbook:
    """An XlsxWriter workbook with fixed document properties, that never turns a text into a formula, a link or a
    number (write() included). `constant_memory`: rows go to disk as they are written (inline strings), for tables
    of millions of cells; it costs time where texts repeat, so only the cable workbooks use it."""
    workbook = xlsxwriter.Workbook(
        str(path),
        {
            "constant_memory": constant_memory,
            "strings_to_formulas": False,
            "strings_to_urls": False,
            "strings_to_numbers": False,
        },
    )
    properties: dict[str, object] = {"title": title, "author": author, "company": "", "created": created}
    if subject:  # XlsxWriter writes an empty subject element for an empty one
        properties["subject"] = subject
    workbook.set_properties(properties)
    return workbook


@dataclass(frozen=True)
class Column:
    """One column of a table: header, width in characters, number format ('' = text), wrapped text."""

    header: str
    width: float
    number_format: str = ""
    wrap: bool = False


class Book:
    """A workbook with our formats, made once each, and cells written by kind: text (guarded), number, formula."""

    def __init__(self, path: Path, title: str, subject: str):
        self.workbook = new_workbook(path, title, subject=subject, author="gpucluster")
        self._formats: dict[tuple[str, bool, bool, bool], Format] = {}

    def format(self, number_format: str = "", bold: bool = False, quote: bool = False, wrap: bool = False) -> Format:
        key = (number_format, bold, quote, wrap)
        if key not in self._formats:
            given = {"num_format": number_format, "bold": bold, "quote_prefix": quote, "text_wrap": wrap}
            self._formats[key] = self.workbook.add_format({"valign": "top", **{k: v for k, v in given.items() if v}})
        return self._formats[key]

    def text_format(self, text: str) -> Format:
        """The format of a plain text cell: quote-prefixed where the text looks like a formula."""
        return self.format(quote=needs_quote(text))

    def header_format(self) -> Format:
        key = ("header", True, False, True)
        if key not in self._formats:
            self._formats[key] = self.workbook.add_format(
                {"bold": True, "bg_color": "#D9E1F2", "bottom": 1, "text_wrap": True, "valign": "top"}
            )
        return self._formats[key]

    def sheet(self, name: str, title: str) -> Worksheet:
        """A sheet of free layout, printed with our page setup."""
        sheet = self.workbook.add_worksheet(name, FormulaSheet)
        print_setup(sheet, title)
        return sheet

    def table_sheet(
        self, name: str, columns: Sequence[Column], rows: int, title: str, paper: int = PAPER_A4
    ) -> Worksheet:
        """A sheet holding one table of `rows` data rows under a header row: frozen header, autofilter,
        widths, and print setup (landscape, one page wide, header row on every page)."""
        sheet = self.workbook.add_worksheet(name, FormulaSheet)
        for index, column in enumerate(columns):
            sheet.set_column(index, index, column.width)
        sheet.freeze_panes(1, 0)
        sheet.autofilter(0, 0, max(rows, 1), len(columns) - 1)
        print_setup(sheet, title, paper)
        sheet.repeat_rows(0)
        self.headers(sheet, 0, [column.header for column in columns])
        fit_row_height(sheet, 0, [(column.header, column.width) for column in columns])
        return sheet

    def headers(self, sheet: Worksheet, row: int, headers: Sequence[str]) -> None:
        """A row of column headers (our own words) from column A."""
        for col, header in enumerate(headers):
            sheet.write_string(row, col, header, self.header_format())

    def text(self, sheet: Worksheet, row: int, col: int, value: str, bold: bool = False, wrap: bool = False) -> None:
        """Text as text: written as a string cell, and quote-prefixed where it looks like a formula."""
        if value:
            sheet.write_string(row, col, value, self.format(bold=bold, quote=needs_quote(value), wrap=wrap))

    def number(self, sheet: Worksheet, row: int, col: int, value: float | None, number_format: str) -> None:
        if value is not None:
            sheet.write_number(row, col, value, self.format(number_format))

    def formula(self, sheet: Worksheet, row: int, col: int, formula: str, value: float, number_format: str) -> None:
        """A formula with its value stored, so viewers that do not recalculate still show the number."""
        sheet.write_formula(row, col, formula, self.format(number_format), value)

    def close(self) -> None:
        self.workbook.close()


LINE_HEIGHT_PT = 15  # Excel's default row height for 11 pt Calibri


def fit_row_height(sheet: Worksheet, row: int, texts: Sequence[tuple[str, float]]) -> None:
    """Make a row tall enough for its wrapped texts ((text, column width in characters) pairs).
    Written explicitly because not every viewer grows rows to fit wrapped text (LibreOffice's
    converter does not)."""
    lines = max((_wrapped_lines(text, width) for text, width in texts), default=1)
    if lines > 1:
        sheet.set_row(row, LINE_HEIGHT_PT * lines)


def _wrapped_lines(text: str, width: float) -> int:
    """Lines a text takes when wrapped at word boundaries in a column `width` characters wide (a
    character less, for the cell's padding)."""
    return max(len(textwrap.wrap(text, max(int(width) - 1, 1))), 1)


def print_setup(sheet: Worksheet, title: str, paper: int = PAPER_A4) -> None:
    """Landscape, one page wide, the title and sheet name in the page header and page numbers in the footer."""
    sheet.set_landscape()
    sheet.fit_to_pages(1, 0)
    sheet.set_paper(paper)
    sheet.set_margins(left=0.4, right=0.4, top=0.6, bottom=0.6)
    sheet.set_header(f"&L{_header_text(title)}&R&A", {"margin": 0.3})
    sheet.set_footer("&CPage &P of &N", {"margin": 0.3})


def _header_text(title: str) -> str:
    """Header text with '&' escaped (it starts a control code in Excel headers)."""
    return title.replace("&", "&&")[:200]


def column_letter(index: int) -> str:
    name: str = xl_col_to_name(index)  # xlsxwriter has no type information
    return name


def column_range(sheet: str, index: int, first_row: int, last_row: int) -> str:
    """An absolute A1 range of one column over 1-based rows, e.g. 'BOM'!$K$2:$K$40."""
    letter = xl_col_to_name(index)
    return f"'{sheet}'!${letter}${first_row}:${letter}${last_row}"
