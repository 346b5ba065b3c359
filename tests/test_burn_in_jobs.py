"""Burn-in on Kubernetes: a Kubernetes-only cluster's burn-in is Jobs (batch/v1) that pass Kubernetes' strict schema,
one per stage and group, each pod asking for its server whole as the GPU and Network Operators expose it and placed
by rack or SU; no Slurm script or partition. A cluster with both schedulers gets each side's tests its own way."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from conftest import DESIGNS, planned, write_design
from k8s_upstream import check_custom_resource

from gpucluster import load_design, plan_design, write_artifacts
from gpucluster.analyse.burn_in import present_stages
from gpucluster.analyse.scheduling import scheduler_split
from gpucluster.artifacts.burn_in_jobs import NAMESPACE, RACK_LABEL, STAGE_LABEL, SU_LABEL
from gpucluster.artifacts.kubernetes import GPU_RESOURCE, rail_interfaces, rdma_resources, topology_labels
from gpucluster.catalog.schema import GpuServer

K8S_VERSION = "1.37"  # resourceClaims in the IMEX checks' pods are GA from 1.34
KUBERNETES_ONLY = "b200-roce-2su"


def _burn_in(name: str, tmp_path: Path) -> Path:
    loaded, plan = planned(name)
    return write_artifacts(plan, loaded, tmp_path, only=["burn-in"]) / "burn-in"


def _documents(folder: Path) -> dict[str, list[dict]]:
    return {
        path.name: list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        for path in sorted((folder / "kubernetes").glob("*.yaml"))
    }


def _jobs(folder: Path) -> list[dict]:
    return [d for docs in _documents(folder).values() for d in docs if d["kind"] == "Job"]


def _nodes(job: dict) -> list[str]:
    [term] = job["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    [expression] = term["matchExpressions"]
    assert (expression["key"], expression["operator"]) == ("kubernetes.io/hostname", "In")
    return list(expression["values"])


@pytest.fixture(scope="module")
def kubernetes_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _burn_in(KUBERNETES_ONLY, tmp_path_factory.mktemp("out"))


def test_a_kubernetes_only_cluster_gets_burn_in_jobs_and_no_slurm_script_or_partition(kubernetes_only: Path) -> None:
    written = {p.relative_to(kubernetes_only).as_posix() for p in kubernetes_only.rglob("*") if p.is_file()}
    assert not any(name.endswith(".sbatch") for name in written) and "run-burn-in.sh" not in written
    assert "check-results.sh" in written and "kubernetes/00-namespace.yaml" in written
    for name in written:
        text = (kubernetes_only / name).read_text(encoding="utf-8")
        assert "burnin" not in text and "--partition" not in text and "srun" not in text, name
    assert json.loads((kubernetes_only / "expected-results.json").read_text())["partition"] is None
    readme = (kubernetes_only / "README.md").read_text(encoding="utf-8")
    assert "kubectl apply -f kubernetes/stage-1-dcgm-diag.yaml" in readme and "./run-burn-in.sh" not in readme


def test_every_burn_in_document_passes_kubernetes_strict_schema(kubernetes_only: Path) -> None:
    documents = [d for docs in _documents(kubernetes_only).values() for d in docs]
    assert {d["kind"] for d in documents} == {"Namespace", "ConfigMap", "Job"}
    [namespace] = [d for d in documents if d["kind"] == "Namespace"]
    assert namespace["metadata"]["labels"] == {"pod-security.kubernetes.io/enforce": "privileged"}
    for document in documents:
        kubernetes_validate.validate(document, K8S_VERSION, strict=True)
        assert document["metadata"].get("namespace", NAMESPACE) == NAMESPACE


def test_each_stage_file_holds_the_jobs_of_that_stage_numbered_as_the_expected_results(kubernetes_only: Path) -> None:
    _loaded, plan = planned(KUBERNETES_ONLY)
    stages = {name: number for number, name, _scope, _text in present_stages(plan.burn_in)}
    for file, documents in _documents(kubernetes_only).items():
        if file.startswith("stage-"):
            number, name = int(file.split("-")[1]), file.split("-", 2)[2].removesuffix(".yaml")
            assert stages[name] == number
            for job in documents:
                assert job["metadata"]["labels"][STAGE_LABEL] == str(number)
                assert job["spec"]["template"]["metadata"]["labels"][STAGE_LABEL] == str(number)


def test_every_test_of_the_plan_but_the_cabling_check_has_its_servers_in_a_job(kubernetes_only: Path) -> None:
    _loaded, plan = planned(KUBERNETES_ONLY)
    jobs = _jobs(kubernetes_only)
    by_test: dict[str, list[list[str]]] = {}
    for job in jobs:
        nodes = _nodes(job)
        assert job["spec"]["completions"] == job["spec"]["parallelism"] == len(nodes) == len(set(nodes))
        by_test.setdefault(job["metadata"]["labels"]["gpucluster.io/burn-in-test"], []).append(sorted(nodes))
    for t in plan.burn_in:
        if t.test == "cabling":
            continue
        groups = by_test[t.test]
        if t.scope == "server":
            assert any(t.nodes[0] in group for group in groups), t.id
        else:
            assert sorted(t.nodes) in groups, t.id


def test_jobs_are_placed_by_rack_or_su_as_nodes_yaml_labels_the_servers(kubernetes_only: Path) -> None:
    _loaded, plan = planned(KUBERNETES_ONLY)
    labels = topology_labels(plan, list(scheduler_split(plan).kubernetes))
    placed = 0
    for job in _jobs(kubernetes_only):
        pod = job["spec"]["template"]["spec"]
        for key, value in pod.get("nodeSelector", {}).items():
            assert key in (RACK_LABEL, SU_LABEL)
            assert all(labels[node][key] == value for node in _nodes(job)), job["metadata"]["name"]
            placed += 1
        spread = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert spread[0]["labelSelector"]["matchLabels"] == {"batch.kubernetes.io/job-name": job["metadata"]["name"]}
    assert placed > 0


def test_each_pod_asks_for_its_server_whole_as_the_operators_expose_it(kubernetes_only: Path) -> None:
    _loaded, plan = planned(KUBERNETES_ONLY)
    server = plan.part_as(plan.gpu_nodes()[0].name, GpuServer)
    rdma = rdma_resources(server, plan.design.scheduler.kubernetes.rdma, rail_interfaces(plan, server))
    assert rdma
    for job in _jobs(kubernetes_only):
        pod = job["spec"]["template"]["spec"]
        [container] = pod["containers"]
        limits = container["resources"]["limits"]
        assert limits == {GPU_RESOURCE: str(server.gpu.count), **dict.fromkeys(rdma, "1")}
        assert {t["key"] for t in pod["tolerations"]} == {"nvidia.com/gpu", "gpucluster.io/hot-spare"}


def test_a_cluster_with_both_schedulers_gives_each_side_its_own_burn_in(tmp_path: Path) -> None:
    loaded, plan = planned("lab-4-servers")
    folder = write_artifacts(plan, loaded, tmp_path, only=["burn-in"]) / "burn-in"
    split = scheduler_split(plan)
    assert split.slurm and split.kubernetes
    script = (folder / "run-burn-in.sh").read_text(encoding="utf-8")
    for name in split.kubernetes:
        assert name not in script
    for name in split.slurm:
        assert name in script
    jobs = _jobs(folder)
    assert jobs and all(set(_nodes(job)) <= set(split.kubernetes) for job in jobs)


def test_a_kubernetes_only_rack_scale_cluster_checks_each_nvlink_domains_imex_as_a_job(tmp_path: Path) -> None:
    text = (DESIGNS / "gb300-nvl72-4su.yaml").read_text(encoding="utf-8")
    text = text.replace(
        '  kind: both\n  kubernetes_servers: 72\n  slurm:\n    version: "25.05"\n', "  kind: kubernetes\n"
    )
    loaded = load_design(write_design(tmp_path, text, "gb300-k8s.yaml"))
    plan = plan_design(loaded)
    folder = write_artifacts(plan, loaded, tmp_path / "out", only=["burn-in"]) / "burn-in"
    documents = _documents(folder)
    imex = next(docs for name, docs in documents.items() if name.endswith("-imex.yaml"))
    domains = [d for d in imex if d["kind"] == "ComputeDomain"]
    assert domains and len(domains) == sum(d["kind"] == "Job" for d in imex)
    for domain in domains:
        checked = check_custom_resource(domain)
        assert checked.schema_errors == [] and checked.cel.failures == []
    for job in (d for docs in documents.values() for d in docs if d["kind"] == "Job"):
        kubernetes_validate.validate(job, K8S_VERSION, strict=True)


@pytest.mark.external
@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
def test_the_scripts_the_pods_run_pass_shellcheck_and_compile(kubernetes_only: Path, tmp_path: Path) -> None:
    [namespace, config_map] = _documents(kubernetes_only)["00-namespace.yaml"]
    assert namespace["kind"] == "Namespace" and config_map["kind"] == "ConfigMap"
    for name, text in config_map["data"].items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        if name.endswith((".sh", ".sbatch")):
            result = subprocess.run(["shellcheck", "-s", "bash", str(path)], capture_output=True, text=True)
            assert result.returncode == 0, result.stdout
        elif name.endswith(".py"):
            compile(text, name, "exec")


def test_with_both_schedulers_no_burn_in_test_spans_the_split_and_each_side_tests_its_rails() -> None:
    _loaded, plan = planned("lab-4-servers")
    split = scheduler_split(plan)
    sides = (set(split.slurm), set(split.kubernetes))
    tests = [t for t in plan.burn_in if t.nodes]
    assert all(any(set(t.nodes) <= side for side in sides) for t in tests)
    for label, side in zip(("slurm", "kubernetes"), sides, strict=True):
        rails = [t for t in tests if t.test == "nccl-rail" and set(t.nodes) == side]
        assert rails and all(t.subject.startswith(f"{label}-rail") for t in rails)
    assert len({t.id for t in tests}) == len(tests)
