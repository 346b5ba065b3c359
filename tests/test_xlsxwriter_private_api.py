"""The cable workbooks lean on three XlsxWriter internals (pyproject: xlsxwriter>=3.2): Worksheet._write_string and
_write_number (write_string/write_number without their A1-notation decorator) and the _escape_control_characters hook
InlineTextSheet overrides. An XlsxWriter upgrade that drops, renames or changes them fails here, not in a workbook."""

from __future__ import annotations

import zipfile
from pathlib import Path

import xlsxwriter
from xlsxwriter.worksheet import Worksheet

from gpucluster.artifacts._xlsx import CREATED, InlineTextSheet

CELLS = ["OSFP4P2", "DC1.A01-09:OSFP4P2", "_x0041_ literal", "bell\x07", "=SUM(A1)", "Zürich", " padded "]


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
