"""The table-output layer (gpucluster/formats/tables/): the formula guard, CSV through it, and the fast sheets on
XlsxWriter's internals. The workbooks are read back with openpyxl, as a spreadsheet would read them: each fast path
must give the cells (values, types, formulas, number formats, quote prefixes) that XlsxWriter's public writers give,
and no text may come back as a formula. An XlsxWriter upgrade that changes the internals fails here."""

from __future__ import annotations

import csv
import io
import math
import re
import sys
import zipfile
from fractions import Fraction
from pathlib import Path

import openpyxl
import pytest
import xlsxwriter
from xlsxwriter.format import Format
from xlsxwriter.utility import RE_LEADING_WHITESPACE, RE_TRAILING_WHITESPACE
from xlsxwriter.worksheet import Worksheet

from gpucluster.formats.tables import (
    Book,
    FormulaSheet,
    GuardedCsvWriter,
    InlineTextSheet,
    cell_writers,
    csv_safe,
    csv_writer,
    fast_sheets,
    guarded_row,
    needs_quote,
    new_workbook,
)

FORMULA_LIKE = ["=SUM(A1:A9)", '=HYPERLINK("http://x","y")', "+1-555", "-IB1", "@cmd", "\tleading tab", "\rcr", "-2+3"]
NOT_FORMULAS = ["OSFP4P2", "-", "+", "-1.5", "+12", "1,024", "", "a=b", " =x", "IB1/1/1"]

# Texts that take each branch of XlsxWriter's inline-string path: XML specials, literal and lowercase _xHHHH_, control
# characters, leading/trailing whitespace of several kinds, non-characters, non-ASCII, beyond the BMP, formula-like
# text, rich-string look-alikes, and texts near and over Excel's 32,767 UTF-16 units (XlsxWriter truncates those).
HOSTILE = [
    *FORMULA_LIKE,
    "DC1.A01-09:OSFP4P2 / DC1.A05-01:IB1/1/1",
    "a < b & c > d \"quoted\" 'single' &amp;",
    "_x0041_ stays literal",
    "_x004a_ lower case",
    "bell\x07 and nul\x00 and esc\x1b and \x1f",
    "line\nbreak\r\n",
    " leading space",
    "trailing space ",
    " ",
    "\u00a0no-break leading",
    "ideographic trailing\u3000",
    "non-characters \ufffe \uffff",
    "Zürich Ω — 北京",
    "emoji \U0001f50c plug",
    "<r>not rich",
    "not rich</r>",
    "x" * 16_383,
    "y" * 16_384 + " <&>",
    "z" * 40_000,
    "\U0001f50c" * 20_000,
]
NUMBERS: list[object] = [0, 1, -7, 0.5, -0.0, 1 / 3, 1e20, 1.5e-300, 2**53 + 1, True, Fraction(3, 4), 12.25]


def _text(value: object) -> object:
    """A cell's text as a spreadsheet shows it: OOXML's _xHHHH_ escapes decoded (openpyxl leaves them)."""
    return _ESCAPE.sub(lambda found: chr(int(found[1], 16)), value) if isinstance(value, str) else value


_ESCAPE = re.compile(r"_x([0-9A-Fa-f]{4})_")


def _cells(path: Path) -> dict[str, dict[str, tuple[object, ...]]]:
    """Every non-empty cell of every sheet as a spreadsheet reads it: value, type, number format, quote prefix, bold."""
    book = openpyxl.load_workbook(path)
    return {
        sheet.title: {
            cell.coordinate: (_text(cell.value), cell.data_type, cell.number_format, cell.quotePrefix, cell.font.b)
            for row in sheet.iter_rows()
            for cell in row
            if cell.value is not None
        }
        for sheet in book.worksheets
    }


# ------------------------------------------------------------------------------------------------------ the guard


@pytest.mark.parametrize("text", FORMULA_LIKE)
def test_text_a_spreadsheet_would_run_as_a_formula_is_quoted(text: str) -> None:
    assert needs_quote(text)
    assert csv_safe(text) == "'" + text


@pytest.mark.parametrize("text", NOT_FORMULAS)
def test_plain_text_signed_numbers_and_lone_signs_are_left_as_they_are(text: str) -> None:
    assert not needs_quote(text)
    assert csv_safe(text) == text


def test_a_guarded_row_quotes_only_formula_like_texts() -> None:
    assert guarded_row(["=x", 3, None, "-", "@y", 2.5]) == ["'=x", 3, None, "-", "'@y", 2.5]


# ------------------------------------------------------------------------------------------------------------ CSV


def _written(rows: list[list[object]], guarded: tuple[int, ...]) -> list[list[str]]:
    out = io.StringIO()
    writer = GuardedCsvWriter(out, guarded)
    writer.writerow(["id", "port", "part"])
    writer.writerows(rows)
    return list(csv.reader(io.StringIO(out.getvalue())))


@pytest.mark.parametrize("remembered", [65_536, 1, 0])
def test_a_guarded_csv_column_quotes_formula_like_text_however_often_safe_texts_repeat(
    monkeypatch: pytest.MonkeyPatch, remembered: int
) -> None:
    """The guarded columns remember texts that need no guard, but a formula-like text is quoted wherever it comes,
    including after safe ones and once the remembered texts are full; unguarded columns are written as they are."""
    monkeypatch.setattr(csv_writer, "_SAFE_TEXTS", remembered)
    rows: list[list[object]] = [
        ["=id", "OSFP1", "MCP1"],
        ["c2", "OSFP1", "MCP1"],
        ["c3", "=HYPERLINK(1)", "MCP1"],
        ["c4", "OSFP1", "+1-2"],
        ["c5", "OSFP1", "-"],
        ["c6", "@SUM(A1)", "MCP1"],
        ["c7", "OSFP1", 3.5],
        ["c8", "OSFP1", "MCP1"],
    ]
    assert _written(rows, (1, 2)) == [
        ["id", "port", "part"],
        ["=id", "OSFP1", "MCP1"],  # column 0 is not guarded: the caller vouches for its texts
        ["c2", "OSFP1", "MCP1"],
        ["c3", "'=HYPERLINK(1)", "MCP1"],
        ["c4", "OSFP1", "'+1-2"],
        ["c5", "OSFP1", "-"],  # a lone dash is no formula
        ["c6", "'@SUM(A1)", "MCP1"],
        ["c7", "OSFP1", "3.5"],
        ["c8", "OSFP1", "MCP1"],
    ]
    assert _written(rows, (1,))[4] == ["c4", "OSFP1", "+1-2"]  # one guarded column: the others as they are


_HOSTILE_CELLS: list[object] = [
    "", " ", "plain", "a,b", 'say "hi"', '"', ",", "line\nbreak", "cr\rreturn", "\r\n", "tab\tbed", "nul\x00",
    "Zürich", "\u2028", "=SUM(A1)", "-", "+1", "'quoted", 0, -1, 10**20, 1.5, 10.0, -0.0, 1e20, float("nan"),
    float("inf"), None, True, False,
]  # fmt: skip


@pytest.mark.parametrize("remembered", [0, 3, 65_536])
@pytest.mark.parametrize("guarded", [None, (), (0, 2)])
@pytest.mark.parametrize("texts_repeat", [True, False])
def test_guarded_csv_rows_are_the_bytes_csv_writer_writes(
    monkeypatch: pytest.MonkeyPatch, remembered: int, guarded: tuple[int, ...] | None, texts_repeat: bool
) -> None:
    """GuardedCsvWriter makes each distinct cell's text once (csv.writer's where it must be quoted): every row, lone
    cells and empty rows too, reads as csv.writer would write it, whatever it remembers; and the same bytes when it
    leaves the rows to csv.writer (texts_repeat=False, the cable schedule's)."""
    monkeypatch.setattr(csv_writer, "_CSV_TEXTS", remembered)
    monkeypatch.setattr(csv_writer, "_CSV_LINES", 4)
    cells = _HOSTILE_CELLS
    rows: list[list[object]] = [[cells[(i * 7 + j) % len(cells)] for j in range(i % 5)] for i in range(3 * len(cells))]
    rows += [[cell, cell, cell] for cell in cells] + [[cell] for cell in cells] + [[], [""], [None], ["", ""]]
    if guarded:  # a guarded column is in every row
        rows = [row for row in rows if len(row) > max(guarded)]
    ours = io.StringIO()
    writer = GuardedCsvWriter(ours, guarded, texts_repeat)
    writer.writerow(["x", "y"])
    writer.writerows(rows[:40])
    writer.writerows(rows[40:])
    theirs = io.StringIO()
    plain = csv.writer(theirs, lineterminator="\n")
    plain.writerow(["x", "y"])
    if guarded is None:
        plain.writerows([guarded_row(row) for row in rows])
    elif guarded:
        plain.writerows([[csv_safe(c) if i in guarded else c for i, c in enumerate(row)] for row in rows])
    else:
        plain.writerows(rows)
    assert ours.getvalue() == theirs.getvalue()


# ------------------------------------------------------------------------------------ constant-memory text sheets


def _stream(path: Path, ours: bool, script: list[tuple], nan_inf_to_errors: bool = False) -> Path:
    """The workbook a script of writes makes: ours through InlineTextSheet.write_values, theirs through XlsxWriter's
    public cell writers one cell at a time."""
    options = {"constant_memory": True, "strings_to_numbers": False, "nan_inf_to_errors": nan_inf_to_errors}
    workbook = xlsxwriter.Workbook(str(path), options)
    formats: dict[str, Format] = {}
    sheet: Worksheet | None = None
    for step, *args in script:
        if step == "sheet":
            sheet = workbook.add_worksheet(args[0], InlineTextSheet if ours else None)
        elif step == "format":
            formats[args[0]] = workbook.add_format(args[1])
        assert sheet is not None or step == "format"
        if step == "column":
            sheet.set_column(args[0], args[0], 12, formats.get(args[1]) if args[1] else None)
        elif step == "row":
            sheet.set_row(args[0], args[1], formats.get(args[2]) if args[2] else None)
        elif step == "default_row":
            sheet.set_default_row(args[0])
        elif step == "comment":
            sheet.write_comment(args[0], args[1], args[2])
        elif step == "one":  # a single cell written by the public writer, in both workbooks
            row, col, value, name = args
            writer = sheet.write_string if isinstance(value, str) else sheet.write_number
            writer(row, col, value, formats.get(name))
        elif step == "values":
            row, values, names = args
            cell_formats = None if names is None else [formats.get(n) if n else None for n in names]
            if ours:
                assert isinstance(sheet, InlineTextSheet)
                sheet.write_values(row, values, cell_formats)
                continue
            for col, value in enumerate(values):
                if value is not None and value != "":
                    writer = sheet.write_string if isinstance(value, str) else sheet.write_number
                    writer(row, col, value, None if cell_formats is None else cell_formats[col])
    workbook.close()
    return path


def _same_cells(tmp_path: Path, script: list[tuple], nan_inf_to_errors: bool = False) -> dict:
    ours = _cells(_stream(tmp_path / "ours.xlsx", True, script, nan_inf_to_errors))
    assert ours == _cells(_stream(tmp_path / "theirs.xlsx", False, script, nan_inf_to_errors))
    return ours


@pytest.mark.parametrize("kept", [16_384, 3])
def test_write_values_reads_back_as_xlsxwriters_cells_for_hostile_texts_numbers_and_formats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: int
) -> None:
    """Rows of hostile texts and of every kind of number, with and without a cell's or a column's format, empty cells
    and skipped rows: a spreadsheet reads the cells XlsxWriter's own writers make, also when the texts' kept XML
    fills up and starts afresh; no text reads back as a formula."""
    monkeypatch.setattr(fast_sheets, "_TEXTS_KEPT", kept)
    script: list[tuple] = [
        ("sheet", "cables"),
        ("format", "quoted", {"quote_prefix": True}),
        ("format", "wide", {"num_format": "0.000"}),
        ("format", "column", {"bold": True}),
        ("column", 3, "column"),
    ]
    row = 1
    for text in HOSTILE:
        quoted = "quoted" if needs_quote(text) else None
        script.append(("values", row, [text, row * 1.25, "", text[:40]], [quoted, None, None, None]))
        script.append(("values", row + 1, [None, "", text, None], None))  # a row whose first and last cells are empty
        row += 3  # and a skipped row between
    for number in NUMBERS:
        script.append(("values", row, [f"n{row}", number, None, number], [None, "wide", None, None]))
        row += 1
    cells = _same_cells(tmp_path, script)["cables"]
    assert all(kind in ("s", "n") for _value, kind, *_ in cells.values())
    assert cells["A2"] == ("=SUM(A1:A9)", "s", "General", True, False)
    assert cells["B2"] == (1.25, "n", "General", False, False)
    assert cells["D2"][3:] == (False, True)  # the column's format
    texts = {value for value, kind, *_ in cells.values() if kind == "s"}
    assert {"=SUM(A1:A9)", "Zürich Ω — 北京", "emoji \U0001f50c plug", " leading space", "x" * 16_383} <= texts


RICH_LOOKALIKES = [
    "<r>not rich</r>",
    "<r><t>looks rich</t></r>",
    '<r></r></is><f>HYPERLINK("http://mk")</f><is><r></r>',  # would close the cell's text and add a formula
    " <r>x</r>",  # not shaped like one: escaped as any text
]


def test_a_text_shaped_like_a_rich_string_stays_text_on_every_path(tmp_path: Path) -> None:
    """XlsxWriter writes an inline text that starts with <r> and ends with </r> into the sheet's XML as it is (it
    takes it for a rich string it made): a part number could add a formula. InlineTextSheet's rows read back as the
    text; a row it hands to XlsxWriter's own cell writer (one with a height) gets its first "<" as OOXML's _x003C_
    escape: text too, with no formula and no rich run in either."""
    path = tmp_path / "rich.xlsx"
    workbook = new_workbook(path, "rich", constant_memory=True)
    sheet = workbook.add_worksheet("cables", InlineTextSheet)
    assert isinstance(sheet, InlineTextSheet)
    for row, text in enumerate(RICH_LOOKALIKES):
        sheet.write_values(2 * row + 1, [text, "fast path"])  # row 0 (XlsxWriter's held row at start) is its own
        sheet.set_row(2 * row + 2, 20)
        sheet.write_values(2 * row + 2, [text, "xlsxwriter's path"])
    workbook.close()
    with zipfile.ZipFile(path) as archive:
        xml = archive.read("xl/worksheets/sheet1.xml").decode()
    assert "<f>" not in xml and "<is><r>" not in xml
    read = openpyxl.load_workbook(path)["cables"]
    assert [read.cell(row=2 * row + 2, column=1).value for row in range(len(RICH_LOOKALIKES))] == RICH_LOOKALIKES
    theirs = [read.cell(row=2 * row + 3, column=1).value for row in range(len(RICH_LOOKALIKES))]
    assert theirs == [f"_x003C_{text[1:]}" if text.startswith("<r>") else text for text in RICH_LOOKALIKES]
    assert [_text(text) for text in theirs] == RICH_LOOKALIKES  # the escape reads as "<"
    assert all(cell.data_type == "s" for row in read.iter_rows() for cell in row if cell.value is not None)


@pytest.mark.slow  # every code point, twice
def test_xlsxwriters_whitespace_rule_is_str_isspace_for_every_character() -> None:
    """write_values sets xml:space="preserve" where the text's first or last character isspace(); XlsxWriter decides
    by its regular expressions ^\\s and \\s$. The same for every code point (alone, leading and trailing): a reader
    would drop whitespace the attribute does not keep."""
    for point in range(sys.maxunicode + 1):
        char = chr(point)
        if 0xD800 <= point <= 0xDFFF:
            continue
        space = char.isspace()
        assert bool(RE_LEADING_WHITESPACE.search(char + "x")) is space, hex(point)
        assert bool(RE_TRAILING_WHITESPACE.search("x" + char)) is space, hex(point)


def test_write_values_hands_unusual_rows_to_xlsxwriter_with_the_same_cells(tmp_path: Path) -> None:
    """A row with a row format or height, a comment, cells also written one by one (the later write wins), a row
    written twice, a write to a row already flushed, numbers XlsxWriter turns into errors (NaN, infinity), a sheet of
    taller default rows: the cells read back as XlsxWriter's own."""
    script: list[tuple] = [
        ("sheet", "first"),
        ("format", "row", {"bold": True}),
        ("format", "cell", {"num_format": "0.0"}),
        ("values", 1, ["a", 1, "b"], None),
        ("row", 2, 30, "row"),
        ("values", 2, ["row-formatted", 2.5, "c"], None),
        ("row", 3, 40, None),
        ("values", 3, ["tall", 3, None], None),
        ("comment", 4, 1, "a note"),
        ("values", 4, ["commented", 4, "d"], None),
        ("values", 5, ["overwritten", 5, "e"], None),
        ("one", 5, 0, "later wins", "cell"),
        ("one", 5, 4, "beyond", None),
        ("values", 6, ["twice", 6], None),
        ("values", 6, [None, 66, "again"], ["cell", None, "cell"]),
        ("values", 7, ["x", math.nan, math.inf, -math.inf], None),
        ("values", 8, ["seven", 8], None),
        ("values", 7, ["too late", 7], None),  # XlsxWriter ignores a row already written in constant-memory mode
        ("values", 9, [None, None], None),  # nothing to write
        ("sheet", "second"),
        ("default_row", 25),
        ("values", 1, ["taller rows", 1], None),
        ("values", 2, ["everywhere", 2], None),
    ]
    first = _same_cells(tmp_path, script, nan_inf_to_errors=True)["first"]
    assert first["A6"][0] == "later wins" and first["B7"][0] == 66 and first["B8"][:2] == ("=#NUM!", "f")
    assert "too late" not in {value for value, *_ in first.values()}


def test_write_values_raises_what_xlsxwriter_raises_for_a_number_it_refuses(tmp_path: Path) -> None:
    """Without nan_inf_to_errors XlsxWriter refuses NaN; write_values hands the row to it, so the error is its own
    (raised when the row is flushed, at the next row or at close)."""
    workbook = new_workbook(tmp_path / "nan.xlsx", "nan", constant_memory=True)
    sheet = workbook.add_worksheet("nan", InlineTextSheet)
    assert isinstance(sheet, InlineTextSheet)
    sheet.write_values(1, ["x", math.nan])
    with pytest.raises(TypeError, match="NAN/INF not supported"):
        sheet.write_values(2, ["y", 1])
    workbook.close()


def test_write_guarded_quotes_formula_like_texts_in_the_guarded_columns_only(tmp_path: Path) -> None:
    path = tmp_path / "guarded.xlsx"
    workbook = new_workbook(path, "guarded", constant_memory=True)
    quoted = workbook.add_format({"quote_prefix": True})
    sheet = workbook.add_worksheet("cables", InlineTextSheet)
    assert isinstance(sheet, InlineTextSheet)
    for row, text in enumerate(FORMULA_LIKE + NOT_FORMULAS, start=1):
        sheet.write_guarded(row, ["c", text, 1.5, text], [1, 3], quoted)
    sheet.write_guarded(len(FORMULA_LIKE) + len(NOT_FORMULAS) + 1, ["=not guarded", "x", 2, "y"], [1, 3], quoted)
    workbook.close()
    cells = _cells(path)["cables"]
    for row, text in enumerate(FORMULA_LIKE + NOT_FORMULAS, start=2):
        if text:
            assert cells[f"B{row}"] == cells[f"D{row}"] == (text, "s", "General", needs_quote(text), False)
        assert cells[f"C{row}"] == (1.5, "n", "General", False, False)
    last = len(FORMULA_LIKE) + len(NOT_FORMULAS) + 2
    assert cells[f"A{last}"] == ("=not guarded", "s", "General", False, False)  # text, as the caller wrote it


# ---------------------------------------------------------------------------------------- formula sheets and Book


def _formula_cells(path: Path, fast: bool) -> Path:
    """Every kind of cell the power workbook and the BOM write, and some they do not, with and without formats of
    their own, of their row and of their column: FormulaSheet through cell_writers, or XlsxWriter's public path."""
    workbook = new_workbook(path, "cells")
    sheet = workbook.add_worksheet("cells", FormulaSheet if fast else None)
    kw = workbook.add_format({"num_format": "#,##0.00"})
    bold = workbook.add_format({"bold": True})
    sheet.set_column(0, 1, 12)  # widths only
    sheet.set_column(7, 7, 12, bold)  # a column format
    sheet.set_row(3, 30, bold)  # a row format
    if fast:
        text, number, formula, boolean = cell_writers(sheet)
    else:
        text, number, formula = sheet.write_string, sheet.write_number, sheet.write_formula
        boolean = sheet.write_boolean
    for row in range(1, 6):
        r = row + 1
        text(row, 0, f'rack-{row} <&> "q"')
        text(row, 1, "_x0041_ bell\x07", bold)
        number(row, 2, row * 1.1, kw)
        number(row, 3, 10**row)
        formula(row, 4, f"=C{r}*D{r}", kw, row * 1.1 * 10**row)
        formula(row, 5, f'=IF(C{r}>0,"<&>",D{r})', None, 7)
        formula(row, 6, f"=SUMIFS(C2:C6,A2:A6,A{r})", kw, 1.5)  # not a classic function: XlsxWriter prepares it
        number(row, 7, row)  # takes its column's format
        formula(row, 8, f"=C{r}>1", None, True)
        formula(row, 9, f'=IF(C{r}>1,"x","")', None, "")
        formula(row, 10, f"=1/0+C{r}", None, "#DIV/0!")
        formula(row, 11, f"=A{r}", None, "text")
        formula(row, 12, f"=_xlfn.STDEV.S(C2:C6)+LEN(A{r})", None, 2)  # a future function, prefixed
        boolean(row, 13, row % 2 == 0)
        boolean(row, 14, row % 2 == 1, bold)
        number(row, 15, 1 / (row + 2))  # all 17 significant digits
    workbook.close()
    return path


def test_formula_sheets_cells_read_back_as_xlsxwriters_with_their_formulas_and_values(tmp_path: Path) -> None:
    ours = _formula_cells(tmp_path / "ours.xlsx", fast=True)
    theirs = _formula_cells(tmp_path / "theirs.xlsx", fast=False)
    cells = _cells(ours)["cells"]
    assert cells == _cells(theirs)["cells"]
    assert cells["E2"] == ("=C2*D2", "f", "#,##0.00", False, False)
    assert cells["H4"][4] and cells["A4"][4]  # a column's and a row's format
    assert cells["G3"][0] == "=SUMIFS(C2:C6,A2:A6,A3)" and cells["N2"][:2] == (False, "b")
    values = openpyxl.load_workbook(ours, data_only=True)["cells"]  # what a viewer that does not recalculate shows
    assert [values[c].value for c in ("E2", "F2", "I3", "K2", "L2", "M2")] == [11.0, 7, True, "#DIV/0!", "text", 2]


def test_book_text_is_text_never_a_formula_and_quoted_where_it_looks_like_one(tmp_path: Path) -> None:
    """Book.text and a workbook's write() of hostile text: string cells, quote-prefixed where a spreadsheet would
    run them as formulas when edited; a link-like text stays text too."""
    path = tmp_path / "book.xlsx"
    book = Book(path, "title =HYPERLINK", "subject")
    sheet = book.sheet("Summary", "a & b")
    for row, text in enumerate(FORMULA_LIKE + NOT_FORMULAS):
        book.text(sheet, row, 0, text)
        sheet.write(row, 1, text)  # XlsxWriter's write(), which would make a formula or link of it by default
    sheet.write(0, 2, "http://example.com/x")
    book.close()
    cells = _cells(path)["Summary"]
    for row, text in enumerate(FORMULA_LIKE + NOT_FORMULAS, start=1):
        if text:
            assert cells[f"A{row}"][:4] == (text, "s", "General", needs_quote(text))
            assert cells[f"B{row}"][:2] == (text, "s")
    assert cells["C1"][:2] == ("http://example.com/x", "s")
    properties = openpyxl.load_workbook(path).properties
    assert (properties.title, properties.subject, properties.creator) == ("title =HYPERLINK", "subject", "gpucluster")
