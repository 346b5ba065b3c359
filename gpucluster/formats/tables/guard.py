"""The one rule that keeps text text in a spreadsheet: a cell whose text a spreadsheet would run as a formula (when
typed, imported from CSV or edited) is marked as text, with a leading apostrophe in CSV and Excel's quote prefix in a
workbook. A security rule (OWASP "CSV Injection"): a design, catalog or price list must never put a live formula in
front of a buyer or an installer. Every CSV and workbook writer decides it here."""

from __future__ import annotations

import re
from collections.abc import Iterable

# A cell that starts with one of these is a formula to Excel, LibreOffice and Google Sheets when typed or imported
# from CSV (OWASP "CSV Injection"; tab and carriage return as well).
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[-+]?[0-9][0-9,]*(\.[0-9]+)?|[-+]")  # a signed number or a lone dash is no formula


def needs_quote(text: str) -> bool:
    """Whether a spreadsheet would take this text for a formula (a signed number or a lone sign it takes for what
    it is)."""
    return text.startswith(FORMULA_TRIGGERS) and not _PLAIN_NUMBER.fullmatch(text)


def csv_safe(value: object) -> object:
    """A CSV cell: text that a spreadsheet would run as a formula gets a leading apostrophe; anything else as it is."""
    if isinstance(value, str) and needs_quote(value):
        return "'" + value
    return value


def guarded_row(row: Iterable[object]) -> list[object]:
    """csv_safe of every cell of a row."""
    return [csv_safe(cell) for cell in row]
