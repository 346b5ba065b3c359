"""What every workbook we write shares: fixed document properties (same design, same bytes),
formats, sheets a buyer can filter and print, and text that can never become a formula."""

from __future__ import annotations

import csv
import io
import re
import textwrap
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from math import isfinite
from operator import itemgetter
from pathlib import Path
from typing import Any, ClassVar, TextIO, cast

import xlsxwriter
from xlsxwriter.format import Format
from xlsxwriter.utility import xl_col_to_name, xl_rowcol_to_cell_fast
from xlsxwriter.worksheet import CellBooleanTuple, CellFormulaTuple, CellNumberTuple, CellStringTuple, Worksheet

# Document timestamp: fixed, so a workbook depends on its design only (XlsxWriter already fixes the
# zip entries' dates to 1980-01-01).
CREATED = datetime(2024, 1, 1)
# A cell that starts with one of these is a formula to Excel, LibreOffice and Google Sheets when typed
# or imported from CSV (OWASP "CSV Injection"; tab and carriage return as well).
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
PAPER_A4, PAPER_A3 = 9, 8  # Excel paper codes


_PLAIN_NUMBER = re.compile(r"[-+]?[0-9][0-9,]*(\.[0-9]+)?|[-+]")  # a signed number or a lone dash is no formula


def needs_quote(text: str) -> bool:
    return text.startswith(FORMULA_TRIGGERS) and not _PLAIN_NUMBER.fullmatch(text)


def csv_safe(value: object) -> object:
    """A CSV cell: text that a spreadsheet would run as a formula gets a leading apostrophe."""
    if isinstance(value, str) and needs_quote(value):
        return "'" + value
    return value


class GuardedCsvWriter:
    """The one way we write CSV: csv.writer with every cell through csv_safe, so no text from a design,
    catalog or price list opens as a formula in a spreadsheet (OWASP CSV injection). A writer of very many rows
    may name the columns (0-based) that can hold such text (`guarded`); the header row and those columns are then
    guarded, and the others (ids and names the planner makes, numbers) are written as they are. `texts_repeat`: most
    cells' texts come back row after row (port names, part numbers, sources), so each distinct text is decided once
    (_lines); a table whose rows are mostly texts and numbers of their own (the cable schedule: ids, labels, lengths)
    passes False and its rows go to csv.writer, which is then the faster."""

    def __init__(self, handle: TextIO, guarded: Iterable[int] | None = None, texts_repeat: bool = True):
        self._handle = handle
        self._texts_repeat = texts_repeat
        self._writer = csv.writer(handle, lineterminator="\n")
        self._columns = None if guarded is None else sorted(guarded)
        # The guarded columns' cells of a row, and the texts of those columns already found to need no guard: they
        # repeat (port names, part numbers), so most rows are let through by one set test.
        self._pick = _picker(self._columns or ())
        self._safe: set[str] = set()
        self._cells: dict[object, str] = {}  # text (str only) -> its cell as csv.writer writes it (see _lines)

    def writerow(self, row: Iterable[object]) -> None:
        self._writer.writerow(_guarded(row))

    def writerows(self, rows: Iterable[Sequence[object]]) -> None:
        if self._columns is None:
            rows = map(_guarded, rows)
        elif self._columns:
            rows = map(self._guard_columns, rows)
        # else no column to guard: the caller's rows come guarded (csv_safe) as they are made
        if not self._texts_repeat:
            self._writer.writerows(rows)
            return
        write = self._handle.write
        for lines in self._lines(rows):
            write(lines)

    def _lines(self, rows: Iterable[Sequence[object]]) -> Iterator[str]:
        """The rows' text as csv.writer writes it, some hundreds of lines at a time. Each cell's text is csv.writer's
        (quoted, its quotes doubled) where a character of _CSV_QUOTED is in it, and is the cell itself where none is;
        it is decided once per distinct text (remembered up to _CSV_TEXTS of them): a few dozen port names, part numbers
        and sources make most cells of a table of hundreds of thousands of rows, and csv.writer looks at every character
        of every cell each time. A row of fewer than two cells goes to csv.writer as it is (it writes a lone empty
        cell as "")."""
        cells, cell_text = self._cells, self._cell_text
        batch: list[str] = []
        for row in rows:
            if len(row) < 2:
                if batch:
                    yield "".join(batch)
                    batch.clear()
                self._writer.writerow(row)
                continue
            batch.append(",".join([text if (text := cells.get(c)) is not None else cell_text(c) for c in row]) + "\n")
            if len(batch) >= _CSV_LINES:
                yield "".join(batch)
                batch.clear()
        if batch:
            yield "".join(batch)

    def _cell_text(self, cell: object) -> str:
        if type(cell) is str:  # not a subclass (an enum's text): csv.writer writes those
            text = _csv_cell(cell) if _CSV_QUOTED.search(cell) else cell
            if len(self._cells) < _CSV_TEXTS:
                self._cells[cell] = text
            return text
        if type(cell) is int or type(cell) is float:
            return repr(cell)  # what csv.writer writes of them (str, which for these is repr)
        if cell is None:
            return ""
        return _csv_cell(cell)

    def _guard_columns(self, row: Sequence[object]) -> Sequence[object]:
        picked = self._pick(row)
        if self._safe.issuperset(picked):
            return row
        risky = [i for i, cell in zip(self._columns or (), picked, strict=True) if _formula_like(cell)]
        if len(self._safe) < _SAFE_TEXTS:
            self._safe.update(cell for cell in picked if isinstance(cell, str) and not _formula_like(cell))
        if not risky:
            return row
        cells = list(row)
        for i in risky:
            cells[i] = "'" + str(cells[i])
        return cells


_SAFE_TEXTS = 65_536  # at most this many remembered safe texts: a column of ever-new texts is checked cell by cell
_CSV_TEXTS = 65_536  # at most this many remembered cell texts (GuardedCsvWriter._lines)
_CSV_LINES = 512  # lines written to the handle at once


def _csv_cell(cell: object) -> str:
    """One cell as csv.writer writes it among others (a lone empty cell would be written as "")."""
    handle = io.StringIO()
    csv.writer(handle, lineterminator="\n").writerow(("", cell))
    return handle.getvalue()[1:-1]


def _csv_quoted() -> re.Pattern[str]:
    """The characters for which csv.writer quotes a cell (its delimiter, quote character and line terminator:
    ASCII), found by asking it."""
    found = "".join(c for c in map(chr, range(128)) if _csv_cell(f"x{c}x") != f"x{c}x")
    return re.compile(f"[{re.escape(found)}]")


_CSV_QUOTED = _csv_quoted()


def _picker(columns: Sequence[int]) -> Callable[[Sequence[object]], tuple[object, ...]]:
    """A function that takes a row's cells in `columns` as a tuple (itemgetter's, which gives a lone cell bare)."""
    if len(columns) > 1:
        return itemgetter(*columns)
    return lambda row: tuple(row[i] for i in columns)


def _formula_like(cell: object) -> bool:
    return isinstance(cell, str) and cell.startswith(FORMULA_TRIGGERS) and not _PLAIN_NUMBER.fullmatch(cell)


def _guarded(row: Iterable[object]) -> list[object]:
    """csv_safe of every cell, inlined: the cable schedule's CSV guards 16 million cells at 131,072 GPUs."""
    return [
        "'" + cell
        if isinstance(cell, str) and cell.startswith(FORMULA_TRIGGERS) and not _PLAIN_NUMBER.fullmatch(cell)
        else cell
        for cell in row
    ]


@dataclass(frozen=True)
class Column:
    """One column of a table: header, width in characters, number format ('' = text), wrapped text."""

    header: str
    width: float
    number_format: str = ""
    wrap: bool = False


class Book:
    """An XlsxWriter workbook with our formats. Not in constant-memory mode: its inline strings cost more
    time than the shared-string table saves memory (the 131,072-GPU rack contents are ~70,000 rows)."""

    def __init__(self, path: Path, title: str, subject: str):
        self.workbook = xlsxwriter.Workbook(
            str(path),
            {
                "constant_memory": False,
                "strings_to_formulas": False,
                "strings_to_urls": False,
                "strings_to_numbers": False,
            },
        )
        self.workbook.set_properties(
            {"title": title, "subject": subject, "author": "gpucluster", "company": "", "created": CREATED}
        )
        self._formats: dict[tuple[str, bool, bool, bool], Format] = {}

    def format(self, number_format: str = "", bold: bool = False, quote: bool = False, wrap: bool = False) -> Format:
        key = (number_format, bold, quote, wrap)
        if key not in self._formats:
            properties: dict[str, object] = {"valign": "top"}
            if number_format:
                properties["num_format"] = number_format
            if bold:
                properties["bold"] = True
            if quote:
                properties["quote_prefix"] = True
            if wrap:
                properties["text_wrap"] = True
            self._formats[key] = self.workbook.add_format(properties)
        return self._formats[key]

    def header_format(self) -> Format:
        key = ("header", True, False, True)
        if key not in self._formats:
            self._formats[key] = self.workbook.add_format(
                {"bold": True, "bg_color": "#D9E1F2", "bottom": 1, "text_wrap": True, "valign": "top"}
            )
        return self._formats[key]

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
        for index, column in enumerate(columns):
            sheet.write_string(0, index, column.header, self.header_format())
        fit_row_height(sheet, 0, [(column.header, column.width) for column in columns])
        return sheet

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
    return xl_col_to_name(index)


def column_range(sheet: str, index: int, first_row: int, last_row: int) -> str:
    """An absolute A1 range of one column over 1-based rows, e.g. 'BOM'!$K$2:$K$40."""
    letter = xl_col_to_name(index)
    return f"'{sheet}'!${letter}${first_row}:${letter}${last_row}"


# Worksheet functions of Excel 2007 that XlsxWriter never rewrites (no _xlfn. prefix: not a future or dynamic array
# function); the workbooks' per-row formulas use only these.
CLASSIC_FUNCTIONS = frozenset({"IF", "MIN", "MAX", "SUM", "SUMIF", "COUNTIF", "COUNTA", "SQRT", "ROUND"})
_FUNCTION_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\(")


class FormulaSheet(Worksheet):
    """A worksheet whose formulas that call only CLASSIC_FUNCTIONS skip XlsxWriter's function renaming (some 30
    regular-expression passes a formula, for the future functions none of them is: over the per-device formulas, much
    of the power workbook's time at scale). Every other formula goes through XlsxWriter's
    own preparation, so the file is the same bytes. Its common cells are written to the file in one string each
    (``_write_cell``). Used through ``add_worksheet(name, FormulaSheet)``, XlsxWriter's hook for worksheet
    subclasses."""

    def _write_cell(self, row: int, col: int, cell: Any) -> None:
        """A number, a shared string, a boolean or a formula with a number for its value, written as XlsxWriter
        writes it (its r and s attributes need no escaping: a cell name and a format index), in one string: XlsxWriter's
        writer builds an attribute list and searches each attribute for characters to escape, much of the time of
        the power workbook and the BOM's rack contents (hundreds of thousands of cells at scale). Every other cell
        (and one that takes its format from its row or column) goes through XlsxWriter's own writer."""
        kind = type(cell)
        cell_format = cell.format
        if cell_format:
            style = f' s="{cell_format._get_xf_index()}"'
        else:
            row_info, column_info = self.row_info.get(row), self.col_info.get(col)
            if (row_info is not None and row_info.row_format) or (
                column_info is not None and column_info.column_format is not None
            ):
                return super()._write_cell(row, col, cell)  # the cell takes its row's or column's format
            style = ""
        if kind is CellNumberTuple:
            self.fh.write(f'<c r="{xl_rowcol_to_cell_fast(row, col)}"{style}><v>{cell.number:.16G}</v></c>')
        elif kind is CellStringTuple and not self.constant_memory:
            self.fh.write(f'<c r="{xl_rowcol_to_cell_fast(row, col)}"{style} t="s"><v>{cell.string}</v></c>')
        elif kind is CellFormulaTuple and type(cell.value) in (int, float):
            formula = self._escape_data(cell.formula)
            self.fh.write(f'<c r="{xl_rowcol_to_cell_fast(row, col)}"{style}><f>{formula}</f><v>{cell.value}</v></c>')
        elif kind is CellBooleanTuple:
            self.fh.write(f'<c r="{xl_rowcol_to_cell_fast(row, col)}"{style} t="b"><v>{cell.boolean}</v></c>')
        else:
            super()._write_cell(row, col, cell)

    def _prepare_formula(self, formula: str, expand_future_functions: bool = False) -> str:
        if (
            not formula.startswith("{")
            and not formula.endswith("}")
            and "_xlfn." not in formula
            and CLASSIC_FUNCTIONS.issuperset(_FUNCTION_CALL.findall(formula))
        ):
            return formula.removeprefix("=")
        return super()._prepare_formula(formula, expand_future_functions)


class InlineTextSheet(Worksheet):
    """A worksheet for constant-memory workbooks (whose text cells are inline strings) with a faster way through
    XlsxWriter's innermost cell loop, for the cable workbooks' millions of cells. Used through
    ``add_worksheet(name, InlineTextSheet)``, XlsxWriter's hook for worksheet subclasses; the sheet's XML is the same
    bytes as XlsxWriter's own cell by cell (tests/test_xlsxwriter_private_api.py holds it to that), but for a text
    shaped like a rich string ("<r>...</r>"), which XlsxWriter would put into the XML unescaped and which here stays
    text (_escape_control_characters, _text_tail).

    - It skips XlsxWriter's control-character escaping of a cell's text (two regular-expression substitutions a
      cell) when there is nothing to escape: printable text with no "_x" (the start of an _xHHHH_ escape) comes out
      of it unchanged. Every other text goes through XlsxWriter's own escaping.
    - write_values writes a row of texts and numbers at once: XlsxWriter's dimension check once a row instead of
      once a cell, no cell object a cell, and the row's XML made in one string when the row is flushed, with the
      decisions XlsxWriter's _write_cell makes (control characters, xml:space="preserve", & < > escaped, a cell's
      or its column's format). A row that is anything else (a row format or height, cells also written one by one,
      a text over half Excel's limit, a number that is not a finite int or float) is handed to XlsxWriter's own
      cell writers and row flush, which then also raise what they raise (NaN without nan_inf_to_errors)."""

    # The row write_values holds until the next row is written (XlsxWriter's constant-memory flush): row number,
    # its values and their formats (None: none).
    _pending: tuple[int, tuple[object, ...], tuple[Format | None, ...] | None] | None = None
    _starts: ClassVar[list[str]] = []  # each column's cell start ('<c r="A'), shared: they never change
    _texts: dict[str, str]  # text -> its cell's XML after the style (_text_tail), for texts that repeat
    previous_row: int  # XlsxWriter's: the row its constant-memory mode holds (the last one written)

    def __init__(self) -> None:
        super().__init__()
        self._texts = {}

    @staticmethod
    def _escape_control_characters(data: object) -> object:
        escaped = _escaped_controls(data)
        if isinstance(escaped, str) and escaped.startswith("<r>") and escaped.endswith("</r>"):
            # XlsxWriter's own cell writer (rows write_values hands it) takes an inline text shaped like this for a
            # rich string it made and writes it into the XML as it is: a catalog's part number could close the cell's
            # text and add a formula. Its first "<" as OOXML's escape _x003C_ keeps it text (Excel and LibreOffice
            # show "<"). write_values' own rows write it as any other text (_text_tail).
            return "_x003C_" + escaped[1:]
        return escaped

    def write_values(self, row: int, values: Sequence[object], formats: Sequence[Format | None] | None = None) -> None:
        """Row `row`'s cells from column A: a str as write_string writes it, an int or float as write_number does,
        None or "" as no cell; formats[i], if given, is value i's format. The cells and bytes of those calls made
        one by one, left to right. The row is held (as XlsxWriter holds it) until the next row is written."""
        n = len(values)
        first = 0
        while first < n and (values[first] is None or values[first] == ""):
            first += 1
        if first == n:
            return
        last = n - 1
        while values[last] is None or values[last] == "":
            last -= 1
        if not self.constant_memory or row <= self.previous_row or row >= self.xls_rowmax or last >= self.xls_colmax:
            self._write_one_by_one(row, values, formats)
            return
        # XlsxWriter's cell writers, cell by cell: the dimension check (its smallest and largest column are what
        # counts), then the previous row's flush; the cells are stored until this row's flush.
        self._check_dimensions(row, first)
        self._check_dimensions(row, last)
        self._write_single_row(row)
        self._pending = (row, tuple(values), None if formats is None else tuple(formats))

    def _write_one_by_one(self, row: int, values: Sequence[object], formats: Sequence[Format | None] | None) -> None:
        for col, value in enumerate(values):
            if value is not None and value != "":
                self._write_value(row, col, value, None if formats is None else formats[col])

    def _write_value(self, row: int, col: int, value: object, cell_format: Format | None) -> None:
        if isinstance(value, str):
            self._write_string(row, col, value, cell_format)
        else:
            self._write_number(row, col, value, cell_format)

    def _write_single_row(self, current_row_num: int = 0) -> None:
        pending = self._pending
        if pending is not None:
            self._pending = None
            row, values, formats = pending
            if (
                row == self.previous_row
                and not self.table
                and row not in self.row_info
                and self.excel_version == 2007
                and self.default_row_height == self.original_row_height
            ):
                cells = self._cells_xml(row, values, formats)
                if cells is not None:
                    self.fh.write(f'<row r="{row + 1}">{cells}</row>')
                    self.previous_row = current_row_num
                    return
            self._store(row, values, formats)
        super()._write_single_row(current_row_num)

    def _store(self, row: int, values: tuple[object, ...], formats: tuple[Format | None, ...] | None) -> None:
        """The held row's cells into XlsxWriter's table through its own cell writers (the row is not flushed yet, so
        they only store), under any cell written one by one since (the later write wins, as in XlsxWriter)."""
        written = self.table.get(row, {})
        for col, value in enumerate(values):
            if col not in written and value is not None and value != "":
                self._write_value(row, col, value, None if formats is None else formats[col])

    def _cells_xml(self, row: int, values: tuple[object, ...], formats: tuple[Format | None, ...] | None) -> str | None:
        """The row's <c> elements as XlsxWriter's _write_cell writes them, or None if a value is not one this
        makes (the row then goes through XlsxWriter's own writers)."""
        starts = self._starts
        while len(starts) < len(values):
            starts.append(f'<c r="{xl_col_to_name(len(starts))}')
        number = str(row + 1)
        col_info = self.col_info
        texts = self._texts
        parts: list[str] = []
        append = parts.append
        col = -1
        for value in values:
            col += 1
            if type(value) is str:
                tail = texts.get(value)
                if tail is None:
                    if not value:
                        continue
                    tail = self._text_tail(value)
                    if tail is None:
                        return None
                    if len(texts) >= _TEXTS_KEPT:
                        texts.clear()
                    texts[value] = tail
            elif value is None:
                continue
            elif (type(value) is float or type(value) is int) and isfinite(value):
                tail = f"><v>{value:.16G}</v></c>"
            else:
                return None  # NaN, infinity, a bool, a Fraction, a str subclass...: XlsxWriter's own rules
            cell_format = None if formats is None else formats[col]
            if not cell_format:  # the column's format, if it has one (XlsxWriter's rule for a cell without one)
                info = col_info.get(col)
                cell_format = None if info is None else info.column_format
                if cell_format is None:
                    append(f'{starts[col]}{number}"{tail}')
                    continue
            append(f'{starts[col]}{number}" s="{cell_format._get_xf_index()}"{tail}')
        return "".join(parts)

    def _text_tail(self, value: str) -> str | None:
        """A text cell's XML after its reference and style, as XlsxWriter's _write_cell and _xml_inline_string write
        it (None for a text over half Excel's limit: XlsxWriter checks it in UTF-16 units)."""
        if len(value) > self.xls_strmax // 2:
            return None
        text = cast(str, _escaped_controls(value))  # a text shaped like a rich string ("<r>...</r>") is text too
        preserve = ' xml:space="preserve"' if text[:1].isspace() or text[-1:].isspace() else ""
        if "&" in text or "<" in text or ">" in text:
            text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return f' t="inlineStr"><is><t{preserve}>{text}</t></is></c>'


def _escaped_controls(data: object) -> object:
    """XlsxWriter's control-character escaping (two regular-expression substitutions a text), skipped where it has
    nothing to do: printable text with no "_x" (the start of an _xHHHH_ escape) comes out of it unchanged."""
    if isinstance(data, str) and "_x" not in data and data.isprintable():
        return data
    return Worksheet._escape_control_characters(data)


# Texts whose cell XML InlineTextSheet keeps (device, rack and port names repeat from row to row); when full it starts
# afresh, so a column of ever-new texts (cable ids) costs a bounded table.
_TEXTS_KEPT = 16_384


INTEGER = "#,##0"
DECIMAL_1 = "#,##0.0"
DECIMAL_2 = "#,##0.00"


def signed(number_format: str) -> str:
    """The format with an explicit + on increases (for change columns)."""
    return f"+{number_format};-{number_format};{number_format.replace('#,##', '')}"
