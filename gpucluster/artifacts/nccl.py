"""NCCL settings (``nccl/nccl.env``) and training launch templates from the plan: ``launch/train.sbatch`` for
Slurm, and for Kubernetes a Kubeflow Trainer v2 TrainJob (or a Training Operator v1 PyTorchJob) queued by Kueue,
with the ComputeDomain whose IMEX channel multi-node NVLink jobs claim."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpucluster.analyse.scheduling import domain_servers, fabric_tree, nvlink_domains, scheduler_split, slurm_segment
from gpucluster.artifacts.kubernetes import (
    CLIQUE_LABEL,
    GPU_RESOURCE,
    GPU_TAINT,
    SPARE_TAINT,
    accelerator_label,
    compute_device_id,
    dump_yaml,
    is_mnnvl,
    job_topology_level,
    kubernetes_teams,
    nvlink_topology_level,
    rail_interfaces,
    rail_network_names,
    rdma_resources,
    topology_labels,
)
from gpucluster.catalog.ports import port_details
from gpucluster.catalog.schema import GpuServer
from gpucluster.design.load import LoadedDesign
from gpucluster.formats.templating import render
from gpucluster.plan.model import PhysicalPlan, Plan
from gpucluster.plan.roce import ROCE_QOS

# The NGC PyTorch container (monthly YY.MM-py3 releases on nvcr.io) with NCCL and torchrun; replace with yours.
# 25.12 (CUDA 13.1.0, PyTorch 2.10.0a0; docs.nvidia.com/deeplearning/frameworks/pytorch-release-notes/rel-25-12.html)
# serves every system in the catalog: the DGX GB300 release notes ask for the latest NGC PyTorch tag and NCCL 2.27.5
# or later for GB300 (docs.nvidia.com/dgx/dgxgb300nvl72-release-notes/system-libraries-tools-drivers.html), above
# the 2.25.2 GB200 multi-node NVLink needs; 25.01 carried NCCL 2.25.1, below both (docs/sources/rack-scale.md).
PYTORCH_IMAGE = "nvcr.io/nvidia/pytorch:25.12-py3"
RENDEZVOUS_PORT = 29500  # torchrun's default c10d rendezvous port
# Kubeflow Trainer v2's PyTorch runtime: the ClusterTrainingRuntime it installs (kubeflow/trainer v2.3.0
# manifests/base/runtimes/torch_distributed.yaml), whose one replicated job and its training container are "node".
TRAINER_RUNTIME = "torch-distributed"
TRAINER_NODE = "node"
PATCH_MANAGER = "gpucluster.io/launch-template"  # who owns the TrainJob's runtime patch (any name; ours)
KUEUE_PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
KUEUE_PODSET_GROUP = "kueue.x-k8s.io/podset-group-name"  # PodSets of one group land in one topology domain
# Kueue's PodSet slices (kueue v0.19.2 apis/kueue/v1beta2/topology_types.go): the PodSet is cut into slices of
# podset-slice-size pods, each placed inside one domain of the named level; the Kubernetes form of Slurm's --segment.
# Kueue's webhook allows them without a podset-group-name only (pkg/controller/jobframework/tas_validation.go).
KUEUE_SLICE_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
KUEUE_SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
# Pod labels naming the job a pod belongs to: JobSet's (Trainer v2 runs a TrainJob as a JobSet of its name; kubeflow/
# trainer v2.3.0 docs/user-guides/megatron.md) and the Training Operator's (v1.9.4 pkg/apis/kubeflow.org/v1
# common_types.go JobNameLabel).
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
PYTORCHJOB_NAME_LABEL = "training.kubeflow.org/job-name"
# Trainer v2 runtime for multi-node NVLink jobs, in the team's namespace: the pod template claims the IMEX channel.
# A TrainJob cannot: its runtimePatches' pod spec has no resourceClaims (trainer v2.3.0 TrainJob CRD), and the
# trainer rebuilds the node container's resources from resourcesPerNode keeping limits and requests only
# (pkg/runtime/core/trainingruntime.go), so a claim there never reaches the container.
MNNVL_RUNTIME = "torch-distributed-mnnvl"
TRAINER_ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"  # marks the replicated job numNodes sizes


def write(plan: PhysicalPlan, loaded: LoadedDesign, folder: Path) -> None:
    files = nccl_files(plan)
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if name.endswith(".sbatch"):
            path.chmod(0o755)


def nccl_files(plan: Plan) -> dict[str, str]:
    split = scheduler_split(plan)
    server = plan.part_as(plan.gpu_nodes()[0].name, GpuServer)
    files = {"nccl/nccl.env": nccl_env(plan, server, pod=False)}
    if split.slurm:
        domain = domain_servers(server)
        segment = slurm_segment(domain)
        nodes = _job_servers(plan, split.slurm)
        if segment:
            nodes = max(segment, nodes // segment * segment)  # a whole number of segments
        files["launch/train.sbatch"] = render(
            "launch/train.sbatch.j2",
            design=plan.name,
            nodes=nodes,
            gpus=server.gpu.count,
            segment=segment,
            domain_servers=domain,
            rendezvous_port=RENDEZVOUS_PORT,
        )
    if split.kubernetes:
        files.update(training_job_files(plan, server, split.kubernetes))
        if is_mnnvl(server):
            namespace, _nodes = _job_team(plan, split.kubernetes, server)
            files["launch/compute-domain.yaml"] = COMPUTE_DOMAIN_HEADER + dump_yaml([compute_domain(namespace)])
            checks = imex_check_jobs(plan, server, split.kubernetes, namespace)
            if checks:
                files["launch/imex-check.yaml"] = IMEX_CHECK_HEADER + dump_yaml(checks)
    return files


IMEX_CHECK_HEADER = """\
# IMEX check of each NVLink domain Kubernetes runs, before training on it: per domain a ComputeDomain and a Job
# with one pod on every tray of the domain (spares too), each claiming the domain's IMEX channel. The DRA driver
# starts the domain's IMEX daemons and injects the channel; a pod passes when its channel device is there (the DRA
# driver's own check, docs/install.md). Apply after the DRA driver, then
#   kubectl wait --all-namespaces --for=condition=Complete --timeout=15m job -l gpucluster.io/check=imex
# The Jobs run outside Kueue (no queue name): the domains are not yet handed over to the teams.
"""
IMEX_CHECK_LABEL = {"gpucluster.io/check": "imex"}
IMEX_CHANNEL_CHECK = "ls -la /dev/nvidia-caps-imex-channels && test -c /dev/nvidia-caps-imex-channels/channel0"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"  # Kubernetes labels a Job's pods with its name (1.27 and later)


def imex_check_jobs(plan: Plan, server: GpuServer, servers: tuple[str, ...], namespace: str) -> list[dict[str, Any]]:
    """Per NVLink domain: a ComputeDomain and an indexed Job of one pod per tray (spares too), each claiming the
    channel and every GPU of its tray."""
    key = accelerator_label(plan)
    labels = topology_labels(plan, servers)
    documents: list[dict[str, Any]] = []
    for members in nvlink_domains(plan, servers):
        domain = labels[members[0]][key]
        name = f"imex-check-{domain}"
        template = f"{name}-channel"
        documents.append(compute_domain(namespace, name, template))
        container = {
            "name": "imex-check",
            "image": PYTORCH_IMAGE,
            "command": ["bash", "-c", IMEX_CHANNEL_CHECK],
            "resources": {"limits": {GPU_RESOURCE: str(server.gpu.count)}, "claims": [{"name": IMEX_CLAIM}]},
        }
        spread = {"labelSelector": {"matchLabels": {JOB_NAME_LABEL: name}}, "topologyKey": "kubernetes.io/hostname"}
        pod_spec = {
            "restartPolicy": "Never",
            "nodeSelector": {key: domain},
            "tolerations": [
                {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}
                for taint in (GPU_TAINT, SPARE_TAINT)
            ],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [spread]}},
            "containers": [container],
            "resourceClaims": [{"name": IMEX_CLAIM, "resourceClaimTemplateName": template}],
        }
        documents.append(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(IMEX_CHECK_LABEL)},
                "spec": {
                    "completionMode": "Indexed",
                    "completions": len(members),
                    "parallelism": len(members),
                    "backoffLimit": 0,
                    "template": {"spec": pod_spec},
                },
            }
        )
    return documents


# NVIDIA DRA driver for GPUs (k8s-dra-driver-gpu v25.12.0): ComputeDomain, resource.nvidia.com/v1beta1. The driver
# runs the IMEX daemons of the nodes a job lands on and injects an IMEX channel into each pod that claims it.
COMPUTE_DOMAIN_API = "resource.nvidia.com/v1beta1"
COMPUTE_DOMAIN = "train-imex"
IMEX_CLAIM = "imex-channel"
IMEX_CLAIM_TEMPLATE = f"{COMPUTE_DOMAIN}-channel"
COMPUTE_DOMAIN_HEADER = f"""\
# Multi-node NVLink for the training job: apply before the job. The NVIDIA DRA driver (k8s-dra-driver-gpu) starts
# the IMEX daemons of the nodes the job's pods land on and creates the ResourceClaimTemplate {IMEX_CLAIM_TEMPLATE};
# each pod of the job claims its IMEX channel from it (NCCL MNNVL needs the channel), as the launch template's pods
# do: resourceClaims: [{{name: {IMEX_CLAIM}, resourceClaimTemplateName: {IMEX_CLAIM_TEMPLATE}}}] in the pod spec and
# resources.claims: [{{name: {IMEX_CLAIM}}}] in the training container.
"""


def compute_domain(namespace: str, name: str = COMPUTE_DOMAIN, template: str = IMEX_CLAIM_TEMPLATE) -> dict[str, Any]:
    """numNodes 0, as the driver recommends with IMEX daemons on DNS names (its default)."""
    return {
        "apiVersion": COMPUTE_DOMAIN_API,
        "kind": "ComputeDomain",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": template}}},
    }


def imex_claims() -> list[dict[str, str]]:
    """The pod's claim on the channel template, as the DRA driver's docs/install.md and demo/specs/imex/ write it."""
    return [{"name": IMEX_CLAIM, "resourceClaimTemplateName": IMEX_CLAIM_TEMPLATE}]


def clique_node_affinity() -> dict[str, Any]:
    """Only nodes GFD labelled with an NVLink clique, as the pod of the DRA driver's install guide (docs/install.md)."""
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": CLIQUE_LABEL, "operator": "Exists"}]}]
        }
    }


def clique_pod_affinity(job_label: str, job_name: str) -> dict[str, Any]:
    """By preference, the clique the job's other pods run in (CoreWeave's IMEX guide: the clique label as the pod
    affinity's topologyKey); Kueue's slices make it a requirement where Kueue places the job."""
    return {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 100,
                "podAffinityTerm": {
                    "labelSelector": {"matchExpressions": [{"key": job_label, "operator": "In", "values": [job_name]}]},
                    "topologyKey": CLIQUE_LABEL,
                },
            }
        ]
    }


def nvlink_slices(plan: Plan, servers: tuple[str, ...], server: GpuServer, nodes: int) -> dict[str, str]:
    """Kueue annotations keeping a multi-node NVLink job in cliques: slices of the Slurm segment (or the whole job
    when smaller); empty without an NVLink-domain level."""
    level = nvlink_topology_level(plan, servers)
    segment = slurm_segment(domain_servers(server))
    if level is None or segment is None:
        return {}
    return {KUEUE_SLICE_TOPOLOGY: level, KUEUE_SLICE_SIZE: str(min(segment, nodes))}


def nccl_env(plan: Plan, server: GpuServer, pod: bool) -> str:
    """The NCCL environment; in a pod, bootstrap goes over the pod's eth0."""
    compute = port_details(server, "compute")
    devices = [d.os_device for d in compute]
    inband = port_details(server, "inband")
    if pod:
        socket, note = "=eth0", " (in a pod: the pod network's eth0)"
    elif len(inband) > 1:
        # The in-band ports are bonded (one to each of a pair of leaves): DGX BasePOD deployment guide, "bonded
        # interface that consists of two physical interfaces"; bond0 is Base Command Manager's name for it.
        socket, note = "=bond0", f" (bond0 of {', '.join(d.netdev or d.name for d in inband)})"
    elif inband and inband[0].netdev:
        socket, note = f"={inband[0].netdev}", ""
    else:
        socket, note = "^lo,docker", " (any interface but loopback and docker: the catalog names none)"
    roce = plan.settings.compute_fabric == "roce"
    device_id = compute_device_id(server)
    by_rate = compute_device_and_rate(server) if not device_id else None
    discover = ""
    if not all(devices) and (device_id or by_rate) and not pod:
        # No names in the catalog: list, when the file is sourced, the RDMA devices (sysfs) that carry the compute
        # adapters' own PCI device ID, or where other port groups share that ID, the ID and the compute ports' rate.
        test = f'[ "$(cat "$d/device/device")" = 0x{device_id or (by_rate or ("", ""))[0]} ]'
        if by_rate:
            # The port's rate as the kernel gives it, "<Gb/s> Gb/sec (<width> <speed>)" (Linux
            # Documentation/ABI/stable/sysfs-class-infiniband, ports/<port>/rate)
            test += f' && [ "$(cut -d" " -f1 "$d/ports/1/rate")" = {by_rate[1]} ]'
        listing = "printf '%s:1,' \"${d##*/}\"; done | sed 's/,$//'"
        discover = f'"=$(for d in /sys/class/infiniband/*; do {test} && {listing})"'
    domain = domain_servers(server)
    return render(
        "launch/nccl.env.j2",
        design=plan.name,
        server_model=server.model,
        fabric=str(plan.settings.compute_fabric),
        hca_list="=" + ",".join(f"{d}:1" for d in devices) if all(devices) else "",
        discover=discover,
        device_id=device_id or (by_rate[0] if by_rate else ""),
        rate_gbps=by_rate[1] if by_rate else "",
        pod=pod,
        compute_ports=", ".join(d.name for d in compute),
        socket_ifname=socket,
        socket_note=note,
        roce=roce,
        dscp=ROCE_QOS.dscp,
        priority=ROCE_QOS.priority,
        traffic_class=ROCE_QOS.traffic_class,
        mnnvl=domain > 1,
        domain_gpus=server.gpu.nvlink_domain_gpus,
        domain_servers=domain,
    )


def compute_device_and_rate(server: GpuServer) -> tuple[str, str] | None:
    """(PCI device ID, rate in Gb/s) picking exactly the compute HCAs where other port groups share their ID but
    not their speed (OEM HGX H100: ConnectX-7 everywhere, compute 400G); else None."""
    compute = server.port_groups("compute")
    ids = {g.pci_device_id for g in compute}
    speeds = {g.speed_gbps for g in compute}
    if len(ids) != 1 or len(speeds) != 1 or None in ids or compute_device_id(server):
        return None
    (device_id,) = ids
    (speed,) = speeds
    others = [g for g in server.ports if g.role != "compute" and g.pci_device_id == device_id]
    if any(g.speed_gbps == speed for g in others) or not float(speed).is_integer():
        return None
    return str(device_id), str(int(speed))


def _env_pairs(env: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in env.splitlines() if line and not line.startswith("#"))


def _job_servers(plan: Plan, servers: tuple[str, ...]) -> int:
    """The production servers under the first leaf group: a job one switch hop apart on every rail."""
    production = [n for n in servers if not plan.devices[n].spare]
    first = next(s for s in fabric_tree(plan, production).switches if s.tier == 1)
    return len(first.nodes)


def _job_team(plan: Plan, servers: tuple[str, ...], server: GpuServer) -> tuple[str, int]:
    """(team, servers) of the Kubernetes template: the largest quota's team, at most the first leaf group or what
    the quota admits (at least one: a smaller quota borrows), whole segments above one segment."""
    team = max(kubernetes_teams(plan, servers, server), key=lambda t: t.gpus)
    admitted = team.gpus // server.gpu.count
    nodes = max(1, min(_job_servers(plan, servers), admitted))
    segment = slurm_segment(domain_servers(server))
    if segment and nodes > segment:
        nodes = nodes // segment * segment
    return team.name, nodes


def training_job_files(plan: Plan, server: GpuServer, servers: tuple[str, ...]) -> dict[str, str]:
    """A TrainJob, or a PyTorchJob with its env ConfigMap."""
    namespace, nodes = _job_team(plan, servers, server)
    level = job_topology_level(plan, servers)
    kind = plan.design.scheduler.kubernetes.training_job
    env = _env_pairs(nccl_env(plan, server, pod=True))
    if kind == "trainjob":
        job = train_job(plan, server, servers, nodes, namespace, level, env)
        runtime = [training_runtime(plan, server, namespace)] if is_mnnvl(server) else []
        return {"launch/trainjob.yaml": dump_yaml([*runtime, job])}
    documents = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "nccl-env", "namespace": namespace},
            "data": env,
        },
        pytorch_job(plan, server, servers, nodes, namespace, level),
    ]
    return {"launch/pytorchjob.yaml": dump_yaml(documents)}


def _limits(plan: Plan, server: GpuServer) -> dict[str, str]:
    """A whole server per node (quantities as strings, as the API types them)."""
    limits = {GPU_RESOURCE: str(server.gpu.count)}
    mode = plan.design.scheduler.kubernetes.rdma
    for resource in rdma_resources(server, mode, rail_interfaces(plan, server)):
        limits[resource] = "1"
    return limits


def _rail_annotations(plan: Plan, server: GpuServer, namespace: str) -> dict[str, str]:
    """Multus's annotation attaching every rail's network (kubernetes/network-operator.yaml), if any."""
    names = rail_network_names(plan, server, namespace)
    return {"k8s.v1.cni.cncf.io/networks": ",".join(names)} if names else {}


def _pod_basics() -> tuple[dict[str, Any], dict[str, Any]]:
    """The container's IPC_LOCK (RDMA's pinned memory) and memory-backed /dev/shm (NCCL), and the pod's volume."""
    container = {
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    return container, {"volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]}


def training_runtime(plan: Plan, server: GpuServer, namespace: str) -> dict[str, Any]:
    """The team's TrainingRuntime for multi-node NVLink jobs: torch-distributed whose pod claims the IMEX channel
    and whole trays, only on nodes with a clique label."""
    container, volumes = _pod_basics()
    resources = {"limits": _limits(plan, server), "claims": [{"name": IMEX_CLAIM}]}
    pod_spec = {
        "affinity": {"nodeAffinity": clique_node_affinity()},
        "containers": [{"name": TRAINER_NODE, "image": PYTORCH_IMAGE, "resources": resources, **container}],
        "resourceClaims": imex_claims(),
        **volumes,
    }
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": MNNVL_RUNTIME, "namespace": namespace},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": TRAINER_NODE,
                            "template": {
                                "metadata": {"labels": {TRAINER_ANCESTOR_LABEL: "trainer"}},
                                "spec": {"template": {"spec": pod_spec}},
                            },
                        }
                    ]
                }
            },
        },
    }


def train_job(
    plan: Plan,
    server: GpuServer,
    servers: tuple[str, ...],
    nodes: int,
    namespace: str,
    level: str | None,
    env: dict[str, str],
) -> dict[str, Any]:
    """A TrainJob on whole servers in a team's LocalQueue: one PodSet Kueue keeps under one leaf group where it can
    (the runtime patch's annotation); a multi-node NVLink job runs the MNNVL runtime, in slices of one clique."""
    mnnvl = is_mnnvl(server)
    annotations = {
        **({KUEUE_PREFERRED_TOPOLOGY: level} if level else {}),
        **(nvlink_slices(plan, servers, server, nodes) if mnnvl else {}),
        **_rail_annotations(plan, server, namespace),
    }
    pod_metadata = {"annotations": annotations} if annotations else {}
    container, volumes = _pod_basics()
    if mnnvl:
        pod_spec: dict[str, object] = {"affinity": {"podAffinity": clique_pod_affinity(JOBSET_NAME_LABEL, "train")}}
    else:
        pod_spec = {"containers": [{"name": TRAINER_NODE, **container}], **volumes}
    pod = {**({"metadata": pod_metadata} if pod_metadata else {}), "spec": pod_spec}
    trainer: dict[str, object] = {
        "image": PYTORCH_IMAGE,
        "command": ["torchrun", "/workspace/train.py"],
        "numNodes": nodes,
        "numProcPerNode": server.gpu.count,
    }
    if not mnnvl:
        trainer["resourcesPerNode"] = {"limits": _limits(plan, server)}
    trainer["env"] = [{"name": key, "value": value} for key, value in env.items()]
    runtime_ref = {"name": MNNVL_RUNTIME, "kind": "TrainingRuntime"} if mnnvl else {"name": TRAINER_RUNTIME}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "train", "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": namespace}},
        "spec": {
            "runtimeRef": runtime_ref,
            "trainer": trainer,
            "runtimePatches": [
                {
                    "manager": PATCH_MANAGER,
                    "trainingRuntimeSpec": {
                        "template": {
                            "spec": {
                                "replicatedJobs": [
                                    {"name": TRAINER_NODE, "template": {"spec": {"template": pod}}},
                                ]
                            }
                        }
                    },
                }
            ],
        },
    }


def pytorch_job(
    plan: Plan, server: GpuServer, servers: tuple[str, ...], nodes: int, namespace: str, level: str | None
) -> dict[str, Any]:
    """A PyTorchJob on whole servers: master and workers one PodSet group Kueue places in one domain (one clique
    when a multi-node NVLink job fits: Kueue allows no slices in a group)."""
    mnnvl = is_mnnvl(server)
    annotations = {KUEUE_PODSET_GROUP: "train"}
    nvlink_level = nvlink_topology_level(plan, servers) if mnnvl else None
    if nvlink_level and nodes <= domain_servers(server):
        annotations[KUEUE_PREFERRED_TOPOLOGY] = nvlink_level
    elif level:
        annotations[KUEUE_PREFERRED_TOPOLOGY] = level
    annotations |= _rail_annotations(plan, server, namespace)
    resources: dict[str, object] = {"limits": _limits(plan, server)}
    if mnnvl:
        resources["claims"] = [{"name": IMEX_CLAIM}]
    container, volumes = _pod_basics()
    pod_spec: dict[str, object] = {
        "containers": [
            {
                "name": "pytorch",  # the Training Operator finds the training container by this name
                "image": PYTORCH_IMAGE,
                "command": ["torchrun", "/workspace/train.py"],
                "envFrom": [{"configMapRef": {"name": "nccl-env"}}],
                "resources": resources,
                **container,
            }
        ],
        **volumes,
    }
    if mnnvl:
        affinity = {
            "nodeAffinity": clique_node_affinity(),
            "podAffinity": clique_pod_affinity(PYTORCHJOB_NAME_LABEL, "train"),
        }
        pod_spec = {"affinity": affinity, **pod_spec, "resourceClaims": imex_claims()}
    pod = {"metadata": {"annotations": annotations}, "spec": pod_spec}
    replicas = {"Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": pod}}
    if nodes > 1:
        replicas["Worker"] = {"replicas": nodes - 1, "restartPolicy": "OnFailure", "template": pod}
    if nodes == 1 or KUEUE_PREFERRED_TOPOLOGY not in annotations:
        # a podset group takes exactly two PodSets, and a topology for them (Kueue's webhook refuses a group name
        # without a required or preferred topology: kueue v0.19.2 pkg/controller/jobframework/tas_validation.go)
        del annotations[KUEUE_PODSET_GROUP]
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "train", "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": namespace}},
        "spec": {
            "nprocPerNode": str(server.gpu.count),
            # Keep failed pods for their logs; restart a failed job (from its last checkpoint) a few times.
            "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 3},
            "pytorchReplicaSpecs": replicas,
        },
    }
