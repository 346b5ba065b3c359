"""Kubernetes configuration for the GPU servers Kubernetes runs (``kubernetes/``): the nodes' topology labels and
taints, Helm values of the GPU Operator, Network Operator and (multi-node NVLink) DRA driver, the DCGM counters,
the NicClusterPolicy and Kueue's topology-aware queues. Nothing is written when Slurm runs every server.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpucluster.analyse.scheduling import fabric_tree, nvlink_domains, scheduler_split
from gpucluster.artifacts.monitoring.targets import counters_csv
from gpucluster.artifacts.mounts import persistent_volumes
from gpucluster.catalog.ports import port_details
from gpucluster.catalog.schema import GpuServer
from gpucluster.design.load import LoadedDesign
from gpucluster.design.schema import GpuOperatorSettings, KubernetesSettings, Team
from gpucluster.formats import yamlout
from gpucluster.plan.model import PhysicalPlan, Plan

OWN_PREFIX = "gpucluster.io"  # keys for facts that are not network topology (server model, hot spare)
GPU_RESOURCE = "nvidia.com/gpu"
GPU_TAINT = {"key": GPU_RESOURCE, "value": "present", "effect": "NoSchedule"}  # as the GPU Operator's NFD tolerates
SPARE_TAINT = {"key": f"{OWN_PREFIX}/hot-spare", "value": "true", "effect": "NoSchedule"}
GPU_OPERATOR_NAMESPACE = "gpu-operator"
DCGM_CONFIGMAP = "dcgm-metrics"
RDMA_SHARED_RESOURCE = "compute"  # rdma/compute: every compute HCA of the server, one share per pod

# Kueue API per generation (kubernetes-sigs/kueue v0.19.2 CRDs, tests/upstream/kueue/): v1beta2 serves all five
# kinds and names the cohort field cohortName; v1beta1 (Topology and Cohort since topology-aware scheduling went beta,
# kubernetes-sigs/kueue#6830) names it cohort and is deprecated from v0.19.
KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_COHORT_FIELD = {"v1beta2": "cohortName", "v1beta1": "cohort"}

# topograph 1.0's node labels (NVIDIA/topograph CHANGELOG 1.0.0, "BREAKING": fabric tiers closest-first as
# fabric.topograph.run/tier-N, tier 0 the leaf; accelerator.topograph.run/domain for the NVLink domain).
TOPOGRAPH_FABRIC_TIER = "fabric.topograph.run/tier-{n}"
TOPOGRAPH_ACCELERATOR = "accelerator.topograph.run/domain"
TOPOGRAPH_0_PREFIX = "network.topology.nvidia.com"  # topograph up to 0.5 (its Helm value topologyNodeLabels)
HOSTNAME_LABEL = "kubernetes.io/hostname"
# GPU Feature Discovery labels every node whose GPUs report NVLink fabric IDs with nvidia.com/gpu.clique =
# "<cluster UUID>.<clique ID>", one value per NVLink domain, read from NVML on the node (NVIDIA/k8s-device-plugin
# v0.20.0, the GFD of GPU Operator v26.7.0: internal/lm/imex.go; the DRA driver's docs/install.md). Its values exist
# only on the running cluster, so no file here writes them; placement keys on the label instead: the Kueue Topology's
# NVLink-domain level and the pods' affinity. Kueue leaves a node without a level's label out of topology-aware
# scheduling (kueue v0.19.2 pkg/util/tas/node.go NodeMatchesFlavor), so a tray whose NVLink fabric is down (no clique
# label) takes no job placed by NVLink domain.
CLIQUE_LABEL = "nvidia.com/gpu.clique"

# NicClusterPolicy component images (device plugins, NV-IPAM, Multus, CNI plugins): the ones Network Operator v26.4.1
# releases with (Mellanox/network-operator at tag v26.4.1, commit 85afd6d9c6978eb871a3292b9897f49746cc43cd:
# hack/release.yaml and example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr-full.yaml).
NETWORK_OPERATOR_RELEASE = "v26.4.1"
NETWORK_OPERATOR_IMAGES = {
    "repository": "nvcr.io/nvidia/mellanox",
    "version": f"network-operator-{NETWORK_OPERATOR_RELEASE}",
}
RDMA_SHARED_DEVICE_PLUGIN = {"image": "k8s-rdma-shared-dev-plugin", **NETWORK_OPERATOR_IMAGES}
SRIOV_DEVICE_PLUGIN = {"image": "sriov-network-device-plugin", **NETWORK_OPERATOR_IMAGES}
MELLANOX_VENDOR_ID = "15b3"  # PCI vendor ID of NVIDIA (Mellanox) NICs, as in the same example
NETWORK_OPERATOR_NAMESPACE = "nvidia-network-operator"  # where NV-IPAM's controller reads its pools


@dataclass(frozen=True)
class _PerGpu:
    """One GPU's share of a server, for quotas that count cores, memory and RDMA too."""

    cpus: int
    memory_mib: int
    rdma: tuple[str, ...]  # RDMA resources a pod requests, one of each per whole server


def write(plan: PhysicalPlan, loaded: LoadedDesign, folder: Path) -> None:
    manifests = kubernetes_manifests(plan)
    if not manifests:
        return
    out = folder / "kubernetes"
    out.mkdir()
    headers = file_headers(plan)
    for name, documents in manifests.items():
        (out / name).write_text(headers.get(name, "") + dump_yaml(documents), encoding="utf-8")


def file_headers(plan: Plan) -> dict[str, str]:
    """Comment lines above a file's YAML: how to use it, where the YAML alone does not say."""
    servers = scheduler_split(plan).kubernetes
    server = plan.part_as(servers[0], GpuServer)
    if not is_mnnvl(server):
        return {}
    return {"dra-driver-values.yaml": dra_driver_header(server, plan.design.scheduler.kubernetes.gpu_operator)}


def kubernetes_manifests(plan: Plan) -> dict[str, list[dict[str, Any]]]:
    """File name -> its YAML documents (each Helm values file is one document, not a manifest)."""
    servers = scheduler_split(plan).kubernetes
    if not servers:
        return {}
    settings = plan.design.scheduler.kubernetes
    server = plan.part_as(servers[0], GpuServer)
    mnnvl = {"dra-driver-values.yaml": [dra_driver_values(server, settings.gpu_operator)]} if is_mnnvl(server) else {}
    return {
        "nodes.yaml": node_manifests(plan, servers),
        "gpu-operator-values.yaml": [gpu_operator_values(plan, server, settings.gpu_operator)],
        **mnnvl,
        "dcgm-metrics.yaml": [_dcgm_configmap()],
        "network-operator-values.yaml": [network_operator_values()],
        "network-operator.yaml": [
            nic_cluster_policy(plan, server, settings.rdma),
            *rail_networks(
                plan, servers, server, [t.name for t in kubernetes_teams(plan, servers, server)], settings.rdma
            ),
        ],
        "kueue.yaml": kueue_manifests(plan, servers, server, settings),
        **({"filesystems.yaml": volumes} if (volumes := persistent_volumes(plan)) else {}),
    }


HELM_VALUES_FILES = ("gpu-operator-values.yaml", "network-operator-values.yaml", "dra-driver-values.yaml")


def _settings(plan: Plan) -> KubernetesSettings:
    return plan.design.scheduler.kubernetes


def fabric_label(plan: Plan, tier: int, tier_name: str) -> str:
    """The node label key of a compute-fabric tier (1 = leaf) in the design's label generation."""
    if _settings(plan).topology_labels == "topograph-1":
        return TOPOGRAPH_FABRIC_TIER.format(n=tier - 1)
    return f"{_legacy_prefix(plan)}/{tier_name}"


def accelerator_label(plan: Plan) -> str:
    """The node label key of the NVLink domain in the design's label generation."""
    if _settings(plan).topology_labels == "topograph-1":
        return TOPOGRAPH_ACCELERATOR
    return f"{_legacy_prefix(plan)}/accelerator"


def _legacy_prefix(plan: Plan) -> str:
    """topograph 0.5's label prefix: the design's, else topograph's default."""
    return _settings(plan).topology_label_prefix or TOPOGRAPH_0_PREFIX


def topology_labels(plan: Plan, servers: tuple[str, ...] | list[str]) -> dict[str, dict[str, str]]:
    """Server -> its labels: fabric tiers and shared NVLink domain as topograph writes them, our SU and rack."""
    tree = fabric_tree(plan, servers)
    tier_of = {name: tier for tier, name in tree.tier_names.items()}
    domain_of = {name: f"nvl{i:03d}" for i, domain in enumerate(nvlink_domains(plan, servers), 1) for name in domain}
    labels: dict[str, dict[str, str]] = {}
    for name in servers:
        device = plan.devices[name]
        own = {
            # fabric_tree names a tier without a plan name tierN
            fabric_label(plan, tier_of.get(tier_name, 0) or int(tier_name.removeprefix("tier")), tier_name): group
            for tier_name, group in tree.paths.get(name, {}).items()
        }
        if name in domain_of:
            own[accelerator_label(plan)] = domain_of[name]
        if device.su is not None:
            own[f"{OWN_PREFIX}/su"] = f"su{device.su:02d}"
        own[f"{OWN_PREFIX}/rack"] = device.rack
        labels[name] = own
    return labels


def topology_levels(plan: Plan, servers: tuple[str, ...] | list[str]) -> list[str]:
    """Kueue Topology levels, coarse to fine: fabric tiers top down, the NVLink clique, the host; a level with one
    value on every server is left out (it tells Kueue nothing)."""
    tree = fabric_tree(plan, servers)
    tiers = sorted({s.tier for s in tree.switches}, reverse=True)
    levels = [fabric_label(plan, t, tree.tier_names.get(t, f"tier{t}")) for t in tiers]
    labels = topology_labels(plan, servers)
    distinct = [level for level in levels if len({labels[n].get(level) for n in servers}) > 1]
    if len(nvlink_domains(plan, servers)) > 1:
        distinct.append(CLIQUE_LABEL)
    return [*distinct, HOSTNAME_LABEL]


def nvlink_topology_level(plan: Plan, servers: tuple[str, ...] | list[str]) -> str | None:
    """The clique level, or None when the servers share one NVLink domain or each is its own (HGX)."""
    return CLIQUE_LABEL if CLIQUE_LABEL in topology_levels(plan, servers) else None


def is_mnnvl(server: GpuServer) -> bool:
    """A multi-node NVLink system: its NVLink domain spans several servers (an NVL72 rack's 18 compute trays)."""
    return server.gpu.nvlink_domain_gpus > server.gpu.count


def job_topology_level(plan: Plan, servers: tuple[str, ...] | list[str]) -> str | None:
    """The level a training job prefers to stay within (the leaf group: one switch hop on every rail), if any."""
    tree = fabric_tree(plan, servers)
    leaf = fabric_label(plan, 1, tree.tier_names.get(1, "leaf"))
    return leaf if leaf in topology_levels(plan, servers) else None


def node_manifests(plan: Plan, servers: tuple[str, ...]) -> list[dict[str, Any]]:
    labels = topology_labels(plan, servers)
    nodes = []
    for name in servers:
        device = plan.devices[name]
        own = {**labels[name], f"{OWN_PREFIX}/server": device.part}
        taints = [dict(GPU_TAINT)]
        if device.spare:
            own[f"{OWN_PREFIX}/hot-spare"] = "true"
            taints.append(dict(SPARE_TAINT))
        nodes.append(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": own}, "spec": {"taints": taints}}
        )
    return nodes


def _is_dgx(server: GpuServer) -> bool:
    """DGX systems run DGX OS, which ships the NVIDIA driver, MOFED/DOCA and nvidia-peermem."""
    return server.vendor == "NVIDIA" and server.model.startswith("DGX")


def uses_host_driver(server: GpuServer, choices: GpuOperatorSettings) -> bool:
    """The host's NVIDIA driver (the design says so, or auto on DGX OS), not the operator's driver container."""
    return choices.driver == "host" or (choices.driver == "auto" and _is_dgx(server))


def gpu_operator_values(plan: Plan, server: GpuServer, choices: GpuOperatorSettings) -> dict[str, Any]:
    """GPU Operator chart v26.7.0 values; its Node Feature Discovery serves both operators."""
    host_driver = uses_host_driver(server, choices)
    mig = choices.mig_strategy
    values: dict[str, object] = {
        "nfd": {"enabled": True},
        "driver": {"enabled": not host_driver},
        "toolkit": {"enabled": True},
        "devicePlugin": {"enabled": True},
        "gfd": {"enabled": True},
        "mig": {"strategy": mig},
        "migManager": {"enabled": mig != "none"},
        "dcgmExporter": {
            "enabled": True,
            "config": {"name": DCGM_CONFIGMAP},
            "env": [{"name": "DCGM_EXPORTER_COLLECTORS", "value": "/etc/dcgm-exporter/dcgm-metrics.csv"}],
            "serviceMonitor": {"enabled": True},
        },
    }
    if not host_driver:
        # GPUDirect RDMA (nvidia-peermem) so NCCL moves data between GPU memory and the compute HCAs directly.
        values["driver"] = {"enabled": True, "rdma": {"enabled": True, "useHostMofed": True}}
    if is_mnnvl(server):
        values |= mnnvl_gpu_operator_values()
    return values


# What multi-node NVLink systems need of the GPU Operator for ComputeDomains (GPU Operator docs, "NVIDIA DRA Driver for
# GPUs", ComputeDomain tab: NVIDIA/cloud-native-docs gpu-operator/dra-intro-install.rst at 9969eb15, 2026-02-19, the
# procedure for DRA driver v25.12.0 next to the operator): CDI in the container runtime and NVIDIA driver 580 or later
# ("both default in GPU Operator v25.10.0 and later"; v26.7.0's chart installs driver 595.91.07), the operator's
# device plugin kept (the DRA driver then runs ComputeDomains only: its resources.gpus off), and GPU Feature Discovery,
# which writes the nvidia.com/gpu.clique labels ComputeDomains need (DRA driver docs/prerequisites.md). The
# ClusterPolicy route is kept: GPU Operator 26.7's own DRA route (GPUCluster, gpuCluster.deployCR) replaces the device
# plugin and is a Technology Preview (gpu-operator/dra-intro-install.rst at c1d0dd56, 26.7.0).
COMPUTE_DOMAIN_DRIVER_FLOOR = (580, 0, 0)


def mnnvl_gpu_operator_values() -> dict[str, object]:
    """The GPU Operator values ComputeDomains rely on, set explicitly so an edit that turns one off shows."""
    return {
        "cdi": {"enabled": True},
        "gfd": {"enabled": True},
        "devicePlugin": {"enabled": True},
        "clusterPolicy": {"deployCR": True},
        "gpuCluster": {"deployCR": False},
    }


# The operator's driver container installs under /run/nvidia/driver; a host driver (DGX OS) is at / (DRA driver
# values.yaml nvidiaDriverRoot; GPU Operator docs as above).
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
DRA_DRIVER_CHART = "nvidia/nvidia-dra-driver-gpu"
DRA_DRIVER_VERSION = "25.12.0"  # the release of the ComputeDomain CRDs in tests/upstream/dra-driver-gpu/
DRA_DRIVER_NAMESPACE = "nvidia-dra-driver-gpu"


def dra_driver_values(server: GpuServer, choices: GpuOperatorSettings) -> dict[str, Any]:
    """DRA driver chart v25.12.0 values, ComputeDomains only (GPUs stay with the device plugin Kueue counts); the
    kubelet plugin tolerates the GPU taint (the chart tolerates none, so no pod would get its IMEX channel)."""
    return {
        "nvidiaDriverRoot": "/" if uses_host_driver(server, choices) else OPERATOR_DRIVER_ROOT,
        "resources": {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}},
        "kubeletPlugin": {"tolerations": [{"key": GPU_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}]},
    }


def dra_driver_header(server: GpuServer, choices: GpuOperatorSettings) -> str:
    """How to install the DRA driver with these values, and what a host driver needs first."""
    lines = [
        "NVIDIA DRA driver for ComputeDomains (multi-node NVLink), installed after the GPU Operator:",
        f"  helm install nvidia-dra-driver-gpu {DRA_DRIVER_CHART} --version {DRA_DRIVER_VERSION} \\",
        f"    --namespace {DRA_DRIVER_NAMESPACE} --create-namespace -f dra-driver-values.yaml",
        "Needs Kubernetes 1.32 or later with DRA (on by default from 1.34; 1.34.2 or later recommended).",
    ]
    if uses_host_driver(server, choices):
        lines += [
            f"The driver is the host's: it must be {COMPUTE_DOMAIN_DRIVER_FLOOR[0]} or later (ComputeDomains; the GPU "
            "Operator's DRA prerequisites);",
            "install its nvidia-imex-* packages and, before the GPU Operator, run",
            "  systemctl disable --now nvidia-imex.service && systemctl mask nvidia-imex.service",
            "on every GPU node (the DRA driver runs the IMEX daemons itself; GPU Operator docs, DRA prerequisites).",
        ]
    return "".join(f"# {line}\n" for line in lines)


def network_operator_values() -> dict[str, Any]:
    """Network Operator chart v26.4.1 values: its NFD off (the GPU Operator's runs; two fight over the labels), its
    node feature rules on, to label the NICs."""
    return {"nfd": {"enabled": False, "deployNodeFeatureRules": True}, "sriovNetworkOperator": {"enabled": False}}


def _dcgm_configmap() -> dict[str, Any]:
    csv = counters_csv()  # the same counters the monitoring's alerts and dashboard read
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": DCGM_CONFIGMAP, "namespace": GPU_OPERATOR_NAMESPACE},
        "data": {"dcgm-metrics.csv": csv},
    }


def compute_hcas(server: GpuServer) -> list[tuple[int, str | None, str | None]]:
    """(rail, RDMA device, netdev) of each compute port, in rail order."""
    return [(d.rail or 0, d.os_device, d.netdev) for d in port_details(server, "compute")]


@dataclass(frozen=True)
class RailInterface:
    """A RoCE compute port as a pod's secondary network takes it; on a multi-plane fabric one plane's PF of it
    (Spectrum-X software multiplane: one PF per plane, each on its plane's rail leaf)."""

    rail: int
    plane: int | None  # None on a single-plane fabric
    netdev: str  # the host interface the network moves into the pod
    port: str  # the plan's port name on the server (SNIC-1, or CX8-1/2 for plane 2 of CX8-1)

    @property
    def key(self) -> str:
        """rail3, or rail3-plane2: names the port's NV-IPAM pool, device-plugin resource and network."""
        return f"rail{self.rail}" + (f"-plane{self.plane}" if self.plane else "")


def rail_interfaces(plan: Plan, server: GpuServer) -> list[RailInterface]:
    """Each RoCE compute port (or plane of it) in rail, plane order when the catalog names every interface, as the
    per-rail networks need; else empty."""
    if plan.settings.compute_fabric != "roce":
        return []
    planes = plan.settings.compute_planes
    details = port_details(server, "compute")
    if planes == 1:
        ports = [RailInterface(d.rail or 0, None, d.netdev_on(True) or "", d.name) for d in details]
    elif all(d.plane_netdevs and len(d.plane_netdevs) == planes for d in details):
        ports = [
            RailInterface(d.rail or 0, plane, netdev, f"{d.name}/{plane}")
            for d in details
            for plane, netdev in enumerate(d.plane_netdevs or (), start=1)
        ]
    else:
        return []
    return ports if all(p.netdev for p in ports) else []


def rdma_resources(server: GpuServer, mode: str, rails: list[RailInterface] | None = None) -> list[str]:
    """What a training pod requests for the compute HCAs: one shared resource, a VF per rail, or each rail's port."""
    if rails:
        return [f"nvidia.com/{'' if mode == 'sriov' else 'hostdev-'}{port.key}" for port in rails]
    if mode == "sriov":
        return [f"nvidia.com/rail{rail}" for rail, _, _ in compute_hcas(server)]
    return [f"rdma/{RDMA_SHARED_RESOURCE}"]


def nic_cluster_policy(plan: Plan, server: GpuServer, mode: str) -> dict[str, Any]:
    """NicClusterPolicy on the host's DOCA driver: pods get the compute HCAs shared, as SR-IOV VFs, or (named RoCE
    ports) each rail's port with NV-IPAM and Multus; selectors by interface name, else PCI device ID."""
    roce = plan.settings.compute_fabric == "roce"
    details = port_details(server, "compute")
    netdevs = [d.netdev_on(roce) for d in details]
    device_id = compute_device_id(server)
    link_type = "ether" if roce else "infiniband"
    rails = rail_interfaces(plan, server)
    spec: dict[str, object] = {}
    if mode == "sriov" or rails:
        entries: list[tuple[str, str | None]] = [(port.key, port.netdev) for port in rails] or [
            (f"rail{rail}", netdev) for (rail, _, _), netdev in zip(compute_hcas(server), netdevs, strict=True)
        ]
        resources = []
        for key, netdev in entries:
            selectors: dict[str, object] = {"vendors": [MELLANOX_VENDOR_ID], "isRdma": True}
            if netdev:
                selectors["pfNames"] = [netdev]
            name = key if mode == "sriov" else f"hostdev-{key}"
            resources.append({"resourcePrefix": "nvidia.com", "resourceName": name, "selectors": selectors})
        spec["sriovDevicePlugin"] = {**SRIOV_DEVICE_PLUGIN, "config": json.dumps({"resourceList": resources})}
    else:
        selectors = (
            {"ifNames": netdevs} if all(netdevs) else {"vendors": [MELLANOX_VENDOR_ID], "linkTypes": [link_type]}
        )
        if not all(netdevs) and device_id:  # the compute adapters alone carry this device ID
            selectors["deviceIDs"] = [device_id]
        config = {"configList": [{"resourceName": RDMA_SHARED_RESOURCE, "rdmaHcaMax": 63, "selectors": selectors}]}
        spec["rdmaSharedDevicePlugin"] = {**RDMA_SHARED_DEVICE_PLUGIN, "config": json.dumps(config)}
    if rails:
        spec["nvIpam"] = {"image": "nvidia-k8s-ipam", **NETWORK_OPERATOR_IMAGES, "enableWebhook": False}
        spec["secondaryNetwork"] = {
            "cniPlugins": {"image": "plugins", **NETWORK_OPERATOR_IMAGES},
            "multus": {"image": "multus-cni", **NETWORK_OPERATOR_IMAGES},
        }
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "metadata": {"name": "nic-cluster-policy"},
        "spec": spec,
    }


def compute_device_id(server: GpuServer) -> str | None:
    """The compute adapters' PCI device ID when no other port group shares it (then it picks exactly the compute
    HCAs: DGX B200's ConnectX-7 1021 against its BlueField-3 a2dc)."""
    ids = {g.role: g.pci_device_id for g in server.ports}
    compute = ids.get("compute")
    return compute if compute and compute not in {i for role, i in ids.items() if role != "compute"} else None


def rail_network_names(plan: Plan, server: GpuServer, namespace: str) -> list[str]:
    return [f"{namespace}-{port.key}" for port in rail_interfaces(plan, server)]


def rail_networks(
    plan: Plan, servers: tuple[str, ...], server: GpuServer, namespaces: list[str], mode: str
) -> list[dict[str, Any]]:
    """A RoCE secondary network per rail (and plane) as the switches route it: an NV-IPAM CIDRPool hands each node
    the /31 to its leaf (gateway index 0) with a route to the rail's block; a HostDeviceNetwork per team namespace
    moves the port (or an SR-IOV VF) into the pod."""
    rails = rail_interfaces(plan, server)
    if not rails:
        return []
    from gpucluster.artifacts.switch_config import host_addresses, rail_blocks

    addresses = host_addresses(plan, "compute")
    blocks = rail_blocks(plan, "compute")
    by_port: dict[str, list[dict[str, Any]]] = {interface.port: [] for interface in rails}
    for (host, host_port), (_host_address, gateway) in sorted(addresses.items()):
        if host in servers and host_port in by_port:
            by_port[host_port].append({"nodeName": host, "prefix": f"{gateway}/31", "gateway": gateway})
    documents: list[dict[str, Any]] = []
    for port in rails:
        block = str(blocks[(port.plane or 0, port.rail)])
        documents.append(
            {
                "apiVersion": "nv-ipam.nvidia.com/v1alpha1",
                "kind": "CIDRPool",
                "metadata": {"name": port.key, "namespace": NETWORK_OPERATOR_NAMESPACE},
                "spec": {
                    "cidr": block,
                    "perNodeNetworkPrefix": 31,
                    "gatewayIndex": 0,
                    "routes": [{"dst": block}],
                    "staticAllocations": by_port[port.port],
                },
            }
        )
    resources = rdma_resources(server, mode, rails)
    for namespace in namespaces:
        for port, resource in zip(rails, resources, strict=True):
            ipam = {"type": "nv-ipam", "poolName": port.key, "poolType": "cidrpool"}
            documents.append(
                {
                    "apiVersion": "mellanox.com/v1alpha1",
                    "kind": "HostDeviceNetwork",
                    "metadata": {"name": f"{namespace}-{port.key}"},
                    "spec": {
                        "networkNamespace": namespace,
                        "resourceName": resource,
                        "ipam": json.dumps(ipam),
                    },
                }
            )
    return documents


def _per_gpu(server: GpuServer, mode: str, rails: list[RailInterface]) -> _PerGpu:
    return _PerGpu(
        server.threads // server.gpu.count,
        server.usable_memory_mib // server.gpu.count,
        tuple(rdma_resources(server, mode, rails)),
    )


def _quota(gpus: int, per: _PerGpu, gpus_per_server: int) -> dict[str, object]:
    """Kueue quantities for a number of GPUs: cores and memory in proportion, one RDMA share per server."""
    servers = math.ceil(gpus / gpus_per_server)
    quota: dict[str, object] = {"cpu": gpus * per.cpus, "memory": f"{gpus * per.memory_mib}Mi", GPU_RESOURCE: gpus}
    for resource in per.rdma:
        quota[resource] = servers
    return quota


def kueue_manifests(plan: Plan, servers: tuple[str, ...], server: GpuServer, settings: object) -> list[dict[str, Any]]:
    """Topology-aware Kueue: a ResourceFlavor on the fabric Topology, a Cohort, and per team a Namespace, a
    ClusterQueue (quota, borrowing and lending limits) and a LocalQueue."""
    api_version = getattr(settings, "kueue_api", "v1beta2")
    api = f"{KUEUE_GROUP}/{api_version}"
    cohort = plan.name
    flavor = server.id
    mode = getattr(settings, "rdma", "shared")
    per = _per_gpu(server, mode, rail_interfaces(plan, server))
    resources = ["cpu", "memory", GPU_RESOURCE, *per.rdma]
    documents: list[dict[str, Any]] = [
        {
            "apiVersion": api,
            "kind": "Topology",
            "metadata": {"name": "fabric"},
            "spec": {"levels": [{"nodeLabel": level} for level in topology_levels(plan, servers)]},
        },
        {
            "apiVersion": api,
            "kind": "ResourceFlavor",
            "metadata": {"name": flavor},
            "spec": {
                "nodeLabels": {f"{OWN_PREFIX}/server": server.id},
                "nodeTaints": [dict(GPU_TAINT)],
                "tolerations": [{**GPU_TAINT, "operator": "Equal"}],
                "topologyName": "fabric",
            },
        },
        {"apiVersion": api, "kind": "Cohort", "metadata": {"name": cohort}, "spec": {}},
    ]
    for team in kubernetes_teams(plan, servers, server):
        nominal = _quota(team.gpus, per, server.gpu.count)
        entries = []
        for resource in resources:
            entry: dict[str, object] = {"name": resource, "nominalQuota": nominal[resource]}
            if team.borrowing_limit_gpus is not None:
                entry["borrowingLimit"] = _quota(team.borrowing_limit_gpus, per, server.gpu.count)[resource]
            if team.lending_limit_gpus is not None:
                entry["lendingLimit"] = _quota(team.lending_limit_gpus, per, server.gpu.count)[resource]
            entries.append(entry)
        documents += [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": team.name}},
            {
                "apiVersion": api,
                "kind": "ClusterQueue",
                "metadata": {"name": team.name},
                "spec": {
                    KUEUE_COHORT_FIELD[api_version]: cohort,
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team.name}},
                    "queueingStrategy": "BestEffortFIFO",
                    "resourceGroups": [
                        {"coveredResources": resources, "flavors": [{"name": flavor, "resources": entries}]}
                    ],
                    # A team gets its guaranteed quota back from borrowers at once; borrowing never preempts.
                    "preemption": {
                        "reclaimWithinCohort": "Any",
                        "borrowWithinCohort": {"policy": "Never"},
                        "withinClusterQueue": "LowerPriority",
                    },
                },
            },
            {
                "apiVersion": api,
                "kind": "LocalQueue",
                "metadata": {"name": team.name, "namespace": team.name},
                "spec": {"clusterQueue": team.name},
            },
        ]
    return documents


def kubernetes_teams(plan: Plan, servers: tuple[str, ...], server: GpuServer) -> list[Team | _DefaultTeam]:
    """The design's teams, or one team of every production GPU."""
    teams = list(getattr(_settings(plan), "teams", []))
    if teams:
        return teams
    production = [n for n in servers if not plan.devices[n].spare]
    return [_DefaultTeam("training", len(production) * server.gpu.count)]


@dataclass(frozen=True)
class _DefaultTeam:
    name: str
    gpus: int
    borrowing_limit_gpus: int | None = None
    lending_limit_gpus: int | None = None


def dump_yaml(documents: list[dict[str, Any]]) -> str:
    """Keys in the order written, no anchors (a repeated pod template in full)."""
    return yamlout.dump_all(documents, width=120)
