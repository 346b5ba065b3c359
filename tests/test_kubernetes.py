"""Kubernetes manifests: core kinds against kubernetes-validate's strict schemas; every custom resource against the
upstream CRD of the version its apiVersion names (tests/upstream/: Kueue v0.19.2, Kubeflow Trainer v2.3.0, Training
Operator v1.9.4, Network Operator v26.4.1), CEL rules included; Helm values against the charts' values.yaml (GPU
Operator v26.7.0, Network Operator v26.4.1); device-plugin configs against the Network Operator webhook's JSON
schemas; every name and label key/value checked for Kubernetes validity; labels and quotas agree with the plan."""

from __future__ import annotations

import json
import re
import subprocess
from collections import defaultdict
from functools import cache

import jsonschema
import kubernetes_validate
import pytest
import yaml
from conftest import planned
from k8s_upstream import (
    UPSTREAM,
    check_custom_resource,
    crds,
    json_schema,
    values_problems,
    webhook_schema,
)
from kubernetes_validate import utils as kv
from referencing import Registry, Resource
from test_slurm import nvl_plan

from gpucluster.artifacts.kubernetes import (
    HELM_VALUES_FILES,
    job_topology_level,
    kubernetes_manifests,
    topology_labels,
    topology_levels,
)
from gpucluster.artifacts.nccl import nccl_files
from gpucluster.catalog.ports import port_details
from gpucluster.plan.model import Plan

K8S_VERSION = "1.30"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
TIER = "fabric.topograph.run/tier-{}"
ACCELERATOR = "accelerator.topograph.run/domain"


def _launch(plan: Plan) -> list[dict]:
    files = nccl_files(plan)
    text = files.get("launch/trainjob.yaml") or files.get("launch/pytorchjob.yaml")
    return list(yaml.safe_load_all(text)) if text else []


def _all(plan: Plan) -> list[dict]:
    documents = [d for name, docs in kubernetes_manifests(plan).items() if name not in HELM_VALUES_FILES for d in docs]
    return documents + _launch(plan)


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
# The older generations a design can still choose: Kueue v1beta1, the Training Operator's PyTorchJob, topograph 0.5.
OLDER = {"kueue_api": "v1beta1", "training_job": "pytorchjob", "topology_labels": "topograph-0"}


def _k8s_design(name: str, **kubernetes: object) -> Plan:
    """Eight DGX H100 on Kubernetes with two teams (built in Python), with other Kubernetes settings."""
    from gpucluster import design_from_model, plan_design
    from gpucluster.design.schema import Design

    model = Design.model_validate(
        {
            "name": name,
            "compute": {"server": "dgx-h100", "servers": 8, "spare_servers": 1},
            "scheduler": {
                "kind": "kubernetes",
                "kubernetes": {
                    "teams": [
                        {"name": "research", "gpus": 48, "borrowing_limit_gpus": 16},
                        {"name": "product", "gpus": 16},
                    ],
                    **kubernetes,
                },
            },
        }
    )
    return plan_design(design_from_model(model))


@cache
def _planned(design: str) -> Plan:
    """An example design; k8s-dgx-h100 (see _k8s_design); k8s-older: the same on the older generations; k8s-sriov:
    the same with SR-IOV VFs per rail."""
    if design == "k8s-dgx-h100":
        return _k8s_design(design)
    if design == "k8s-older":
        return _k8s_design(design, **OLDER)
    if design == "k8s-sriov":
        return _k8s_design(design, rdma="sriov")
    if design.endswith("-k8s"):  # an example design on Kubernetes instead
        from gpucluster import design_from_model, plan_design
        from gpucluster.design.schema import Design

        loaded, _ = planned(design.removesuffix("-k8s"))
        model = Design.model_validate({**loaded.design.model_dump(), "scheduler": {"kind": "kubernetes"}})
        return plan_design(design_from_model(model))
    return planned(design)[1]


@pytest.mark.parametrize("design", [*EXAMPLES, "k8s-older"])
def test_core_manifests_pass_kubernetes_strict_schemas(design):
    plan = _planned(design)
    documents = _all(plan)
    core = [d for d in documents if d["apiVersion"] == "v1"]
    assert {d["kind"] for d in core} >= {"Node", "Namespace", "ConfigMap"}
    for document in core:
        kubernetes_validate.validate(document, K8S_VERSION, strict=True)
    for document in documents:  # CRDs: their metadata is a core ObjectMeta
        _core("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", document["metadata"])


@pytest.mark.parametrize("design", [*EXAMPLES, "k8s-older"])
def test_names_and_labels_are_valid(design):
    plan = _planned(design)
    for document in _all(plan):
        meta = document["metadata"]
        assert DNS_SUBDOMAIN.match(meta["name"]) and len(meta["name"]) <= 253, meta["name"]
        if document["kind"] in ("Namespace", "ClusterQueue", "LocalQueue", "Cohort", "PyTorchJob", "TrainJob"):
            assert DNS_LABEL.match(meta["name"]), meta["name"]  # RFC 1123 label: 63 characters at most
        for key, value in meta.get("labels", {}).items():
            assert _label_key_ok(key) and LABEL_VALUE.match(value), (key, value)


@pytest.mark.parametrize("design", [*EXAMPLES, "k8s-older", "k8s-sriov"])
def test_every_custom_resource_passes_its_upstream_crd(design):
    """Each custom resource against the upstream CRD version it names: served, its schema (unknown keys rejected)
    and its CEL rules; the current generation uses no deprecated version. Pod templates are core types."""
    plan = _planned(design)
    custom = [d for d in _all(plan) if d["apiVersion"] != "v1"]
    kinds = {d["kind"] for d in custom}
    launch = "PyTorchJob" if design == "k8s-older" else "TrainJob"
    assert kinds == {"Topology", "ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "NicClusterPolicy", launch}
    cel_rules_run = 0
    for document in custom:
        checked = check_custom_resource(document)
        where = f"{document['apiVersion']} {document['kind']} {document['metadata']['name']}"
        assert checked.crd.served, where
        assert design == "k8s-older" or not checked.crd.deprecated, f"{where}: a deprecated version"
        assert checked.schema_errors == [], where
        assert checked.cel.failures == [] and checked.cel.unsupported == [], where
        cel_rules_run += checked.cel.run
    assert cel_rules_run >= 5  # Topology's, ResourceFlavor's, ClusterQueue's and the job's rules did run
    for document in custom:
        if document["kind"] == "PyTorchJob":
            for spec in document["spec"]["pytorchReplicaSpecs"].values():
                _core("io.k8s.api.core.v1.PodTemplateSpec", spec["template"])
        if document["kind"] == "ResourceFlavor":
            for taint in document["spec"]["nodeTaints"]:
                _core("io.k8s.api.core.v1.Taint", taint)
            for toleration in document["spec"]["tolerations"]:
                _core("io.k8s.api.core.v1.Toleration", toleration)


def _kueue(kind: str, **spec: object) -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": {"name": "x"}, "spec": spec}


def test_the_crd_check_rejects_unknown_fields_failed_cel_rules_and_unserved_versions():
    assert check_custom_resource(_kueue("ClusterQueue", cohortName="c")).schema_errors == []
    assert check_custom_resource(_kueue("ClusterQueue", cohort="c")).schema_errors  # v1beta1's name
    # CEL: a flavor with a topology needs node labels; the hostname level comes last; a rule that reads a default.
    assert check_custom_resource(_kueue("ResourceFlavor", topologyName="fabric")).cel.failures
    levels = [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": TIER.format(0)}]
    assert check_custom_resource(_kueue("Topology", levels=levels)).cel.failures
    preemption = {"borrowWithinCohort": {"policy": "LowerPriority"}}  # reclaimWithinCohort defaults to Never
    assert check_custom_resource(_kueue("ClusterQueue", preemption=preemption)).cel.failures
    with pytest.raises(KeyError):  # Kueue 0.19 serves no v1alpha1
        check_custom_resource({**_kueue("Topology", levels=levels[:1]), "apiVersion": "kueue.x-k8s.io/v1alpha1"})
    assert ("trainer.kubeflow.org/v1alpha1", "TrainJob") in crds()


def test_kueue_integrates_the_default_launch_job_out_of_the_box():
    """Kueue 0.19's default integrations include Trainer v2's TrainJob (and no longer the PyTorchJob)."""
    config = yaml.safe_load((UPSTREAM / "kueue" / "kueue-v0.19.2.controller_manager_config.yaml").read_text())
    frameworks = config["integrations"]["frameworks"]
    assert "trainer.kubeflow.org/trainjob" in frameworks and "kubeflow.org/pytorchjob" not in frameworks
    assert [d["kind"] for d in _launch(_planned("k8s-dgx-h100"))] == ["TrainJob"]


@pytest.mark.parametrize("design", ["k8s-dgx-h100", "lab-4-servers"])
def test_helm_values_are_keys_of_the_charts_and_nfd_runs_once(design):
    plan = _planned(design)
    manifests = kubernetes_manifests(plan)
    gpu = manifests["gpu-operator-values.yaml"][0]
    network = manifests["network-operator-values.yaml"][0]
    assert values_problems(gpu, "gpu-operator") == []
    assert values_problems(network, "network-operator") == []
    assert [gpu["nfd"]["enabled"], network["nfd"]["enabled"]].count(True) == 1  # one Node Feature Discovery
    assert values_problems({"nfd": {"enabeld": True}}, "gpu-operator") == [
        "nfd.enabeld: not a key of the chart's values"
    ]


@pytest.mark.parametrize(("design", "host_driver"), [("k8s-dgx-h100", True), ("lab-4-servers", False)])
def test_gpu_operator_values_fit_the_server(design, host_driver):
    """DGX OS ships the driver (driver container off); the OEM servers get the operator's driver container."""
    plan = _planned(design)
    manifests = kubernetes_manifests(plan)
    values = manifests["gpu-operator-values.yaml"][0]
    assert values["driver"]["enabled"] is not host_driver
    assert values["mig"]["strategy"] in ("none", "single", "mixed")
    configmap = manifests["dcgm-metrics.yaml"][0]
    assert configmap["metadata"]["name"] == values["dcgmExporter"]["config"]["name"]
    fields = [
        line.split(",")[0] for line in configmap["data"]["dcgm-metrics.csv"].splitlines() if not line.startswith("#")
    ]
    assert {"DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_GPU_TEMP"} <= set(fields)
    assert all(re.fullmatch(r"DCGM_FI_(DEV|PROF)_[A-Z0-9_]+", f) for f in fields)


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
    assert {q["spec"]["cohortName"] for q in queues.values()} == {"teams"}
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
    """From the plan's links alone: servers under one tier-0 (leaf) label share every rail leaf; servers under one
    tier-1 label share their spines; su and rack labels are the plan's; every Topology level is a label every node
    carries, and has more than one value."""
    _, plan = planned(design)
    servers = [d.name for d in plan.devices_with("gpu-server")]
    labels = topology_labels(plan, servers)
    leaves_of: dict[str, frozenset[str]] = defaultdict(frozenset)
    for link in plan.links:
        if link.network == "compute" and link.tier == 0 and link.a_device in labels:
            leaves_of[link.a_device] = leaves_of[link.a_device] | {link.b_device}
    by_label: dict[str, set[frozenset[str]]] = defaultdict(set)
    for name in servers:
        by_label[labels[name][TIER.format(0)]].add(leaves_of[name])
        assert labels[name]["gpucluster.io/su"] == f"su{plan.devices[name].su:02d}"
        assert labels[name]["gpucluster.io/rack"] == plan.devices[name].rack
        assert not any(key.startswith("network.topology.nvidia.com/") for key in labels[name])
    assert all(len(sets) == 1 for sets in by_label.values()), "one leaf label = one set of rail leaves"
    assert len(by_label) == len(set(leaves_of.values())), "one leaf label per rail group"
    levels = topology_levels(plan, servers)
    assert levels[-1] == "kubernetes.io/hostname"
    for level in levels[:-1]:
        assert all(level in labels[n] for n in servers)
        assert len({labels[n][level] for n in servers}) > 1
    if len(by_label) > 1:  # the job keeps to one leaf group where there are several
        assert TIER.format(0) in levels and job_topology_level(plan, servers) == TIER.format(0)
    else:
        assert TIER.format(0) not in levels and job_topology_level(plan, servers) is None


def test_a_level_with_one_value_on_every_node_is_left_out():
    """One SU: a single leaf group and spine group, so the Topology is the hosts alone and the job asks for none."""
    _, plan = planned("lab-4-servers")
    servers = [d.name for d in plan.devices_with("gpu-server")][2:]
    labels = topology_labels(plan, servers)
    assert len({labels[n][TIER.format(0)] for n in servers}) == 1
    assert topology_levels(plan, servers) == ["kubernetes.io/hostname"]
    job = _launch(planned("lab-4-servers")[1])[0]
    patch = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    assert "metadata" not in patch["template"]["spec"]["template"]


def test_older_generation_labels_keep_the_prefix_and_tier_names():
    plan = _planned("k8s-older")
    servers = [d.name for d in plan.devices_with("gpu-server")]
    keys = set(topology_labels(plan, servers)[servers[0]])
    assert "network.topology.nvidia.com/leaf" in keys and not any("topograph.run" in k for k in keys)
    queue = next(d for d in kubernetes_manifests(plan)["kueue.yaml"] if d["kind"] == "ClusterQueue")
    assert queue["apiVersion"] == "kueue.x-k8s.io/v1beta1" and queue["spec"]["cohort"] == "k8s-older"


def test_nvlink_domains_label_the_accelerator_level(tmp_path):
    plan = nvl_plan(tmp_path)
    servers = [d.name for d in plan.devices_with("gpu-server")]
    labels = topology_labels(plan, servers)
    domains = defaultdict(set)
    for name in servers:
        domains[labels[name][ACCELERATOR]].add(plan.devices[name].rack)
    assert len(domains) == 2 and all(len(racks) == 1 for racks in domains.values())
    levels = topology_levels(plan, servers)
    assert levels[-2:] == [ACCELERATOR, "kubernetes.io/hostname"]


def test_kubernetes_side_of_a_split_design_holds_only_its_servers():
    _, plan = planned("lab-4-servers")
    manifests = kubernetes_manifests(plan)
    assert [n["metadata"]["name"] for n in manifests["nodes.yaml"]] == ["gpu003", "gpu004"]
    assert "gpu001" not in yaml.safe_dump_all(manifests["kueue.yaml"])


@pytest.mark.parametrize("design", [*EXAMPLES, "k8s-sriov"])
def test_nic_cluster_policy_gives_pods_the_compute_hcas(design):
    """The device plugin's config passes the Network Operator webhook's schema (listed keys only); its images are
    the ones Network Operator v26.4.1 releases with."""
    plan = _planned(design)
    policy = kubernetes_manifests(plan)["network-operator.yaml"][0]
    assert (policy["apiVersion"], policy["kind"], policy["metadata"]["name"]) == (
        "mellanox.com/v1alpha1",
        "NicClusterPolicy",
        "nic-cluster-policy",
    )
    server = plan.part(plan.devices_with("gpu-server")[0].name)
    netdevs = [d.netdev for d in port_details(server, "compute")]
    if design == "k8s-sriov":
        plugin = policy["spec"]["sriovDevicePlugin"]
        config = json.loads(plugin["config"])
        jsonschema.validate(config, json_schema(webhook_schema("sriov_network_device_plugin")))
        for resource in config["resourceList"]:
            jsonschema.validate({"selectors": resource["selectors"]}, json_schema(webhook_schema("net_device")))
        assert [r["selectors"]["pfNames"] for r in config["resourceList"]] == [[n] for n in netdevs]
    else:
        plugin = policy["spec"]["rdmaSharedDevicePlugin"]
        config = json.loads(plugin["config"])
        jsonschema.validate(config, json_schema(webhook_schema("rdma_shared_device_plugin")))
        selectors = config["configList"][0]["selectors"]
        if all(netdevs):
            assert selectors == {"ifNames": netdevs}  # rail order
        else:
            expected = "ether" if plan.settings["compute_fabric"] == "roce" else "infiniband"
            assert selectors["linkTypes"] == [expected]
    assert plugin["repository"] == "nvcr.io/nvidia/mellanox" and plugin["version"] == "network-operator-v26.4.1"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"configList": [{"resourceName": "x", "selector": {}}]},
            json_schema(webhook_schema("rdma_shared_device_plugin")),
        )


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


def _trainjob(plan: Plan) -> dict:
    return next(d for d in _launch(plan) if d["kind"] == "TrainJob")


def test_trainjob_spans_one_leaf_group_of_production_servers():
    plan = _planned("superpod-h200-4su-k8s")
    job = _trainjob(plan)
    su_production = [d for d in plan.devices_with("gpu-server") if d.su == 1 and not d.spare]
    trainer = job["spec"]["trainer"]
    assert trainer["numNodes"] == len(su_production) and trainer["numProcPerNode"] == 8
    assert trainer["resourcesPerNode"]["limits"] == {"nvidia.com/gpu": "8", "rdma/compute": "1"}
    patch = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    pod = patch["template"]["spec"]["template"]
    assert patch["name"] == "node" and pod["spec"]["containers"][0]["name"] == "node"
    assert pod["metadata"]["annotations"] == {"kueue.x-k8s.io/podset-preferred-topology": TIER.format(0)}
    levels = next(d for d in kubernetes_manifests(plan)["kueue.yaml"] if d["kind"] == "Topology")["spec"]["levels"]
    assert TIER.format(0) in [level["nodeLabel"] for level in levels]
    env = {e["name"]: e["value"] for e in trainer["env"]}
    assert env["NCCL_SOCKET_IFNAME"] == "=eth0" and env["NCCL_IB_HCA"].startswith("=mlx5_")


@pytest.mark.parametrize("design", ["k8s-dgx-h100", "k8s-older", "b200-roce-2su", "lab-4-servers"])
def test_the_launch_job_fits_its_teams_quota(design):
    """The job asks for no more GPUs than the team it is queued to is guaranteed (its ClusterQueue's nominal quota)."""
    plan = _planned(design)
    job = next(d for d in _launch(plan) if d["kind"] in ("TrainJob", "PyTorchJob"))
    queue_name = job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    local = next(d for d in _all(plan) if d["kind"] == "LocalQueue" and d["metadata"]["name"] == queue_name)
    assert local["metadata"]["namespace"] == job["metadata"]["namespace"]
    queue = next(
        d for d in _all(plan) if d["kind"] == "ClusterQueue" and d["metadata"]["name"] == local["spec"]["clusterQueue"]
    )
    quota = {r["name"]: r["nominalQuota"] for r in queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    if job["kind"] == "TrainJob":
        nodes = job["spec"]["trainer"]["numNodes"]
        per_node = int(job["spec"]["trainer"]["resourcesPerNode"]["limits"]["nvidia.com/gpu"])
    else:
        specs = job["spec"]["pytorchReplicaSpecs"].values()
        nodes = sum(s["replicas"] for s in specs)
        per_node = int(next(iter(specs))["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"])
    assert nodes * per_node <= quota["nvidia.com/gpu"]
    if design.startswith("k8s-"):
        assert (queue_name, nodes) == ("research", 6)  # 48 GPUs: six of the leaf group's seven production servers


def test_pytorchjob_master_and_workers_form_one_podset_group():
    job = next(d for d in _launch(_planned("k8s-older")) if d["kind"] == "PyTorchJob")
    groups = {
        spec["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-group-name"]
        for spec in job["spec"]["pytorchReplicaSpecs"].values()
    }
    assert len(groups) == 1 and set(job["spec"]["pytorchReplicaSpecs"]) == {"Master", "Worker"}


def test_older_generation_labels_take_the_designs_prefix():
    plan = _k8s_design("k8s-prefix", topology_labels="topograph-0", topology_label_prefix="topology.example.com")
    servers = [d.name for d in plan.devices_with("gpu-server")]
    assert "topology.example.com/leaf" in topology_labels(plan, servers)[servers[0]]
