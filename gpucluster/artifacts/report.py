"""report.html and report.pdf: the design review in one document, every figure read from the plan, its power
budget and checkpoint analysis. It runs after every other writer (artifacts.RUNS_LAST) to link to the files the build
wrote and show their charts. The HTML is self-contained (no script, nothing fetched); the PDF is rendered from it.
"""

from __future__ import annotations

import base64
import dataclasses
import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import hostlist
from markupsafe import Markup

from gpucluster.analyse import budget as b
from gpucluster.analyse.bom import Bom, bom_for, build_bom
from gpucluster.analyse.budget import Budget, kept_power_budget
from gpucluster.analyse.deviations import assumptions, deviations
from gpucluster.analyse.scheduling import nvlink_domains, scheduler_sides, scheduler_split, slurm_segment
from gpucluster.artifacts._pdf import write_pdf
from gpucluster.artifacts.cabling import FOLDER as CABLING_FOLDER
from gpucluster.artifacts.decision import paper_size
from gpucluster.artifacts.drawings import DETAIL_MAX_PER_LEVEL, MAX_BOXES_PER_LEVEL, network_drawing, networks_drawn
from gpucluster.artifacts.floor_plan import FLOOR_ELEMENT_MAX_RACKS, FLOOR_LABEL_MAX_RACKS, floor_plan
from gpucluster.artifacts.summary import filesystem_rows, object_storage_figures
from gpucluster.catalog.schema import RackSystem
from gpucluster.design.load import LoadedDesign
from gpucluster.formats.templating import environment, render
from gpucluster.plan.model import RULE_PREFIX, AnalysedPlan, LeafFailure, Plan
from gpucluster.plan.rack_scale import shelf_capacity_w
from gpucluster.plan.registry import NETWORK_INFO, RACK_PURPOSES, ROLES, purpose_colour
from gpucluster.plan.reserve import growth_reserve, reserve_line
from gpucluster.runtime import progress
from gpucluster.training import analyse_checkpoints
from gpucluster.training import reliability as rel
from gpucluster.training.checkpoint import CheckpointAnalysis
from gpucluster.training.report import duration

HTML = "report.html"
PDF = "report.pdf"
SEVERITIES = ("error", "warning", "advisory", "ok")
# Charts other writers draw (as SVG and PNG), shown in the report when the build wrote them: as vectors while
# small, as their PNG above MAX_SVG_CHART_BYTES (the rack-load chart of a 16,384-GPU hall is 400 KB of bars that
# WeasyPrint takes seconds to draw and no reader can tell apart at page width).
CHARTS = {"power": "power-racks", "checkpoint": "checkpoint-goodput"}
MAX_SVG_CHART_BYTES = 256 * 1024
FOLDER_FILES_LISTED = 24  # a folder with more files is listed as one row
RACK_ELEVATIONS = f"{CABLING_FOLDER}/racks"  # each rack's front and rear elevations, drawn by the printouts writer


PAGE_TEMPLATES = ("report/report.html", "report/style.css")

# The page's templates compiled with this module: the writers side by side import a writer's module in the main process
# when its turn comes, so the report's last job, forked after, finds them compiled (a tenth of a second it spent alone).
for _template in PAGE_TEMPLATES:
    environment().get_template(_template)


def prepare(plan: AnalysedPlan, loaded: LoadedDesign) -> tuple[dict[str, Any], Bom]:
    """The report's work that reads no other file, done side by side with the other writers (artifacts.PREPARED)."""
    return plan_views(plan), bom_for(plan, loaded)


def write(
    plan: AnalysedPlan, loaded: LoadedDesign, folder: Path, prepared: tuple[dict[str, Any], Bom] | None = None
) -> None:
    """report.html, then report.pdf, in three progress steps (figures and HTML, PDF layout, drawing)."""
    say = progress.current()
    say.update(0, 3, "steps")
    views, bom = prepared or prepare(plan, loaded)
    html = _page(folder, views, bom)
    (folder / HTML).write_text(html, encoding="utf-8")
    say.update(1, 3, "steps")
    write_pdf(for_paper(html), folder / PDF, laid_out=lambda: say.update(2, 3, "steps"))
    say.update(3, 3, "steps")


# A drawing's tooltip (an SVG <title>: a box's or a bundle's detail, shown on hover) draws nothing on paper, yet
# WeasyPrint parses and styles each one (some 900 in a 16,384-GPU report): the PDF is made from the page without them,
# the same bytes sooner. Their text is escaped (no "<" in it); the page's <title> in its head names the PDF and stays.
SVG_TOOLTIP = re.compile(r"<title>[^<]*</title>")


def for_paper(html: str) -> str:
    head, end, body = html.partition("</head>")
    return head + end + SVG_TOOLTIP.sub("", body)


def report_html(plan: AnalysedPlan, folder: Path, bom: Bom | None = None) -> str:
    """The report page for a plan whose other artifacts are in `folder` (unpriced without `bom`)."""
    return _page(folder, plan_views(plan), bom or build_bom(plan))


def plan_views(plan: AnalysedPlan) -> dict[str, Any]:
    """The template's values read from the plan alone (no other file, no BOM)."""
    budget = kept_power_budget(plan)
    checkpoint = analyse_checkpoints(plan)
    return {
        "name": plan.name,
        "paper": paper_size(plan),
        "description": getattr(plan.design, "description", "") or "",
        "figures": _key_figures(plan, budget, checkpoint),
        "rules_figure": _rules_figure(plan),
        "findings": _findings(plan),
        "deviations": [dataclasses.asdict(d) for d in deviations(plan)],
        "assumptions": [dataclasses.asdict(a) for a in assumptions(plan)],
        "severity_counts": Counter(f.severity for f in plan.findings),
        "severities": SEVERITIES,
        "networks": [_network(plan, network) for network in networks_drawn(plan)],
        "floor": _floor(plan),
        "power": _power(plan, budget),
        "schedulers": _schedulers(plan),
        "rack_scale": _rack_scale(plan, budget, checkpoint),
        "checkpoint": _checkpoint(checkpoint),
        "elevation_racks": _elevation_racks(plan),
        "limits": {
            "detail": DETAIL_MAX_PER_LEVEL,
            "boxes": MAX_BOXES_PER_LEVEL,
            "floor": FLOOR_LABEL_MAX_RACKS,
            "floor_elements": f"{FLOOR_ELEMENT_MAX_RACKS:,}",
        },
    }


def _page(folder: Path, views: dict[str, Any], bom: Bom) -> str:
    artifacts = _artifacts(folder)
    values = dict(views)
    values["figures"] = [*views["figures"], _bom_figure(bom), values.pop("rules_figure")]
    return render(
        "report/report.html",
        **values,
        elevations=_elevations(values.pop("elevation_racks"), folder),
        bom=_bom(bom),
        charts={key: _chart(folder, stem) for key, stem in CHARTS.items()},
        artifacts=artifacts,
        written={a["path"] for a in artifacts},
        style=Markup(render("report/style.css", paper=views["paper"])),
    )


def _schedulers(plan: Plan) -> list[dict[str, Any]]:
    return [
        {
            "name": side.scheduler,
            "servers": f"{len(side.servers):,}",
            "detail": f"{side.production:,} + {side.spares} spare; {side.gpus:,} GPUs",
            "hosts": hostlist.collect_hostlist(list(side.servers)),
            "units": _listed(side.units),
            "leaves": _listed(side.leaf_groups),
            "largest": side.largest_group,
            "queues": [{"name": q.name, "what": q.what} for q in side.queues],
            "kind": "Partitions" if side.scheduler == "Slurm" else "Kueue ClusterQueues (one cohort)",
        }
        for side in scheduler_sides(plan)
    ]


# Rows and SUs listed in the power section up to GROUPS_LISTED (a 16,384-GPU hall's 64 SUs); above, the GROUPS_SHOWN
# heaviest: 512 SUs are pages no reviewer reads, and the power workbook holds them all.
GROUPS_LISTED = 64
GROUPS_SHOWN = 16
RACK_SCALE_BLOCKS_LISTED = 12  # Slurm blocks listed one per row; the rest are in slurm/topology.*
SCHEDULER_UNITS_LISTED = 64  # a scheduler's SUs and leaf groups named one by one up to this many, else as ranges


def _listed(items: Sequence[int] | Sequence[str]) -> str:
    """SU numbers or leaf group names, one by one up to SCHEDULER_UNITS_LISTED; above, as ranges (1-240, 245-512;
    compute-leaf-su[001-512], Slurm's hostlist form)."""
    if len(items) <= SCHEDULER_UNITS_LISTED:
        return ", ".join(str(item) for item in items)
    if all(isinstance(item, int) for item in items):
        from gpucluster.artifacts.printouts.pages import number_ranges  # only for a hall this large: ReportLab

        return number_ranges([int(item) for item in items])
    return str(hostlist.collect_hostlist([str(item) for item in items]))


def shelf_verdict(typical_w: float, max_w: float, usable_w: float, nameplate_w: float) -> str:
    """The rack load against its power shelves in the words of rule rack-system-power-and-cooling (one verdict
    everywhere): sustained above the redundant capacity or peak above the nameplate is an error, a peak above
    the redundant capacity a warning (the shelves lose their redundancy at peak)."""
    if typical_w > usable_w + 1e-6:
        return f"error: sustained draw above the {usable_w / 1000:,.0f} kW the shelves deliver redundantly"
    if max_w > nameplate_w + 1e-6:
        return f"error: peak above the shelves' {nameplate_w / 1000:,.0f} kW nameplate"
    if max_w > usable_w + 1e-6:
        return (
            f"warning: peak {(max_w - usable_w) / 1000:,.1f} kW above the {usable_w / 1000:,.0f} kW the shelves "
            "deliver redundantly, so at peak they are not redundant; sustained draw within"
        )
    return f"within the shelves' redundant {usable_w / 1000:,.0f} kW, {(usable_w - max_w) / 1000:,.1f} kW to spare"


def _rack_scale(plan: AnalysedPlan, budget: Budget, checkpoint: CheckpointAnalysis) -> dict[str, Any] | None:
    """Rack-scale NVLink systems (GB200/GB300 NVL72): domains, power shelves against the load, the liquid loop,
    Slurm blocks or Kueue's clique level; None for a plan without them."""
    system_id = plan.settings.rack_system
    if not system_id:
        return None
    # imported here, for the plans that have them (the Kubernetes writer's module is half a second to import)
    from gpucluster.artifacts.kubernetes import nvlink_topology_level
    from gpucluster.artifacts.slurm import block_name, block_sizes
    from gpucluster.catalog.schema import GpuServer, NvlinkSwitchTray, PowerShelf
    from gpucluster.training.report import failover_lines

    system = plan.catalog_part(system_id, RackSystem)
    tray = plan.catalog_part(system.compute_tray, GpuServer)
    switch_tray = plan.catalog_part(system.nvlink_switch_tray, NvlinkSwitchTray)
    shelf = plan.catalog_part(system.power_shelf, PowerShelf)
    servers = [d.name for d in plan.gpu_nodes()]
    domains = nvlink_domains(plan, servers)
    trays = max(len(d) for d in domains)
    segment = slurm_segment(trays)
    spare_racks = sum(all(plan.devices[n].spare for n in d) for d in domains)
    nvlink = plan.analysis_of("nvlink")
    usable_w, nameplate_w = shelf_capacity_w(plan, system)
    racks = [r for r in budget.racks if plan.racks[r.name].rack_system]
    worst = max(racks, key=lambda r: r.load.max_w)
    coolant = budget.coolant
    split = scheduler_split(plan)
    slurm_domains = nvlink_domains(plan, split.slurm) if split.slurm else []
    blocks = [
        {"name": block_name(i), "hosts": hostlist.collect_hostlist(list(d)), "rack": plan.devices[d[0]].rack}
        for i, d in enumerate(slurm_domains, 1)
    ]
    clique = nvlink_topology_level(plan, split.kubernetes) if split.kubernetes else None
    gpus_per_tray = tray.gpu.count
    production_racks = len(domains) - spare_racks
    return {
        "system": system.model,
        "racks": f"{len(domains) * system.domain_racks:,}",
        "domains": f"{len(domains):,}",
        "domain_racks": system.domain_racks,
        "spare_racks": spare_racks,
        "trays": trays,
        "gpus": trays * gpus_per_tray,
        "gpus_per_tray": gpus_per_tray,
        "switch_trays": f"{system.nvlink_switch_trays} x {switch_tray.switch_chips} chips",
        "links": f"{int(nvlink.get('links', 0)) // max(1, len(domains)):,}",
        "links_per_gpu": system.nvlink_links_per_gpu,
        "nvlink_tbytes": f"{tray.gpu.nvlink_bandwidth_gbytes_per_s / 1000:g}",
        "reach": nvlink.get("all_hosts_reach_each_other"),
        "shelves": f"{system.power_shelves} x {shelf.rating_w / 1000:g} kW ({shelf.psus.count} x "
        f"{shelf.psus.rating_w / 1000:g} kW PSUs), {system.power_shelf_redundancy}",
        "shelf_usable": f"{usable_w / 1000:,.0f}",
        "shelf_nameplate": f"{nameplate_w / 1000:,.0f}",
        "rack_max": f"{worst.load.max_w / 1000:,.1f}",
        "rack_typical": f"{worst.load.typical_w / 1000:,.1f}",
        "load_verdict": shelf_verdict(worst.load.typical_w, worst.load.max_w, usable_w, nameplate_w),
        "published": f"{system.published_power_w / 1000:,.0f}",
        "liquid_fraction": f"{system.liquid_fraction:.0%}",
        "liquid": f"{max((c.liquid_w for c in coolant), default=0) / 1000:,.1f}",
        "air": f"{max((c.air_w for c in coolant), default=0) / 1000:,.1f}",
        "flow": f"{max((c.flow_l_per_min for c in coolant), default=0):,.0f}",
        "flow_basis": coolant[0].basis if coolant else "",
        "flow_rise": f"{max((c.rise_k for c in coolant), default=0):.1f}",
        "supply_c": budget.site.coolant_supply_c,
        "total_flow": f"{sum(c.flow_l_per_min for c in coolant):,.0f}",
        "cdus": [
            {
                "name": g.name,
                "cdu": g.cdu,
                "racks": g.racks,
                "units": f"{g.units} ({g.needed} + {g.units - g.needed})",
                "capacity": f"{g.capacity_w / 1000:,.0f}",
                "liquid": f"{g.liquid_w / 1000:,.0f}",
                "flow": f"{g.flow_l_per_min:,.0f}",
                "power": "not published" if g.power_w is None else f"{g.power_w / 1000:,.1f}",
            }
            for g in budget.cdus
        ],
        "blocks": blocks[:RACK_SCALE_BLOCKS_LISTED],
        "blocks_left": max(0, len(blocks) - RACK_SCALE_BLOCKS_LISTED),
        "block_sizes": ", ".join(str(n) for n in block_sizes(slurm_domains)) if slurm_domains else "",
        "clique": clique,
        "segment": segment,
        "segment_gpus": (segment or trays) * gpus_per_tray,
        "largest_segmented": f"{production_racks * (segment or trays) * gpus_per_tray:,}",
        "production_racks": production_racks,
        "failover": failover_lines(checkpoint),
    }


def _key_figures(plan: AnalysedPlan, budget: Budget, checkpoint: CheckpointAnalysis) -> list[tuple[str, str, str]]:
    """(label, value, note) for the first page, what a reviewer checks first (the BOM's and rules' are added later)."""
    t = plan.totals
    s = plan.settings
    compute = plan.analysis_of("compute")
    switches = t.switches
    tiers = ", ".join(f"{n:,} {tier}" for tier, n in switches["compute"].items())
    racks = ", ".join(f"{n} {purpose}" for purpose, n in t.racks_by_purpose.items())
    media = ", ".join(f"{n:,} {m}" for m, n in t.cables_by_media.items())
    hops = compute.get("hops", {}).get("max_switch_hops")
    figures = [
        (
            "GPUs",
            f"{t.production_gpus:,}",
            f"+ {t.gpus - t.production_gpus:,} in hot spares; {s.gpu_model}",
        ),
        (
            "GPU servers",
            f"{t.production_servers:,} + {t.spare_servers} spare",
            f"{s.server}, {t.scalable_units} scalable units of {s.scalable_unit_servers}",
        ),
        ("Compute fabric", f"{s.compute_switch}", f"{s.compute_technology}: {tiers}"),
        (
            "Bisection bandwidth",
            f"{compute.get('bisection_bandwidth_gbps', 0) / 1000:,.1f} Tb/s",
            f"at most {hops} switch hops" if hops else "",
        ),
        ("Switches", f"{t.switches_total:,}", "; ".join(f"{n} {sum(v.values()):,}" for n, v in switches.items())),
        *((title, f"{capacity_tb:,.0f} TB", figures) for title, capacity_tb, figures in filesystem_rows(s)),
        *(
            [("Object storage", f"{s.object_storage_capacity_tb:,.0f} TB", object_storage_figures(s))]
            if object_storage_figures(s)
            else []
        ),
        ("Racks", f"{t.racks:,}", racks),
        ("Cables", f"{t.cables:,}", media),
        (
            "IT power",
            f"{t.it_power_max_kw:,.1f} kW",
            f"maximum; {t.it_power_typical_kw:,.1f} kW typical",
        ),
        (
            "Facility power",
            f"{budget.facility_max_w / 1000:,.1f} kW",
            f"at PUE {budget.pue:g}; {budget.annual_energy_mwh:,.0f} MWh a year",
        ),
        (
            "Checkpoint goodput",
            f"{checkpoint.goodput:.1%}",
            f"{checkpoint.workload.model_parameters_b:g}B{' (assumed)' if checkpoint.assumed else ''}, "
            f"every {duration(checkpoint.interval_s)}; job MTBF {duration(checkpoint.mtbf_s)}",
        ),
    ]
    reserve = growth_reserve(plan)
    if reserve is not None:
        figures.append(
            (
                "Growth reserve",
                f"{reserve.final_scalable_units} scalable units",
                reserve_line(reserve).removeprefix("growth reserve: "),
            )
        )
    return figures


def _bom_figure(bom: Bom) -> tuple[str, str, str]:
    prices = bom.price_totals()
    return (
        "Bill of materials",
        "; ".join(f"{total:,.0f} {currency}" for currency, total in prices.items()) or f"{len(bom.lines):,} lines",
        f"{len(bom.lines):,} lines, {len(bom.unpriced())} unpriced (price list {bom.price_list})"
        if bom.price_list
        else "no price list in the design",
    )


def _rules_figure(plan: AnalysedPlan) -> tuple[str, str, str]:
    counts = Counter(f.severity for f in plan.findings)
    return (
        "Design rules",
        f"{_count(counts['error'], 'error')}, {_count(counts['warning'], 'warning')}",
        f"{_count(counts['advisory'], 'advisory', 'advisories')}, {counts['ok']} passed",
    )


def _count(n: int, singular: str, plural: str = "") -> str:
    return f"{n:,} {singular if n == 1 else plural or singular + 's'}"


def _findings(plan: AnalysedPlan) -> list[dict[str, str]]:
    ordered = sorted(plan.findings, key=lambda f: SEVERITIES.index(f.severity))
    return [
        {"severity": f.severity, "rule": f.rule.removeprefix(RULE_PREFIX), "subject": f.subject, "message": f.message}
        for f in ordered
    ]


def _network(plan: AnalysedPlan, network: str) -> dict[str, Any]:
    drawing = network_drawing(plan, network)
    analysis = plan.analysis_of(network)
    tiers = [t for t in plan.tiers if t.network == network]
    failures = [
        {
            "tier": tier,
            "switch": result["switch"],
            "cut_off": f"{result['host_ports_cut_off']:,}",
            "hosts": f"{result['hosts_losing_a_port']:,}",
            "hosts_cut_off": f"{result.get('hosts_cut_off', 0):,}",
            "connected": "yes" if result["still_connected"] else "NO",
            "services_lost": ", ".join(result.get("services_lost", [])) or "none",
            "lost": f"{result['tier_bandwidth_lost_fraction']:.1%}",
        }
        for tier, result in analysis.get("single_switch_failure", {}).items()
    ]
    hops = analysis.get("hops", {})
    return {
        "id": network,
        "title": NETWORK_INFO[network].title,
        "svg": Markup(drawing.svg()),
        "detailed": drawing.detailed,
        "devices": f"{drawing.devices:,}",
        "links": f"{drawing.links:,}",
        "tiers": [
            {
                "name": t.name,
                "part": t.switch_part,
                "switches": f"{t.switches:,}",
                "down": f"{t.down_links:,} ({t.down_gbps / 1000:,.1f} Tb/s)",
                "up": f"{t.up_links:,} ({t.up_gbps / 1000:,.1f} Tb/s)" if t.up_links else "-",
                "oversubscription": f"{t.oversubscription:.2f}:1" if t.up_links else "-",
            }
            for t in tiers
        ],
        "reach": analysis.get("all_hosts_reach_each_other"),
        "bisection": f"{analysis.get('bisection_bandwidth_gbps', 0) / 1000:,.1f} Tb/s",
        "max_hops": hops.get("max_switch_hops"),
        "hop_counts": ", ".join(f"{n:,} at {h}" for h, n in hops.get("from_first_leaf", {}).items()),
        "failures": failures,
        "worst_leaf": _worst_leaf(analysis.get("worst_leaf_failure", {})),
    }


def _worst_leaf(worst: LeafFailure) -> str:
    """One sentence on the leaf whose failure costs most."""
    if not worst:
        return ""
    services = worst["services_lost"]
    cost = (
        f"cuts off {worst['servers_cut_off']:,} GPU servers and {worst['storage_blocks_cut_off']:,} storage blocks"
        if worst["hosts_cut_off"]
        else "cuts no host off (every host has a port on another leaf)"
    )
    lost = f"; the {' and the '.join(services)} service is LOST (its appliances are unreachable)" if services else ""
    return f"The worst single leaf failure ({worst['switch']}) {cost}{lost}."


def _floor(plan: AnalysedPlan) -> dict[str, Any]:
    floor = floor_plan(plan)
    purposes = sorted({r.purpose for r in plan.racks.values()})
    legend = [(p, purpose_colour(p)) for p in purposes]
    cdus = len(floor.racks) - len(plan.racks)  # drawn after the racks (floor_plan._cdus)
    systems = sorted({r.rack_system for r in plan.racks.values() if r.rack_system})
    shelves = [shelf_capacity_w(plan, plan.catalog_part(s, RackSystem))[0] / 1000 for s in systems]
    if cdus:
        legend.append(("coolant distribution unit", ROLES["coolant-distribution-unit"].colour))
    return {
        "svg": Markup(floor.svg()),
        "labelled": floor.labelled,
        "merged": bool(floor.paths),
        "racks": len(plan.racks),
        "cdus": cdus,
        "shelves_kw": ", ".join(f"{kw:g}" for kw in sorted(set(shelves))),
        "budget_kw": f"{floor.budget_kw:g}",
        "legend": legend,
        "over_budget": [r.name for r in floor.racks if r.over_budget],
    }


def _kw(watts: float) -> str:
    return f"{watts / 1000:,.1f}"


def _pdus(plan: Plan, budget: Budget) -> str:
    """The PDU models; with rack-scale systems only the racks without power shelves have PDUs, and it says so."""
    if not any(rack.rack_system for rack in plan.racks.values()):
        other = budget.non_compute_pdu
        return budget.pdu + (f"; other racks {other}" if other not in ("", budget.pdu) else "")
    used = sorted({plan.devices[n].part for rack in plan.racks.values() for n in rack.pdus})
    return f"{', '.join(used) or 'none'} in the racks without power shelves (the rack-scale systems have none)"


def _power(plan: Plan, budget: Budget) -> dict[str, Any]:
    total = budget.total
    rise = budget.rise_k
    cfm = b.airflow_cfm(total.air_w, rise)
    cooling = Counter(r.cooling_needed for r in budget.racks)
    cost = budget.annual_cost
    return {
        "it_max": _kw(total.max_w),
        "it_typical": _kw(total.typical_w),
        "optics": _kw(total.optics_max_w),
        "pue": f"{budget.pue:g}",
        "facility_max": _kw(budget.facility_max_w),
        "facility_typical": _kw(budget.facility_typical_w),
        "energy_mwh": f"{budget.annual_energy_mwh:,.0f}",
        "cost": None if cost is None else f"{cost:,.0f} {budget.site.currency}",
        "btu": f"{b.btu_per_h(total.max_w):,.0f}",
        "tons": f"{b.refrigeration_tons(total.max_w):,.1f}",
        "liquid": _kw(total.liquid_w),
        "cfm": f"{cfm:,.0f}",
        "m3h": f"{b.cfm_to_m3_per_h(cfm):,.0f}",
        "rise": f"{rise:g}",
        "cooling_site": budget.site.cooling,
        "cooling_capacity": f"{budget.cooling_capacity_kw:g}",
        "cooling_needed": sorted(cooling.items()),
        "rack_budget": f"{budget.site.rack_power_budget_kw:g}",
        "pdu": _pdus(plan, budget),
        "circuit_usable": _kw(budget.circuit_usable_w),
        "circuits": [
            {"kind": c.kind, "feed": c.feed, "circuits": f"{c.circuits:,}", "usable": _kw(c.usable_w)}
            for c in budget.circuit_kinds
        ],
        "rows": _groups(budget.rows, "Rows"),
        "sus": _groups(budget.sus, "Scalable units"),
        "findings": [{"severity": f.severity, "subject": f.subject, "message": f.message} for f in budget.findings],
    }


def _groups(groups: list[b.GroupBudget], sheet: str) -> dict[str, Any]:
    """Rows or SUs: all up to GROUPS_LISTED, else the GROUPS_SHOWN heaviest in plan order and the others' range."""
    shown = groups
    if len(groups) > GROUPS_LISTED:
        heaviest = sorted(range(len(groups)), key=lambda i: -groups[i].load.max_w)[:GROUPS_SHOWN]
        shown = [groups[i] for i in sorted(heaviest)]
    others = [g.load.max_w for g in groups if not any(g is s for s in shown)]
    return {
        "groups": [_group(g) for g in shown],
        "count": f"{len(groups):,}",
        "listed": len(shown),
        "left": f"{len(others):,}" if others else "",
        "left_range": f"{_kw(min(others))} to {_kw(max(others))}" if others else "",
        "sheet": sheet,
    }


def _group(group: b.GroupBudget) -> dict[str, str]:
    return {
        "name": group.name,
        "racks": f"{group.racks:,}",
        "servers": f"{group.servers:,}",
        "max": _kw(group.load.max_w),
        "typical": _kw(group.load.typical_w),
        "circuits": f"{group.circuits:,}",
    }


def _checkpoint(a: CheckpointAnalysis) -> dict[str, Any]:
    w = a.workload
    finite = math.isfinite(a.mtbf_s)
    return {
        "assumed": a.assumed,
        "model": f"{w.model_parameters_b:g}B parameters",
        "gpus": f"{a.gpus:,} {a.gpu_model}",
        "servers": f"{a.servers:,}",
        "size": f"{a.checkpoint_bytes / 1e12:,.2f} TB",
        "bytes_per_parameter": f"{a.bytes_per_parameter:g}",
        "mode": w.checkpoint_mode,
        "write": duration(a.write_s),
        "write_rate": f"{a.write.gbytes_per_s:,.1f} GB/s",
        "bottleneck": a.write.bottleneck.name,
        "read": duration(a.read_s),
        "stall": duration(a.stall_s),
        "restart": duration(a.restart_s),
        "mtbf": duration(a.mtbf_s),
        "young": duration(a.young_s),
        "daly": duration(a.daly_s),
        "interval": duration(a.interval_s),
        "interval_from": a.interval_from,
        "goodput": f"{a.goodput:.2%}",
        "goodput_daly": f"{a.goodput_at_daly:.2%}",
        "loss": duration(a.loss_per_failure_s()),
        "spares_needed": a.spares_needed,
        "spares_have": a.spares_have,
        "repair_hours": f"{w.repair_hours:g}",
        "confidence": f"{w.spare_confidence:.0%}",
        "kinds": [
            {
                "label": rel.KIND_LABELS[k.kind],
                "units": f"{k.units:,}",
                "rate": f"{k.per_unit_year:.4g}",
                "per_day": f"{k.job_failures_per_hour * 24:.3f}",
                "share": f"{k.job_failures_per_hour * a.mtbf_s / 3600:.1%}" if finite else "-",
            }
            for k in a.kinds
        ],
        "limits": [{"name": x.name, "rate": f"{x.gbytes_per_s:,.1f}", "note": x.note} for x in a.write.limits],
        "notes": a.notes,
    }


def _bom(bom: Bom) -> dict[str, Any]:
    """The BOM's totals per section and its headline counts (gpucluster/analyse/bom.py)."""
    currencies = sorted(bom.price_totals())
    sections = []
    for key, title, lines in bom.sections():
        prices = bom.price_totals(key)
        sections.append(
            {
                "title": title,
                "lines": f"{len(lines):,}",
                "quantity": f"{bom.total('quantity', key):,.0f}",
                "max_kw": _kw(bom.total("power_max_w", key)),
                "prices": [f"{prices.get(c, 0.0):,.0f}" for c in currencies],
            }
        )
    counts = [
        (name, f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}") for name, value in bom.counts.items()
    ]
    return {
        "sections": sections,
        "currencies": currencies,
        "totals": [f"{v:,.0f}" for v in bom.price_totals().values()],
        "lines": f"{len(bom.lines):,}",
        "quantity": f"{bom.total('quantity'):,.0f}",
        "counts": counts,
        "price_list": bom.price_list,
        "unpriced": [f"{line.model} ({line.item})" for line in bom.unpriced()],
    }


def _elevation_racks(plan: Plan) -> list[tuple[str, str]]:
    """(purpose, rack) of the first rack of each purpose, in the registry's order."""
    first: dict[str, str] = {}
    for rack in sorted(plan.racks.values(), key=lambda r: r.name):
        first.setdefault(rack.purpose, rack.name)
    ordered = sorted(first, key=lambda p: (list(RACK_PURPOSES).index(p) if p in RACK_PURPOSES else 99, p))
    return [(purpose, first[purpose]) for purpose in ordered]


def _elevations(racks: list[tuple[str, str]], folder: Path) -> list[dict[str, str]]:
    """The elevations of `racks` the printouts writer drew in this build (none when it did not run)."""
    return [
        {
            "rack": name,
            "purpose": purpose,
            "src": _data_url(folder / RACK_ELEVATIONS / f"{name}.svg", "image/svg+xml"),
            "page": f"{RACK_ELEVATIONS}/{name}.html",
        }
        for purpose, name in racks
        if (folder / RACK_ELEVATIONS / f"{name}.svg").is_file()
    ]


def _data_url(path: Path, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def _chart(folder: Path, stem: str) -> dict[str, str] | None:
    """A chart another writer drew in this build, as a data: URL and the file it links to (None if not written)."""
    svg, png = folder / f"{stem}.svg", folder / f"{stem}.png"
    if svg.is_file() and svg.stat().st_size <= MAX_SVG_CHART_BYTES:
        path, mime = svg, "image/svg+xml"
    elif png.is_file():
        path, mime = png, "image/png"
    else:
        return None
    return {"src": _data_url(path, mime), "file": path.name}


def _artifacts(folder: Path) -> list[dict[str, str]]:
    """Every file of the build and the report's own two; a folder of more than FOLDER_FILES_LISTED files is one row."""
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    files = [path for path in files if path not in (HTML, PDF)]
    by_folder: dict[str, list[str]] = defaultdict(list)
    for path in files:
        by_folder[path.rpartition("/")[0]].append(path)
    rows = []
    for path in files:
        parent = path.rpartition("/")[0]
        members = by_folder[parent]
        if len(members) <= FOLDER_FILES_LISTED:
            rows.append({"path": path, "size": _size((folder / path).stat().st_size), "label": path})
        elif path == members[0]:
            names = [m.rpartition("/")[2] for m in members]
            size = _size(sum((folder / m).stat().st_size for m in members))
            label = f"{parent}/ ({len(members):,} files, {names[0]} ... {names[-1]})"
            rows.append({"path": parent + "/", "size": size, "label": label})
    rows += [{"path": HTML, "size": "this page", "label": HTML}, {"path": PDF, "size": "printable", "label": PDF}]
    return rows


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:,.1f} KiB"
    return f"{n / 1024 / 1024:,.1f} MiB"
