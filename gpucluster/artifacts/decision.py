"""summary.html and summary.pdf: the decision summary, two or three pages for the people who approve the purchase
rather than the engineers who review the design (report.html): what is bought and costs, power, cooling and floor,
time-to-train and goodput, the main risks and RA deviations, and the growth headroom. Every figure is read from the
views report.html reads; nothing is computed here but the formatting."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from markupsafe import Markup

from gpucluster.analyse.bom import Bom, bom_for
from gpucluster.analyse.budget import Budget, kept_power_budget
from gpucluster.analyse.deviations import deviations
from gpucluster.analyse.floor import kept_floor
from gpucluster.artifacts._pdf import write_pdf
from gpucluster.artifacts.summary import filesystem_figures, object_storage_figures
from gpucluster.design.load import LoadedDesign
from gpucluster.formats.templating import render
from gpucluster.plan.model import RULE_PREFIX, AnalysedPlan, Plan
from gpucluster.plan.registry import NETWORK_INFO
from gpucluster.plan.reserve import growth_reserve, reserve_line
from gpucluster.training import analyse_checkpoints
from gpucluster.training.checkpoint import CheckpointAnalysis
from gpucluster.training.report import duration

HTML = "summary.html"
PDF = "summary.pdf"
PAGE_SIZES = {"a4": "A4", "letter": "letter"}  # site.paper -> the CSS @page size
RISKS_LISTED = 8  # errors and warnings shown; the rest are counted (report.html lists them all)
DEVIATIONS_LISTED = 8  # RA deviations shown; the rest are counted
BOM_LINES_LISTED = 3  # the largest lines (by quantity) of each main section


def write(plan: AnalysedPlan, loaded: LoadedDesign, folder: Path) -> None:
    """summary.html, then summary.pdf rendered from it."""
    html = summary_html(plan, bom_for(plan, loaded))
    (folder / HTML).write_text(html, encoding="utf-8")
    write_pdf(html, folder / PDF)


def paper_size(plan: Plan) -> str:
    """The CSS page size of the site's paper (A4 or US Letter)."""
    return PAGE_SIZES[plan.design.site.paper]


def summary_html(plan: AnalysedPlan, bom: Bom) -> str:
    """The decision summary page of a plan, priced by `bom` where its lines carry prices."""
    budget = kept_power_budget(plan)
    checkpoint = analyse_checkpoints(plan)
    return render(
        "report/summary.html",
        name=plan.name,
        description=getattr(plan.design, "description", "") or "",
        bought=bought(plan),
        cost=cost(bom),
        facility=facility(plan, budget),
        training=training(checkpoint),
        risks=risks(plan),
        growth=growth(plan),
        style=Markup(render("report/summary.css", paper=paper_size(plan))),
    )


def bought(plan: AnalysedPlan) -> list[tuple[str, str, str]]:
    """(what, how many, detail): the GPU systems, GPUs, racks, each network's switches, cables and storage."""
    t = plan.totals
    s = plan.settings
    rows = [
        (
            "GPU systems",
            f"{t.production_servers + t.spare_servers:,}",
            f"{s.server}: {t.production_servers:,} in production + {t.spare_servers:,} hot spare; "
            f"{t.scalable_units} scalable unit{'s' if t.scalable_units != 1 else ''} of {s.scalable_unit_servers}",
        ),
        ("GPUs", f"{t.gpus:,}", f"{s.gpu_model}: {t.production_gpus:,} in production"),
        ("Racks", f"{t.racks:,}", ", ".join(f"{n:,} {purpose}" for purpose, n in t.racks_by_purpose.items())),
    ]
    for network, tiers in t.switches.items():
        if not tiers:
            continue
        models = sorted({tier.switch_part for tier in plan.tiers if tier.network == network})
        rows.append(
            (
                f"{NETWORK_INFO[network].title} switches",
                f"{sum(tiers.values()):,}",
                f"{', '.join(models)}: " + ", ".join(f"{n:,} {tier}" for tier, n in tiers.items()),
            )
        )
    rows.append(("Cables", f"{t.cables:,}", ", ".join(f"{n:,} {m}" for m, n in t.cables_by_media.items())))
    rows.append(("Parallel filesystem", f"{s.parallel_filesystem_capacity_tb:,.0f} TB", filesystem_figures(s)))
    if object_storage_figures(s):
        rows.append(("Object storage", f"{s.object_storage_capacity_tb:,.0f} TB", object_storage_figures(s)))
    return rows


def cost(bom: Bom) -> dict[str, Any]:
    """Totals per BOM section and currency where the price list priced lines, the unpriced lines counted, and the
    largest lines of each section (what the money buys)."""
    currencies = sorted(bom.price_totals())
    sections = []
    for key, title, lines in bom.sections():
        prices = bom.price_totals(key)
        largest = sorted(lines, key=lambda line: (-line.quantity, line.model))[:BOM_LINES_LISTED]
        sections.append(
            {
                "title": title,
                "lines": f"{len(lines):,}",
                "main": "; ".join(f"{line.quantity:,} x {line.model}" for line in largest)
                + ("; ..." if len(lines) > BOM_LINES_LISTED else ""),
                "prices": [f"{prices[c]:,.0f}" if c in prices else "-" for c in currencies],
                "unpriced": sum(line.extended_price is None for line in lines),
            }
        )
    return {
        "price_list": bom.price_list,
        "currencies": currencies,
        "sections": sections,
        "totals": [f"{bom.price_totals()[c]:,.0f}" for c in currencies],
        "lines": f"{len(bom.lines):,}",
        "unpriced": f"{len(bom.unpriced()):,}",
    }


def facility(plan: AnalysedPlan, budget: Budget) -> list[tuple[str, str, str]]:
    """(what, figure, detail): IT and facility power, typical and peak, energy, cooling and floor space."""
    t = plan.totals
    total = budget.total
    floor = kept_floor(plan)
    cooling = Counter(rack.cooling_needed for rack in budget.racks)
    energy = f"{budget.annual_energy_mwh:,.0f} MWh a year at typical load" + (
        f", {budget.annual_cost:,.0f} {budget.site.currency}" if budget.annual_cost is not None else ""
    )
    return [
        ("IT power, peak", f"{t.it_power_max_kw:,.1f} kW", "every device at its maximum"),
        ("IT power, typical", f"{t.it_power_typical_kw:,.1f} kW", "training load"),
        (
            "Facility power",
            f"{budget.facility_max_w / 1000:,.1f} kW",
            f"peak at PUE {budget.pue:g}; {budget.facility_typical_w / 1000:,.1f} kW typical; {energy}",
        ),
        (
            "Cooling",
            f"{total.max_w / 1000:,.1f} kW of heat",
            f"site cooling {budget.site.cooling}, {budget.cooling_capacity_kw:g} kW a rack; "
            f"{total.liquid_w / 1000:,.1f} kW to liquid; racks need "
            + ", ".join(f"{n:,} {kind}" for kind, n in sorted(cooling.items())),
        ),
        (
            "Floor space",
            f"{floor.width_mm / 1000:,.1f} m x {floor.depth_mm / 1000:,.1f} m",
            f"the rack rows ({t.racks:,} racks{f' and {len(floor.cdus)} CDUs' if floor.cdus else ''}, "
            f"{plan.design.site.racks_per_row} a row at most, rows "
            f"{plan.design.site.row_pitch_mm / 1000:g} m apart), {floor.area_m2:,.0f} m2 with aisles",
        ),
        (
            "Rack power budget",
            f"{budget.site.rack_power_budget_kw:g} kW",
            f"{sum(r.load.max_w > budget.site.rack_power_budget_kw * 1000 for r in budget.racks):,} racks over it",
        ),
    ]


def training(a: CheckpointAnalysis) -> dict[str, Any]:
    """Time-to-train and goodput for the design's workload (or the assumed one), from the checkpoint analysis."""
    w = a.workload
    days = a.time_to_train_days
    return {
        "assumed": a.assumed,
        "model": f"{w.model_parameters_b:g}B parameters",
        "tokens": f"{w.training_tokens_b:,g}B tokens" if w.training_tokens_b else "",
        "gpus": f"{a.gpus:,} {a.gpu_model}",
        "days": f"{days:,.1f} days" if days is not None else "",
        "target": f"{w.target_days:g} days" if w.target_days else "",
        "mfu": f"{w.mfu:.0%}",
        "goodput": f"{a.goodput:.1%}",
        "interval": duration(a.interval_s),
        "mtbf": duration(a.mtbf_s),
        "write": duration(a.write_s),
        "restart": duration(a.restart_s),
        "spares_needed": a.spares_needed,
        "spares_have": a.spares_have,
    }


def risks(plan: AnalysedPlan) -> dict[str, Any]:
    """The design rules' errors and warnings and the RA deviations, the first of each listed, the rest counted."""
    counts = Counter(f.severity for f in plan.findings)
    serious = [f for f in plan.findings if f.severity in ("error", "warning")]
    serious.sort(key=lambda f: f.severity != "error")
    found = deviations(plan)
    return {
        "counts": {s: counts.get(s, 0) for s in ("error", "warning", "advisory", "ok")},
        "findings": [
            {"severity": f.severity, "rule": f.rule.removeprefix(RULE_PREFIX), "message": f.message}
            for f in serious[:RISKS_LISTED]
        ],
        "findings_left": max(0, len(serious) - RISKS_LISTED),
        "deviations": [
            {"subject": d.subject, "reference": d.reference, "plan": d.plan} for d in found[:DEVIATIONS_LISTED]
        ],
        "deviations_left": max(0, len(found) - DEVIATIONS_LISTED),
    }


def growth(plan: Plan) -> str:
    """The growth reserve in one sentence, or that the plan has none."""
    reserve = growth_reserve(plan)
    if reserve is None:
        return (
            f"None planned: the fabric is sized for the {plan.settings.scalable_units} scalable "
            f"unit{'s' if plan.settings.scalable_units != 1 else ''} bought (compute_fabric.final_scalable_units "
            "plans for more)."
        )
    return reserve_line(reserve).removeprefix("growth reserve: ").capitalize() + "."
