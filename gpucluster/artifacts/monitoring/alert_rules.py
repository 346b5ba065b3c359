"""The alert and recording rules. The alert rules are data (alert_rules.yaml: each with its expression, its
threshold's source and its promtool test's series); this module fills in the plan's figures and keeps the rules
whose need the plan meets."""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import TypeAdapter

from gpucluster.artifacts.monitoring.targets import (
    gpu_roles_regex,
    has_rack_systems,
    rail_hcas,
    switch_telemetry_switches,
)
from gpucluster.catalog.schema import GpuServer
from gpucluster.plan.model import Plan
from gpucluster.plan.queries import queries
from gpucluster.plan.roce import ROCE_QOS, roce_networks

RULES_FILE = Path(__file__).with_name("alert_rules.yaml")

# Thresholds, each with its source.
GPU_TEMPERATURE_C = 80  # community rules: DCGM_FI_DEV_GPU_TEMP > 75-80 for 1-2 m (no NVIDIA rule pack)
UNCORRECTABLE_REMAPPED_ROWS = 512  # Azure customTests/azure_gpu_ecc.nhc: fail above 512
LINK_FLAP_WINDOW = "6h"  # Azure check_ib_link_flapping 6 (hours) in conf/nd96isr_h100_v5.conf
IDLE_IN_JOB_FOR = "1h"  # half the 2 h after which Princeton Research Computing kills zero-utilisation GPU jobs
# gpu-cluster's threshold: a twentieth of RoCE frames marked for 10 minutes is persistent congestion
ECN_MARKED_FRACTION = 0.05

Severity = Literal["warning", "critical"]
# What an alert's test samples belong to (rule_tests.subjects gives each its failing and healthy series' labels).
Subject = Literal[
    "gpu", "gpu-in-job", "server-gpus", "hca", "dcgm-exporter", "node-exporter", "switch-port", "leak-detection"
]
# What a plan must have for an alert to apply.
Needs = Literal["rail-hcas", "switch-telemetry", "roce", "rack-systems"]


@dataclass(frozen=True, slots=True)
class Series:
    """One metric of an alert's promtool test: its values on the failing subject and on a healthy one ("" for no
    such series); `subject` where the series belongs to another subject than the alert's."""

    metric: str
    firing: str
    healthy: str
    subject: Subject | None = None


@dataclass(frozen=True, slots=True)
class AlertRule:
    """One alert rule, its source, and its promtool test: `series` on `subject`'s failing and healthy samples,
    evaluated at `eval_time`."""

    name: str
    expr: str
    severity: Severity
    summary: str
    source: str
    subject: Subject
    series: tuple[Series, ...]
    for_: str = "0m"
    eval_time: str = "10m"
    needs: Needs | None = None


_FIGURE = re.compile(r"\$\{(\w+)\}")


@functools.cache
def alert_table() -> tuple[tuple[AlertRule, ...], dict[str, str]]:
    """alert_rules.yaml: its rules (with ${figure} placeholders) and its phrases."""
    document = yaml.safe_load(RULES_FILE.read_text(encoding="utf-8"))
    raw = [{("for_" if key == "for" else key): value for key, value in rule.items()} for rule in document["rules"]]
    return TypeAdapter(tuple[AlertRule, ...]).validate_python(raw), document["phrases"]


def rule_figures(plan: Plan) -> dict[str, str]:
    """The plan's figures and the thresholds the rules' ${name} placeholders stand for, as they are written."""
    servers = plan.gpu_nodes()
    first = min(servers, key=lambda d: d.name) if servers else None
    tdp_w = plan.part_as(first.name, GpuServer).gpu.tdp_w if first else 0
    speed_gbps = min((link.speed_gbps for link in queries(plan).links("compute", 0)), default=0)
    rate = speed_gbps * 1e9 / 8
    roles = gpu_roles_regex(plan)
    return {
        "gpus_per_server": str(plan.settings.gpus_per_server),
        "gpu_tdp_w": f"{tdp_w:g}",
        "compute_link_gbps": f"{speed_gbps:g}",
        "compute_link_bytes_per_s": f"{rate:.0f}",
        "half_compute_link_bytes_per_s": f"{rate / 2:.0f}",
        # the compute HCAs' series: by rail where the catalog names the HCAs, else by role
        "hca_selector": '{rail!=""}' if rail_hcas(plan) else f'{{role{"=~" if "|" in roles else "="}"{roles}"}}',
        "gpu_temperature_c": str(GPU_TEMPERATURE_C),
        "uncorrectable_remapped_rows": str(UNCORRECTABLE_REMAPPED_ROWS),
        "link_flap_window": LINK_FLAP_WINDOW,
        "idle_in_job_for": IDLE_IN_JOB_FOR,
        "ecn_marked_fraction": str(ECN_MARKED_FRACTION),
        "ecn_marked_percent": f"{ECN_MARKED_FRACTION:.0%}",
        "roce_priority": str(ROCE_QOS.priority),
    }


def _filled(rule: AlertRule, figures: dict[str, str]) -> AlertRule:
    """The rule with every ${name} replaced by its figure (an unknown name is a KeyError)."""

    def fill(text: str) -> str:
        return _FIGURE.sub(lambda m: figures[m.group(1)], text)

    return dataclasses.replace(
        rule,
        expr=fill(rule.expr),
        summary=fill(rule.summary),
        source=fill(rule.source),
        for_=fill(rule.for_),
        series=tuple(dataclasses.replace(s, firing=fill(s.firing), healthy=fill(s.healthy)) for s in rule.series),
    )


def plan_needs(plan: Plan) -> set[Needs]:
    """What the plan has of what some alerts need."""
    needs: set[Needs] = set()
    if rail_hcas(plan):
        needs.add("rail-hcas")
    if switch_telemetry_switches(plan):
        needs.add("switch-telemetry")
        if roce_networks(plan):
            needs.add("roce")
    if has_rack_systems(plan):
        needs.add("rack-systems")
    return needs


def alert_rules(plan: Plan) -> list[AlertRule]:
    """The plan's alert rules: every rule of alert_rules.yaml whose need the plan meets, its figures filled in."""
    needs = plan_needs(plan)
    rules, phrases = alert_table()
    figures = {**phrases, **rule_figures(plan)}
    figures |= {name: _FIGURE.sub(lambda m: figures[m.group(1)], text) for name, text in phrases.items()}
    return [_filled(rule, figures) for rule in rules if rule.needs is None or rule.needs in needs]


def alerts_file(rules: list[AlertRule]) -> dict[str, Any]:
    """rules/gpu-alerts.yml: one group of every alert rule."""
    return {
        "groups": [
            {
                "name": "gpu-cluster-alerts",
                "rules": [
                    {
                        "alert": rule.name,
                        "expr": rule.expr,
                        **({"for": rule.for_} if rule.for_ != "0m" else {}),
                        "labels": {"severity": rule.severity},
                        "annotations": {"summary": rule.summary, "source": rule.source},
                    }
                    for rule in rules
                ],
            }
        ]
    }


def recording_rules() -> dict[str, Any]:
    """Per-SU and per-rack aggregates the dashboard's overview reads."""
    rules = []
    for level in ("su", "rack"):
        rules += [
            {"record": f"{level}:dcgm_gpu_utilization:avg", "expr": f"avg by ({level}) (DCGM_FI_DEV_GPU_UTIL)"},
            {"record": f"{level}:dcgm_gpu_power_watts:sum", "expr": f"sum by ({level}) (DCGM_FI_DEV_POWER_USAGE)"},
            {"record": f"{level}:dcgm_gpu_temperature_celsius:max", "expr": f"max by ({level}) (DCGM_FI_DEV_GPU_TEMP)"},
            {"record": f"{level}:dcgm_gpus_reporting:count", "expr": f"count by ({level}) (DCGM_FI_DEV_GPU_TEMP)"},
            {
                "record": f"{level}:dcgm_gpus_with_xid:count",
                "expr": f"count by ({level}) (DCGM_FI_DEV_XID_ERRORS != 0)",
            },
        ]
    rules.append(
        {
            "record": "rail:node_infiniband_port_errors:rate5m",
            "expr": 'sum by (rail) (rate(node_infiniband_port_errors_received_total{rail!=""}[5m]))',
        }
    )
    return {"name": "gpu-cluster-by-su-and-rack", "rules": rules}
