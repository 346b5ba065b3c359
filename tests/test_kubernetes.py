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
    chart_values,
    check_custom_resource,
    crds,
    json_schema,
    kueue_podset_problems,
    values_problems,
    webhook_schema,
)
from kubernetes_validate import utils as kv
from referencing import Registry, Resource
from test_slurm import nvl_plan

from gpucluster.analyse.scheduling import scheduler_split
from gpucluster.artifacts.kubernetes import (
    COMPUTE_DOMAIN_DRIVER_FLOOR,
    HELM_VALUES_FILES,
    accelerator_label,
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
    """The launch templates' objects: the ComputeDomain (multi-node NVLink), the job and its runtime."""
    files = nccl_files(plan)
    names = ("launch/compute-domain.yaml", "launch/trainjob.yaml", "launch/pytorchjob.yaml")
    return [d for name in names if name in files for d in yaml.safe_load_all(files[name])]


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


def _on_kubernetes(example: str, **kubernetes: object) -> Plan:
    """An example design (as written, defaults left to the planner) with Kubernetes running every server."""
    from gpucluster import design_from_model, plan_design
    from gpucluster.design.schema import Design

    loaded, _ = planned(example)
    scheduler = {"kind": "kubernetes", "kubernetes": kubernetes}
    model = Design.model_validate({**loaded.design.model_dump(exclude_unset=True), "scheduler": scheduler})
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
    if design == "gb200-k8s-older":  # one SU of GB200 NVL72 on Kubernetes, the older generations, the host's driver
        return _on_kubernetes("gb200-nvl72-1su", **OLDER, gpu_operator={"driver": "host"})
    if design == "gb300-k8s":  # the 4-SU GB300 NVL72 example on Kubernetes alone
        return _on_kubernetes("gb300-nvl72-4su")
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
    production = [d for d in plan.gpu_nodes() if not d.spare]
    assert quota["nvidia.com/gpu"] == len(production) * 8 and quota["rdma/compute"] == len(production)
    nodes = {n["metadata"]["name"]: n for n in kubernetes_manifests(plan)["nodes.yaml"]}
    for device in plan.gpu_nodes():
        taints = {t["key"] for t in nodes[device.name]["spec"]["taints"]}
        assert ("gpucluster.io/hot-spare" in taints) == device.spare


@pytest.mark.parametrize("design", ["superpod-h200-4su", "b200-roce-2su"])
def test_topology_labels_agree_with_the_plan(design):
    """From the plan's links alone: servers under one tier-0 (leaf) label share every rail leaf; servers under one
    tier-1 label share their spines; su and rack labels are the plan's; every Topology level is a label every node
    carries, and has more than one value."""
    _, plan = planned(design)
    servers = [d.name for d in plan.gpu_nodes()]
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
    servers = [d.name for d in plan.gpu_nodes()][2:]
    labels = topology_labels(plan, servers)
    assert len({labels[n][TIER.format(0)] for n in servers}) == 1
    assert topology_levels(plan, servers) == ["kubernetes.io/hostname"]
    job = _launch(planned("lab-4-servers")[1])[0]
    patch = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    assert "metadata" not in patch["template"]["spec"]["template"]


def test_older_generation_labels_keep_the_prefix_and_tier_names():
    plan = _planned("k8s-older")
    servers = [d.name for d in plan.gpu_nodes()]
    keys = set(topology_labels(plan, servers)[servers[0]])
    assert "network.topology.nvidia.com/leaf" in keys and not any("topograph.run" in k for k in keys)
    queue = next(d for d in kubernetes_manifests(plan)["kueue.yaml"] if d["kind"] == "ClusterQueue")
    assert queue["apiVersion"] == "kueue.x-k8s.io/v1beta1" and queue["spec"]["cohort"] == "k8s-older"


def test_nvlink_domains_label_the_accelerator_level(tmp_path):
    plan = nvl_plan(tmp_path)
    servers = [d.name for d in plan.gpu_nodes()]
    labels = topology_labels(plan, servers)
    domains = defaultdict(set)
    for name in servers:
        domains[labels[name][ACCELERATOR]].add(plan.devices[name].rack)
    assert len(domains) == 2 and all(len(racks) == 1 for racks in domains.values())
    levels = topology_levels(plan, servers)
    assert levels[-2:] == ["nvidia.com/gpu.clique", "kubernetes.io/hostname"]  # GFD's label of the NVLink domain


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
    server = plan.part(plan.gpu_nodes()[0].name)
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
            expected = "ether" if plan.settings.compute_fabric == "roce" else "infiniband"
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
    su_production = [d for d in plan.gpu_nodes() if d.su == 1 and not d.spare]
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


@pytest.mark.parametrize(("design", "grouped"), [("gb200-k8s-older", True), ("k8s-older", False)])
def test_pytorchjob_master_and_workers_form_one_podset_group(design, grouped):
    """Master and workers are one PodSet group where the Topology has a level to keep them in; with none (one leaf
    group, no NVLink domains) there is no group, which Kueue's webhook would refuse without a topology."""
    job = next(d for d in _launch(_planned(design)) if d["kind"] == "PyTorchJob")
    groups = [
        spec["template"]["metadata"]["annotations"].get("kueue.x-k8s.io/podset-group-name")
        for spec in job["spec"]["pytorchReplicaSpecs"].values()
    ]
    assert set(job["spec"]["pytorchReplicaSpecs"]) == {"Master", "Worker"}
    assert (len(set(groups)) == 1 and None not in groups) if grouped else groups == [None, None]


def test_older_generation_labels_take_the_designs_prefix():
    plan = _k8s_design("k8s-prefix", topology_labels="topograph-0", topology_label_prefix="topology.example.com")
    servers = [d.name for d in plan.gpu_nodes()]
    assert "topology.example.com/leaf" in topology_labels(plan, servers)[servers[0]]


# Multi-node NVLink (GB200/GB300 NVL72) on Kubernetes: the example with both schedulers (Kubernetes runs 72 trays), the
# same example with Kubernetes alone (four SUs: leaf groups above the cliques), and one SU of GB200 on the older
# generations (PyTorchJob, Kueue v1beta1) with the host's driver.
MNNVL = ["gb300-nvl72-4su", "gb300-k8s", "gb200-k8s-older"]
CLIQUE = "nvidia.com/gpu.clique"


def _pod_templates(documents: list[dict]) -> list[tuple[dict, int]]:
    """Each training PodSet's pod template, as the job controller builds it, and its pod count: a TrainJob's from
    its runtime (a TrainingRuntime of the file, else none) with the job's runtime patch over it; a PyTorchJob's per
    replica type."""
    runtimes = {d["metadata"]["name"]: d for d in documents if d["kind"] == "TrainingRuntime"}
    found = []
    for job in documents:
        if job["kind"] == "TrainJob":
            runtime = runtimes.get(job["spec"]["runtimeRef"]["name"])
            base = {}
            if runtime:
                base = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
            patch = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
            over = patch["template"]["spec"]["template"]
            spec = {**base.get("spec", {}), **over.get("spec", {})}
            if "affinity" in base.get("spec", {}) and "affinity" in over.get("spec", {}):
                spec["affinity"] = {**base["spec"]["affinity"], **over["spec"]["affinity"]}
            metadata = {**base.get("metadata", {}), **over.get("metadata", {})}
            found.append(({"metadata": metadata, "spec": spec}, job["spec"]["trainer"]["numNodes"]))
        elif job["kind"] == "PyTorchJob":
            found += [(r["template"], r["replicas"]) for r in job["spec"]["pytorchReplicaSpecs"].values()]
    return found


@pytest.mark.parametrize("design", MNNVL)
def test_training_pods_claim_the_compute_domain_s_imex_channel(design):
    """Every training pod claims the ComputeDomain's channel template (pod resourceClaims + the training container's
    resources.claims, as the DRA driver's docs/install.md pod does) in the ComputeDomain's namespace; the pod template
    passes Kubernetes 1.37's strict PodTemplateSpec schema, and every object its upstream CRD."""
    documents = _launch(_planned(design))
    [domain] = [d for d in documents if d["kind"] == "ComputeDomain"]
    template = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
    jobs = [d for d in documents if d["kind"] in ("TrainJob", "PyTorchJob")]
    assert len(jobs) == 1 and jobs[0]["metadata"]["namespace"] == domain["metadata"]["namespace"]
    pods = _pod_templates(documents)
    assert pods
    for pod, _count in pods:
        _core("io.k8s.api.core.v1.PodTemplateSpec", pod)
        claims = {c["name"]: c for c in pod["spec"]["resourceClaims"]}
        assert [c["resourceClaimTemplateName"] for c in claims.values()] == [template]
        [container] = pod["spec"]["containers"]
        used = [c["name"] for c in container["resources"]["claims"]]
        assert used and set(used) == set(claims)
        assert int(container["resources"]["limits"]["nvidia.com/gpu"]) == 4  # the whole tray
    for document in (d for d in documents if d["apiVersion"] != "v1"):
        checked = check_custom_resource(document)
        assert checked.schema_errors == [] and checked.cel.failures == [], document["kind"]
    trainjob = next((d for d in jobs if d["kind"] == "TrainJob"), None)
    if trainjob:  # the trainer rebuilds the container's resources from resourcesPerNode, dropping its claims
        assert "resourcesPerNode" not in trainjob["spec"]["trainer"]
        runtime = next(d for d in documents if d["kind"] == "TrainingRuntime")
        assert trainjob["spec"]["runtimeRef"] == {"name": runtime["metadata"]["name"], "kind": "TrainingRuntime"}
        assert runtime["metadata"]["namespace"] == trainjob["metadata"]["namespace"]


def test_a_claim_naming_no_pod_claim_fails_the_pod_check():
    documents = _launch(_planned("gb300-nvl72-4su"))
    pod, _count = _pod_templates(documents)[0]
    pod["spec"]["resourceClaims"][0]["resourceClaimTemplate"] = "typo"  # not a PodResourceClaim field
    with pytest.raises(jsonschema.ValidationError):
        _core("io.k8s.api.core.v1.PodTemplateSpec", pod)


def test_the_kueue_topology_has_the_nvlink_clique_below_the_fabric_levels():
    """Four SUs on Kubernetes: the leaf groups, then the NVLink domain as GFD labels it (nvidia.com/gpu.clique), then
    the host; the Topology passes Kueue's CRD and its CEL rules."""
    plan = _planned("gb300-k8s")
    servers = [d.name for d in plan.gpu_nodes()]
    levels = topology_levels(plan, servers)
    assert levels == [TIER.format(0), CLIQUE, "kubernetes.io/hostname"]
    [topology] = [d for d in kubernetes_manifests(plan)["kueue.yaml"] if d["kind"] == "Topology"]
    assert [level["nodeLabel"] for level in topology["spec"]["levels"]] == levels
    checked = check_custom_resource(topology)
    assert checked.schema_errors == [] and checked.cel.failures == [] and checked.cel.run >= 1
    # one clique per rack: each leaf group holds whole NVLink domains, so the clique level nests in the leaf level
    labels = topology_labels(plan, servers)
    leaf_of_domain: dict[str, set[str]] = defaultdict(set)
    for name in servers:
        leaf_of_domain[plan.devices[name].nvlink_domain].add(labels[name][TIER.format(0)])
    assert len(leaf_of_domain) == 32 and all(len(leaves) == 1 for leaves in leaf_of_domain.values())


@pytest.mark.parametrize("design", [*MNNVL, *EXAMPLES, "k8s-older"])
def test_every_podset_s_topology_annotations_pass_kueue_s_rules(design):
    plan = _planned(design)
    servers = list(scheduler_split(plan).kubernetes)
    levels = topology_levels(plan, servers)
    pods = _pod_templates(_launch(plan))
    assert pods
    for pod, count in pods:
        assert kueue_podset_problems(pod.get("metadata", {}).get("annotations", {}), count, levels) == []
    assert kueue_podset_problems({"kueue.x-k8s.io/podset-slice-size": "16"}, 64, levels)  # the check can fail
    assert kueue_podset_problems({"kueue.x-k8s.io/podset-group-name": "train"}, 1, levels)


@pytest.mark.parametrize(("design", "slice_size", "nodes"), [("gb300-nvl72-4su", 16, 64), ("gb300-k8s", 16, 64)])
def test_a_multi_node_nvlink_job_takes_slices_of_16_trays_each_in_one_clique(design, slice_size, nodes):
    """Kueue's PodSet slices are Slurm's --segment on Kubernetes: 16 of a rack's 18 trays per slice, each slice in one
    clique, the job a whole number of slices; its pods prefer the clique of the job's other pods."""
    plan = _planned(design)
    [(pod, count)] = _pod_templates(_launch(plan))
    annotations = pod["metadata"]["annotations"]
    assert annotations["kueue.x-k8s.io/podset-slice-required-topology"] == CLIQUE
    assert int(annotations["kueue.x-k8s.io/podset-slice-size"]) == slice_size and count == nodes
    assert "--segment=16" in nccl_files(plan).get("launch/train.sbatch", "--segment=16")
    node_terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert node_terms["nodeSelectorTerms"] == [{"matchExpressions": [{"key": CLIQUE, "operator": "Exists"}]}]
    [term] = pod["spec"]["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == CLIQUE
    selector = term["podAffinityTerm"]["labelSelector"]["matchExpressions"][0]
    assert selector == {"key": "jobset.sigs.k8s.io/jobset-name", "operator": "In", "values": ["train"]}


def test_a_trainjob_that_fits_one_nvlink_domain_takes_one_slice_in_one_clique():
    """A team of 48 GPUs: the job is 12 trays, fewer than a segment, so it is one slice: all its pods in one clique."""
    plan = _on_kubernetes("gb200-nvl72-1su", teams=[{"name": "research", "gpus": 48}])
    [(pod, count)] = _pod_templates(_launch(plan))
    annotations = pod["metadata"]["annotations"]
    assert count == 12 and annotations["kueue.x-k8s.io/podset-slice-size"] == "12"
    assert annotations["kueue.x-k8s.io/podset-slice-required-topology"] == CLIQUE
    servers = list(scheduler_split(plan).kubernetes)
    assert kueue_podset_problems(annotations, count, topology_levels(plan, servers)) == []


def test_a_small_gb200_pytorchjob_prefers_one_nvlink_domain():
    """The older generation: master and workers are one PodSet group (Kueue allows no slices in a group), preferring
    the clique level when the job fits one NVLink domain; each pod claims the IMEX channel."""
    plan = _planned("gb200-k8s-older")
    job = next(d for d in _launch(plan) if d["kind"] == "PyTorchJob")
    nodes = sum(r["replicas"] for r in job["spec"]["pytorchReplicaSpecs"].values())
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        annotations = replica["template"]["metadata"]["annotations"]
        if nodes <= 18:
            assert annotations["kueue.x-k8s.io/podset-preferred-topology"] == CLIQUE
        assert replica["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == "train-imex-channel"


@pytest.mark.parametrize("design", ["gb300-nvl72-4su", "gb200-k8s-older"])
def test_gpu_operator_and_dra_driver_values_for_grace_blackwell(design):
    """What NVIDIA's docs ask of a GB200/GB300 cluster for ComputeDomains: CDI, GFD (the clique labels), the device
    plugin kept (ComputeDomain-only DRA driver), driver 580 or later (the chart's default meets it), the ClusterPolicy
    route; the DRA driver chart with GPUs off, the driver root where the driver is, and a kubelet plugin that
    tolerates the GPU nodes' taint. Every key is the chart's (GPU Operator v26.7.0, DRA driver v25.12.0)."""
    plan = _planned(design)
    manifests = kubernetes_manifests(plan)
    gpu = manifests["gpu-operator-values.yaml"][0]
    assert values_problems(gpu, "gpu-operator") == []
    assert gpu["cdi"]["enabled"] and gpu["gfd"]["enabled"] and gpu["devicePlugin"]["enabled"]
    assert gpu["clusterPolicy"]["deployCR"] and not gpu["gpuCluster"]["deployCR"]
    default_driver = tuple(int(x) for x in chart_values("gpu-operator")["driver"]["version"].split("."))
    assert not (gpu["driver"]["enabled"] and "version" in gpu["driver"])  # the chart's default driver is kept
    [dra] = manifests["dra-driver-values.yaml"]
    assert values_problems(dra, "dra-driver-gpu") == []
    assert values_problems({"resources": {"gpu": {"enabled": False}}}, "dra-driver-gpu")  # the check can fail
    assert dra["resources"] == {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}}
    host = not gpu["driver"]["enabled"]
    assert dra["nvidiaDriverRoot"] == ("/" if host else "/run/nvidia/driver")
    tolerations = dra["kubeletPlugin"]["tolerations"]
    for toleration in tolerations:
        _core("io.k8s.api.core.v1.Toleration", toleration)
    for node in manifests["nodes.yaml"]:  # every taint of a GPU node is tolerated by the plugin
        for taint in node["spec"]["taints"]:
            if node["metadata"]["labels"].get("gpucluster.io/hot-spare") == "true" and "hot-spare" in taint["key"]:
                continue  # hot spares take no jobs, so no IMEX channel either
            assert any(_tolerates(t, taint) for t in tolerations), taint
    from gpucluster.artifacts.kubernetes import file_headers

    header = file_headers(plan)["dra-driver-values.yaml"]
    assert ("systemctl mask nvidia-imex.service" in header) is host and ("580 or later" in header) is host
    floor = ".".join(str(n) for n in COMPUTE_DOMAIN_DRIVER_FLOOR[:1])
    assert floor == "580" and default_driver >= COMPUTE_DOMAIN_DRIVER_FLOOR
    assert all(line.startswith("#") for line in header.splitlines())


def _tolerates(toleration: dict, taint: dict) -> bool:
    if toleration.get("effect") not in (None, "", taint["effect"]) or toleration.get("key") not in (None, taint["key"]):
        return False
    return toleration.get("operator") == "Exists" or toleration.get("value") == taint.get("value")


def test_hgx_servers_get_no_dra_driver_or_clique_level():
    plan = _planned("k8s-dgx-h100")
    manifests = kubernetes_manifests(plan)
    assert "dra-driver-values.yaml" not in manifests and "cdi" not in manifests["gpu-operator-values.yaml"][0]
    servers = [d.name for d in plan.gpu_nodes()]
    assert CLIQUE not in topology_levels(plan, servers)
    assert not any(d["kind"] in ("ComputeDomain", "TrainingRuntime") for d in _launch(plan))


@pytest.mark.parametrize("design", ["gb300-nvl72-4su", "gb200-k8s-older"])
def test_each_kubernetes_nvlink_domain_gets_an_imex_check_job_that_claims_its_channel(design):
    """Per NVLink domain Kubernetes runs: a ComputeDomain and an indexed Job of one pod per tray (required
    anti-affinity on the host), pinned to the domain by nodes.yaml's label, each pod claiming the domain's channel;
    the Jobs pass Kubernetes 1.37's strict schema, the ComputeDomains the DRA driver's CRD."""
    plan = _planned(design)
    servers = list(scheduler_split(plan).kubernetes)
    labels = topology_labels(plan, servers)
    documents = list(yaml.safe_load_all(nccl_files(plan)["launch/imex-check.yaml"]))
    domains = {d["metadata"]["name"]: d for d in documents if d["kind"] == "ComputeDomain"}
    jobs = [d for d in documents if d["kind"] == "Job"]
    key = accelerator_label(plan)  # topograph 1.0's, or 0.5's on the older generation
    trays_by_domain: dict[str, list[str]] = defaultdict(list)
    for name in servers:
        trays_by_domain[labels[name][key]].append(name)
    assert len(jobs) == len(domains) == len(trays_by_domain) > 0
    for job in jobs:
        kubernetes_validate.validate(job, "1.37", strict=True)
        pod = job["spec"]["template"]["spec"]
        [(selector, value)] = pod["nodeSelector"].items()
        assert (selector, job["spec"]["completions"]) == (key, 18) and len(trays_by_domain[value]) == 18
        [claim] = pod["resourceClaims"]
        domain = domains[job["metadata"]["name"]]
        assert claim["resourceClaimTemplateName"] == domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
        assert pod["containers"][0]["resources"]["claims"] == [{"name": claim["name"]}]
        [term] = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term["topologyKey"] == "kubernetes.io/hostname"
        assert term["labelSelector"]["matchLabels"] == {"batch.kubernetes.io/job-name": job["metadata"]["name"]}
    for domain in domains.values():
        checked = check_custom_resource(domain)
        assert checked.schema_errors == [] and checked.cel.failures == []


def _images(document: object) -> list[str]:
    if isinstance(document, dict):
        return [v for k, v in document.items() if k == "image" and isinstance(v, str)] + [
            i for v in document.values() for i in _images(v)
        ]
    if isinstance(document, list):
        return [i for v in document for i in _images(v)]
    return []


def test_gb300_launch_templates_run_an_ngc_pytorch_release_that_supports_blackwell_ultra():
    """Issue 31: pytorch:25.01 carried NCCL 2.25.1, below GB300's 2.27.5 (DGX GB300 release notes) and GB200
    multi-node NVLink's 2.25.2; every GB300 launch container runs the 25.12 release (CUDA 13.1.0)."""
    files = nccl_files(_planned("gb300-nvl72-4su"))
    images = [
        image
        for name in ("launch/trainjob.yaml", "launch/imex-check.yaml")
        for document in yaml.safe_load_all(files[name])
        for image in _images(document)
    ]
    assert images
    assert set(images) == {"nvcr.io/nvidia/pytorch:25.12-py3"}
