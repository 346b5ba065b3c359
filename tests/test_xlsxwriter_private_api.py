"""The cable workbooks lean on XlsxWriter internals (pyproject: xlsxwriter>=3.2): Worksheet._write_string and
_write_number (write_string/write_number without their A1-notation decorator), the _escape_control_characters hook
InlineTextSheet overrides, and the constant-memory row flush (_write_single_row, previous_row, table, row_info,
comments, col_info, Format._get_xf_index) that InlineTextSheet.write_values replaces with its own row XML. An
XlsxWriter upgrade that drops, renames or changes them fails here, not in a workbook: each test compares our sheet's
bytes with plain XlsxWriter's for the same cells, over texts and numbers that take every branch of its cell writer.
FormulaSheet leans on _write_formula and _write_boolean (undecorated too) and on the _write_cell it overrides, with
the cell tuples it reads."""

from __future__ import annotations

import math
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

from gpucluster.artifacts import _xlsx
from gpucluster.artifacts._xlsx import CREATED, FormulaSheet, InlineTextSheet

CELLS = ["OSFP4P2", "DC1.A01-09:OSFP4P2", "_x0041_ literal", "bell\x07", "=SUM(A1)", "Zürich", " padded "]

# Texts that take each branch of XlsxWriter's inline-string path: XML specials (& < > and " which it leaves), literal
# and lowercase _xHHHH_, every control character kind, leading/trailing whitespace of several kinds (its regex's
# \s), non-characters, non-ASCII, beyond the BMP, formula-like text, a "rich string" look-alike (written as it is),
# and texts near and over Excel's 32,767 UTF-16 units (XlsxWriter truncates those).
HOSTILE = [
    "OSFP4P2",
    "DC1.A01-09:OSFP4P2 / DC1.A05-01:IB1/1/1",
    "a < b & c > d \"quoted\" 'single' &amp;",
    "only less < than",
    "only greater > than",
    "only ampersand & here",
    '"double quotes" only',
    "_x0041_ stays literal",
    "_x004a_ lower case",
    "under_x_score and _x12_ short",
    "tab\there",
    "\tleading tab",
    "trailing tab\t",
    "bell\x07 and nul\x00 and esc\x1b and \x1f",
    "line\nbreak\r\n",
    "\nleading newline",
    " leading space",
    "trailing space ",
    " ",
    "\u00a0no-break leading",
    "ideographic trailing\u3000",
    "line separator\u2028",
    "\x85 next line",
    "non-characters \ufffe \uffff",
    "Zürich Ω — 北京",
    "emoji \U0001f50c plug",
    "\x7f delete",
    "=SUM(A1:A9)",
    "+1-555",
    "-IB1",
    "@cmd",
    "<r>not rich",
    "not rich</r>",
    "x" * 16_383,
    "y" * 16_384 + " <&>",
    "z" * 40_000,
    "\U0001f50c" * 20_000,
]
NUMBERS: list[object] = [0, 1, -7, 0.5, -0.0, 1 / 3, 1e20, 1.5e-300, 2**53 + 1, True, Fraction(3, 4), 12.25]


def _write(path: Path, ours: bool, script: list[tuple], options: dict | None = None) -> bytes:
    """The workbook a script of writes makes: ours through InlineTextSheet.write_values, theirs through plain
    XlsxWriter's public cell writers one cell at a time. Returns the whole file's bytes."""
    workbook = xlsxwriter.Workbook(str(path), {"constant_memory": True, "strings_to_numbers": False, **(options or {})})
    workbook.set_properties({"created": CREATED})
    formats: dict[str, Format] = {}
    sheets: dict[str, Worksheet] = {}
    for step, *args in script:
        if step == "sheet":
            sheets[args[0]] = workbook.add_worksheet(args[0], InlineTextSheet if ours else None)
            sheet = sheets[args[0]]
        elif step == "format":
            formats[args[0]] = workbook.add_format(args[1])
        elif step == "column":
            sheet.set_column(args[0], args[0], 12, formats.get(args[1]) if args[1] else None)
        elif step == "row":
            sheet.set_row(args[0], args[1], formats.get(args[2]) if args[2] else None)
        elif step == "default_row":
            sheet.set_default_row(args[0])
        elif step == "comment":
            sheet.write_comment(args[0], args[1], args[2])
        elif step == "header":
            sheet.write_row(0, 0, args[0], formats[args[1]])
        elif step == "one":  # a single cell written by the public writer, in both workbooks
            row, col, value, name = args
            if isinstance(value, str):
                sheet.write_string(row, col, value, formats.get(name))
            else:
                sheet.write_number(row, col, value, formats.get(name))
        elif step == "values":
            row, values, names = args
            cell_formats = None if names is None else [formats.get(n) if n else None for n in names]
            if ours:
                assert isinstance(sheet, InlineTextSheet)
                sheet.write_values(row, values, cell_formats)
            else:
                for col, value in enumerate(values):
                    if value is None or value == "":
                        continue
                    cell_format = None if cell_formats is None else cell_formats[col]
                    if isinstance(value, str):
                        sheet.write_string(row, col, value, cell_format)
                    else:
                        sheet.write_number(row, col, value, cell_format)
    workbook.close()
    return path.read_bytes()


def _same(tmp_path: Path, script: list[tuple], options: dict | None = None) -> bytes:
    ours = _write(tmp_path / "ours.xlsx", True, script, options)
    assert ours == _write(tmp_path / "theirs.xlsx", False, script, options)
    return ours


def _sheet_xml(data: bytes, tmp_path: Path, number: int = 1) -> str:
    (tmp_path / "probe.xlsx").write_bytes(data)
    with zipfile.ZipFile(tmp_path / "probe.xlsx") as archive:
        return archive.read(f"xl/worksheets/sheet{number}.xml").decode()


@pytest.mark.parametrize("kept", [16_384, 3])
def test_write_values_writes_xlsxwriters_bytes_for_hostile_texts_numbers_and_formats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: int
) -> None:
    """Rows of hostile texts and of every kind of number, with and without a cell's or a column's format, empty
    cells and skipped rows: the file is byte for byte plain XlsxWriter's (styles included, so formats get their
    indices in the same order), also when the texts' kept XML fills up and starts afresh."""
    monkeypatch.setattr(_xlsx, "_TEXTS_KEPT", kept)
    script: list[tuple] = [
        ("sheet", "cables"),
        ("format", "header", {"bold": True, "bg_color": "#DDDDDD", "border": 1}),
        ("format", "quoted", {"quote_prefix": True}),
        ("format", "wide", {"num_format": "0.000"}),
        ("format", "column", {"italic": True}),
        ("column", 0, None),
        ("column", 3, "column"),
        ("header", ["text", "number", "other", "column-formatted"], "header"),
    ]
    row = 1
    for text in HOSTILE:
        quoted = "quoted" if text.startswith(("=", "+", "-", "@")) else None
        script.append(("values", row, [text, row * 1.25, "", text[:40]], [quoted, None, None, None]))
        script.append(("values", row + 1, [None, "", text, None], None))  # a row whose first and last cells are empty
        row += 3  # and a skipped row between
    for number in NUMBERS:
        script.append(("values", row, [f"n{row}", number, None, number], [None, "wide", None, None]))
        row += 1
    ours = _same(tmp_path, script)
    xml = _sheet_xml(ours, tmp_path)
    assert "_x005F_x0041_" in xml and "_x0007_" in xml and 'xml:space="preserve"' in xml and "&lt;r&gt;not" in xml


RICH_LOOKALIKES = [
    "<r>not rich</r>",
    "<r><t>looks rich</t></r>",
    '<r></r></is><f>HYPERLINK("http://mk")</f><is><r></r>',  # would close the cell's text and add a formula
    "<r>_x0041_ and a bell\x07</r>",
    " <r>x</r>",  # not shaped like one: escaped as any text
]


def test_a_text_shaped_like_a_rich_string_stays_text_on_every_path(tmp_path: Path) -> None:
    """XlsxWriter writes an inline text that starts with <r> and ends with </r> into the sheet's XML as it is (it
    takes it for a rich string it made): a part number could add a formula. InlineTextSheet's rows write it as text
    that a spreadsheet reader reads back exactly; a row it hands to XlsxWriter's own cell writer (one with a height)
    gets its first "<" as OOXML's _x003C_ escape: text too, with no formula and no rich run in either."""
    path = tmp_path / "rich.xlsx"
    workbook = xlsxwriter.Workbook(str(path), {"constant_memory": True, "strings_to_numbers": False})
    sheet = workbook.add_worksheet("cables", InlineTextSheet)
    assert isinstance(sheet, InlineTextSheet)
    for row, text in enumerate(RICH_LOOKALIKES):
        sheet.write_values(2 * row + 1, [text, "fast path"])  # row 0 (XlsxWriter's held row at start) is its own
        sheet.set_row(2 * row + 2, 20)
        sheet.write_values(2 * row + 2, [text, "xlsxwriter's path"])
    workbook.close()
    xml = _sheet_xml(path.read_bytes(), tmp_path)
    assert "<f>" not in xml and "<is><r>" not in xml
    read = openpyxl.load_workbook(path)["cables"]
    escaped = [Worksheet._escape_control_characters(text) for text in RICH_LOOKALIKES]  # openpyxl reads _xHHHH_ as is
    fast = [read.cell(row=2 * row + 2, column=1).value for row in range(len(RICH_LOOKALIKES))]
    assert fast == escaped
    theirs = [read.cell(row=2 * row + 3, column=1).value for row in range(len(RICH_LOOKALIKES))]
    assert theirs == [f"_x003C_{text[1:]}" if text.startswith("<r>") else text for text in escaped]


def test_xlsxwriters_whitespace_rule_is_str_isspace_for_every_character() -> None:
    """write_values sets xml:space="preserve" where the text's first or last character isspace(); XlsxWriter decides
    by its regular expressions ^\\s and \\s$. The same for every code point (alone, leading and trailing)."""
    for point in range(sys.maxunicode + 1):
        char = chr(point)
        if 0xD800 <= point <= 0xDFFF:
            continue
        space = char.isspace()
        assert bool(RE_LEADING_WHITESPACE.search(char + "x")) is space, hex(point)
        assert bool(RE_TRAILING_WHITESPACE.search("x" + char)) is space, hex(point)


def test_write_values_hands_unusual_rows_to_xlsxwriter_with_the_same_bytes(tmp_path: Path) -> None:
    """A row with a row format or height, a comment, cells also written one by one (the later write wins), a row
    written twice, a write to a row already flushed, numbers XlsxWriter turns into formulas (NaN, infinity): the
    sheet hands them to XlsxWriter and the bytes stay its own."""
    script: list[tuple] = [
        ("sheet", "first"),
        ("format", "row", {"bold": True}),
        ("format", "cell", {"italic": True}),
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
    ours = _same(tmp_path, script, {"nan_inf_to_errors": True})
    first = _sheet_xml(ours, tmp_path)
    assert "later wins" in first and "overwritten" not in first and "too late" not in first and "#NUM!" in first


def test_write_values_raises_what_xlsxwriter_raises_for_a_number_it_refuses(tmp_path: Path) -> None:
    """Without nan_inf_to_errors XlsxWriter refuses NaN; write_values hands the row to it, so the error is its own
    (raised when the row is flushed, at the next row or at close)."""
    workbook = xlsxwriter.Workbook(str(tmp_path / "nan.xlsx"), {"constant_memory": True})
    sheet = workbook.add_worksheet("nan", InlineTextSheet)
    assert isinstance(sheet, InlineTextSheet)
    sheet.write_values(1, ["x", math.nan])
    with pytest.raises(TypeError, match="NAN/INF not supported"):
        sheet.write_values(2, ["y", 1])
    workbook.close()


def _sheet(path: Path, sheet_class: type | None, private: bool) -> bytes:
    workbook = xlsxwriter.Workbook(str(path), {"constant_memory": True, "strings_to_numbers": False})
    workbook.set_properties({"created": CREATED})
    sheet = workbook.add_worksheet("cables", sheet_class)
    quoted = workbook.add_format({"quote_prefix": True})
    text, number = (sheet._write_string, sheet._write_number) if private else (sheet.write_string, sheet.write_number)
    for row, cell in enumerate(CELLS, start=1):
        text(row, 0, cell, quoted if cell.startswith("=") else None)
        number(row, 1, row * 1.5)
    workbook.close()
    with zipfile.ZipFile(path) as archive:
        return archive.read("xl/worksheets/sheet1.xml")


def test_the_private_cell_writers_and_escaping_hook_write_what_the_public_ones_write(tmp_path: Path) -> None:
    assert _sheet(tmp_path / "ours.xlsx", InlineTextSheet, True) == _sheet(tmp_path / "public.xlsx", None, False)


def test_xlsxwriter_still_escapes_inline_strings_through_the_hook_inline_text_sheet_overrides(
    tmp_path: Path, monkeypatch
) -> None:
    seen: list[object] = []
    original = Worksheet._escape_control_characters

    def counting(data: object) -> object:
        seen.append(data)
        return original(data)

    monkeypatch.setattr(Worksheet, "_escape_control_characters", staticmethod(counting))
    _sheet(tmp_path / "plain.xlsx", None, True)
    assert set(CELLS) <= set(seen)  # each cell's text went through the hook InlineTextSheet overrides


def test_the_xlsxwriter_internals_write_values_reads_are_still_there(tmp_path: Path) -> None:
    """write_values reads and sets these; a rename would otherwise show only as a wrong file."""
    workbook = xlsxwriter.Workbook(str(tmp_path / "names.xlsx"), {"constant_memory": True})
    sheet = workbook.add_worksheet("names", InlineTextSheet)
    for name in (
        "previous_row",
        "table",
        "row_info",
        "comments",
        "col_info",
        "excel_version",
        "default_row_height",
        "original_row_height",
        "xls_strmax",
        "xls_rowmax",
        "xls_colmax",
        "constant_memory",
        "fh",
    ):
        assert hasattr(sheet, name), name
    for method in ("_write_single_row", "_write_string", "_write_number", "_check_dimensions", "_write_cell"):
        assert callable(getattr(Worksheet, method)), method
    assert callable(Format._get_xf_index)
    assert (sheet.previous_row, sheet.excel_version, sheet.xls_strmax) == (0, 2007, 32767)
    assert sheet.default_row_height == sheet.original_row_height
    workbook.close()


def _cells(path: Path, sheet_class: type | None, private: bool) -> bytes:
    """A sheet of every kind of cell the power workbook and the BOM write, and some they do not, with and without
    formats of their own, of their row and of their column, as FormulaSheet's private path or the public one."""
    workbook = xlsxwriter.Workbook(str(path), {"strings_to_numbers": False})
    workbook.set_properties({"created": CREATED})
    sheet = workbook.add_worksheet("cells", sheet_class)
    kw = workbook.add_format({"num_format": "#,##0.00"})
    bold = workbook.add_format({"bold": True})
    sheet.set_column(0, 1, 12)  # widths only
    sheet.set_column(7, 7, 12, bold)  # a column format
    sheet.set_row(3, 30, bold)  # a row format
    if private:
        text, number, formula, boolean = (
            sheet._write_string,
            sheet._write_number,
            sheet._write_formula,
            sheet._write_boolean,
        )
    else:
        text, number, formula, boolean = (
            sheet.write_string,
            sheet.write_number,
            sheet.write_formula,
            sheet.write_boolean,
        )
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
        boolean(row, 12, row % 2 == 0)
        boolean(row, 13, row % 2 == 1, bold)
    workbook.close()
    with zipfile.ZipFile(path) as archive:
        return archive.read("xl/worksheets/sheet1.xml")


def test_formula_sheet_writes_every_kind_of_cell_as_xlsxwriter_does(tmp_path: Path) -> None:
    ours = _cells(tmp_path / "ours.xlsx", FormulaSheet, True)
    assert ours == _cells(tmp_path / "public.xlsx", None, False)
    assert b'<c r="H4" s="' in ours and b"<f>IF(C2&gt;0" in ours  # a row's format, an escaped formula
