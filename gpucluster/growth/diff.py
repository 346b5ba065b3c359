"""What changes between two plans: the headline figures and every BOM line that is gained, lost or
repriced. A plain comparison over two plans, shared by `gpucluster diff` and its writers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpucluster.analyse.bom import SECTIONS, Bom, BomLine, build_bom
from gpucluster.inputs.prices import PriceList
from gpucluster.plan.model import AnalysedPlan

LineKey = tuple[str, str, str, str, str, float]  # BomLine.key: section, network, kind, item, part number, length


@dataclass(frozen=True, slots=True)
class LineChange:
    """One orderable thing whose quantity or price differs; `old`/`new` is None where it is absent."""

    old: BomLine | None
    new: BomLine | None

    @property
    def line(self) -> BomLine:
        """The line's identity and catalog facts (the new side where it exists)."""
        line = self.new or self.old
        if line is None:
            raise ValueError("a BOM line change has an old or a new side")
        return line

    @property
    def old_quantity(self) -> int:
        return self.old.quantity if self.old else 0

    @property
    def new_quantity(self) -> int:
        return self.new.quantity if self.new else 0

    @property
    def quantity_change(self) -> int:
        return self.new_quantity - self.old_quantity

    def extended(self, attribute: str) -> tuple[float | None, float | None]:
        """(old, new) extended value of a per-unit figure (power_max_w, unit_price ...)."""
        return (
            self.old.extended(getattr(self.old, attribute)) if self.old else None,
            self.new.extended(getattr(self.new, attribute)) if self.new else None,
        )

    @property
    def kind(self) -> str:
        """gain (more of it), loss (less of it) or repriced (same quantity, another price)."""
        if self.quantity_change > 0:
            return "gain"
        return "loss" if self.quantity_change < 0 else "repriced"


@dataclass(frozen=True, slots=True)
class FigureChange:
    """A headline figure (GPUs, switches, IT kW, price per currency) before and after."""

    name: str
    old: float
    new: float

    @property
    def change(self) -> float:
        return self.new - self.old


@dataclass
class PlanDiff:
    old: Bom
    new: Bom
    figures: list[FigureChange]  # every headline figure, changed or not, in a fixed order
    lines: list[LineChange]  # only lines that changed, in BOM order

    def of_kind(self, kind: str) -> list[LineChange]:
        return [change for change in self.lines if change.kind == kind]

    @property
    def changed_figures(self) -> list[FigureChange]:
        return [figure for figure in self.figures if figure.change]


def diff_plans(
    old: AnalysedPlan, new: AnalysedPlan, old_prices: PriceList | None = None, new_prices: PriceList | None = None
) -> PlanDiff:
    """Compare two plans through their BOMs (each priced by its own design's price list)."""
    return diff_boms(build_bom(old, old_prices), build_bom(new, new_prices))


def diff_boms(old: Bom, new: Bom) -> PlanDiff:
    old_lines = {line.key: line for line in old.lines}
    new_lines = {line.key: line for line in new.lines}
    changes = []
    for key in [*new_lines, *(k for k in old_lines if k not in new_lines)]:
        before, after = old_lines.get(key), new_lines.get(key)
        if before is not None and after is not None and _same_order(before, after):
            continue
        changes.append(LineChange(before, after))
    order = {key: i for i, key in enumerate(sorted({*old_lines, *new_lines}, key=_position(old, new)))}
    changes.sort(key=lambda change: order[change.line.key])
    return PlanDiff(old, new, _figures(old, new), changes)


def _same_order(a: BomLine, b: BomLine) -> bool:
    return a.quantity == b.quantity and (a.unit_price, a.currency) == (b.unit_price, b.currency)


def _position(old: Bom, new: Bom) -> Callable[[LineKey], tuple[int, tuple[int, int]]]:
    """Sort key keeping BOM order: new lines where they stand, lines only in the old BOM after their section."""
    rank = {line.key: (i, 0) for i, line in enumerate(new.lines)}
    for i, line in enumerate(old.lines):
        rank.setdefault(line.key, (i, 1))
    sections = [key for key, _title in SECTIONS]
    return lambda key: (sections.index(key[0]), rank[key])


def _figures(old: Bom, new: Bom) -> list[FigureChange]:
    names = list(dict.fromkeys([*old.counts, *new.counts]))
    figures = [FigureChange(name, float(old.counts.get(name, 0)), float(new.counts.get(name, 0))) for name in names]
    figures.append(FigureChange("Weight (kg)", old.total("weight_kg"), new.total("weight_kg")))
    figures.append(FigureChange("Rack units (U)", old.total("u_height"), new.total("u_height")))
    old_prices, new_prices = old.price_totals(), new.price_totals()
    for currency in sorted({*old_prices, *new_prices}):
        figures.append(
            FigureChange(f"Price ({currency})", old_prices.get(currency, 0.0), new_prices.get(currency, 0.0))
        )
    return figures
