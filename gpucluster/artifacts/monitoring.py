"""Monitoring: Prometheus scrape config, DCGM exporter counters, alert and recording rules with their
promtool unit tests, and a Grafana dashboard, all named from the plan.

Every GPU's metrics carry the labels that find it on the floor: node, SU, rack, rail and the leaf switch
its compute port is cabled to ("one failing GPU slows or stops the whole job").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpucluster import yamlout
from gpucluster.artifacts.grafana import dashboard_json
from gpucluster.artifacts.switch_config import ROCE_QOS, configured_networks, switch_configs
from gpucluster.burn_in import rail_links
from gpucluster.catalog.ports import port_details
from gpucluster.catalog.schema import GpuServer
from gpucluster.design.load import LoadedDesign
from gpucluster.plan.model import Device, Plan
from gpucluster.plan.registry import is_gpu_node
from gpucluster.templating import render

# dcgm-exporter serves :9400/metrics (NVIDIA/dcgm-exporter README).
DCGM_EXPORTER_PORT = 9400
# 9100 = Node exporter (Prometheus wiki "Default port allocations",
# https://github.com/prometheus/prometheus/wiki/Default-port-allocations).
NODE_EXPORTER_PORT = 9100
# dcgm-exporter --hpc-job-mapping-dir: files named by GPU index holding the job ids on that GPU; the
# exporter then labels the GPU's metrics hpc_job (NVIDIA/dcgm-exporter README, "HPC job mapping").
JOB_MAP_DIR = "/run/dcgm-job-map"
SCRAPE_INTERVAL = "30s"  # dcgm-exporter collects every 30 000 ms by default (its --collect-interval)
# Ethernet switch telemetry: Cumulus Linux exports OTLP (5.14 "Open Telemetry Export": interface statistics
# nvswitch_interface_*, per switch priority nvswitch_interface_sp_* and per traffic class nvswitch_interface_tc_*)
# to an OpenTelemetry Collector, whose Prometheus exporter Prometheus scrapes. 4317 is OTLP/gRPC's port (OpenTelemetry
# protocol specification, "OTLP/gRPC Default Port"); 8889 is where the collector's Prometheus exporter is commonly
# served (opentelemetry-collector-contrib exporter/prometheusexporter README example).
OTLP_GRPC_PORT = 4317
COLLECTOR_PROMETHEUS_PORT = 8889
SWITCH_JOB = "switch-telemetry"
# Base Command Manager serves its measurables, leak detection among them, to Prometheus at
# https://<head node>:8081/exporter, e.g. the gauge deviceswithleaks, "Number of devices that have detected a leak"
# (NVIDIA Mission Control Systems Administration Guide 2.0/2.2, "Leak Detection": tray-level leaks come from the
# compute and switch trays' BMCs over Redfish, rack-level ones from the building management system).
BCM_JOB = "bcm"
BCM_EXPORTER_PORT = 8081
BCM_EXPORTER_PATH = "/exporter"
BCM_LEAK_SOURCE = (
    'NVIDIA Mission Control 2.2 Systems Administration Guide, "Leak Detection": BCM\'s Prometheus endpoint '
    "https://<head>:8081/exporter serves deviceswithleaks (gauge), 'Number of devices that have detected a leak' "
    "(https://docs.nvidia.com/mission-control/docs/systems-administration-guide/2.2.0/leak-detection.html)"
)

# A rail is "GPU index + 1" (catalog schema, PortGroup.rails): GPU k of every server is on rail k + 1.

_AZURE = "Azure/azurehpc-health-checks"
_COMMUNITY = "community GPU alert rules (shared reference ecosystem-facts.md 5, 'Prometheus alert rules for GPUs')"

# (DCGM field, Prometheus type, help): the exporter's default counters plus what the alerts need, which
# the default file leaves commented out (NVIDIA/dcgm-exporter etc/default-counters.csv; ecosystem-facts 5).
COUNTERS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_POWER_MGMT_LIMIT", "gauge", "Power management limit (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints."),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", "Total number of single-bit persistent ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", "Total number of double-bit persistent ECC errors."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors."),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed."),
    ("DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", "Whether remapping of rows is pending (a GPU reset applies it)."),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink flow-control CRC errors."),
    ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink data CRC errors."),
    ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries."),
    ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink recovery errors."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."),
    # profiling fields, for utilisation (DCGM profiling module; NVIDIA/dcgm-exporter etc/default-counters.csv)
    ("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active."),
)

# Thresholds, each with its source.
GPU_TEMPERATURE_C = 80  # community rules: DCGM_FI_DEV_GPU_TEMP > 75-80 for 1-2 m (no NVIDIA rule pack)
UNCORRECTABLE_REMAPPED_ROWS = 512  # Azure azure_gpu_ecc.nhc: fail above 512
LINK_FLAP_WINDOW = "6h"  # Azure check_ib_link_flapping 6 (hours) in conf/nd96isr_h100_v5.conf (reliability 5.2)
IDLE_IN_JOB_FOR = "1h"  # half the 2 h after which Princeton Research Computing kills zero-utilisation GPU jobs
IDLE_IN_JOB_SOURCE = (
    "Princeton Research Computing utilization policies: GPU jobs at zero utilisation are killed after 2 hours "
    "(https://researchcomputing.princeton.edu/get-started/utilization-policies); alerting at half that leaves time "
    "to act. Needs the exporter's job mapping (slurm/ prolog and epilog)."
)


@dataclass(frozen=True)
class _Target:
    node: str
    labels: dict[str, str]


@dataclass
class Alert:
    """One alert rule, its source, and the sample series its promtool test fires it on."""

    name: str
    expr: str
    severity: str
    summary: str
    source: str
    for_: str = "0m"
    firing: list[tuple[str, dict[str, str], str]] = field(default_factory=list)  # (metric, labels, values)
    healthy: list[tuple[str, dict[str, str], str]] = field(default_factory=list)
    eval_time: str = "10m"
    labels: dict[str, str] = field(default_factory=dict)  # the firing alert's labels (without severity)


def write(plan: Plan, loaded: LoadedDesign, folder: Path) -> None:
    out = folder / "monitoring"
    for sub in ("rules", "tests", "grafana", "slurm"):
        (out / sub).mkdir(parents=True)
    leaves = server_leaves(plan)
    servers, management = (
        _targets(plan, plan.gpu_nodes(), leaves),
        _targets(plan, plan.devices_with("management-server"), leaves),
    )
    alerts = alert_rules(plan, servers, management, leaves)
    _dump(out / "prometheus.yml", prometheus_config(plan, servers, management))
    if switch_telemetry_switches(plan):
        _dump(out / "otel-collector.yaml", otel_collector_config())
    _dump(out / "rules" / "gpu-alerts.yml", {"groups": [{"name": "gpu-cluster-alerts", "rules": _rules(alerts)}]})
    _dump(out / "rules" / "gpu-recording.yml", {"groups": [recording_rules()]})
    _dump(out / "tests" / "gpu-alerts.test.yml", alert_tests(plan, alerts))
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
            switches=len(switch_telemetry_switches(plan)),
            collector=collector_host(plan),
            otlp_port=OTLP_GRPC_PORT,
            collector_port=COLLECTOR_PROMETHEUS_PORT,
            roce_priority=ROCE_QOS.priority,
        ),
        encoding="utf-8",
    )


def _dump(path: Path, document: object) -> None:
    """Block-style YAML with multi-line strings as literal blocks (readable PromQL), lines never folded."""
    path.write_text(yamlout.dump(document, blocks=True, width=1 << 20, allow_unicode=True), encoding="utf-8")


# --- scrape targets -----------------------------------------------------------------------------------------


def rack_system_bmcs(plan: Plan) -> list[dict]:
    """Per rack-scale system's rack: the management ports of its NVLink switch trays and power shelves and the
    in-rack switch port each is cabled to. DCGM sees neither (it reports each GPU's own NVLink counters, which
    the alerts read); NVOS and the trays' and shelves' BMCs (Redfish) expose them, as they do the rack's coolant
    and leak sensors."""
    peer: dict[tuple[str, str], str] = {}
    for link in plan.links_on("oob"):
        peer[(link.a_device, link.a_port)] = f"{link.b_device}:{link.b_port}"
    result = []
    for rack in sorted(plan.racks.values(), key=lambda r: r.name):
        if not rack.rack_system:
            continue
        entry: dict[str, object] = {"rack": rack.name, "nvlink_domain": rack.nvlink_domain, "system": rack.rack_system}
        for role, key in (("nvlink-switch-tray", "nvlink_switch_trays"), ("power-shelf", "power_shelves")):
            devices = [plan.devices[n] for n in rack.devices if plan.devices[n].role == role]
            entry[key] = [
                {
                    "name": d.name,
                    "u": d.u_position,
                    "ports": {port: switch for (dev, port), switch in sorted(peer.items()) if dev == d.name},
                }
                for d in sorted(devices, key=lambda d: d.u_position)
            ]
        result.append(entry)
    return result


def server_leaves(plan: Plan) -> dict[str, dict[int, str]]:
    """GPU server -> rail -> the leaf switch its compute port on that rail is cabled to."""
    return {
        server: {rail: plan.links[index].b_device for rail, index in rails.items()}
        for server, rails in rail_links(plan).items()
    }


def _targets(plan: Plan, devices: list[Device], leaves: dict[str, dict[int, str]]) -> list[_Target]:
    """The scrape targets, sorted by name, labelled with their role; a GPU node's carry its leaves (see
    server_leaves)."""
    targets = []
    for device in sorted(devices, key=lambda d: d.name):
        labels = {"node": device.name, "role": device.role, "rack": device.rack}
        if is_gpu_node(device.role):
            labels |= {"su": str(device.su or 1), "spare": str(device.spare).lower()}
            labels["leaves"] = ",".join(f"{rail}={leaf}" for rail, leaf in sorted(leaves.get(device.name, {}).items()))
        targets.append(_Target(device.name, labels))
    return targets


def _gpu_roles_regex(plan: Plan) -> str:
    """The roles of the plan's GPU nodes (registry Role.gpu_node) as a regex alternation."""
    return "|".join(sorted({d.role for d in plan.gpu_nodes()})) or "gpu-server"


def _rail_hcas(plan: Plan) -> dict[str, int]:
    """RDMA device -> rail, from the GPU servers' catalog part (empty when the catalog does not name them)."""
    servers = plan.gpu_nodes()
    if not servers:
        return {}
    return {d.os_device: d.rail for d in port_details(plan.part(servers[0].name), "compute") if d.os_device and d.rail}


def _leaf_relabels(rails: list[int]) -> list[dict]:
    """Each series with a rail label gets the leaf of that rail from its target's "leaves" label."""
    return [
        {
            "source_labels": ["rail", "leaves"],
            "regex": f"{rail};(?:.*,)?{rail}=([^,]+)(?:,.*)?",
            "target_label": "leaf",
            "replacement": "$1",
        }
        for rail in rails
    ] + [{"action": "labeldrop", "regex": "leaves"}]


def prometheus_config(plan: Plan, gpu_servers: list[_Target], management: list[_Target]) -> dict:
    """prometheus.yml: the DCGM exporter of every GPU server and the node exporter of every GPU server and
    management server, each target labelled with its node, SU, rack and spare flag, each GPU and HCA
    series with its rail and leaf."""
    gpus = plan.settings.gpus_per_server
    rails = list(range(1, gpus + 1))
    gpu_rails = [
        {"source_labels": ["gpu"], "regex": str(rail - 1), "target_label": "rail", "replacement": str(rail)}
        for rail in rails
    ]
    hca_rails = [
        {
            "source_labels": ["role", "device"],
            "regex": f"{_gpu_roles_regex(plan)};{hca}",
            "target_label": "rail",
            "replacement": str(rail),
        }
        for hca, rail in sorted(_rail_hcas(plan).items(), key=lambda item: item[1])
    ]
    return {
        "global": {
            "scrape_interval": SCRAPE_INTERVAL,
            "evaluation_interval": SCRAPE_INTERVAL,
            "external_labels": {"cluster": plan.name},
        },
        "rule_files": ["rules/gpu-alerts.yml", "rules/gpu-recording.yml"],
        "scrape_configs": [
            {
                "job_name": "dcgm",
                "static_configs": [
                    {"targets": [f"{t.node}:{DCGM_EXPORTER_PORT}"], "labels": t.labels} for t in gpu_servers
                ],
                "metric_relabel_configs": gpu_rails + _leaf_relabels(rails),
            },
            {
                "job_name": "node",
                "static_configs": [
                    {"targets": [f"{t.node}:{NODE_EXPORTER_PORT}"], "labels": t.labels}
                    for t in gpu_servers + management
                ],
                "metric_relabel_configs": hca_rails + _leaf_relabels(rails),
            },
            *_switch_job(plan),
            *_bcm_job(plan),
        ],
    }


def switch_telemetry_switches(plan: Plan) -> list[str]:
    """The Ethernet switches that get a startup configuration, whose telemetry the collector receives."""
    return [d.name for n in configured_networks(plan) for d in plan.switches(n)]


def collector_host(plan: Plan) -> str:
    """The OpenTelemetry Collector runs on the first management server (beside Prometheus)."""
    heads = sorted(d.name for d in plan.devices_with("management-server"))
    return heads[0] if heads else "localhost"


def _switch_job(plan: Plan) -> list[dict]:
    if not switch_telemetry_switches(plan):
        return []
    return [
        {
            "job_name": SWITCH_JOB,
            # the switches' own names arrive as the resource attribute host.name (label host_name)
            "honor_labels": True,
            "static_configs": [{"targets": [f"{collector_host(plan)}:{COLLECTOR_PROMETHEUS_PORT}"]}],
        }
    ]


def has_rack_systems(plan: Plan) -> bool:
    return any(rack.rack_system for rack in plan.racks.values())


def _bcm_job(plan: Plan) -> list[dict]:
    """BCM's exporter on the first head node, for the leak detection of liquid-cooled rack systems. Its TLS
    certificate is BCM's own (NVIDIA's example reads it with curl -k), so verification is off until its CA is
    installed where Prometheus runs (README)."""
    if not has_rack_systems(plan):
        return []
    return [
        {
            "job_name": BCM_JOB,
            "scheme": "https",
            "metrics_path": BCM_EXPORTER_PATH,
            "tls_config": {"insecure_skip_verify": True},
            "static_configs": [{"targets": [f"{collector_host(plan)}:{BCM_EXPORTER_PORT}"]}],
        }
    ]


def leak_alerts(plan: Plan) -> list[Alert]:
    """A coolant leak anywhere BCM watches (tray cold plates and inner manifolds through the trays' BMCs, rack and
    CDU sensors through the building management system): liquid-cooled rack systems only."""
    if not has_rack_systems(plan):
        return []
    series = {"job": BCM_JOB, "instance": f"{collector_host(plan)}:{BCM_EXPORTER_PORT}"}
    return [
        Alert(
            "CoolantLeakDetected",
            "deviceswithleaks > 0",
            "critical",
            "BCM reports a coolant leak on a device of a liquid-cooled rack: list them with leakinfo in cmsh and "
            "isolate the rack's liquid loop",
            BCM_LEAK_SOURCE,
            firing=[("deviceswithleaks", series, "0 1x9")],
            healthy=[("deviceswithleaks", {**series, "instance": "healthy-head:8081"}, "0x10")],
            eval_time="5m",
            labels=dict(series),
        )
    ]


def otel_collector_config() -> dict:
    """OpenTelemetry Collector (contrib): OTLP/gRPC in from the switches, a Prometheus endpoint out, every resource
    attribute (the switch's host.name) turned into a label (prometheusexporter resource_to_telemetry_conversion)."""
    return {
        "receivers": {"otlp": {"protocols": {"grpc": {"endpoint": f"0.0.0.0:{OTLP_GRPC_PORT}"}}}},
        "processors": {"batch": {}},
        "exporters": {
            "prometheus": {
                "endpoint": f"0.0.0.0:{COLLECTOR_PROMETHEUS_PORT}",
                "resource_to_telemetry_conversion": {"enabled": True},
            }
        },
        "service": {
            "pipelines": {"metrics": {"receivers": ["otlp"], "processors": ["batch"], "exporters": ["prometheus"]}}
        },
    }


def counters_csv() -> str:
    lines = [
        "# DCGM exporter counters for gpu-cluster (dcgm-exporter -f dcgm-counters.csv).",
        "# Format: DCGM FIELD, Prometheus metric type, help message. The exporter's default set plus the",
        "# ECC, row-remap, NVLink-error, power-limit and violation fields the alert rules read.",
    ]
    lines += [f"{name}, {kind}, {text}" for name, kind, text in COUNTERS]
    return "\n".join(lines) + "\n"


# --- alerts ----------------------------------------------------------------------------------------------


_WHERE_GPU = (
    "GPU {{ $labels.gpu }} of {{ $labels.node }} (rack {{ $labels.rack }}, SU {{ $labels.su }}, "
    "rail {{ $labels.rail }}, leaf {{ $labels.leaf }})"
)
_WHERE_HCA = (
    "HCA {{ $labels.device }} of {{ $labels.node }} (rack {{ $labels.rack }}, SU {{ $labels.su }}, "
    "rail {{ $labels.rail }}, leaf {{ $labels.leaf }})"
)


def alert_rules(
    plan: Plan, servers: list[_Target], management: list[_Target], leaves: dict[str, dict[int, str]]
) -> list[Alert]:
    """The alert rules with a firing and a healthy sample for each (see alert_tests); `leaves` is
    server_leaves(plan)."""
    gpus = plan.settings.gpus_per_server
    tdp_w = plan.part_as(servers[0].node, GpuServer).gpu.tdp_w if servers else 0
    hcas = _rail_hcas(plan)
    speed_gbps = _compute_link_gbps(plan)
    bad, good = servers[0], servers[1 % len(servers)]
    bad_gpu, good_gpu = _gpu_series(leaves, bad, 0), _gpu_series(leaves, good, 1 if good is bad else 0)
    hca = min(hcas, key=lambda name: hcas[name]) if hcas else "mlx5_0"
    bad_hca, good_hca = _hca_series(leaves, bad, hca, hcas), _hca_series(leaves, good, hca, hcas)
    roles = _gpu_roles_regex(plan)
    ib_selector = '{rail!=""}' if hcas else f'{{role{"=~" if "|" in roles else "="}"{roles}"}}'

    def sampled(bad_labels: dict[str, str], good_labels: dict[str, str]) -> Callable[..., Alert]:
        """An alert whose test fires on one metric of the bad subject and stays quiet on the good one."""

        def make(
            name: str,
            expr: str,
            severity: str,
            summary: str,
            source: str,
            metric: str,
            firing: str,
            healthy: str,
            **extra: Any,
        ) -> Alert:
            return Alert(
                name,
                expr,
                severity,
                summary,
                source,
                firing=[(metric, bad_labels, firing)],
                healthy=[(metric, good_labels, healthy)],
                labels=dict(bad_labels),
                **extra,
            )

        return make

    gpu_alert, hca_alert = sampled(bad_gpu, good_gpu), sampled(bad_hca, good_hca)

    nvlink = [name for name, *_ in COUNTERS if name.startswith("DCGM_FI_DEV_NVLINK_") and "ERROR" in name]
    alerts = [
        gpu_alert(
            "GpuTemperatureHigh",
            f"DCGM_FI_DEV_GPU_TEMP > {GPU_TEMPERATURE_C}",
            "warning",
            f"{_WHERE_GPU} is above {GPU_TEMPERATURE_C} C",
            f"{_COMMUNITY}: > 75-80 C for 1-2 m",
            "DCGM_FI_DEV_GPU_TEMP",
            "70 85x10",
            "70x10",
            for_="2m",
        ),
        gpu_alert(
            "GpuXidError",
            "DCGM_FI_DEV_XID_ERRORS != 0",
            "critical",
            f"{_WHERE_GPU} reported an XID error",
            f"{_COMMUNITY}; {_AZURE} check_gpu_xid fails on any XID",
            "DCGM_FI_DEV_XID_ERRORS",
            "0 0 79x8",
            "0x10",
            eval_time="5m",
        ),
        gpu_alert(
            "GpuUncorrectableEccError",
            "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m]) > 0",
            "critical",
            f"{_WHERE_GPU} had an uncorrectable (double-bit) ECC error",
            f"{_COMMUNITY}: ECC DBE increase > 0; {_AZURE} azure_gpu_ecc.nhc fails on uncorrectable errors",
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
            "0 0 0 1x7",
            "0x10",
            eval_time="5m",
        ),
        gpu_alert(
            "GpuRowRemapPending",
            "DCGM_FI_DEV_ROW_REMAP_PENDING > 0",
            "warning",
            f"{_WHERE_GPU} has a pending row remap: drain it and reset the GPU",
            f"{_AZURE} azure_gpu_ecc.nhc: remapped-rows pending > 0 fails (reliability-facts.md 5.2)",
            "DCGM_FI_DEV_ROW_REMAP_PENDING",
            "0 1x9",
            "0x10",
            eval_time="5m",
        ),
        gpu_alert(
            "GpuRowRemapFailure",
            "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0",
            "critical",
            f"{_WHERE_GPU} failed to remap a memory row: replace the GPU",
            f"{_COMMUNITY}: row-remap failure == 1; {_AZURE} azure_gpu_ecc.nhc: remap failure > 0 fails",
            "DCGM_FI_DEV_ROW_REMAP_FAILURE",
            "0 1x9",
            "0x10",
            eval_time="5m",
        ),
        gpu_alert(
            "GpuUncorrectableRemappedRows",
            f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS > {UNCORRECTABLE_REMAPPED_ROWS}",
            "critical",
            f"{_WHERE_GPU} has remapped more than {UNCORRECTABLE_REMAPPED_ROWS} rows for uncorrectable errors",
            f"{_AZURE} azure_gpu_ecc.nhc: remapped uncorrectable rows > 512 fails (reliability-facts.md 5.2)",
            "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
            "600x10",
            "3x10",
            eval_time="5m",
        ),
        Alert(
            "GpuNvlinkErrors",
            "\nor\n".join(f"increase({name}[10m]) > 0" for name in nvlink),
            "warning",
            f"{_WHERE_GPU} counts NVLink errors",
            f"{_COMMUNITY}: NVLink CRC or replay increase > 0; Meta GCM check-dcgmi nvlink thresholds default 0",
            firing=[(nvlink[0], bad_gpu, "0 0 5x8")] + [(name, bad_gpu, "0x10") for name in nvlink[1:]],
            healthy=[(name, good_gpu, "0x10") for name in nvlink],
            eval_time="5m",
            labels=dict(bad_gpu),
        ),
        Alert(
            "GpuMissing",
            f"count by (node, su, rack) (DCGM_FI_DEV_GPU_TEMP) < {gpus}",
            "critical",
            f"{{{{ $labels.node }}}} (rack {{{{ $labels.rack }}}}, SU {{{{ $labels.su }}}}) reports fewer than "
            f"{gpus} GPUs",
            f"the plan: {gpus} GPUs per server (catalog); {_AZURE} check_gpu_count",
            for_="5m",
            firing=[("DCGM_FI_DEV_GPU_TEMP", _gpu_series(leaves, bad, i), "60x10") for i in range(gpus - 1)],
            healthy=[("DCGM_FI_DEV_GPU_TEMP", _gpu_series(leaves, good, i), "60x10") for i in range(gpus)]
            if good is not bad
            else [],
            labels={k: bad.labels[k] for k in ("node", "su", "rack")},
        ),
        _down_alert(
            "DcgmExporterDown",
            "dcgm",
            DCGM_EXPORTER_PORT,
            bad,
            good,
            "the DCGM exporter of {{ $labels.node }} (rack {{ $labels.rack }}) is down: its GPUs are unseen",
        ),
        _down_alert(
            "NodeExporterDown",
            "node",
            NODE_EXPORTER_PORT,
            management[0] if management else bad,
            good,
            "the node exporter of {{ $labels.node }} (rack {{ $labels.rack }}) is down",
        ),
        gpu_alert(
            "GpuThermalThrottling",
            "increase(DCGM_FI_DEV_THERMAL_VIOLATION[5m]) > 0",
            "warning",
            f"{_WHERE_GPU} throttles its clocks for heat",
            f"{_AZURE} azure_gpu_clock_throttling.nhc fails on HW and SW thermal slowdown",
            "DCGM_FI_DEV_THERMAL_VIOLATION",
            "0+1000x10",
            "0x10",
            eval_time="5m",
        ),
        Alert(
            "GpuPowerThrottling",
            "increase(DCGM_FI_DEV_POWER_VIOLATION[5m]) > 0\n"
            f"and on (instance, gpu) DCGM_FI_DEV_POWER_MGMT_LIMIT < {tdp_w:g}",
            "warning",
            f"{_WHERE_GPU} is power-capped below its {tdp_w:g} W TDP: a lowered limit or a power fault",
            f"capping at the TDP is normal ({_AZURE} azure_gpu_clock_throttling.nhc accepts SW power cap); "
            f"below it is not: TDP {tdp_w:g} W from the catalog",
            firing=[
                ("DCGM_FI_DEV_POWER_VIOLATION", bad_gpu, "0+1000x10"),
                ("DCGM_FI_DEV_POWER_MGMT_LIMIT", bad_gpu, "500x10"),
            ],
            healthy=[
                ("DCGM_FI_DEV_POWER_VIOLATION", good_gpu, "0+1000x10"),
                ("DCGM_FI_DEV_POWER_MGMT_LIMIT", good_gpu, f"{tdp_w:g}x10"),
            ],
            eval_time="5m",
            labels=dict(bad_gpu),
        ),
        hca_alert(
            "InfinibandPortErrors",
            "increase(node_infiniband_port_errors_received_total[10m]) > 0",
            "warning",
            f"{_WHERE_HCA} receives packets with errors: check the cable and transceivers",
            "error counters of a healthy link do not move (threshold 0, as the community GPU error rules)",
            "node_infiniband_port_errors_received_total",
            "0 0 3x8",
            "0x10",
            eval_time="5m",
        ),
        hca_alert(
            "InfinibandLinkFlapping",
            f"increase(node_infiniband_link_downed_total[{LINK_FLAP_WINDOW}]) > 0",
            "warning",
            f"{_WHERE_HCA} went down in the last {LINK_FLAP_WINDOW}",
            f"{_AZURE} conf/nd96isr_h100_v5.conf: check_ib_link_flapping 6 (hours)",
            "node_infiniband_link_downed_total",
            "0 1x9",
            "0x10",
            eval_time="5m",
        ),
        hca_alert(
            "InfinibandPortDown",
            f"node_infiniband_state_id{ib_selector} != 4",
            "critical",
            f"{_WHERE_HCA} is not active",
            f"node_exporter infiniband collector: state_id 4 = active; {_AZURE} check_hw_ib checks every compute HCA",
            "node_infiniband_state_id",
            "4 1x9",
            "4x10",
            for_="2m",
        ),
    ]
    if hcas:
        rate = speed_gbps * 1e9 / 8
        alerts.append(
            hca_alert("InfinibandPortDegraded", f'node_infiniband_rate_bytes_per_second{{rail!=""}} < {rate:.0f}',
                      "warning", f"{_WHERE_HCA} trained below its {speed_gbps:g} Gb/s link speed",
                      f"the plan's compute link speed {speed_gbps:g} Gb/s; {_AZURE} check_hw_ib {speed_gbps:g}",
                      "node_infiniband_rate_bytes_per_second", f"{rate / 2:.0f}x10", f"{rate:.0f}x10", for_="5m")
        )  # fmt: skip
    busy, idle = dict(bad_gpu, hpc_job="4242"), dict(good_gpu, hpc_job="4243")
    alerts.append(
        Alert("GpuIdleInJob", 'max_over_time(DCGM_FI_DEV_GPU_UTIL{hpc_job!=""}[5m]) == 0', "warning",
              f"{_WHERE_GPU} has been idle for {IDLE_IN_JOB_FOR} in job {{{{ $labels.hpc_job }}}}",
              IDLE_IN_JOB_SOURCE, for_=IDLE_IN_JOB_FOR,
              firing=[("DCGM_FI_DEV_GPU_UTIL", busy, "0x90")],
              healthy=[("DCGM_FI_DEV_GPU_UTIL", idle, "95x90"), ("DCGM_FI_DEV_GPU_UTIL", good_gpu, "0x90")],
              eval_time="80m", labels=dict(busy))
    )  # fmt: skip
    alerts += switch_alerts(plan)
    alerts += leak_alerts(plan)
    return alerts


_WHERE_PORT = "{{ $labels.host_name }} port {{ $labels.interface }}"
_CUMULUS_OTEL = 'Cumulus Linux 5.14 "Open Telemetry Export" interface statistics'
ECN_MARKED_FRACTION = (
    0.05  # gpu-cluster's threshold: a twentieth of RoCE frames marked for 10 minutes is persistent congestion
)


def switch_alerts(plan: Plan) -> list[Alert]:
    """Ethernet fabric alerts on the switches' OTLP telemetry: PFC pause storms and ECN marking on the RoCE class,
    input errors, ports down and flapping. Each with a sample on two planned ports of the first switch."""
    switches = switch_telemetry_switches(plan)
    if not switches:
        return []
    configs = {c.name: c for c in switch_configs(plan)}
    first = configs[switches[0]]
    ports = [p.name for p in first.ports] or ["swp1"]
    base = {
        "job": SWITCH_JOB,
        "instance": f"{collector_host(plan)}:{COLLECTOR_PROMETHEUS_PORT}",
        "host_name": first.name,
    }
    bad, good = dict(base, interface=ports[0]), dict(base, interface=ports[1 % len(ports)])
    roce = any(c.network in ("compute", "storage") for c in configs.values())
    priority = ROCE_QOS.priority

    def alert(
        name: str,
        expr: str,
        severity: str,
        summary: str,
        source: str,
        metric: str,
        firing: str,
        healthy: str,
        for_: str = "0m",
        eval_time: str = "10m",
        labels: dict | None = None,
    ) -> Alert:
        return Alert(
            name,
            expr,
            severity,
            summary,
            source,
            for_=for_,
            firing=[(metric, labels or bad, firing)],
            healthy=[(metric, good, healthy)] if good != bad else [],
            eval_time=eval_time,
            labels=dict(labels or bad),
        )

    alerts = [
        alert("SwitchPortErrors", "rate(nvswitch_interface_if_in_errors[5m]) > 0", "warning",
              f"{_WHERE_PORT} receives errored frames (cable, optic or dirty connector)",
              f"{_CUMULUS_OTEL}: nvswitch_interface_if_in_errors; a clean 400G link shows none",
              "nvswitch_interface_if_in_errors", "0+10x20", "0x20", for_="5m", eval_time="15m"),
        alert("SwitchPortDown", "nvswitch_interface_oper_state == 2", "critical",
              f"{_WHERE_PORT} is down; the plan cables it (only configured ports are exported)",
              f"{_CUMULUS_OTEL}: nvswitch_interface_oper_state bitmap, Down = 2",
              "nvswitch_interface_oper_state", "1 2x10", "1x11", for_="2m", eval_time="10m"),
        alert("SwitchPortFlapping", f"increase(nvswitch_interface_carrier_changes_total[{LINK_FLAP_WINDOW}]) > 2",
              "warning", f"{_WHERE_PORT} changed carrier state more than twice in {LINK_FLAP_WINDOW}",
              f"{_CUMULUS_OTEL}: nvswitch_interface_carrier_changes_total; window as {_AZURE} check_ib_link_flapping",
              "nvswitch_interface_carrier_changes_total", "0 0 2 4 6x7", "2x10", eval_time="10m"),
    ]  # fmt: skip
    if roce:  # the switches export per-priority and per-class counters for the RoCE priority and class only
        alerts += [
            alert("SwitchPfcPauseStorm",
                  "min_over_time(rate(nvswitch_interface_sp_rx_pause[1m])[5m:1m]) > 0", "critical",
                  f"{_WHERE_PORT} has received PFC pause frames on the RoCE priority in every minute for 5 "
                  "minutes: a stuck receiver or a pause storm is stalling the lossless class",
                  f"{_CUMULUS_OTEL} per switch priority (switch-priority {priority} exported): "
                  f"nvswitch_interface_sp_rx_pause; RoCE lossless runs PFC on priority {priority} (qos roce)",
                  "nvswitch_interface_sp_rx_pause", "0+100x20", "0+100x2 200x18", eval_time="15m"),
            alert("SwitchEcnMarkingHigh",
                  "rate(nvswitch_interface_tc_tx_ecn_marked_tc[5m]) / rate(nvswitch_interface_tc_tx_frames[5m]) "
                  f"> {ECN_MARKED_FRACTION}", "warning",
                  f"{_WHERE_PORT} marks over {ECN_MARKED_FRACTION:.0%} of RoCE frames with ECN: persistent "
                  "congestion on the path (oversubscription, a slow receiver or uneven load balancing)",
                  f"{_CUMULUS_OTEL} per traffic class (traffic-class {priority} exported): "
                  "nvswitch_interface_tc_tx_ecn_marked_tc over nvswitch_interface_tc_tx_frames; "
                  "threshold: gpu-cluster's",
                  "nvswitch_interface_tc_tx_ecn_marked_tc", "0+100x20", "0+1x20", for_="10m", eval_time="18m"),
        ]  # fmt: skip
        ecn = alerts[-1]  # the ratio needs the frame counter beside the marked one
        ecn.firing.append(("nvswitch_interface_tc_tx_frames", bad, "0+1000x20"))
        ecn.healthy.append(("nvswitch_interface_tc_tx_frames", good, "0+1000x20"))
    return alerts


def _down_alert(name: str, job: str, port: int, bad: _Target, good: _Target, summary: str) -> Alert:
    series = [({**t.labels, "job": job, "instance": f"{t.node}:{port}"}) for t in (bad, good)]
    return Alert(
        name,
        f'up{{job="{job}"}} == 0',
        "critical",
        summary,
        "a target that does not answer hides every alert about its host",
        for_="5m",
        firing=[("up", series[0], "1 0x10")],
        healthy=[("up", series[1], "1x11")] if good is not bad else [],
        labels=series[0],
    )


def _gpu_series(leaves: dict[str, dict[int, str]], target: _Target, gpu: int) -> dict[str, str]:
    """A DCGM series' labels after relabelling: the target's labels with gpu, rail and leaf."""
    labels = {k: v for k, v in target.labels.items() if k != "leaves"}
    leaf = leaves.get(target.node, {}).get(gpu + 1, "")
    return {
        "job": "dcgm",
        "instance": f"{target.node}:{DCGM_EXPORTER_PORT}",
        **labels,
        "gpu": str(gpu),
        "rail": str(gpu + 1),
        "leaf": leaf,
    }


def _hca_series(leaves: dict[str, dict[int, str]], target: _Target, hca: str, hcas: dict[str, int]) -> dict[str, str]:
    labels = {k: v for k, v in target.labels.items() if k != "leaves"}
    series = {"job": "node", "instance": f"{target.node}:{NODE_EXPORTER_PORT}", **labels}
    series |= {"device": hca, "port": "1"}
    if hca in hcas:
        series |= {"rail": str(hcas[hca]), "leaf": leaves.get(target.node, {}).get(hcas[hca], "")}
    return series


def _compute_link_gbps(plan: Plan) -> float:
    return min((link.speed_gbps for link in plan.queries().links("compute", 0)), default=0)


def _rules(alerts: list[Alert]) -> list[dict]:
    return [
        {
            "alert": a.name,
            "expr": a.expr,
            **({"for": a.for_} if a.for_ != "0m" else {}),
            "labels": {"severity": a.severity},
            "annotations": {"summary": a.summary, "source": a.source},
        }
        for a in alerts
    ]


def recording_rules() -> dict:
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


# --- promtool unit tests ---------------------------------------------------------------------------------

_TEMPLATE_LABEL = re.compile(r"\{\{ \$labels\.(\w+) \}\}")


def _annotations(alert: Alert, labels: dict[str, str]) -> dict[str, str]:
    """The annotations as Prometheus renders them for these labels (the templates only use $labels.X)."""
    return {
        "summary": _TEMPLATE_LABEL.sub(lambda m: labels.get(m.group(1), ""), alert.summary),
        "source": alert.source,
    }


def _series(metric: str, labels: dict[str, str], values: str) -> dict:
    inner = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{metric}{{{inner}}}", "values": values}


def alert_tests(plan: Plan, alerts: list[Alert]) -> dict:
    """promtool test rules: each alert fires on its sample series and stays quiet on healthy ones, and
    every alert stays quiet on a cluster of healthy series."""
    tests = []
    for alert in alerts:
        tests.append(
            {
                "name": f"{alert.name} fires on its sample and not on a healthy GPU",
                "interval": "1m",
                "input_series": [_series(*s) for s in alert.firing + alert.healthy],
                "alert_rule_test": [
                    {
                        "eval_time": alert.eval_time,
                        "alertname": alert.name,
                        "exp_alerts": [
                            {
                                "exp_labels": {**alert.labels, "severity": alert.severity},
                                "exp_annotations": _annotations(alert, alert.labels),
                            }
                        ],
                    }
                ],
            }
        )
    healthy = [_series(*s) for alert in alerts for s in alert.healthy]
    tests.append(
        {
            "name": "every alert is quiet on healthy GPUs, HCAs and exporters",
            "interval": "1m",
            "input_series": list({s["series"]: s for s in healthy}.values()),
            "alert_rule_test": [
                {"eval_time": alert.eval_time, "alertname": alert.name, "exp_alerts": []} for alert in alerts
            ],
        }
    )
    tests.append(_recording_test(plan, alerts))
    return {"rule_files": ["../rules/gpu-alerts.yml", "../rules/gpu-recording.yml"], "evaluation_interval": "1m",
            "tests": tests}  # fmt: skip


def _recording_test(plan: Plan, alerts: list[Alert]) -> dict:
    """The per-SU and per-rack power sums add up the GPUs of that SU and rack."""
    missing = next(a for a in alerts if a.name == "GpuMissing")
    series = missing.firing + missing.healthy
    racks: dict[str, int] = {}
    sus: dict[str, int] = {}
    for _metric, labels, _values in series:
        racks[labels["rack"]] = racks.get(labels["rack"], 0) + 500
        sus[labels["su"]] = sus.get(labels["su"], 0) + 500
    return {
        "name": "power per SU and rack sums every GPU's draw",
        "interval": "1m",
        "input_series": [_series("DCGM_FI_DEV_POWER_USAGE", labels, "500x10") for _m, labels, _v in series],
        "promql_expr_test": [
            {
                "expr": f"{level}:dcgm_gpu_power_watts:sum",
                "eval_time": "5m",
                "exp_samples": [
                    {"labels": f'{level}:dcgm_gpu_power_watts:sum{{{level}="{key}"}}', "value": value}
                    for key, value in sorted(totals.items())
                ],
            }
            for level, totals in (("su", sus), ("rack", racks))
        ],
    }
