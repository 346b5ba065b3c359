"""What Prometheus scrapes (the exporters on the GPU nodes and management servers, the OpenTelemetry Collector of
the Ethernet switches' telemetry, BCM's leak detection) and prometheus.yml. Every GPU's metrics carry the labels that
find it on the floor (node, SU, rack, rail, leaf): "one failing GPU slows or stops the whole job".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpucluster.analyse.burn_in import rail_links
from gpucluster.artifacts.switch_config import configured_networks
from gpucluster.catalog.ports import port_details
from gpucluster.plan.model import Device, Plan
from gpucluster.plan.queries import links_on
from gpucluster.plan.registry import is_gpu_node

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

# (DCGM field, Prometheus type, help): the exporter's default counters plus what the alerts need, which
# the default file leaves commented out (NVIDIA/dcgm-exporter etc/default-counters.csv).
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


@dataclass(frozen=True)
class ScrapeTarget:
    """A host Prometheus scrapes and the labels its series carry."""

    node: str
    labels: dict[str, str]


def rack_system_bmcs(plan: Plan) -> list[dict[str, Any]]:
    """Per rack-scale system's rack: the management ports of its NVLink switch trays and power shelves and the
    switch port each is cabled to. DCGM sees neither; NVOS and their BMCs (Redfish) expose them and the leak sensors."""
    peers: dict[str, dict[str, str]] = {}  # device -> its port -> the switch port it is cabled to
    for link in links_on(plan, "oob"):
        peers.setdefault(link.a_device, {})[link.a_port] = f"{link.b_device}:{link.b_port}"
    result = []
    for rack in sorted(plan.racks.values(), key=lambda r: r.name):
        if not rack.rack_system:
            continue
        entry: dict[str, object] = {"rack": rack.name, "nvlink_domain": rack.nvlink_domain, "system": rack.rack_system}
        for role, key in (("nvlink-switch-tray", "nvlink_switch_trays"), ("power-shelf", "power_shelves")):
            devices = [plan.devices[n] for n in rack.devices if plan.devices[n].role == role]
            entry[key] = [
                {"name": d.name, "u": d.u_position, "ports": dict(sorted(peers.get(d.name, {}).items()))}
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


def scrape_targets(plan: Plan, devices: list[Device], leaves: dict[str, dict[int, str]]) -> list[ScrapeTarget]:
    """The scrape targets, sorted by name, labelled with their role; a GPU node's carry its leaves (see
    server_leaves)."""
    targets = []
    for device in sorted(devices, key=lambda d: d.name):
        labels = {"node": device.name, "role": device.role, "rack": device.rack}
        if is_gpu_node(device.role):
            labels |= {"su": str(device.su or 1), "spare": str(device.spare).lower()}
            labels["leaves"] = ",".join(f"{rail}={leaf}" for rail, leaf in sorted(leaves.get(device.name, {}).items()))
        targets.append(ScrapeTarget(device.name, labels))
    return targets


def gpu_roles_regex(plan: Plan) -> str:
    """The roles of the plan's GPU nodes (registry Role.gpu_node) as a regex alternation."""
    return "|".join(sorted({d.role for d in plan.gpu_nodes()})) or "gpu-server"


def rail_hcas(plan: Plan) -> dict[str, int]:
    """RDMA device -> rail, from the GPU servers' catalog part (empty when the catalog does not name them)."""
    first = next((d for d in plan.devices.values() if is_gpu_node(d.role)), None)  # plan.gpu_nodes()[0], found
    if first is None:
        return {}
    return {d.os_device: d.rail for d in port_details(plan.part(first.name), "compute") if d.os_device and d.rail}


def _leaf_relabels(rails: list[int]) -> list[dict[str, Any]]:
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


def prometheus_config(plan: Plan, gpu_servers: list[ScrapeTarget], management: list[ScrapeTarget]) -> dict[str, Any]:
    """prometheus.yml: the DCGM exporter of every GPU server and the node exporter of every GPU and management
    server, each target labelled with its node, SU, rack and spare flag, each GPU and HCA series with rail and leaf."""
    rails = list(range(1, plan.settings.gpus_per_server + 1))
    # GPU k of every server is on rail k + 1 (catalog schema, PortGroup.rails)
    gpu_rails = [
        {"source_labels": ["gpu"], "regex": str(rail - 1), "target_label": "rail", "replacement": str(rail)}
        for rail in rails
    ]
    roles = gpu_roles_regex(plan)
    hca_rails = [
        {
            "source_labels": ["role", "device"],
            "regex": f"{roles};{hca}",
            "target_label": "rail",
            "replacement": str(rail),
        }
        for hca, rail in sorted(rail_hcas(plan).items(), key=lambda item: item[1])
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
            *_head_node_jobs(plan),
        ],
    }


def switch_telemetry_switches(plan: Plan) -> list[str]:
    """The Ethernet switches that get a startup configuration, whose telemetry the collector receives."""
    return [d.name for n in configured_networks(plan) for d in plan.switches(n)]


def collector_host(plan: Plan) -> str:
    """The OpenTelemetry Collector runs on the first management server (beside Prometheus)."""
    heads = sorted(d.name for d in plan.devices_with("management-server"))
    return heads[0] if heads else "localhost"


def has_rack_systems(plan: Plan) -> bool:
    return any(rack.rack_system for rack in plan.racks.values())


def _head_node_jobs(plan: Plan) -> list[dict[str, Any]]:
    """The jobs on the first head node: the collector's endpoint for the switches' telemetry, whose own names arrive
    as the resource attribute host.name (label host_name); BCM's exporter for rack systems' leak detection, whose TLS
    certificate is BCM's own (NVIDIA's example reads it with curl -k): not verified until its CA is installed."""
    host = collector_host(plan)
    jobs: list[dict[str, Any]] = []
    if switch_telemetry_switches(plan):
        targets = [{"targets": [f"{host}:{COLLECTOR_PROMETHEUS_PORT}"]}]
        jobs.append({"job_name": SWITCH_JOB, "honor_labels": True, "static_configs": targets})
    if has_rack_systems(plan):
        jobs.append(
            {
                "job_name": BCM_JOB,
                "scheme": "https",
                "metrics_path": BCM_EXPORTER_PATH,
                "tls_config": {"insecure_skip_verify": True},
                "static_configs": [{"targets": [f"{host}:{BCM_EXPORTER_PORT}"]}],
            }
        )
    return jobs


def otel_collector_config() -> dict[str, Any]:
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
