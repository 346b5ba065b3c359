"""The power-and-cooling budget: power.xlsx (live workbook), power-cooling.md (summary) and a chart of
rack loads against their limits (power-racks.png and .svg)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.typing import RcKeyType

from gpucluster.analyse import budget as b
from gpucluster.analyse.budget import Budget, kept_power_budget
from gpucluster.artifacts.power_workbook import write_workbook
from gpucluster.design.load import LoadedDesign
from gpucluster.formats.templating import render
from gpucluster.plan.model import AnalysedPlan
from gpucluster.plan.power.cooling import COOLING_CAPACITY_KW
from gpucluster.plan.registry import purpose_colour

CHART = "power-racks"
# Deterministic output: fixed SVG ids, no dates or tool versions in the files.
_RC: dict[RcKeyType, Any] = {
    "svg.hashsalt": "gpucluster",
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 9,
}
_METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None, "Format": None, "Type": None}}


def parts(plan: AnalysedPlan) -> list[str]:
    """Its files, which the writers run side by side: the workbook; the chart and the summary (one job, so the budget
    is computed once for both)."""
    return ["workbook", "chart"]


def write(plan: AnalysedPlan, loaded: LoadedDesign, folder: Path) -> None:
    for part in parts(plan):
        write_part(plan, loaded, folder, part)


def write_part(plan: AnalysedPlan, loaded: LoadedDesign, folder: Path, part: str) -> None:
    budget = kept_power_budget(plan)  # made once per plan
    if part == "workbook":
        write_workbook(budget, folder / "power.xlsx")
    else:
        write_chart(budget, folder)
        (folder / "power-cooling.md").write_text(render("power-cooling.md.j2", **_context(budget)), encoding="utf-8")


def write_chart(budget: Budget, folder: Path) -> None:
    """Each rack's maximum and typical IT load against the rack budget, the site's cooling per rack and
    what the rack's circuits carry on one feed."""
    racks = budget.racks
    with matplotlib.rc_context(_RC):
        width = min(max(8.0, 3.5 + 0.16 * len(racks)), 60.0)
        figure = Figure(figsize=(width, 4.8), dpi=100)
        FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        xs = range(len(racks))
        colours = [purpose_colour(r.purpose) for r in racks]
        # one collection of bars per series (a patch per bar is slow to lay out and draw for thousands of racks)
        _bars(axes, [r.load.max_w / 1000 for r in racks], colours, alpha=0.45)
        _bars(axes, [r.load.typical_w / 1000 for r in racks], colours, alpha=1.0)
        axes.scatter(
            xs,
            [r.circuits.capacity_w / 1000 for r in racks],
            marker="_",
            s=120,
            color="black",
            label="circuits, one feed",
            zorder=3,
        )
        axes.axhline(
            budget.site.rack_power_budget_kw, color="#C44E52", linestyle="--", label="rack power budget", linewidth=1
        )
        axes.axhline(
            budget.cooling_capacity_kw,
            color="#1F77B4",
            linestyle=":",
            label=f"{budget.site.cooling} cooling per rack",
            linewidth=1.2,
        )
        for purpose in sorted({r.purpose for r in racks}):
            axes.bar([0], [0], color=purpose_colour(purpose), label=f"{purpose} (typical / max)")
        step = max(1, math.ceil(len(racks) / 40))  # at most 40 rack labels: tick text dominates drawing time
        axes.set_xticks(list(xs)[::step], [r.name for r in racks][::step], rotation=90)
        axes.set_xlim(-0.6, len(racks) - 0.4)
        axes.set_ylabel("IT load, kW")
        axes.set_title(f"{budget.name}: rack load against its limits")
        axes.grid(axis="y", linewidth=0.3)
        axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
        # fixed margins in inches (left, right with the legend, bottom with the rack names, top): no layout pass
        figure.subplots_adjust(left=0.8 / width, right=1 - 2.4 / width, bottom=0.75 / 4.8, top=1 - 0.35 / 4.8)
        for kind in ("png", "svg"):
            figure.savefig(folder / f"{CHART}.{kind}", format=kind, metadata=_METADATA[kind])


def _bars(axes: Axes, heights: list[float], colours: list[str], alpha: float) -> None:
    """Bars 0.8 wide centred on 0, 1, 2 ... as one PolyCollection, drawn as axes.bar draws them (no edge)."""
    verts = [((i - 0.4, 0.0), (i - 0.4, h), (i + 0.4, h), (i + 0.4, 0.0)) for i, h in enumerate(heights)]
    bars = PolyCollection(verts, facecolors=colours, edgecolors="none", linewidths=0, alpha=alpha)
    axes.add_collection(bars, autolim=True)
    axes.autoscale_view()


def _kw(watts: float) -> str:
    return f"{watts / 1000:,.1f}"


def _context(budget: Budget) -> dict[str, Any]:
    def heat(watts: float, air_watts: float) -> dict[str, str]:
        """Heat from all of the load; airflow from the share that goes to air (liquid takes the rest)."""
        cfm = b.airflow_cfm(air_watts, budget.rise_k)
        return {
            "btu": f"{b.btu_per_h(watts):,.0f}",
            "tons": f"{b.refrigeration_tons(watts):,.1f}",
            "cfm": f"{cfm:,.0f}",
            "m3h": f"{b.cfm_to_m3_per_h(cfm):,.0f}",
        }

    parts: Counter[tuple[str, str]] = Counter((d.part, d.role) for d in budget.devices)
    of_part: dict[str, list[b.DeviceBudget]] = defaultdict(list)  # one pass over the devices, not one per part
    for device in budget.devices:
        of_part[device.part].append(device)
    part_rows = []
    for (part, role), count in sorted(parts.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        members = of_part[part]
        first = members[0].power
        part_rows.append(
            {
                "part": part,
                "role": role,
                "count": count,
                "catalog_typical": f"{first.catalog_typical_w:,.0f}",
                "catalog_max": f"{first.catalog_max_w:,.0f}",
                "optics_max": _kw(sum(d.power.optics_max_w for d in members)),
                "included": "yes" if first.optics_in_catalog_max else "no",
                "typical": _kw(sum(d.power.typical_w for d in members)),
                "max": _kw(sum(d.power.max_w for d in members)),
            }
        )
    cost = budget.annual_cost
    return {
        "b": budget,
        "racks_by_name": {r.name: r for r in budget.racks},
        "site": budget.site,
        "feed": budget.site.power_feed,
        "kw": _kw,
        "heat": heat,
        "total_heat": heat(budget.total.max_w, budget.total.air_w),
        "part_rows": part_rows,
        "chart": CHART,
        "cost": None if cost is None else f"{cost:,.0f}",
        "sources": b.SOURCES,
        "constants": {
            "BTU_PER_H_PER_W": b.BTU_PER_H_PER_W,
            "BTU_PER_H_PER_TON": b.BTU_PER_H_PER_TON,
            "AIR_SENSIBLE_HEAT_FACTOR": b.AIR_SENSIBLE_HEAT_FACTOR,
            "HOURS_PER_YEAR": b.HOURS_PER_YEAR,
        },
        "capacities": COOLING_CAPACITY_KW,
    }
