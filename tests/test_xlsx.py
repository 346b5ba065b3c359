"""The spreadsheet helpers every workbook and CSV writer shares (gpucluster/artifacts/_xlsx.py): their shortcuts
for the largest files change no byte and let no formula through."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import openpyxl
import pytest
import xlsxwriter

from gpucluster.artifacts import _xlsx
from gpucluster.artifacts._xlsx import CREATED, GuardedCsvWriter, InlineTextSheet

# Texts that take each branch of XlsxWriter's inline-string escaping: plain, XML specials, a literal "_xHHHH_",
# control characters, leading and trailing spaces, non-characters, non-ASCII and a character beyond the BMP.
TEXTS = [
    "OSFP4P2",
    "IB1/1/1",
    "DC1.A01-09:OSFP4P2 / DC1.A05-01:IB1/1/1",
    "a < b & c > d \"quoted\" 'single'",
    "_x0041_ stays literal",
    "under_x_score",
    "tab\there",
    "bell\x07 and nul\x00 and esc\x1b",
    "line\nbreak\r\n",
    " leading space",
    "trailing space ",
    "non-characters \ufffe \uffff",
    "Zürich Ω — 北京",
    "emoji \U0001f50c plug",
    "\x7f delete",
    "no-break\u00a0space",
]


def _sheet_xml(path: Path, sheet_class: type | None) -> bytes:
    workbook = xlsxwriter.Workbook(str(path), {"constant_memory": True, "strings_to_numbers": False})
    workbook.set_properties({"created": CREATED})
    sheet = workbook.add_worksheet("texts", sheet_class)
    for row, text in enumerate(TEXTS):
        sheet.write_string(row, 0, text)
        sheet.write_number(row, 1, row + 0.5)
    workbook.close()
    with zipfile.ZipFile(path) as archive:
        return archive.read("xl/worksheets/sheet1.xml")


def test_inline_text_sheet_writes_the_same_bytes_as_xlsxwriters_own_escaping(tmp_path: Path) -> None:
    """InlineTextSheet skips XlsxWriter's control-character escaping only for texts it would leave alone: the sheet
    is byte for byte XlsxWriter's, and a spreadsheet reader gets every text back."""
    ours = _sheet_xml(tmp_path / "ours.xlsx", InlineTextSheet)
    assert ours == _sheet_xml(tmp_path / "theirs.xlsx", None)
    assert b"_x0007_" in ours and b"_x005F_x0041_" in ours  # the escaping still ran where it had work to do
    sheet = openpyxl.load_workbook(tmp_path / "ours.xlsx").worksheets[0]
    values = [row[0] for row in sheet.iter_rows(values_only=True)]
    # a reader gets every text back that needs no _xHHHH_ escape (those are XlsxWriter's to write, as before)
    plain = [i for i, text in enumerate(TEXTS) if text.isprintable() and "_x" not in text]
    assert len(plain) == 8 and [values[i] for i in plain] == [TEXTS[i] for i in plain]


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
    monkeypatch.setattr(_xlsx, "_SAFE_TEXTS", remembered)
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
    monkeypatch.setattr(_xlsx, "_CSV_TEXTS", remembered)
    monkeypatch.setattr(_xlsx, "_CSV_LINES", 4)
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
        plain.writerows([_xlsx._guarded(row) for row in rows])
    elif guarded:
        plain.writerows([[_xlsx.csv_safe(c) if i in guarded else c for i, c in enumerate(row)] for row in rows])
    else:
        plain.writerows(rows)
    assert ours.getvalue() == theirs.getvalue()
