"""Monitoring, named from the plan: what Prometheus scrapes (:mod:`.targets`), the alert and recording rules
(:mod:`.alert_rules`), their promtool tests (:mod:`.rule_tests`) and a Grafana dashboard; this module writes them."""

from __future__ import annotations

from pathlib import Path

from gpucluster.artifacts.grafana import dashboard_json
from gpucluster.artifacts.monitoring.alert_rules import GPU_TEMPERATURE_C, alert_rules, alerts_file, recording_rules
from gpucluster.artifacts.monitoring.rule_tests import alert_tests, subjects
from gpucluster.artifacts.monitoring.targets import (
    COLLECTOR_PROMETHEUS_PORT,
    DCGM_EXPORTER_PORT,
    JOB_MAP_DIR,
    NODE_EXPORTER_PORT,
    OTLP_GRPC_PORT,
    collector_host,
    counters_csv,
    otel_collector_config,
    prometheus_config,
    rack_system_bmcs,
    scrape_targets,
    server_leaves,
    switch_telemetry_switches,
)
from gpucluster.design.load import LoadedDesign
from gpucluster.formats import yamlout
from gpucluster.formats.templating import render
from gpucluster.plan.model import PhysicalPlan
from gpucluster.plan.roce import ROCE_QOS
from gpucluster.runtime.collector import cycle_collector_paused


@cycle_collector_paused()  # very many records, no cycles (gpucluster.runtime.collector)
def write(plan: PhysicalPlan, loaded: LoadedDesign, folder: Path) -> None:
    out = folder / "monitoring"
    for sub in ("rules", "tests", "grafana", "slurm"):
        (out / sub).mkdir(parents=True)
    leaves = server_leaves(plan)
    servers = scrape_targets(plan, plan.gpu_nodes(), leaves)
    management = scrape_targets(plan, plan.devices_with("management-server"), leaves)
    alerts = alert_rules(plan)
    _dump(out / "prometheus.yml", prometheus_config(plan, servers, management))
    switches = switch_telemetry_switches(plan)
    if switches:
        _dump(out / "otel-collector.yaml", otel_collector_config())
    _dump(out / "rules" / "gpu-alerts.yml", alerts_file(alerts))
    _dump(out / "rules" / "gpu-recording.yml", {"groups": [recording_rules()]})
    _dump(out / "tests" / "gpu-alerts.test.yml", alert_tests(alerts, subjects(plan, servers, management, leaves)))
    (out / "dcgm-counters.csv").write_text(counters_csv(), encoding="utf-8")
    (out / "grafana" / "gpu-cluster.json").write_text(dashboard_json(plan, GPU_TEMPERATURE_C), encoding="utf-8")
    for name in ("prolog-dcgm-job-map.sh", "epilog-dcgm-job-map.sh"):
        path = out / "slurm" / name
        path.write_text(render(f"monitoring/{name}.j2", job_map_dir=JOB_MAP_DIR), encoding="utf-8")
        path.chmod(0o755)
    rack_bmcs = rack_system_bmcs(plan)
    if rack_bmcs:
        _dump(out / "rack-system-bmcs.yml", rack_bmcs)
    (out / "README.md").write_text(
        render(
            "monitoring/README.md.j2",
            rack_systems=len(rack_bmcs),
            design=plan.name,
            alerts=alerts,
            dcgm_port=DCGM_EXPORTER_PORT,
            node_port=NODE_EXPORTER_PORT,
            job_map_dir=JOB_MAP_DIR,
            targets=len(servers),
            management=len(management),
            switches=len(switches),
            collector=collector_host(plan),
            otlp_port=OTLP_GRPC_PORT,
            collector_port=COLLECTOR_PROMETHEUS_PORT,
            roce_priority=ROCE_QOS.priority,
        ),
        encoding="utf-8",
    )


def _dump(path: Path, document: object) -> None:
    """Block-style YAML with multi-line strings as literal blocks (readable PromQL), lines never folded."""
    yamlout.dump_to(path, document, blocks=True, width=1 << 20, allow_unicode=True)
