"""Design rules: the seed's "Getting it right", each defined once.

A rule reads *facts*, a small plain-data summary of the plan (:func:`rule_facts`), so the same
definition runs in ``gpucluster validate`` and in the Pulumi policy pack, which receives the
facts as the cluster component's properties.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from gpucluster.catalog.ports import device_ports
from gpucluster.plan.model import Finding, Plan

# Heat one rack's cooling can remove, by cooling type, when the design does not say
# (hardware-facts §5: air ~25-30 kW practical with containment; active rear-door heat exchangers
# up to ~60 kW; direct liquid cooling 50-120+ kW per rack, GB200/GB300 NVL72 ~120-140 kW).
COOLING_CAPACITY_KW = {"air": 30.0, "rear-door": 60.0, "liquid": 140.0}
COOLING_SOURCES = {
    "air": "https://www.yobitel.com/knowledge-base/rear-door-heat-exchanger (air ~25-30 kW with containment)",
    "rear-door": "https://www.coolnetpower.com/blog/how-much-heat-can-a-rear-door-heat-exchanger-remove/ (active RDHx)",
    "liquid": "https://ai-infrastructure.net/datacentre-physical/ (DLC 50-120+ kW; NVL72 ~120-140 kW)",
}

COMPUTE_FABRIC_PURPOSES = {"gpu", "fabric", "fabric-manager"}
RULE_PREFIX = "rule:"  # findings from design rules carry their rule's name after this prefix


def cooling_capacity_kw(site: object) -> float:
    capacity = getattr(site, "cooling_capacity_kw", None)
    return float(capacity) if capacity else COOLING_CAPACITY_KW[getattr(site, "cooling", "air")]


def rule_facts(plan: Plan) -> dict:
    """The plain data the rules read (JSON-serialisable; also the Pulumi policy pack's input)."""
    design = plan.design
    site = getattr(design, "site", None)
    compute_switches = {d.name: d.part for d in plan.switches("compute")}
    catalog_parts = getattr(plan, "catalog_parts", None) or {}
    purposes: Counter[str] = Counter()
    foreign = 0
    for link in plan.links:
        if link.network == "compute":
            purposes[link.purpose] += 1
            continue
        for device, port in ((link.a_device, link.a_port), (link.b_device, link.b_port)):
            if device in compute_switches and port not in _mgmt_ports(catalog_parts.get(compute_switches[device])):
                foreign += 1
    return {
        "compute_fabric_link_purposes": dict(sorted(purposes.items())),
        "non_compute_links_on_compute_switches": foreign,
        "compute_oversubscription": [
            {"tier": t.name, "ratio": round(t.oversubscription, 4)}
            for t in plan.tiers
            if t.network == "compute" and t.up_gbps
        ],
        "racks": [
            {
                "name": rack.name,
                "purpose": rack.purpose,
                "power_max_kw": round(rack.power_max_w / 1000, 3),
                "power_typical_kw": round(rack.power_typical_w / 1000, 3),
            }
            for rack in plan.racks.values()
        ],
        "rack_power_budget_kw": getattr(site, "rack_power_budget_kw", None),
        "cooling": getattr(site, "cooling", None),
        "cooling_capacity_kw": cooling_capacity_kw(site) if site else None,
        "spare_servers": sum(1 for d in plan.devices_with("gpu-server") if d.spare),
        "production_servers": sum(1 for d in plan.devices_with("gpu-server") if not d.spare),
        "burn_in_plan": plan.settings.get("burn_in_plan"),
        "checkpoint": plan.settings.get("checkpoint"),
    }


def _mgmt_ports(part: object) -> tuple[str, ...]:
    """A switch's own management ports: cabling them to the out-of-band network is allowed."""
    if part is None:
        return ()
    pool = device_ports(part).get("mgmt")
    return pool.names if pool else ()


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    check: Callable[[dict], list[Finding]]


def _fabric_only_for_gpus(facts: dict) -> list[Finding]:
    other = {k: v for k, v in facts["compute_fabric_link_purposes"].items() if k not in COMPUTE_FABRIC_PURPOSES}
    findings = []
    if other:
        findings.append(Finding("compute-fabric-gpu-only", "error", f"compute fabric carries non-GPU links: {other}"))
    if facts["non_compute_links_on_compute_switches"]:
        findings.append(
            Finding(
                "compute-fabric-gpu-only",
                "error",
                f"{facts['non_compute_links_on_compute_switches']} storage or management links touch compute switches",
            )
        )
    return findings or [Finding("compute-fabric-gpu-only", "ok", "the compute fabric carries only GPU traffic")]


def _oversubscription(facts: dict) -> list[Finding]:
    over = [t for t in facts["compute_oversubscription"] if t["ratio"] > 1.0 + 1e-9]
    if not over:
        return [Finding("compute-fabric-non-blocking", "ok", "every compute-fabric tier is 1:1")]
    return [
        Finding(
            "compute-fabric-non-blocking",
            "advisory",
            f"compute-fabric {t['tier']} tier is {t['ratio']:.2f}:1 oversubscribed; all-reduce across the "
            "oversubscribed tier runs slower than within it",
            t["tier"],
        )
        for t in over
    ]


def _rack_power_and_cooling(facts: dict) -> list[Finding]:
    findings = []
    budget = facts["rack_power_budget_kw"]
    capacity = facts["cooling_capacity_kw"]
    for rack in facts["racks"]:
        if budget is not None and rack["power_max_kw"] > budget + 1e-9:
            findings.append(
                Finding(
                    "rack-power-and-cooling",
                    "error",
                    f"rack {rack['name']} draws up to {rack['power_max_kw']:.1f} kW, over the {budget:g} kW budget",
                    rack["name"],
                )
            )
        if capacity is not None and rack["power_max_kw"] > capacity + 1e-9:
            findings.append(
                Finding(
                    "rack-power-and-cooling",
                    "warning",
                    f"rack {rack['name']} at {rack['power_max_kw']:.1f} kW is beyond what {facts['cooling']} "
                    f"cooling removes ({capacity:g} kW per rack); choose a denser cooling type or fewer "
                    "servers per rack",
                    rack["name"],
                )
            )
    return findings or [
        Finding("rack-power-and-cooling", "ok", f"every rack within {budget:g} kW and its {facts['cooling']} cooling")
    ]


def _spares(facts: dict) -> list[Finding]:
    if facts["spare_servers"] > 0:
        return [Finding("spare-servers", "ok", f"{facts['spare_servers']} hot-spare servers")]
    return [
        Finding(
            "spare-servers",
            "warning",
            "no spare servers: a failed server stops the job until it is repaired; keep one ready",
        )
    ]


RULES: list[Rule] = [
    Rule("compute-fabric-gpu-only", "The compute fabric carries only GPU traffic.", _fabric_only_for_gpus),
    Rule("compute-fabric-non-blocking", "Compute-fabric oversubscription above 1:1 is advisory.", _oversubscription),
    Rule(
        "rack-power-and-cooling", "Every rack within the site's power budget and its cooling.", _rack_power_and_cooling
    ),
    Rule("spare-servers", "Spare servers are present.", _spares),
]


def check_rules(facts: dict, rules: list[Rule] | None = None) -> list[Finding]:
    findings: list[Finding] = []
    for rule in rules or RULES:
        findings.extend(rule.check(facts))
    return findings
