"""Kubernetes manifests: core kinds against kubernetes-validate's strict schemas; the PyTorchJob against the
Kubeflow Training SDK's OpenAPI models (PyPI kubeflow-training); Kueue, NicClusterPolicy and GPU Operator values,
for which no registry package ships a schema, against the parts of their CRDs transcribed below with their
source; every name and label key/value checked for Kubernetes validity; labels and quotas agree with the plan."""

from __future__ import annotations

import json
import math
import re
import subprocess
from collections import defaultdict
from functools import cache

import jsonschema
import kubeflow.training.models as kubeflow_models
import kubernetes.client.models as core_models
import kubernetes_validate
import pytest
import yaml
from conftest import planned
from kubernetes_validate import utils as kv
from referencing import Registry, Resource
from test_slurm import nvl_plan

from gpucluster.artifacts.kubernetes import kubernetes_manifests, topology_labels, topology_levels
from gpucluster.artifacts.nccl import nccl_files
from gpucluster.catalog.ports import port_details
from gpucluster.plan.model import Plan

K8S_VERSION = "1.30"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")


def _all(plan: Plan) -> list[dict]:
    documents = [
        d for name, docs in kubernetes_manifests(plan).items() if name != "gpu-operator-values.yaml" for d in docs
    ]
    launch = nccl_files(plan).get("launch/pytorchjob.yaml")
    return documents + (list(yaml.safe_load_all(launch)) if launch else [])


@cache
def _core_definitions() -> Registry:
    version = kv.latest_version()
    defs = kv.schema_contents(f"kubernetes-json-schema/v{version}-local-strict/_definitions.json", version)
    return Resource.from_contents(defs) @ Registry()


def _core(definition: str, value: object) -> None:
    """Validate a value against one definition of Kubernetes' strict OpenAPI schemas (kubernetes-validate)."""
    ref = {"$ref": f"https://kubernetes.io/api/_definitions.json#/$defs/{definition}"}
    jsonschema.Draft202012Validator(ref, registry=_core_definitions()).validate(value)


def _label_key_ok(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    return (not prefix or (len(prefix) <= 253 and DNS_SUBDOMAIN.match(prefix))) and bool(LABEL_NAME.match(name))


EXAMPLES = ["k8s-dgx-h100", "b200-roce-2su", "lab-4-servers"]


@cache
def _planned(design: str) -> Plan:
    """An example design, or k8s-dgx-h100: eight DGX H100 on Kubernetes with two teams (built in Python)."""
    if design != "k8s-dgx-h100":
        return planned(design)[1]
    from gpucluster import design_from_model, plan_design
    from gpucluster.design.schema import Design

    model = Design.model_validate(
        {
            "name": "k8s-dgx-h100",
            "compute": {"server": "dgx-h100", "servers": 8, "spare_servers": 1},
            "scheduler": {
                "kind": "kubernetes",
                "kubernetes": {
                    "teams": [
                        {"name": "research", "gpus": 48, "borrowing_limit_gpus": 16},
                        {"name": "product", "gpus": 16},
                    ]
                },
            },
        }
    )
    return plan_design(design_from_model(model))


@pytest.mark.parametrize("design", EXAMPLES)
def test_core_manifests_pass_kubernetes_strict_schemas(design):
    plan = _planned(design)
    documents = _all(plan)
    core = [d for d in documents if d["apiVersion"] == "v1"]
    assert {d["kind"] for d in core} >= {"Node", "Namespace", "ConfigMap"}
    for document in core:
        kubernetes_validate.validate(document, K8S_VERSION, strict=True)
    for document in documents:  # CRDs: their metadata is a core ObjectMeta
        _core("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", document["metadata"])


@pytest.mark.parametrize("design", EXAMPLES)
def test_names_and_labels_are_valid(design):
    plan = _planned(design)
    for document in _all(plan):
        meta = document["metadata"]
        assert DNS_SUBDOMAIN.match(meta["name"]) and len(meta["name"]) <= 253, meta["name"]
        if document["kind"] in ("Namespace", "ClusterQueue", "LocalQueue", "Cohort", "PyTorchJob"):
            assert DNS_LABEL.match(meta["name"]), meta["name"]  # RFC 1123 label: 63 characters at most
        for key, value in meta.get("labels", {}).items():
            assert _label_key_ok(key) and LABEL_VALUE.match(value), (key, value)


def _openapi_problems(value: object, type_name: str, path: str) -> list[str]:
    """Keys the Kubeflow/Kubernetes OpenAPI models do not define, and values of the wrong kind."""
    if type_name.startswith("list["):
        assert isinstance(value, list), path
        return [p for i, v in enumerate(value) for p in _openapi_problems(v, type_name[5:-1], f"{path}[{i}]")]
    if type_name.startswith("dict("):
        assert isinstance(value, dict), path
        inner = type_name[type_name.index(",") + 2 : -1]
        return [p for k, v in value.items() for p in _openapi_problems(v, inner, f"{path}.{k}")]
    primitives = {"str": str, "int": int, "bool": bool, "float": (int, float), "object": object}
    if type_name in primitives:
        return [] if isinstance(value, primitives[type_name]) else [f"{path}: not {type_name}"]
    model = getattr(kubeflow_models, type_name, None) or getattr(core_models, type_name)
    fields = {json_key: attr for attr, json_key in model.attribute_map.items()}
    problems = []
    for key, item in value.items():
        if key not in fields:
            problems.append(f"{path}.{key}: not in {type_name}")
        else:
            problems += _openapi_problems(item, model.openapi_types[fields[key]], f"{path}.{key}")
    return problems


@pytest.mark.parametrize("design", ["k8s-dgx-h100", "lab-4-servers"])
def test_pytorchjob_matches_the_training_operator_models(design):
    """kubeflow-training's generated models of kubeflow.org/v1 PyTorchJob (and the Kubernetes client's pod
    models beneath them): no unknown key, every value of its type, required fields set (the models' setters
    raise on a missing required field); the pod templates also pass Kubernetes' strict PodTemplateSpec."""
    plan = _planned(design)
    job = next(d for d in _all(plan) if d["kind"] == "PyTorchJob")
    assert _openapi_problems(job, "KubeflowOrgV1PyTorchJob", "job") == []
    from kubeflow.training.api_client import ApiClient

    model = ApiClient()._ApiClient__deserialize(job, "KubeflowOrgV1PyTorchJob")
    assert model.spec.pytorch_replica_specs["Master"].replicas == 1
    for spec in job["spec"]["pytorchReplicaSpecs"].values():
        _core("io.k8s.api.core.v1.PodTemplateSpec", spec["template"])
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] in {
        d["metadata"]["name"] for d in _all(plan) if d["kind"] == "LocalQueue"
    }


def test_the_model_walk_catches_a_misspelt_key():
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {}, "spec": {"pytorchReplicaSpec": {}}}
    assert _openapi_problems(job, "KubeflowOrgV1PyTorchJob", "job") == [
        "job.spec.pytorchReplicaSpec: not in KubeflowOrgV1PyTorchJobSpec"
    ]


# ---- Kueue: transcribed from kubernetes-sigs/kueue config/components/crd/bases (ClusterQueue, LocalQueue,
# ResourceFlavor v1beta1; Cohort v1alpha1 at 6af03d770e6ecc28e966bdcd904f9ce1dc1f3566; Topology v1alpha1 at
# 00caa3119fc1a03a94ead6465e16cafbb7b831db). Properties listed are every property of that object in the CRD,
# so additionalProperties: false rejects a misspelt key; only the parts these manifests use are typed deeply.
_NAME = {"type": "string", "maxLength": 253, "pattern": DNS_SUBDOMAIN.pattern}
_QUANTITY = {
    "anyOf": [
        {"type": "integer", "minimum": 0},
        {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)?([KMGTPE]i|[kMGTPE])?$"},
    ]
}
_RESOURCE_GROUPS = {
    "type": "array",
    "maxItems": 16,
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["coveredResources", "flavors"],
        "properties": {
            "coveredResources": {"type": "array", "minItems": 1, "maxItems": 16, "items": {"type": "string"}},
            "flavors": {
                "type": "array",
                "minItems": 1,
                "maxItems": 16,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["name", "resources"],
                    "properties": {
                        "name": _NAME,
                        "resources": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": 16,
                            "items": {
                                "type": "object",
                                "additionalProperties": False,
                                "required": ["name", "nominalQuota"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "nominalQuota": _QUANTITY,
                                    "borrowingLimit": _QUANTITY,
                                    "lendingLimit": _QUANTITY,
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}
_OBJECT = {"type": "object"}
KUEUE_SCHEMAS = {
    ("kueue.x-k8s.io/v1alpha1", "Topology"): {
        "type": "object",
        "additionalProperties": False,
        "required": ["levels"],
        "properties": {
            "levels": {
                "type": "array",
                "minItems": 1,
                "maxItems": 8,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["nodeLabel"],
                    "properties": {
                        "nodeLabel": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": 316,
                            "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                            r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                        }
                    },
                },
            }
        },
    },
    ("kueue.x-k8s.io/v1beta1", "ResourceFlavor"): {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "nodeLabels": {"type": "object", "maxProperties": 8, "additionalProperties": {"type": "string"}},
            "nodeTaints": {"type": "array", "maxItems": 8},
            "tolerations": {"type": "array", "maxItems": 8},
            "topologyName": _NAME,
        },
    },
    ("kueue.x-k8s.io/v1alpha1", "Cohort"): {
        "type": "object",
        "additionalProperties": False,
        "properties": {"parent": _NAME, "resourceGroups": _RESOURCE_GROUPS, "fairSharing": _OBJECT},
    },
    ("kueue.x-k8s.io/v1beta1", "ClusterQueue"): {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "admissionChecks": _OBJECT | {"type": "array"},
            "admissionChecksStrategy": _OBJECT,
            "cohort": _NAME,
            "fairSharing": _OBJECT,
            "flavorFungibility": _OBJECT,
            "namespaceSelector": _OBJECT,
            "preemption": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "borrowWithinCohort": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "policy": {"enum": ["Never", "LowerPriority"]},
                            "maxPriorityThreshold": {"type": "integer"},
                        },
                    },
                    "reclaimWithinCohort": {"enum": ["Never", "LowerPriority", "Any"]},
                    "withinClusterQueue": {"enum": ["Never", "LowerPriority", "LowerOrNewerEqualPriority"]},
                },
            },
            "queueingStrategy": {"enum": ["StrictFIFO", "BestEffortFIFO"]},
            "resourceGroups": _RESOURCE_GROUPS,
            "stopPolicy": {"enum": ["None", "Hold", "HoldAndDrain"]},
        },
    },
    ("kueue.x-k8s.io/v1beta1", "LocalQueue"): {
        "type": "object",
        "additionalProperties": False,
        "required": ["clusterQueue"],
        "properties": {"clusterQueue": _NAME, "stopPolicy": {"enum": ["None", "Hold", "HoldAndDrain"]}},
    },
}


@pytest.mark.parametrize("design", EXAMPLES)
def test_kueue_objects_match_the_transcribed_crd_schemas(design):
    plan = _planned(design)
    kueue = kubernetes_manifests(plan)["kueue.yaml"]
    kinds = defaultdict(list)
    for document in kueue:
        if document["apiVersion"].startswith("kueue.x-k8s.io"):
            jsonschema.validate(document["spec"], KUEUE_SCHEMAS[(document["apiVersion"], document["kind"])])
            kinds[document["kind"]].append(document)
    for flavor in kinds["ResourceFlavor"]:  # its taints and tolerations are core types
        for taint in flavor["spec"]["nodeTaints"]:
            _core("io.k8s.api.core.v1.Taint", taint)
        for toleration in flavor["spec"]["tolerations"]:
            _core("io.k8s.api.core.v1.Toleration", toleration)
    for queue in kinds["ClusterQueue"]:  # the CRD's CEL rule: each flavor lists every covered resource, in order
        for group in queue["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                assert [r["name"] for r in flavor["resources"]] == group["coveredResources"]
    levels = [level["nodeLabel"] for level in kinds["Topology"][0]["spec"]["levels"]]
    assert levels[-1] == "kubernetes.io/hostname" and len(set(levels)) == len(levels)  # CRD's CEL rules


def test_kueue_schemas_reject_a_misspelt_field():
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"cohortName": "x"}, KUEUE_SCHEMAS[("kueue.x-k8s.io/v1beta1", "ClusterQueue")])


def test_team_quotas_and_borrowing_limits_become_cluster_queues(tmp_path):
    from conftest import write_design

    from gpucluster import load_design, plan_design

    path = write_design(
        tmp_path,
        "name: teams\ncompute: {server: dgx-h100, servers: 16, spare_servers: 0}\n"
        "scheduler:\n  kind: kubernetes\n  kubernetes:\n    teams:\n"
        "      - {name: research, gpus: 96, borrowing_limit_gpus: 32}\n"
        "      - {name: product, gpus: 32, lending_limit_gpus: 16}\n",
    )
    plan = plan_design(load_design(path))
    queues = {d["metadata"]["name"]: d for d in kubernetes_manifests(plan)["kueue.yaml"] if d["kind"] == "ClusterQueue"}
    gpu = {
        name: next(
            r for r in q["spec"]["resourceGroups"][0]["flavors"][0]["resources"] if r["name"] == "nvidia.com/gpu"
        )
        for name, q in queues.items()
    }
    assert gpu["research"] == {"name": "nvidia.com/gpu", "nominalQuota": 96, "borrowingLimit": 32}
    assert gpu["product"] == {"name": "nvidia.com/gpu", "nominalQuota": 32, "lendingLimit": 16}
    assert {q["spec"]["cohort"] for q in queues.values()} == {"teams"}
    cpu = next(
        r for r in queues["research"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"] if r["name"] == "cpu"
    )
    assert cpu["nominalQuota"] == 96 * 224 // 8  # cores in proportion to GPUs: 28 threads per H100


def test_default_queue_holds_every_production_gpu_and_no_spare():
    _, plan = planned("b200-roce-2su")
    documents = kubernetes_manifests(plan)["kueue.yaml"]
    queue = next(d for d in documents if d["kind"] == "ClusterQueue")
    quota = {r["name"]: r["nominalQuota"] for r in queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    production = [d for d in plan.devices_with("gpu-server") if not d.spare]
    assert quota["nvidia.com/gpu"] == len(production) * 8 and quota["rdma/compute"] == len(production)
    nodes = {n["metadata"]["name"]: n for n in kubernetes_manifests(plan)["nodes.yaml"]}
    for device in plan.devices_with("gpu-server"):
        taints = {t["key"] for t in nodes[device.name]["spec"]["taints"]}
        assert ("gpucluster.io/hot-spare" in taints) == device.spare


@pytest.mark.parametrize("design", ["superpod-h200-4su", "b200-roce-2su"])
def test_topology_labels_agree_with_the_plan(design):
    """From the plan's links alone: servers under one leaf label share every rail leaf; su and rack labels are the
    plan's; every Topology level is a label the nodes carry."""
    _, plan = planned(design)
    servers = [d.name for d in plan.devices_with("gpu-server")]
    labels = topology_labels(plan, servers)
    prefix = "network.topology.nvidia.com"
    leaves_of: dict[str, frozenset[str]] = defaultdict(frozenset)
    for link in plan.links:
        if link.network == "compute" and link.tier == 0 and link.a_device in labels:
            leaves_of[link.a_device] = leaves_of[link.a_device] | {link.b_device}
    by_label: dict[str, set[frozenset[str]]] = defaultdict(set)
    for name in servers:
        by_label[labels[name][f"{prefix}/leaf"]].add(leaves_of[name])
        assert labels[name][f"{prefix}/su"] == f"su{plan.devices[name].su:02d}"
        assert labels[name][f"{prefix}/rack"] == plan.devices[name].rack
    assert all(len(sets) == 1 for sets in by_label.values()), "one leaf label = one set of rail leaves"
    assert len(by_label) == len(set(leaves_of.values())), "one leaf label per rail group"
    for level in topology_levels(plan, servers)[:-1]:  # the Kueue Topology's levels are labels every node has
        assert all(level in labels[n] for n in servers)


def test_nvlink_domains_label_the_accelerator_level(tmp_path):
    plan = nvl_plan(tmp_path)
    servers = [d.name for d in plan.devices_with("gpu-server")]
    labels = topology_labels(plan, servers)
    domains = defaultdict(set)
    for name in servers:
        domains[labels[name]["network.topology.nvidia.com/accelerator"]].add(plan.devices[name].rack)
    assert len(domains) == 2 and all(len(racks) == 1 for racks in domains.values())
    levels = topology_levels(plan, servers)
    assert levels[-2:] == ["network.topology.nvidia.com/accelerator", "kubernetes.io/hostname"]


def test_kubernetes_side_of_a_split_design_holds_only_its_servers():
    _, plan = planned("lab-4-servers")
    manifests = kubernetes_manifests(plan)
    assert [n["metadata"]["name"] for n in manifests["nodes.yaml"]] == ["gpu003", "gpu004"]
    assert "gpu001" not in yaml.safe_dump_all(manifests["kueue.yaml"])


# NicClusterPolicy: Mellanox/network-operator api/v1alpha1 (CRD mellanox.com_nicclusterpolicies): each component
# needs image, repository and version; the device plugins' config is the plugin's own JSON (k8s-rdma-shared-dev-plugin
# configList / sriov-network-device-plugin resourceList selectors).
_COMPONENT = {
    "type": "object",
    "required": ["image", "repository", "version"],
    "properties": {
        "image": {"type": "string", "pattern": r"[a-zA-Z0-9\-]+"},
        "repository": {"type": "string"},
        "version": {"type": "string"},
        "config": {"type": "string"},
    },
    "additionalProperties": False,
}
_RDMA_CONFIG = {
    "type": "object",
    "additionalProperties": False,
    "required": ["configList"],
    "properties": {
        "configList": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["resourceName", "selectors"],
                "properties": {
                    "resourceName": {"type": "string", "pattern": r"^[a-zA-Z0-9_]+$"},
                    "rdmaHcaMax": {"type": "integer", "minimum": 1},
                    "selectors": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            k: {"type": "array", "items": {"type": "string"}}
                            for k in ("vendors", "deviceIDs", "drivers", "ifNames", "linkTypes")
                        },
                    },
                },
            },
        }
    },
}


@pytest.mark.parametrize("design", EXAMPLES)
def test_nic_cluster_policy_gives_pods_the_compute_hcas(design):
    plan = _planned(design)
    policy = kubernetes_manifests(plan)["network-operator.yaml"][0]
    assert (policy["apiVersion"], policy["kind"], policy["metadata"]["name"]) == (
        "mellanox.com/v1alpha1",
        "NicClusterPolicy",
        "nic-cluster-policy",
    )
    plugin = policy["spec"]["rdmaSharedDevicePlugin"]
    jsonschema.validate(plugin, _COMPONENT)
    config = json.loads(plugin["config"])
    jsonschema.validate(config, _RDMA_CONFIG)
    server = plan.part(plan.devices_with("gpu-server")[0].name)
    netdevs = [d.netdev for d in port_details(server, "compute")]
    selectors = config["configList"][0]["selectors"]
    if all(netdevs):
        assert selectors == {"ifNames": netdevs}  # rail order
    else:
        expected = "ether" if plan.settings["compute_fabric"] == "roce" else "infiniband"
        assert selectors["linkTypes"] == [expected]


# GPU Operator Helm values: the keys used, as the chart's values.yaml / ClusterPolicy spec define them
# (NVIDIA/gpu-operator deployments/gpu-operator; ClusterPolicy MIGStrategy none|single|mixed in
# api/nvidia/v1/clusterpolicy_types.go; shared reference ecosystem-facts.md section 4).
GPU_OPERATOR_KEYS = {
    "nfd.enabled",
    "driver.enabled",
    "driver.rdma.enabled",
    "driver.rdma.useHostMofed",
    "toolkit.enabled",
    "devicePlugin.enabled",
    "gfd.enabled",
    "mig.strategy",
    "migManager.enabled",
    "dcgmExporter.enabled",
    "dcgmExporter.config.name",
    "dcgmExporter.env",
    "dcgmExporter.serviceMonitor.enabled",
}


def _paths(values: dict, prefix: str = "") -> set[str]:
    paths = set()
    for key, value in values.items():
        path = f"{prefix}{key}"
        paths |= _paths(value, path + ".") if isinstance(value, dict) else {path}
    return paths


@pytest.mark.parametrize(("design", "host_driver"), [("k8s-dgx-h100", True), ("lab-4-servers", False)])
def test_gpu_operator_values_fit_the_server(design, host_driver):
    """DGX OS ships the driver (driver container off); the OEM servers get the operator's driver container."""
    plan = _planned(design)
    manifests = kubernetes_manifests(plan)
    values = manifests["gpu-operator-values.yaml"][0]
    assert _paths(values) <= GPU_OPERATOR_KEYS
    assert values["driver"]["enabled"] is not host_driver
    assert values["mig"]["strategy"] in ("none", "single", "mixed")
    configmap = manifests["dcgm-metrics.yaml"][0]
    assert configmap["metadata"]["name"] == values["dcgmExporter"]["config"]["name"]
    fields = [
        line.split(",")[0] for line in configmap["data"]["dcgm-metrics.csv"].splitlines() if not line.startswith("#")
    ]
    assert {"DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_GPU_TEMP"} <= set(fields)
    assert all(re.fullmatch(r"DCGM_FI_(DEV|PROF)_[A-Z0-9_]+", f) for f in fields)


def test_nccl_env_lists_compute_hcas_in_rail_order():
    _, plan = planned("superpod-h100-1su")
    env = nccl_files(plan)["nccl/nccl.env"]
    hcas = re.search(r"^NCCL_IB_HCA==(\S+)$", env, flags=re.MULTILINE).group(1).split(",")
    assert hcas == ["mlx5_0:1", "mlx5_3:1", "mlx5_4:1", "mlx5_5:1", "mlx5_6:1", "mlx5_9:1", "mlx5_10:1", "mlx5_11:1"]
    assert "NCCL_SOCKET_IFNAME==bond0" in env and "NCCL_IB_GID_INDEX" not in env


def test_nccl_env_sets_gid_index_and_traffic_class_on_roce():
    _, plan = planned("b200-roce-2su")
    env = nccl_files(plan)["nccl/nccl.env"]
    assert "NCCL_IB_GID_INDEX=3" in env and "NCCL_IB_TC=104" in env


def test_sbatch_script_is_valid_bash_and_runs_torchrun_on_whole_servers(tmp_path):
    _, plan = planned("superpod-h100-1su")
    script = nccl_files(plan)["launch/train.sbatch"]
    (tmp_path / "train.sbatch").write_text(script)
    subprocess.run(["bash", "-n", str(tmp_path / "train.sbatch")], check=True)
    assert "#SBATCH --nodes=30" in script and "#SBATCH --gpus-per-node=8" in script and "#SBATCH --exclusive" in script
    assert "--nproc-per-node=8" in script and ". ./nccl.env" in script


def test_pytorchjob_spans_one_leaf_group_of_production_servers():
    _, plan = planned("b200-roce-2su")
    job = yaml.safe_load_all(nccl_files(plan)["launch/pytorchjob.yaml"])
    job = next(d for d in job if d["kind"] == "PyTorchJob")
    replicas = sum(spec["replicas"] for spec in job["spec"]["pytorchReplicaSpecs"].values())
    # Spectrum-X rail leaves serve 64 nodes: SUs 1 and 2 share them, so the group is both SUs' production servers
    first_leaf = next(link.b_device for link in plan.links if link.a_device == "gpu001" and link.network == "compute")
    group = {link.a_device for link in plan.links if link.b_device == first_leaf and link.tier == 0}
    production = [name for name in group if not plan.devices[name].spare]
    assert replicas == len(production) == 62 and math.isclose(int(job["spec"]["nprocPerNode"]), 8)
