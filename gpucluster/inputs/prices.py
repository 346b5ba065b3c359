"""The buyer's price list: part number -> unit price and currency, from a CSV file the design names.

The file is a quote exported from a spreadsheet::

    part_number,unit_price,currency,note
    920-9B210-00FN-0M0,28500,USD,quote Q-2291

A row's `part_number` matches a BOM line's vendor part number, or its catalog id for parts the
catalog gives no part number. Parts the list does not name stay unpriced; nothing is guessed.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpucluster.errors import DesignError, Problem
from gpucluster.inputs.limits import Name, Text, visible_strings
from gpucluster.inputs.yamlsource import decode_utf8, read_limited

PRICE_COLUMNS = ("part_number", "unit_price", "currency", "note")
MAX_PRICE_LIST_BYTES = 8 << 20  # 8 MiB: a quote for every part in the catalog is a few kB
_REQUIRED = PRICE_COLUMNS[:3]


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    part_number: Name = Field(min_length=1)
    unit_price: float = Field(ge=0, le=1e12, allow_inf_nan=False)
    currency: str = Field(pattern=r"^[A-Z]{3}$", description="ISO 4217 code, e.g. USD")
    note: Text = ""

    _visible = field_validator("*")(visible_strings)


@dataclass(frozen=True, slots=True)
class Price:
    unit_price: float
    currency: str
    note: str = ""


@dataclass(frozen=True)
class PriceList:
    """Prices by part number (or catalog id), read from `path`."""

    path: Path
    prices: dict[str, Price]

    def price(self, part_number: str, catalog_id: str) -> Price | None:
        """The price of a part: by its vendor part number, else by its catalog id."""
        return self.prices.get(part_number) if part_number else self.prices.get(catalog_id)


def load_price_list(path: Path | str) -> PriceList:
    """Read a price-list CSV; every bad row is reported as file:line:column, nothing half-read."""
    path = Path(path)
    text = decode_utf8(read_limited(path, "price list", MAX_PRICE_LIST_BYTES), str(path))
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows = list(reader)
    except csv.Error as exc:  # a NUL byte, a field beyond the csv module's size limit, a stray quote
        problem = Problem(str(path), reader.line_num, 1, "", f"not a readable CSV row: {exc}")
        raise DesignError([problem]) from None
    header = [cell.strip() for cell in rows[0]] if rows else []
    problems = [
        Problem(str(path), 1, header.index(name) + 1 if name in header else 1, name, message)
        for name, message in _header_problems(header)
    ]
    if problems:
        raise DesignError(problems)
    prices: dict[str, Price] = {}
    for line, cells in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) > len(header):
            message = f"{len(cells)} cells for {len(header)} columns"
            problems.append(Problem(str(path), line, len(header) + 1, "", message))
            continue
        record = {name: cell for name, cell in zip(header, cells, strict=False) if cell.strip() or name in _REQUIRED}
        try:
            row = _Row.model_validate(record)
        except ValidationError as exc:
            for error in exc.errors():
                name = str(error["loc"][0]) if error["loc"] else ""
                column = header.index(name) + 1 if name in header else 1
                problems.append(Problem(str(path), line, column, name, error["msg"]))
            continue
        if row.part_number in prices:
            problems.append(Problem(str(path), line, 1, "part_number", f"{row.part_number[:60]!r} is priced twice"))
            continue
        prices[row.part_number] = Price(row.unit_price, row.currency, row.note)
    if problems:
        raise DesignError(problems)
    return PriceList(path, prices)


def _header_problems(header: list[str]) -> list[tuple[str, str]]:
    expected = ", ".join(PRICE_COLUMNS)
    if not header:
        return [("", f"empty price list; the first row names the columns: {expected}")]
    problems = [(name[:40], f"unknown column; allowed: {expected}") for name in header if name not in PRICE_COLUMNS]
    problems += [(name, f"missing column; the header must name {expected}") for name in _REQUIRED if name not in header]
    problems += [(name, "column named twice") for name in sorted(set(header)) if header.count(name) > 1]
    return problems
