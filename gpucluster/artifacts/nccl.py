"""NCCL settings and training launch templates from the plan: ``nccl/nccl.env`` (compute HCAs in rail order,
the in-band interface for bootstrap, RoCE GID index and traffic class), ``launch/train.sbatch`` (torchrun across
servers under Slurm) and ``launch/pytorchjob.yaml`` (the same as a Kubeflow PyTorchJob queued by Kueue)."""

from __future__ import annotations

from pathlib import Path

from gpucluster.artifacts.kubernetes import GPU_RESOURCE, dump_yaml, rdma_resources
from gpucluster.catalog.ports import port_details
from gpucluster.catalog.schema import GpuServer
from gpucluster.design.load import LoadedDesign
from gpucluster.plan.model import Plan
from gpucluster.scheduling import fabric_tree, scheduler_split
from gpucluster.templating import render

# RoCE lossless class: Cumulus Linux's RoCE profile ("nv set qos roce") carries RoCE on switch priority 3 /
# traffic class 3 and CNPs on 6 (https://docs.nvidia.com/networking-ethernet-software/cumulus-linux-514/
# Layer-1-and-Switch-Ports/Quality-of-Service/RDMA-over-Converged-Ethernet-RoCE); its default DSCP-to-priority
# map sends DSCP 24-31 to priority 3 (the "Quality of Service" chapter of the same guide), so DSCP 26 (AF31)
# lands there. NCCL_IB_TC is the IP ToS byte: DSCP x 4, the low two bits being ECN (as e.g. HCCL_RDMA_TC
# documents: https://www.hiascend.com/document/detail/en/canncommercial/800/apiref/envvar/envref_07_0089.html).
ROCE_DSCP = 26
# An NGC PyTorch container (monthly YY.MM-py3 releases on nvcr.io) with NCCL and torchrun; replace with yours.
PYTORCH_IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"
RENDEZVOUS_PORT = 29500  # torchrun's default c10d rendezvous port


def write(plan: Plan, loaded: LoadedDesign, folder: Path) -> None:
    files = nccl_files(plan)
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if name.endswith(".sbatch"):
            path.chmod(0o755)


def nccl_files(plan: Plan) -> dict[str, str]:
    split = scheduler_split(plan)
    server: GpuServer = plan.part(plan.devices_with("gpu-server")[0].name)  # type: ignore[assignment]
    files = {"nccl/nccl.env": nccl_env(plan, server, pod=False)}
    if split.slurm:
        files["launch/train.sbatch"] = render(
            "launch/train.sbatch.j2", design=plan.name, nodes=_job_servers(plan, split.slurm), gpus=server.gpu.count
        )
    if split.kubernetes:
        documents = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "nccl-env", "namespace": _namespace(plan)},
                "data": _env_pairs(nccl_env(plan, server, pod=True)),
            },
            pytorch_job(plan, server, _job_servers(plan, split.kubernetes)),
        ]
        files["launch/pytorchjob.yaml"] = dump_yaml(documents)
    return files


def nccl_env(plan: Plan, server: GpuServer, pod: bool) -> str:
    """The NCCL environment; in a pod, bootstrap traffic goes over the pod's own interface (eth0)."""
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
    roce = plan.settings.get("compute_fabric") == "roce"
    return render(
        "launch/nccl.env.j2",
        design=plan.name,
        server_model=server.model,
        fabric=str(plan.settings.get("compute_fabric")),
        hca_list="=" + ",".join(f"{d}:1" for d in devices) if all(devices) else "",
        compute_ports=", ".join(d.name for d in compute),
        socket_ifname=socket,
        socket_note=note,
        roce=roce,
        dscp=ROCE_DSCP,
        traffic_class=ROCE_DSCP * 4,
    )


def _env_pairs(env: str) -> dict[str, str]:
    pairs = {}
    for line in env.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            pairs[key] = value
    return pairs


def _job_servers(plan: Plan, servers: tuple[str, ...]) -> int:
    """The template's size: the production servers under the first leaf group, a job that stays one switch hop
    apart on every rail."""
    production = [n for n in servers if not plan.devices[n].spare]
    first = next(s for s in fabric_tree(plan, production).switches if s.tier == 1)
    return len(first.nodes)


def _namespace(plan: Plan) -> str:
    teams = plan.design.scheduler.kubernetes.teams  # type: ignore[attr-defined]
    return teams[0].name if teams else "training"


def pytorch_job(plan: Plan, server: GpuServer, nodes: int) -> dict:
    """A PyTorchJob (Kubeflow Training Operator, kubeflow.org/v1) on whole servers, queued to the first team's
    LocalQueue; Kueue keeps its pods under one leaf group where it can (preferred topology)."""
    prefix = plan.design.scheduler.kubernetes.topology_label_prefix  # type: ignore[attr-defined]
    namespace = _namespace(plan)
    limits = {GPU_RESOURCE: str(server.gpu.count)}  # quantities as strings, as the API's models type them
    for resource in rdma_resources(server, plan.design.scheduler.kubernetes.rdma):  # type: ignore[attr-defined]
        limits[resource] = "1"
    pod = {
        "metadata": {"annotations": {"kueue.x-k8s.io/podset-preferred-topology": f"{prefix}/leaf"}},
        "spec": {
            "containers": [
                {
                    "name": "pytorch",  # the Training Operator finds the training container by this name
                    "image": PYTORCH_IMAGE,
                    "command": ["torchrun", "/workspace/train.py"],
                    "envFrom": [{"configMapRef": {"name": "nccl-env"}}],
                    "resources": {"limits": limits},
                    "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},  # RDMA pins memory
                    "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                }
            ],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        },
    }
    replicas = {"Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": pod}}
    if nodes > 1:
        replicas["Worker"] = {"replicas": nodes - 1, "restartPolicy": "OnFailure", "template": pod}
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
