"""CSV tables: csv.writer's bytes with every text through the formula guard (guard.py)."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import itemgetter
from typing import TextIO

from gpucluster.formats.tables.guard import guarded_row, needs_quote


class GuardedCsvWriter:
    """The one way we write CSV: csv.writer with every cell through the guard, so no text from a design, catalog or
    price list opens as a formula in a spreadsheet. A writer of very many rows may name the columns (0-based) that can
    hold such text (`guarded`); the header row and those columns are then guarded, and the others (ids and names the
    planner makes, numbers) are written as they are. `texts_repeat`: most cells' texts come back row after row (port
    names, part numbers, sources), so each distinct text is decided once (_lines); a table whose rows are mostly texts
    and numbers of their own (the cable schedule: ids, labels, lengths) passes False and its rows go to csv.writer,
    which is then the faster."""

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
        self._writer.writerow(guarded_row(row))

    def writerows(self, rows: Iterable[Sequence[object]]) -> None:
        if self._columns is None:
            rows = map(guarded_row, rows)
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
            self._safe.update(cell for cell in picked if isinstance(cell, str) and not needs_quote(cell))
        if not risky:
            return row
        cells = list(row)
        for i in risky:
            cells[i] = "'" + str(cells[i])
        return cells


_SAFE_TEXTS = 65_536  # at most this many remembered safe texts: a column of ever-new texts is checked cell by cell
_CSV_TEXTS = 65_536  # at most this many remembered cell texts (GuardedCsvWriter._lines)
_CSV_LINES = 512  # lines written to the handle at once


def _formula_like(cell: object) -> bool:
    return isinstance(cell, str) and needs_quote(cell)


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
