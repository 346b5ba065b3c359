"""bom-diff.xlsx: what a BOM gains and loses between two designs (quantities, power, price), with
every change a formula over the old and new values it is the difference of."""

from __future__ import annotations

from pathlib import Path

from gpucluster.analyse.bom import SECTION_TITLES
from gpucluster.formats.tables import DECIMAL_1, DECIMAL_2, INTEGER, PAPER_A3, Book, Column, signed
from gpucluster.formats.tables import column_letter as _letter
from gpucluster.growth.diff import LineChange, PlanDiff

FIGURE_COLUMNS = [Column("Figure", 30), Column("Old", 14, DECIMAL_1), Column("New", 14, DECIMAL_1)]
FIGURE_COLUMNS.append(Column("Change", 14, signed(DECIMAL_1)))


def write_bom_diff(diff: PlanDiff, path: Path) -> None:
    title = f"BOM diff: {diff.old.name} -> {diff.new.name}"
    book = Book(path, title, "gpucluster BOM diff")
    _figures(book, diff, title)
    _changes(book, diff, title)
    book.close()


def _figures(book: Book, diff: PlanDiff, title: str) -> None:
    sheet = book.table_sheet("Figures", FIGURE_COLUMNS, len(diff.figures), f"{title}: figures")
    for row, figure in enumerate(diff.figures, start=1):
        number_format = INTEGER if float(figure.old).is_integer() and float(figure.new).is_integer() else DECIMAL_1
        book.text(sheet, row, 0, figure.name)
        book.number(sheet, row, 1, figure.old, number_format)
        book.number(sheet, row, 2, figure.new, number_format)
        book.formula(sheet, row, 3, f"=C{row + 1}-B{row + 1}", figure.change, signed(number_format))


def _changes(book: Book, diff: PlanDiff, title: str) -> None:
    priced = bool(diff.old.price_list or diff.new.price_list)
    columns = [
        Column("Change", 9),
        Column("Section", 20),
        Column("Network", 10),
        Column("Kind", 16),
        Column("Catalog id", 26),
        Column("Vendor", 12),
        Column("Model", 30),
        Column("Part number", 22),
        Column("Length (m)", 8, DECIMAL_1),
    ]
    # (header, attribute, number format): old, new and change columns for each
    compared = [
        ("quantity", "quantity", INTEGER),
        ("maximum W", "power_max_w", INTEGER),
        ("typical W", "power_typical_w", INTEGER),
    ]
    if priced:
        compared.append(("price", "unit_price", DECIMAL_2))
    for header, _attribute, number_format in compared:
        columns += [
            Column(f"Old {header}", 12, number_format),
            Column(f"New {header}", 12, number_format),
            Column(f"{header[0].upper()}{header[1:]} change", 12, signed(number_format)),
        ]
    if priced:
        columns.append(Column("Currency", 8))
    columns.append(Column("Description", 60))
    sheet = book.table_sheet("Changes", columns, len(diff.lines), f"{title}: changed lines", PAPER_A3)
    for row, change in enumerate(diff.lines, start=1):
        line = change.line
        texts = [change.kind, SECTION_TITLES[line.section], line.network, line.kind, line.item, line.vendor]
        texts += [line.model, line.part_number]
        for col, text in enumerate(texts):
            book.text(sheet, row, col, text)
        book.number(sheet, row, 8, line.length_m, DECIMAL_1)
        col = 9
        for _header, attribute, number_format in compared:
            old, new = _old_new(change, attribute)
            book.number(sheet, row, col, old, number_format)
            book.number(sheet, row, col + 1, new, number_format)
            if old is not None and new is not None:
                formula = f"={_letter(col + 1)}{row + 1}-{_letter(col)}{row + 1}"
                book.formula(sheet, row, col + 2, formula, new - old, signed(number_format))
            col += 3
        if priced:
            book.text(sheet, row, col, line.currency)
            col += 1
        book.text(sheet, row, col, line.description)


def _old_new(change: LineChange, attribute: str) -> tuple[float | None, float | None]:
    """Old and new totals of a line: 0 on the side where the line is absent, None where the figure does
    not apply or is unknown (an unpriced part), so no difference is made up."""
    if attribute == "quantity":
        return float(change.old_quantity), float(change.new_quantity)
    old, new = change.extended(attribute)
    return (0.0 if change.old is None else old), (0.0 if change.new is None else new)


def report_lines(diff: PlanDiff) -> list[str]:
    """The diff as `gpucluster diff` prints it: gains, losses, repricings, then changed figures."""
    lines = [f"BOM diff: {diff.old.name} -> {diff.new.name}"]
    for kind, heading in (("gain", "gains"), ("loss", "losses"), ("repriced", "repriced")):
        changes = diff.of_kind(kind)
        if not changes:
            continue
        lines.append(f"{heading} ({len(changes)} lines):")
        for change in changes:
            line = change.line
            length = f"{line.length_m:g} m" if line.length_m is not None else ""
            what = " ".join(part for part in (line.model, length, line.part_number and f"[{line.part_number}]") if part)
            where = SECTION_TITLES[line.section].lower() + (f", {line.network}" if line.network else "")
            extra = []
            old_w, new_w = _old_new(change, "power_max_w")
            if old_w is not None and new_w is not None and new_w != old_w:
                extra.append(f"{(new_w - old_w) / 1000:+,.1f} kW max")
            old_price, new_price = _old_new(change, "unit_price")
            if old_price is not None and new_price is not None and new_price != old_price:
                extra.append(f"{new_price - old_price:+,.2f} {line.currency}")
            lines.append(
                f"  {change.quantity_change:+8,} x {what} ({where}): {change.old_quantity:,} -> {change.new_quantity:,}"
                + (f"; {', '.join(extra)}" if extra else "")
            )
    if not diff.lines:
        lines.append("no BOM line changes")
    changed = diff.changed_figures
    if changed:
        lines.append("figures:")
        width = max(len(f.name) for f in changed)
        for figure in changed:
            values = f"{_figure(figure.old)} -> {_figure(figure.new)} ({_figure(figure.change, '+')})"
            lines.append(f"  {figure.name:{width}}  {values}")
    return lines


def _figure(value: float, sign: str = "") -> str:
    return f"{value:{sign},.0f}" if float(value).is_integer() else f"{value:{sign},.1f}"
