"""Kubernetes configuration from the plan, for the GPU servers Kubernetes runs (``kubernetes/``):

* ``nodes.yaml``: each server's topology labels (scalable unit, rack, leaf, spine, core and NVLink domain under
  the design's key prefix, as topograph names them) and taints (GPU servers, hot spares), for
  ``kubectl apply --server-side``;
* ``gpu-operator-values.yaml`` and ``dcgm-metrics.yaml``: NVIDIA GPU Operator Helm values and the DCGM exporter's
  counters;
* ``network-operator.yaml``: the NVIDIA Network Operator's NicClusterPolicy giving pods the compute HCAs;
* ``kueue.yaml``: Kueue Topology, ResourceFlavor, Cohort, and per team a Namespace, ClusterQueue and LocalQueue.

Nothing is written when Slurm runs every server.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from gpucluster.artifacts.monitoring import counters_csv
from gpucluster.catalog.ports import port_details
from gpucluster.catalog.schema import GpuServer
from gpucluster.design.load import LoadedDesign
from gpucluster.plan.model import Plan
from gpucluster.scheduling import fabric_tree, nvlink_domains, scheduler_split

OWN_PREFIX = "gpucluster.io"  # keys for facts that are not network topology (server model, hot spare)
GPU_RESOURCE = "nvidia.com/gpu"
GPU_TAINT = {"key": GPU_RESOURCE, "value": "present", "effect": "NoSchedule"}  # as the GPU Operator's NFD tolerates
SPARE_TAINT = {"key": f"{OWN_PREFIX}/hot-spare", "value": "true", "effect": "NoSchedule"}
GPU_OPERATOR_NAMESPACE = "gpu-operator"
DCGM_CONFIGMAP = "dcgm-metrics"
RDMA_SHARED_RESOURCE = "compute"  # rdma/compute: every compute HCA of the server, one share per pod

# Kueue API versions (kubernetes-sigs/kueue config/components/crd/bases: ClusterQueue, LocalQueue, ResourceFlavor
# v1beta1; Cohort v1alpha1 at commit 6af03d770e6ecc28e966bdcd904f9ce1dc1f3566; Topology v1alpha1 at commit
# 00caa3119fc1a03a94ead6465e16cafbb7b831db), the set Kueue serves from v0.9 (topology-aware scheduling, alpha).
KUEUE_API = "kueue.x-k8s.io/v1beta1"
KUEUE_ALPHA_API = "kueue.x-k8s.io/v1alpha1"

# NicClusterPolicy component images: Mellanox/network-operator example/crs/
# mellanox.com_v1alpha1_nicclusterpolicy_cr-full.yaml at commit d0e3abff053f76092b7e06f04724e37f8d15b9f6.
RDMA_SHARED_DEVICE_PLUGIN = {
    "image": "k8s-rdma-shared-dev-plugin",
    "repository": "ghcr.io/mellanox",
    "version": "sha-4f3eb2224b8b5f97be3f17441ddee8d41753b7d5",
}
SRIOV_DEVICE_PLUGIN = {
    "image": "sriov-network-device-plugin",
    "repository": "ghcr.io/k8snetworkplumbingwg",
    "version": "v3.8.0",
}
MELLANOX_VENDOR_ID = "15b3"  # PCI vendor ID of NVIDIA (Mellanox) NICs, as in the same example


@dataclass(frozen=True)
class _PerGpu:
    """What one GPU's share of a server is, for quotas that count cores, memory and RDMA too."""

    cpus: int
    memory_mib: int
    rdma: tuple[str, ...]  # RDMA resources a pod requests, one of each per whole server


def write(plan: Plan, loaded: LoadedDesign, folder: Path) -> None:
    manifests = kubernetes_manifests(plan)
    if not manifests:
        return
    out = folder / "kubernetes"
    out.mkdir()
    for name, documents in manifests.items():
        (out / name).write_text(dump_yaml(documents), encoding="utf-8")


def kubernetes_manifests(plan: Plan) -> dict[str, list[dict]]:
    """File name -> its YAML documents (the GPU Operator values file is one document, not a manifest)."""
    servers = scheduler_split(plan).kubernetes
    if not servers:
        return {}
    settings = plan.design.scheduler.kubernetes  # type: ignore[attr-defined]
    server: GpuServer = plan.part(servers[0])  # type: ignore[assignment]
    return {
        "nodes.yaml": node_manifests(plan, servers),
        "gpu-operator-values.yaml": [gpu_operator_values(plan, server, settings.gpu_operator)],
        "dcgm-metrics.yaml": [_dcgm_configmap()],
        "network-operator.yaml": [nic_cluster_policy(plan, server, settings.rdma)],
        "kueue.yaml": kueue_manifests(plan, servers, server, settings),
    }


def topology_labels(plan: Plan, servers: tuple[str, ...] | list[str]) -> dict[str, dict[str, str]]:
    """Server -> its topology labels: tiers of the compute fabric (leaf, spine, core as topograph names them),
    the NVLink domain (``accelerator``, where servers share one), scalable unit and rack."""
    prefix = plan.design.scheduler.kubernetes.topology_label_prefix  # type: ignore[attr-defined]
    tree = fabric_tree(plan, servers)
    domain_of = {name: f"nvl{i:03d}" for i, domain in enumerate(nvlink_domains(plan, servers), 1) for name in domain}
    labels: dict[str, dict[str, str]] = {}
    for name in servers:
        device = plan.devices[name]
        own = {f"{prefix}/{tier}": group for tier, group in tree.paths.get(name, {}).items()}
        if name in domain_of:
            own[f"{prefix}/accelerator"] = domain_of[name]
        if device.su is not None:
            own[f"{prefix}/su"] = f"su{device.su:02d}"
        own[f"{prefix}/rack"] = device.rack
        labels[name] = own
    return labels


def topology_levels(plan: Plan, servers: tuple[str, ...] | list[str]) -> list[str]:
    """Kueue Topology levels, coarse to fine: the fabric tiers from the top down, the NVLink domain, the host."""
    prefix = plan.design.scheduler.kubernetes.topology_label_prefix  # type: ignore[attr-defined]
    tree = fabric_tree(plan, servers)
    tiers = sorted({t for s in tree.switches for t in [s.tier]}, reverse=True)
    levels = [f"{prefix}/{tree.tier_names.get(t, f'tier{t}')}" for t in tiers]
    if nvlink_domains(plan, servers):
        levels.append(f"{prefix}/accelerator")
    return [*levels, "kubernetes.io/hostname"]


def node_manifests(plan: Plan, servers: tuple[str, ...]) -> list[dict]:
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


def gpu_operator_values(plan: Plan, server: GpuServer, choices: object) -> dict:
    """Helm values for the NVIDIA GPU Operator chart (keys per the chart's values reference)."""
    driver = getattr(choices, "driver", "auto")
    host_driver = driver == "host" or (driver == "auto" and _is_dgx(server))
    mig = getattr(choices, "mig_strategy", "none")
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
    return values


def _dcgm_configmap() -> dict:
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


def rdma_resources(server: GpuServer, mode: str) -> list[str]:
    """The extended resources a training pod requests for the compute HCAs: one shared resource covering all
    of them, or (SR-IOV) one VF resource per rail."""
    if mode == "sriov":
        return [f"nvidia.com/rail{rail}" for rail, _, _ in compute_hcas(server)]
    return [f"rdma/{RDMA_SHARED_RESOURCE}"]


def nic_cluster_policy(plan: Plan, server: GpuServer, mode: str) -> dict:
    """NicClusterPolicy: the host's MOFED/DOCA driver is used (no ofedDriver); pods get the compute HCAs through
    the RDMA shared device plugin (one resource with every compute HCA, in rail order) or SR-IOV VFs per rail."""
    hcas = compute_hcas(server)
    netdevs = [netdev for _, _, netdev in hcas]
    link_type = "ether" if plan.settings.get("compute_fabric") == "roce" else "infiniband"
    spec: dict[str, object] = {}
    if mode == "sriov":
        resources = []
        for rail, _, netdev in hcas:
            selectors: dict[str, object] = {"vendors": [MELLANOX_VENDOR_ID], "isRdma": True}
            if netdev:
                selectors["pfNames"] = [netdev]
            resources.append({"resourcePrefix": "nvidia.com", "resourceName": f"rail{rail}", "selectors": selectors})
        spec["sriovDevicePlugin"] = {**SRIOV_DEVICE_PLUGIN, "config": json.dumps({"resourceList": resources})}
    else:
        selectors = (
            {"ifNames": netdevs}
            if all(netdevs)
            else {"vendors": [MELLANOX_VENDOR_ID], "linkTypes": [link_type]}  # catalog lacks the netdev names
        )
        config = {"configList": [{"resourceName": RDMA_SHARED_RESOURCE, "rdmaHcaMax": 63, "selectors": selectors}]}
        spec["rdmaSharedDevicePlugin"] = {**RDMA_SHARED_DEVICE_PLUGIN, "config": json.dumps(config)}
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "metadata": {"name": "nic-cluster-policy"},
        "spec": spec,
    }


def _per_gpu(server: GpuServer, mode: str) -> _PerGpu:
    return _PerGpu(
        server.threads // server.gpu.count,
        server.usable_memory_mib // server.gpu.count,
        tuple(rdma_resources(server, mode)),
    )


def _quota(gpus: int, per: _PerGpu, gpus_per_server: int) -> dict[str, object]:
    """Kueue quantities for a number of GPUs: cores and memory in proportion, one RDMA share per server."""
    servers = math.ceil(gpus / gpus_per_server)
    quota: dict[str, object] = {"cpu": gpus * per.cpus, "memory": f"{gpus * per.memory_mib}Mi", GPU_RESOURCE: gpus}
    for resource in per.rdma:
        quota[resource] = servers
    return quota


def kueue_manifests(plan: Plan, servers: tuple[str, ...], server: GpuServer, settings: object) -> list[dict]:
    """Topology-aware Kueue: one ResourceFlavor (the server model) on the fabric Topology, a Cohort for the
    cluster, and per team a Namespace, a ClusterQueue (quota, borrowing and lending limits) and a LocalQueue."""
    cohort = plan.name
    flavor = server.id
    mode = getattr(settings, "rdma", "shared")
    production = [n for n in servers if not plan.devices[n].spare]
    gpus = len(production) * server.gpu.count
    teams = list(getattr(settings, "teams", [])) or [_DefaultTeam("training", gpus)]
    per = _per_gpu(server, mode)
    resources = ["cpu", "memory", GPU_RESOURCE, *per.rdma]
    documents: list[dict] = [
        {
            "apiVersion": KUEUE_ALPHA_API,
            "kind": "Topology",
            "metadata": {"name": "fabric"},
            "spec": {"levels": [{"nodeLabel": level} for level in topology_levels(plan, servers)]},
        },
        {
            "apiVersion": KUEUE_API,
            "kind": "ResourceFlavor",
            "metadata": {"name": flavor},
            "spec": {
                "nodeLabels": {f"{OWN_PREFIX}/server": server.id},
                "nodeTaints": [dict(GPU_TAINT)],
                "tolerations": [{**{k: GPU_TAINT[k] for k in ("key", "value", "effect")}, "operator": "Equal"}],
                "topologyName": "fabric",
            },
        },
        {"apiVersion": KUEUE_ALPHA_API, "kind": "Cohort", "metadata": {"name": cohort}, "spec": {}},
    ]
    for team in teams:
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
                "apiVersion": KUEUE_API,
                "kind": "ClusterQueue",
                "metadata": {"name": team.name},
                "spec": {
                    "cohort": cohort,
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
                "apiVersion": KUEUE_API,
                "kind": "LocalQueue",
                "metadata": {"name": team.name, "namespace": team.name},
                "spec": {"clusterQueue": team.name},
            },
        ]
    return documents


@dataclass(frozen=True)
class _DefaultTeam:
    """The one queue a design without teams gets: every production GPU, nothing to borrow from."""

    name: str
    gpus: int
    borrowing_limit_gpus: int | None = None
    lending_limit_gpus: int | None = None


class _NoAliases(yaml.SafeDumper):
    """Repeated objects (one pod template for master and workers) written out in full, not as YAML anchors."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def dump_yaml(documents: list[dict]) -> str:
    """Kubernetes YAML documents, keys in the order written, no anchors."""
    return yaml.dump_all(documents, Dumper=_NoAliases, sort_keys=False, default_flow_style=False, width=120)
