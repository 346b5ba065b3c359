"""The table-output layer: every CSV and workbook a writer makes goes through it.

- guard.py: the one rule that keeps a cell's text from becoming a formula (a security rule).
- csv_writer.py: CSV through the guard (GuardedCsvWriter).
- workbook.py: workbooks with fixed properties, our number formats, table sheets and guarded text (Book).
- fast_sheets.py: the one module on XlsxWriter's internals (pinned in pyproject.toml), for the largest workbooks.
"""

from gpucluster.formats.tables.csv_writer import GuardedCsvWriter
from gpucluster.formats.tables.fast_sheets import CellWriters, FormulaSheet, InlineTextSheet, cell_writers
from gpucluster.formats.tables.guard import FORMULA_TRIGGERS, csv_safe, guarded_row, needs_quote
from gpucluster.formats.tables.workbook import (
    CREATED,
    DECIMAL_1,
    DECIMAL_2,
    INTEGER,
    PAPER_A3,
    PAPER_A4,
    Book,
    Column,
    column_letter,
    column_range,
    fit_row_height,
    new_workbook,
    print_setup,
    signed,
)

__all__ = [
    "CREATED",
    "DECIMAL_1",
    "DECIMAL_2",
    "FORMULA_TRIGGERS",
    "INTEGER",
    "PAPER_A3",
    "PAPER_A4",
    "Book",
    "CellWriters",
    "Column",
    "FormulaSheet",
    "GuardedCsvWriter",
    "InlineTextSheet",
    "cell_writers",
    "column_letter",
    "column_range",
    "csv_safe",
    "fit_row_height",
    "guarded_row",
    "needs_quote",
    "new_workbook",
    "print_setup",
    "signed",
]
