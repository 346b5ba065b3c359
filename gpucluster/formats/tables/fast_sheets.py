"""The one module that uses XlsxWriter's internals (its private methods and attributes): worksheet subclasses and
cell writers for the largest workbooks (the cable workbooks, the BOM's rack contents, the power workbook's racks and
devices), which write the same bytes as XlsxWriter's public calls in a fraction of its time. XlsxWriter is pinned to
the minor series these were tested on (pyproject.toml); tests/test_tables.py reads the files they write back with
openpyxl, so a change in XlsxWriter that breaks them fails there. No other module touches an XlsxWriter attribute
with a leading underscore."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from math import isfinite
from typing import Any, ClassVar, NamedTuple, cast

from xlsxwriter.format import Format
from xlsxwriter.utility import xl_col_to_name, xl_rowcol_to_cell_fast
from xlsxwriter.worksheet import CellBooleanTuple, CellFormulaTuple, CellNumberTuple, CellStringTuple, Worksheet

from gpucluster.formats.tables.guard import needs_quote


class CellWriters(NamedTuple):
    """A sheet's cell writers without XlsxWriter's A1-notation decorator (which inspects every call's arguments): for
    sheets of hundreds of thousands of cells written by row and column number. Same arguments as write_string,
    write_number, write_formula and write_boolean given numbers, same bytes."""

    text: Callable[..., Any]
    number: Callable[..., Any]
    formula: Callable[..., Any]
    boolean: Callable[..., Any]


def cell_writers(sheet: Worksheet) -> CellWriters:
    return CellWriters(sheet._write_string, sheet._write_number, sheet._write_formula, sheet._write_boolean)


# Worksheet functions of Excel 2007 that XlsxWriter never rewrites (no _xlfn. prefix: not a future or dynamic array
# function); the workbooks' per-row formulas use only these.
CLASSIC_FUNCTIONS = frozenset({"IF", "MIN", "MAX", "SUM", "SUMIF", "COUNTIF", "COUNTA", "SQRT", "ROUND"})
_FUNCTION_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\(")


class FormulaSheet(Worksheet):  # type: ignore[misc]  # xlsxwriter has no type information: Any
    """A worksheet whose formulas that call only CLASSIC_FUNCTIONS skip XlsxWriter's function renaming (some 30
    regular-expression passes a formula; the power workbook has a few per device), and whose common cells are written
    in one string each; every other formula and cell goes through XlsxWriter's own code, so the bytes are the same.
    Used through ``add_worksheet(name, FormulaSheet)``, XlsxWriter's hook for worksheet subclasses."""

    def _write_cell(self, row: int, col: int, cell: Any) -> None:
        """A number, a shared string, a boolean or a formula with a number for its value, as XlsxWriter writes it, in
        one string (its r and s attributes, a cell name and a format index, need no escaping); XlsxWriter's writer
        searches each attribute for characters to escape. Any other cell, or one formatted by its row or column,
        goes through XlsxWriter's own writer."""
        kind = type(cell)
        cell_format = cell.format
        if cell_format:
            style = f' s="{cell_format._get_xf_index()}"'
        else:
            row_info, column_info = self.row_info.get(row), self.col_info.get(col)
            if (row_info is not None and row_info.row_format) or (
                column_info is not None and column_info.column_format is not None
            ):
                super()._write_cell(row, col, cell)  # the cell takes its row's or column's format
                return
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
        prepared: str = super()._prepare_formula(formula, expand_future_functions)  # xlsxwriter has no types
        return prepared


class InlineTextSheet(Worksheet):  # type: ignore[misc]  # xlsxwriter has no type information: Any
    """A worksheet for constant-memory workbooks (whose text cells are inline strings) with a faster way through
    XlsxWriter's innermost cell loop, for the cable workbooks' millions of cells. Used through
    ``add_worksheet(name, InlineTextSheet)``, XlsxWriter's hook for worksheet subclasses; the sheet's XML is the same
    bytes as XlsxWriter's own cell by cell (tests/test_tables.py holds it to that), but for a text
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

    def write_guarded(self, row: int, values: Sequence[object], guarded: Sequence[int], quoted: Format) -> None:
        """write_values, with `quoted` (a quote-prefix format) on each text in the `guarded` columns (those that may
        hold a catalog's text) that looks like a formula."""
        for col in guarded:
            value = values[col]
            if isinstance(value, str) and needs_quote(value):
                formats: list[Format | None] = [None] * len(values)
                for c in guarded:
                    text = values[c]
                    if isinstance(text, str) and needs_quote(text):
                        formats[c] = quoted
                self.write_values(row, values, formats)
                return
        self.write_values(row, values)

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
    """XlsxWriter's control-character escaping, skipped where it has nothing to do (see InlineTextSheet)."""
    if isinstance(data, str) and "_x" not in data and data.isprintable():
        return data
    return Worksheet._escape_control_characters(data)


# Texts whose cell XML InlineTextSheet keeps (device, rack and port names repeat from row to row); when full it starts
# afresh, so a column of ever-new texts (cable ids) costs a bounded table.
_TEXTS_KEPT = 16_384
