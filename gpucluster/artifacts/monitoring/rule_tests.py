"""The promtool unit tests of the rules (tests/gpu-alerts.test.yml): each alert fires on its sample series and stays
quiet on a healthy one, every alert stays quiet on all the healthy series together, and the per-SU and per-rack
power sums add up. The samples carry the plan's own names (the first GPU server, its leaves, the first switch)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from gpucluster.artifacts.monitoring.alert_rules import AlertRule, Subject
from gpucluster.artifacts.monitoring.targets import (
    BCM_EXPORTER_PORT,
    BCM_JOB,
    COLLECTOR_PROMETHEUS_PORT,
    DCGM_EXPORTER_PORT,
    NODE_EXPORTER_PORT,
    SWITCH_JOB,
    ScrapeTarget,
    collector_host,
    has_rack_systems,
    rail_hcas,
    switch_telemetry_switches,
)
from gpucluster.artifacts.switch_config import switch_port_names
from gpucluster.plan.model import Plan

Labels = dict[str, str]


@dataclass(frozen=True, slots=True)
class Samples:
    """A subject's test series labels: the failing ones, the healthy ones, and the labels the alert fires with."""

    firing: list[Labels]
    healthy: list[Labels]
    alert_labels: Labels


def subjects(
    plan: Plan, servers: list[ScrapeTarget], management: list[ScrapeTarget], leaves: dict[str, dict[int, str]]
) -> dict[Subject, Samples]:
    """The samples of every subject the plan's alerts watch: the first GPU server fails, the second (or the first's
    second GPU) is healthy; `leaves` is targets.server_leaves(plan)."""
    gpus = plan.settings.gpus_per_server
    hcas = rail_hcas(plan)
    bad, good = servers[0], servers[1 % len(servers)]
    bad_gpu, good_gpu = _gpu_series(leaves, bad, 0), _gpu_series(leaves, good, 1 if good is bad else 0)
    hca = min(hcas, key=lambda name: hcas[name]) if hcas else "mlx5_0"
    bad_hca, good_hca = _hca_series(leaves, bad, hca, hcas), _hca_series(leaves, good, hca, hcas)
    busy, idle = dict(bad_gpu, hpc_job="4242"), dict(good_gpu, hpc_job="4243")
    found: dict[Subject, Samples] = {
        "gpu": Samples([bad_gpu], [good_gpu], bad_gpu),
        "gpu-in-job": Samples([busy], [idle], busy),
        "server-gpus": Samples(
            [_gpu_series(leaves, bad, i) for i in range(gpus - 1)],
            [_gpu_series(leaves, good, i) for i in range(gpus)] if good is not bad else [],
            {k: bad.labels[k] for k in ("node", "su", "rack")},
        ),
        "hca": Samples([bad_hca], [good_hca], bad_hca),
        "dcgm-exporter": _exporter("dcgm", DCGM_EXPORTER_PORT, bad, good),
        "node-exporter": _exporter("node", NODE_EXPORTER_PORT, management[0] if management else bad, good),
    }
    switches = switch_telemetry_switches(plan)
    if switches:
        ports = switch_port_names(plan, switches[0]) or ["swp1"]
        base = {
            "job": SWITCH_JOB,
            "instance": f"{collector_host(plan)}:{COLLECTOR_PROMETHEUS_PORT}",
            "host_name": switches[0],
        }
        bad_port, good_port = dict(base, interface=ports[0]), dict(base, interface=ports[1 % len(ports)])
        found["switch-port"] = Samples([bad_port], [good_port] if good_port != bad_port else [], bad_port)
    if has_rack_systems(plan):
        head = {"job": BCM_JOB, "instance": f"{collector_host(plan)}:{BCM_EXPORTER_PORT}"}
        found["leak-detection"] = Samples([head], [{**head, "instance": f"healthy-head:{BCM_EXPORTER_PORT}"}], head)
    return found


def _exporter(job: str, port: int, bad: ScrapeTarget, good: ScrapeTarget) -> Samples:
    """An exporter's `up` series: the target's labels with its job and instance."""
    bad_up, good_up = ({**t.labels, "job": job, "instance": f"{t.node}:{port}"} for t in (bad, good))
    return Samples([bad_up], [good_up] if good is not bad else [], bad_up)


def _exported(job: str, port: int, target: ScrapeTarget) -> Labels:
    """A series' labels as the exporter's job gives them after relabelling (the leaves label dropped)."""
    labels = {k: v for k, v in target.labels.items() if k != "leaves"}
    return {"job": job, "instance": f"{target.node}:{port}", **labels}


def _gpu_series(leaves: dict[str, dict[int, str]], target: ScrapeTarget, gpu: int) -> Labels:
    """A DCGM series' labels: the target's with gpu, rail and leaf."""
    leaf = leaves.get(target.node, {}).get(gpu + 1, "")
    return _exported("dcgm", DCGM_EXPORTER_PORT, target) | {"gpu": str(gpu), "rail": str(gpu + 1), "leaf": leaf}


def _hca_series(leaves: dict[str, dict[int, str]], target: ScrapeTarget, hca: str, hcas: dict[str, int]) -> Labels:
    series = _exported("node", NODE_EXPORTER_PORT, target) | {"device": hca, "port": "1"}
    if hca in hcas:
        series |= {"rail": str(hcas[hca]), "leaf": leaves.get(target.node, {}).get(hcas[hca], "")}
    return series


_TEMPLATE_LABEL = re.compile(r"\{\{ \$labels\.(\w+) \}\}")


def _annotations(rule: AlertRule, labels: Labels) -> dict[str, str]:
    """The annotations as Prometheus renders them for these labels (the templates only use $labels.X)."""
    return {"summary": _TEMPLATE_LABEL.sub(lambda m: labels.get(m.group(1), ""), rule.summary), "source": rule.source}


def _series(metric: str, labels: Labels, values: str) -> dict[str, Any]:
    inner = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{metric}{{{inner}}}", "values": values}


def _input_series(rule: AlertRule, samples: dict[Subject, Samples], healthy: bool) -> list[dict[str, Any]]:
    """A rule's test series on its subjects' failing (or healthy) samples, metric by metric."""
    series = []
    for s in rule.series:
        subject = samples[s.subject or rule.subject]
        values = s.healthy if healthy else s.firing
        if values:
            series += [_series(s.metric, labels, values) for labels in (subject.healthy if healthy else subject.firing)]
    return series


def alert_tests(rules: list[AlertRule], samples: dict[Subject, Samples]) -> dict[str, Any]:
    """promtool test rules: each alert fires on its sample series and stays quiet on healthy ones, and
    every alert stays quiet on a cluster of healthy series."""
    tests = []
    for rule in rules:
        labels = samples[rule.subject].alert_labels
        tests.append(
            {
                "name": f"{rule.name} fires on its sample and not on a healthy GPU",
                "interval": "1m",
                "input_series": _input_series(rule, samples, False) + _input_series(rule, samples, True),
                "alert_rule_test": [
                    {
                        "eval_time": rule.eval_time,
                        "alertname": rule.name,
                        "exp_alerts": [
                            {
                                "exp_labels": {**labels, "severity": rule.severity},
                                "exp_annotations": _annotations(rule, labels),
                            }
                        ],
                    }
                ],
            }
        )
    healthy = [s for rule in rules for s in _input_series(rule, samples, True)]
    tests.append(
        {
            "name": "every alert is quiet on healthy GPUs, HCAs and exporters",
            "interval": "1m",
            "input_series": list({s["series"]: s for s in healthy}.values()),
            "alert_rule_test": [
                {"eval_time": rule.eval_time, "alertname": rule.name, "exp_alerts": []} for rule in rules
            ],
        }
    )
    tests.append(_recording_test(samples["server-gpus"]))
    return {"rule_files": ["../rules/gpu-alerts.yml", "../rules/gpu-recording.yml"], "evaluation_interval": "1m",
            "tests": tests}  # fmt: skip


def _recording_test(server_gpus: Samples) -> dict[str, Any]:
    """The per-SU and per-rack power sums add up the GPUs of that SU and rack."""
    series = server_gpus.firing + server_gpus.healthy
    gpus = {level: Counter(labels[level] for labels in series) for level in ("su", "rack")}  # each draws 500 W
    return {
        "name": "power per SU and rack sums every GPU's draw",
        "interval": "1m",
        "input_series": [_series("DCGM_FI_DEV_POWER_USAGE", labels, "500x10") for labels in series],
        "promql_expr_test": [
            {
                "expr": f"{level}:dcgm_gpu_power_watts:sum",
                "eval_time": "5m",
                "exp_samples": [
                    {"labels": f'{level}:dcgm_gpu_power_watts:sum{{{level}="{key}"}}', "value": 500 * count}
                    for key, count in sorted(gpus[level].items())
                ],
            }
            for level in ("su", "rack")
        ],
    }
