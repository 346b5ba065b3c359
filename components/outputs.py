"""The stack outputs: every figure `pulumi stack output` shows, from one function.

Later stages add theirs here (BOM totals, checkpoint figures), so the root component's outputs and
the stack's exports stay one list.
"""

from __future__ import annotations

from gpucluster.plan.model import AnalysedPlan


def stack_outputs(plan: AnalysedPlan) -> dict[str, object]:
    """The headline figures of a planned design: GPUs, servers, switches per network and tier, links
    per network, racks and IT power."""
    t = plan.totals
    links: dict[str, dict[str, int]] = t.links
    return {
        "design": plan.name,
        "gpus": t.gpus,
        "production_gpus": t.production_gpus,
        "servers": t.servers,
        "production_servers": t.production_servers,
        "spare_servers": t.spare_servers,
        "scalable_units": t.scalable_units,
        "switches": t.switches,
        "switches_total": t.switches_total,
        "links": {network: sum(by_tier.values()) for network, by_tier in links.items()},
        "links_by_tier": links,
        "links_total": t.links_total,
        "cables": t.cables,
        "racks": t.racks,
        "racks_by_purpose": t.racks_by_purpose,
        "it_power_max_kw": t.it_power_max_kw,
        "it_power_typical_kw": t.it_power_typical_kw,
        "compute_bisection_bandwidth_gbps": plan.analysis_of("compute").get("bisection_bandwidth_gbps"),
    }
