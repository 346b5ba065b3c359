"""Burn-in as Kubernetes Jobs for the servers Kubernetes runs: the Slurm batch scripts' tests, thresholds and result
lines (artifacts/burn_in.py), one Job per stage and group (a rack, a pair, a rail, an SU, an NVLink domain, the
fabric), in burn-in/kubernetes/stage-N-<test>.yaml.

Each pod asks for its server whole (every GPU and the compute HCAs' RDMA resources, as kubernetes.py names them), one
pod to a server on the test's own servers, tolerating the GPU and hot-spare taints. The host tools (dcgmi, gpu_burn,
all_reduce_perf, ib_write_bw) run in the host's namespaces through nsenter from a privileged pod; NCCL tests across
servers run torchrun in the launch templates' PyTorch image on the host network.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from gpucluster.analyse.burn_in import BurnInTest, RailPort, present_stages
from gpucluster.artifacts.kubernetes import (
    GPU_RESOURCE,
    GPU_TAINT,
    HOSTNAME_LABEL,
    OWN_PREFIX,
    SPARE_TAINT,
    accelerator_label,
    rail_interfaces,
    rdma_resources,
    topology_labels,
)
from gpucluster.artifacts.nccl import IMEX_CLAIM, PYTORCH_IMAGE, RENDEZVOUS_PORT, imex_check_jobs, nccl_env
from gpucluster.catalog.schema import GpuServer
from gpucluster.formats.templating import render
from gpucluster.plan.model import Plan

NAMESPACE = "burn-in"
SCRIPTS = "burn-in-scripts"  # the ConfigMap of the pods' scripts, mounted at SCRIPTS_PATH
SCRIPTS_PATH = "/burn-in"
STAGE_LABEL = f"{OWN_PREFIX}/burn-in-stage"
TEST_LABEL = f"{OWN_PREFIX}/burn-in-test"
RACK_LABEL = f"{OWN_PREFIX}/rack"
SU_LABEL = f"{OWN_PREFIX}/su"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"  # Kubernetes labels a Job's pods with its name (1.27 and later)
# Scripts the pods run from the ConfigMap: the Slurm scripts that run on one server unchanged, and the pair and
# multi-server ones written for pods.
HOST_SCRIPTS = ("dcgm-diag.sbatch", "gpu-burn.sbatch", "nccl-all-reduce.sbatch")
POD_SCRIPTS = ("ib-write-bw-pair.sh", "nccl-all-reduce.py")
# all_reduce_perf's message in NCCL_ARGS ("-b 16G"): nccl-tests reads G as 1024^3 bytes (src/common.cu parsesize)
MESSAGE_BYTES = 16 * 1024**3
NSENTER = "nsenter --target 1 --mount --uts --ipc --net --pid --"
# The pods are privileged with the host's network and PID namespace: the namespace admits them under Pod Security
# Admission's "privileged" level (kubernetes.io/docs/concepts/security/pod-security-admission: the
# pod-security.kubernetes.io/enforce label), whatever the cluster's default level.
POD_SECURITY = {"pod-security.kubernetes.io/enforce": "privileged"}
SERVER_TESTS = ("dcgm-diag", "gpu-burn", "nccl-in-server")
NCCL_GROUP_TESTS = ("nccl-nvlink-domain", "nccl-rail", "nccl-su", "nccl-fabric")
RAIL_HCAS = "RAIL_HCAS"  # the ConfigMap key (and pod variable) naming each rail's RDMA device (if not in the catalog)
NCCL_ENV = "nccl.env"  # the host's NCCL environment (nccl/nccl.env), in the scripts' ConfigMap
NODES_LISTED = 8  # an NCCL test's result line names its servers up to this many, else counts them
JOB_NAME_MAX = 63  # a Job's name is a pod label value (job-name): at most 63 characters


def job_files(
    plan: Plan,
    tests: list[BurnInTest],
    servers: tuple[str, ...],
    ports: dict[str, dict[int, RailPort]],
    context: dict[str, Any],
) -> dict[str, list[dict[str, Any]]]:
    """File name (under burn-in/) -> its documents: the namespace and scripts, then a file of Jobs per stage, for
    the tests whose servers are all among `servers`."""
    ours = set(servers)
    kept = [t for t in tests if t.nodes and set(t.nodes) <= ours]
    server = plan.part_as(servers[0], GpuServer)
    files: dict[str, list[dict[str, Any]]] = {"kubernetes/00-namespace.yaml": _namespace(plan, server, context)}
    for number, name, _scope, _text in present_stages(tests):
        stage_tests = [t for t in kept if t.test == name]
        if not stage_tests:
            continue
        if name == "imex":
            checks = imex_check_jobs(plan, server, servers, NAMESPACE)
            jobs = [_labelled(d, number, name) if d["kind"] == "Job" else d for d in checks]
        else:
            jobs = list(_stage_jobs(plan, server, number, name, stage_tests, ports, context))
        files[f"kubernetes/stage-{number}-{name}.yaml"] = jobs
    return files


def _namespace(plan: Plan, server: GpuServer, context: dict[str, Any]) -> list[dict[str, Any]]:
    """The burn-in namespace and the ConfigMap of the scripts its pods run."""
    scripts = {  # the one-server Slurm scripts as the pods run them (no #SBATCH lines, no srun), named .sh
        _pod_script(name): render(f"burn_in/{name}.j2", **context, pod=True) for name in HOST_SCRIPTS
    }
    scripts |= {name: render(f"burn_in/{name}.j2", **context, message_bytes=MESSAGE_BYTES) for name in POD_SCRIPTS}
    scripts[NCCL_ENV] = nccl_env(plan, server, pod=False)
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": POD_SECURITY}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": SCRIPTS, "namespace": NAMESPACE},
            "data": scripts,
        },
    ]


def _stage_jobs(
    plan: Plan,
    server: GpuServer,
    number: int,
    name: str,
    tests: list[BurnInTest],
    ports: dict[str, dict[int, RailPort]],
    context: dict[str, Any],
) -> Iterable[dict[str, Any]]:
    """The Jobs of one stage: per rack for the per-server tests, per pair for ib_write_bw, per test for NCCL
    across servers."""
    gpus = server.gpu.count
    if name in SERVER_TESTS:
        by_rack: dict[str, list[str]] = {}
        for t in tests:
            by_rack.setdefault(t.racks[0], []).append(t.nodes[0])
        args = {
            "dcgm-diag": [str(context["dcgm_diag_level"])],
            "gpu-burn": [str(context["gpu_burn_seconds"]), str(gpus)],
            "nccl-in-server": [str(tests[0].threshold), str(gpus)],
        }[name]
        script = _pod_script(f"{name}.sbatch" if name != "nccl-in-server" else "nccl-all-reduce.sbatch")
        for rack, nodes in sorted(by_rack.items()):
            command = f'{NSENTER} bash -s -- "{name}:$NODE_NAME" {" ".join(args)} <{SCRIPTS_PATH}/{script}'
            yield _job(plan, server, f"{name}-{rack}", number, name, nodes, command, {RACK_LABEL: rack})
    elif name == "ib-write-bw":
        pairs = dict.fromkeys(t.nodes for t in tests)
        for client, listener in pairs:
            rails = " ".join(f"{rail}:{port.hca or '-'}:{port.gpu}" for rail, port in sorted(ports[client].items()))
            command = (
                f"bash {SCRIPTS_PATH}/ib-write-bw-pair.sh {client} {listener} {tests[0].threshold} "
                f"{context['ib_gid_index']} {rails}"
            )
            yield _job(plan, server, f"ib-write-bw-{client}-{listener}", number, name, [client, listener], command)
    elif name in NCCL_GROUP_TESTS:
        for t in tests:
            yield _nccl_job(plan, server, number, t, ports)
    elif name == "cabling":
        return  # stage 0 runs from an admin host (the README): discovery and gpucluster verify
    else:
        raise ValueError(f"no Kubernetes Job for burn-in test {name!r}")


def _nccl_job(
    plan: Plan, server: GpuServer, number: int, test: BurnInTest, ports: dict[str, dict[int, RailPort]]
) -> dict[str, Any]:
    """torchrun on every server of an NCCL test across servers, with the host's NCCL environment (nccl/nccl.env: the
    pods are on the host network): all GPUs, or on a rail test one GPU and its HCA."""
    nodes = list(test.nodes)
    per_node = 1 if test.rail else server.gpu.count
    rail = ""
    if test.rail:
        port = ports[nodes[0]][test.rail]
        rail = f"export CUDA_VISIBLE_DEVICES={port.gpu}; " + (f"export NCCL_IB_HCA=={port.hca}; " if port.hca else "")
    listed = ",".join(nodes) if len(nodes) <= NODES_LISTED else f"{len(nodes)} servers"
    command = (
        f"set -a; . {SCRIPTS_PATH}/{NCCL_ENV}; set +a; {rail}export BURNIN_NODES='{listed}'; "
        f"exec torchrun --nnodes={len(nodes)} --nproc-per-node={per_node} --rdzv-backend=c10d "
        f"--rdzv-endpoint={nodes[0]}:{RENDEZVOUS_PORT} --rdzv-id={_name(test.id)} "
        f"{SCRIPTS_PATH}/nccl-all-reduce.py {test.id} {test.threshold}"
    )
    su = plan.devices[nodes[0]].su
    selector = {SU_LABEL: f"su{su:02d}"} if test.scope == "su" and su is not None else {}
    job = _job(plan, server, test.id, number, test.test, nodes, command, selector, in_host=False)
    if test.test == "nccl-nvlink-domain":  # multi-node NVLink: each pod claims the domain's IMEX channel
        domain = topology_labels(plan, nodes)[nodes[0]][accelerator_label(plan)]
        pod = job["spec"]["template"]["spec"]
        pod["containers"][0]["resources"]["claims"] = [{"name": IMEX_CLAIM}]
        pod["resourceClaims"] = [{"name": IMEX_CLAIM, "resourceClaimTemplateName": f"imex-check-{domain}-channel"}]
    return job


def _job(
    plan: Plan,
    server: GpuServer,
    name: str,
    stage: int,
    test: str,
    nodes: list[str],
    command: str,
    selector: dict[str, str] | None = None,
    in_host: bool = True,
) -> dict[str, Any]:
    """An indexed Job of one pod on each of `nodes`: the whole server requested, on the host network, privileged
    (the host's devices and, with `in_host`, its PID namespace for nsenter)."""
    job_name = _name(name)
    limits = {GPU_RESOURCE: str(server.gpu.count)}
    for resource in rdma_resources(server, plan.design.scheduler.kubernetes.rdma, rail_interfaces(plan, server)):
        limits[resource] = "1"
    spread = {"labelSelector": {"matchLabels": {JOB_NAME_LABEL: job_name}}, "topologyKey": HOSTNAME_LABEL}
    on_nodes = {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": sorted(nodes)}]}
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        **({"hostPID": True} if in_host else {}),
        **({"nodeSelector": selector} if selector else {}),
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [on_nodes]}},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [spread]},
        },
        "tolerations": [
            {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]} for taint in (GPU_TAINT, SPARE_TAINT)
        ],
        "containers": [
            {
                "name": "burn-in",
                "image": PYTORCH_IMAGE,
                "command": ["bash", "-c", command],
                "env": [
                    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    {
                        "name": RAIL_HCAS,
                        "valueFrom": {"configMapKeyRef": {"name": SCRIPTS, "key": RAIL_HCAS, "optional": True}},
                    },
                ],
                "resources": {"limits": limits},
                "securityContext": {"privileged": True},
                "volumeMounts": [{"name": "scripts", "mountPath": SCRIPTS_PATH, "readOnly": True}],
            }
        ],
        "volumes": [{"name": "scripts", "configMap": {"name": SCRIPTS}}],
    }
    return _labelled(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": job_name, "namespace": NAMESPACE},
            "spec": {
                "completionMode": "Indexed",
                "completions": len(nodes),
                "parallelism": len(nodes),
                "backoffLimit": 0,
                "template": {"spec": pod},
            },
        },
        stage,
        test,
    )


def _pod_script(name: str) -> str:
    """The ConfigMap key of a one-server Slurm script as the pods run it."""
    return name.removesuffix(".sbatch") + ".sh"


def _labelled(job: dict[str, Any], stage: int, test: str) -> dict[str, Any]:
    """A Job and its pods labelled with the burn-in stage and test (kubectl wait and logs select them so)."""
    labels = {STAGE_LABEL: str(stage), TEST_LABEL: test}
    job["metadata"]["namespace"] = NAMESPACE
    job["metadata"].setdefault("labels", {}).update(labels)
    template = job["spec"]["template"]
    template.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    return job


def _name(text: str) -> str:
    """A Job name from a test's name or id: lower-case letters, digits and '-' (RFC 1123), at most JOB_NAME_MAX."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return name[:JOB_NAME_MAX].rstrip("-")
