"""Alternatives side by side (`gpucluster compare`): two or more designs, each planned afresh (alternatives are not
growth, so no plan lock is read), as rows of figures with each design's value and its delta against the first.

Every figure is read from the views the other artifacts print: the BOM's counts and lines (analyse/bom.py), the power
budget (analyse/budget.py), the plan's tiers and graph analyses, the floor (analyse/floor.py) and
the checkpoint analysis (training/checkpoint.py); nothing here computes a figure those views have. The writer is
gpucluster/artifacts/compare.py.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby
from operator import attrgetter

from gpucluster.analyse.bom import Bom
from gpucluster.analyse.budget import Budget
from gpucluster.analyse.floor import floor_space as floor_of
from gpucluster.plan.model import AnalysedPlan
from gpucluster.plan.registry import NETWORK_INFO
from gpucluster.training.checkpoint import CheckpointAnalysis

Value = float | str | None  # a number, a text (a model, the cooling), or None where a design has no such figure

NO_PRICE_LIST = "no price list"


@dataclass(frozen=True, slots=True)
class Alternative:
    """One design of a comparison: where it was read from, its plan and the views every figure is read from."""

    path: str
    plan: AnalysedPlan
    bom: Bom
    budget: Budget
    checkpoint: CheckpointAnalysis


@dataclass(frozen=True, slots=True)
class Row:
    """One figure of every design, in the designs' order; `digits` for numbers, `unit` after the name."""

    section: str
    name: str
    values: tuple[Value, ...]
    unit: str = ""
    digits: int = 0

    @property
    def numeric(self) -> bool:
        return all(v is None or isinstance(v, float) for v in self.values)

    @property
    def deltas(self) -> tuple[Value, ...]:
        """Each design's value less the first's (None where either has none); for texts "same" or "differs". The
        first design's own entry is None."""
        first = self.values[0]
        deltas: list[Value] = [None]
        for value in self.values[1:]:
            if isinstance(value, float) and isinstance(first, float):
                deltas.append(value - first)
            elif self.numeric:
                deltas.append(None)
            else:
                deltas.append("same" if value == first else "differs")
        return tuple(deltas)

    @property
    def differs(self) -> bool:
        """Whether any design's value differs from the first's (numbers as shown, at `digits`)."""
        return len({_shown(v, self.digits) for v in self.values}) > 1


@dataclass(frozen=True, slots=True)
class Comparison:
    """The designs compared (names and files, in the order given) and the rows, section by section."""

    names: tuple[str, ...]
    paths: tuple[str, ...]
    descriptions: tuple[str, ...]
    rows: tuple[Row, ...]

    @property
    def sections(self) -> list[tuple[str, list[Row]]]:
        """The rows grouped by section, in order (each section's rows stand together)."""
        return [(section, list(rows)) for section, rows in groupby(self.rows, key=attrgetter("section"))]


Section = Callable[[Sequence[Alternative]], list[Row]]


def compare_alternatives(alternatives: Sequence[Alternative]) -> Comparison:
    """Every section's rows for two or more planned designs."""
    if len(alternatives) < 2:
        raise ValueError("a comparison needs two or more designs")
    rows = [row for section in SECTIONS for row in section(alternatives)]
    return Comparison(
        names=tuple(a.plan.name for a in alternatives),
        paths=tuple(a.path for a in alternatives),
        descriptions=tuple(str(getattr(a.plan.design, "description", "") or "") for a in alternatives),
        rows=tuple(rows),
    )


def _number(value: float | None) -> float | None:
    return None if value is None else float(value)


def _counted(section: str, alternatives: Sequence[Alternative], names: Sequence[str], unit: str = "") -> list[Row]:
    """Rows of the BOM's headline counts (analyse/bom.py ``Bom.counts``) under their own names."""
    return [
        Row(section, name, tuple(_number(a.bom.counts.get(name)) for a in alternatives), unit)
        for name in names
        if any(name in a.bom.counts for a in alternatives)
    ]


def _per_key(
    section: str, alternatives: Sequence[Alternative], counts: Callable[[Alternative], dict[str, float]], unit: str = ""
) -> list[Row]:
    """One row per key any design has (in first-seen order), 0 where a design has none of it."""
    per_design = [counts(a) for a in alternatives]
    keys = list(dict.fromkeys(key for counted in per_design for key in counted))
    return [Row(section, key, tuple(float(c.get(key, 0)) for c in per_design), unit) for key in keys]


def systems(alternatives: Sequence[Alternative]) -> list[Row]:
    section = "Systems and GPUs"
    rows = [
        Row(section, "GPU server", tuple(a.plan.settings.server for a in alternatives)),
        Row(section, "GPU", tuple(a.plan.settings.gpu_model for a in alternatives)),
    ]
    names = ("GPUs", "GPUs in production", "GPU servers", "GPU servers in production", "Hot-spare GPU servers")
    return rows + _counted(section, alternatives, [*names, "Scalable units"])


def switches(alternatives: Sequence[Alternative]) -> list[Row]:
    """Switches per network (the BOM's counts) and per model (its switch lines over every network)."""
    section = "Switches"
    names = [f"Switches, {info.short}" for info in NETWORK_INFO.values()]
    rows = _counted(section, alternatives, [*names, "Switches"])
    return rows + _per_key(section, alternatives, lambda a: _line_quantities(a.bom, ("switch",)))


def cables_and_optics(alternatives: Sequence[Alternative]) -> list[Row]:
    """Cables and transceivers in all (the BOM's counts) and per part (its lines, every length of a part summed)."""
    section = "Cables and optics"
    rows = _counted(section, alternatives, ["Cables", "Transceivers"])
    return rows + _per_key(section, alternatives, lambda a: _line_quantities(a.bom, ("cable", "transceiver")))


def _line_quantities(bom: Bom, kinds: tuple[str, ...]) -> dict[str, float]:
    """Quantity per part (its model and catalog id) of the BOM lines of these kinds."""
    counts: Counter[str] = Counter()
    for line in bom.lines:
        if line.kind in kinds:
            counts[f"{line.model} ({line.item})"] += line.quantity
    return dict(counts)


def cost(alternatives: Sequence[Alternative]) -> list[Row]:
    """The BOM's price per currency where a design has a price list; which list, or "no price list"."""
    section = "Bill of materials"
    rows = [Row(section, "Price list", tuple(a.bom.price_list or NO_PRICE_LIST for a in alternatives))]
    totals = [a.bom.price_totals() if a.bom.price_list else None for a in alternatives]
    for currency in sorted({c for t in totals if t for c in t}):
        values = tuple(None if t is None else t.get(currency, 0.0) for t in totals)
        rows.append(Row(section, "Price", values, currency))
    if any(a.bom.price_list for a in alternatives):
        values = tuple(float(len(a.bom.unpriced())) if a.bom.price_list else None for a in alternatives)
        rows.append(Row(section, "Lines without a price", values))
    rows.append(Row(section, "BOM lines", tuple(float(len(a.bom.lines)) for a in alternatives)))
    return rows


def power_and_cooling(alternatives: Sequence[Alternative]) -> list[Row]:
    """The IT load (the plan's totals), the facility's (the power budget at the site's PUE) and the heat to each kind
    of cooling."""
    section = "Power and cooling"
    t = [a.plan.totals for a in alternatives]
    b = [a.budget for a in alternatives]
    rows = [
        Row(section, "IT power, typical", tuple(x.it_power_typical_kw for x in t), "kW", 1),
        Row(section, "IT power, peak", tuple(x.it_power_max_kw for x in t), "kW", 1),
        Row(section, "Facility power, typical", tuple(x.facility_typical_w / 1000 for x in b), "kW", 1),
        Row(section, "Facility power, peak", tuple(x.facility_max_w / 1000 for x in b), "kW", 1),
        Row(section, "PUE", tuple(x.pue for x in b), "", 2),
        Row(section, "Site cooling", tuple(x.site.cooling for x in b)),
        Row(section, "Heat to liquid, peak", tuple(x.total.liquid_w / 1000 for x in b), "kW", 1),
        Row(section, "Heat to air, peak", tuple(x.total.air_w / 1000 for x in b), "kW", 1),
    ]
    needed = [Counter(r.cooling_needed for r in x.racks) for x in b]
    for kind in sorted({k for n in needed for k in n}):
        rows.append(Row(section, f"Racks that need {kind} cooling", tuple(float(n[kind]) for n in needed)))
    return rows


def floor_space(alternatives: Sequence[Alternative]) -> list[Row]:
    """Racks per purpose (the plan's totals) and the floor the racks and CDUs stand on (analyse/floor.py, the figure
    the decision summary quotes): their footprint, and the floor with aisles they span."""
    section = "Floor space"
    rows = [Row(section, "Racks", tuple(float(a.plan.totals.racks) for a in alternatives))]
    rows += _per_key(section, alternatives, _racks_by_purpose)
    floors = [floor_of(a.plan, a.budget.cdus) for a in alternatives]
    rows.append(Row(section, "Rack footprint", tuple(f.footprint_m2 for f in floors), "m²", 1))
    rows.append(Row(section, "Floor with aisles (the rows' span)", tuple(f.area_m2 for f in floors), "m²", 1))
    return rows


def _racks_by_purpose(a: Alternative) -> dict[str, float]:
    return {f"{purpose} racks": n for purpose, n in a.plan.totals.racks_by_purpose.items()}


def fabric(alternatives: Sequence[Alternative]) -> list[Row]:
    """Bisection bandwidth per network (its graph analysis) and oversubscription per tier with uplinks. A network
    analysed only within its domains (NVLink: the racks' backplanes, separate by design) has no bisection across the
    cluster and no row."""
    section = "Bisection and oversubscription"
    networks = [
        network
        for network in dict.fromkeys(n for a in alternatives for n in a.plan.networks())
        if not any("scope" in a.plan.analysis_of(network) for a in alternatives if network in a.plan.networks())
    ]
    rows = []
    for network in networks:
        values = tuple(_bisection_tbps(a.plan, network) for a in alternatives)
        rows.append(Row(section, f"{NETWORK_INFO[network].title}: bisection bandwidth", values, "Tb/s", 2))
    tiers: list[dict[str, float]] = []
    for a in alternatives:
        ratios: dict[str, float] = {}
        for tier in a.plan.tiers:
            if tier.up_links:
                plane = f" plane {tier.plane}" if tier.plane is not None else ""
                name = f"{NETWORK_INFO[tier.network].title}: {tier.name}{plane} oversubscription"
                ratios[name] = tier.oversubscription
        tiers.append(ratios)
    for name in dict.fromkeys(k for ratios in tiers for k in ratios):
        rows.append(Row(section, name, tuple(r.get(name) for r in tiers), ":1", 2))
    hops = tuple(_number(a.plan.analysis_of("compute").get("hops", {}).get("max_switch_hops")) for a in alternatives)
    if any(h is not None for h in hops):
        rows.append(Row(section, "Compute fabric: switch hops, at most", hops))
    return rows


def _bisection_tbps(plan: AnalysedPlan, network: str) -> float | None:
    if network not in plan.networks():
        return None
    gbps = plan.analysis_of(network).get("bisection_bandwidth_gbps")
    return None if gbps is None else gbps / 1000


def training(alternatives: Sequence[Alternative]) -> list[Row]:
    """Time to train the design's workload (or the assumed one) on its own plan, at its checkpoint goodput."""
    section = "Time to train"
    c = [a.checkpoint for a in alternatives]
    return [
        Row(section, "Workload", tuple(_workload(x) for x in c)),
        Row(section, "GPUs the job runs on", tuple(float(x.gpus) for x in c)),
        Row(section, "Compute time", tuple(_number(x.compute_days) for x in c), "days", 1),
        Row(section, "Time to train", tuple(_number(x.time_to_train_days) for x in c), "days", 1),
        Row(section, "Target", tuple(_number(x.workload.target_days) for x in c), "days", 1),
    ]


def _workload(c: CheckpointAnalysis) -> str:
    w = c.workload
    tokens = f", {w.training_tokens_b:g}B tokens" if w.training_tokens_b else ""
    return f"{w.model_parameters_b:g}B parameters{tokens}, {w.precision}, MFU {w.mfu:g}" + (
        " (assumed)" if c.assumed else ""
    )


def failures(alternatives: Sequence[Alternative]) -> list[Row]:
    """The failure analysis of the checkpoint views: the job's MTBF, the checkpoint interval and write, goodput, the
    expected interruptions over the run and the spare servers."""
    section = "Failure analysis"
    c = [a.checkpoint for a in alternatives]
    return [
        Row(section, "Job MTBF", tuple(_finite(x.mtbf_s / 3600) for x in c), "h", 1),
        Row(section, "Checkpoint interval", tuple(x.interval_s / 60 for x in c), "min", 1),
        Row(section, "Checkpoint write", tuple(x.write_s for x in c), "s", 1),
        Row(section, "Goodput", tuple(100 * x.goodput for x in c), "%", 2),
        Row(section, "Run length", tuple(x.run_days for x in c), "days", 1),
        Row(section, "Expected interruptions in the run", tuple(x.expected_interruptions for x in c), "", 1),
        Row(section, "Spare servers needed", tuple(float(x.spares_needed) for x in c)),
        Row(section, "Spare servers planned", tuple(float(x.spares_have) for x in c)),
    ]


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _shown(value: Value, digits: int) -> Value:
    return round(value, digits) if isinstance(value, float) else value


SECTIONS: tuple[Section, ...] = (
    systems,
    switches,
    cables_and_optics,
    cost,
    power_and_cooling,
    floor_space,
    fabric,
    training,
    failures,
)
