"""Checkpoint analysis of a plan: checkpoint size and write time, failures, the best interval, what a failure costs.

Everything is read from the plan, so the checkpoint figures cannot disagree with the other views. A design without
a ``workload`` section is analysed for the seed's 70-billion-parameter example, and every view says so.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import cast

from gpucluster.catalog.schema import GpuServer, RackMounted, StorageBlock
from gpucluster.design.schema import Workload
from gpucluster.plan.facts import CheckpointFacts, TrainingFacts
from gpucluster.plan.model import Device, PhysicalPlan, Plan
from gpucluster.plan.queries import queries
from gpucluster.plan.registry import is_gpu_node
from gpucluster.training import reliability as rel
from gpucluster.training.model import (
    compute_days,
    gpus_for_target,
    peak_tflops,
    step_seconds,
    time_to_train_days,
    training_flops,
)

# Seed: "A checkpoint of a 70-billion-parameter model with optimizer state is around 1 TB."
ASSUMED_WORKLOAD = Workload(model_parameters_b=70)

# Checkpoint bytes per parameter. Mixed-precision Adam saves bf16 weights 2 + fp32 master weights 4 + Adam
# first and second moments 4 + 4 (ZeRO, arXiv:1910.02054 section 3.1: K = 12 optimizer bytes; gradients are
# not saved). SGD with momentum keeps one moment instead of two (derived: 2 + 4 + 4).
BYTES_PER_PARAMETER = {"adam": 14.0, "adamw": 14.0, "sgd-momentum": 10.0}
BYTES_SOURCE = "ZeRO (arXiv:1910.02054 3.1): bf16 weights 2 + fp32 master 4 + Adam moments 4 + 4"

# Async checkpoints: PyTorch DCP blocked Llama3-70B training on 1,856 H200 for 0.78 s to stage the
# checkpoint in host memory (pytorch.org blog "6x faster Async Checkpointing in PyTorch", Meta and
# Crusoe, 2025). Scaled by the bytes each GPU stages: 70e9 x 14 B / 1,856 GPUs = 528 MB.
ASYNC_STALL_S = 0.78
ASYNC_REFERENCE_BYTES_PER_GPU = 70e9 * 14.0 / 1856

# Restart: MegaScale detects and diagnoses a fault in under 10 minutes (NSDI'24, arXiv:2402.15627, section 6.3).
RESTART_SOURCE = "MegaScale (NSDI'24): detection and diagnosis < 10 min"
# Repair time of a failed server: no published figure was found; three days (next-business-day parts and a
# re-test) is this tool's assumption, to be set from the support contract (workload.repair_hours).
REPAIR_SOURCE = "assumption of this tool (no published figure found): set workload.repair_hours"
DEFAULT_RUN_DAYS = 30.0  # simulated run length when the workload gives no days and no tokens
# Finished models leave as bf16 weights: 2 bytes per parameter.
MODEL_EXPORT_BYTES_PER_PARAMETER = 2.0


@dataclass(frozen=True)
class Limit:
    """One stage a checkpoint's bytes pass through, and how fast it goes."""

    name: str
    gbytes_per_s: float
    note: str


@dataclass(frozen=True)
class TransferPath:
    """A transfer limited by the slowest of its stages."""

    limits: tuple[Limit, ...]

    @property
    def gbytes_per_s(self) -> float:
        return min(limit.gbytes_per_s for limit in self.limits)

    @property
    def bottleneck(self) -> Limit:
        return min(self.limits, key=lambda limit: limit.gbytes_per_s)

    def seconds(self, nbytes: float) -> float:
        return nbytes / (self.gbytes_per_s * 1e9)


@dataclass(frozen=True)
class Step:
    """One training step at the workload's MFU; loading (storage) and sync (fabric) are estimates of their unhidden
    time inside it, ``compute_s`` the rest."""

    seconds: float
    load_s: float
    compute_s: float
    sync_s: float
    tokens: float

    @property
    def reachable(self) -> bool:
        """Loading and sync leave room for compute: the MFU can be reached on this plan."""
        return self.load_s + self.sync_s <= self.seconds


@dataclass(frozen=True)
class CheckpointAnalysis:
    """Everything the checkpoint views print, computed once from the plan."""

    workload: Workload
    assumed: bool
    gpus: int
    servers: int
    gpus_per_server: int
    gpu_model: str
    peak_tflops: float  # dense, per GPU, at the workload's precision
    peak_source: str
    bytes_per_parameter: float
    bytes_source: str
    checkpoint_bytes: float
    write: TransferPath
    read: TransferPath
    write_s: float
    read_s: float
    stall_s: float  # GPU pause per checkpoint (the blocking write, or the async staging)
    background_s: float  # async: the write that goes on after the pause; 0 when blocking
    restart_s: float  # restart overhead + checkpoint load
    kinds: list[rel.KindRate]
    mtbf_s: float
    young_s: float
    daly_s: float
    interval_s: float
    interval_from: str  # "design" or "Daly's optimum"
    step: Step
    training_flops: float | None
    compute_days: float | None  # pure compute on this plan's GPUs at the workload's MFU
    gpus_needed: int | None  # for the target days at this plan's goodput
    run_days: float
    run_days_from: str  # where the simulated run length comes from
    staging_in: TransferPath | None
    staging_out: TransferPath | None
    dataset_bytes: float | None
    model_bytes: float
    spares_needed: int
    spares_have: int
    server_failures_per_year: float  # per server, failures that take it out for repair
    domains: rel.DomainSpares | None = None  # rack-scale systems: spare trays in each rack against spare racks
    failover: rel.TrayFailover | None = None  # rack-scale systems: how the job goes on after a tray fails
    notes: list[str] = field(default_factory=list)
    staging_shared: bool = False  # object storage is the filesystem's own store: nothing to stage

    @property
    def recovery_s(self) -> float:
        """Mean time from a failure to running again: the restart, and on a rack-scale system the expected wait
        for a repair when neither a spare tray nor a spare rack is free (Daly's restart time R)."""
        return self.restart_s + (self.failover.mean_wait_per_failure_s if self.failover else 0.0)

    @property
    def goodput(self) -> float:
        return rel.daly_efficiency(self.interval_s, self.stall_s, self.recovery_s, self.mtbf_s)

    @property
    def time_to_train_days(self) -> float | None:
        """Wall days to train on this plan: compute time over the goodput at the interval."""
        return time_to_train_days(self.workload, self.gpus, self.peak_tflops, self.goodput)

    @property
    def expected_interruptions(self) -> float:
        """Failures that stop the job in a run of `run_days` (the run length over the job's MTBF; 0 where no
        failure rate applies)."""
        return self.run_days * 86_400 / self.mtbf_s if math.isfinite(self.mtbf_s) and self.mtbf_s > 0 else 0.0

    @property
    def goodput_at_daly(self) -> float:
        return rel.daly_efficiency(self.daly_s, self.stall_s, self.recovery_s, self.mtbf_s)

    def goodput_at(self, interval_s: float) -> float:
        return rel.daly_efficiency(interval_s, self.stall_s, self.recovery_s, self.mtbf_s)

    def loss_per_failure_s(self, interval_s: float | None = None) -> float:
        return rel.expected_loss_per_failure_s(interval_s or self.interval_s, self.stall_s, self.mtbf_s)


def analyse_checkpoints(plan: PhysicalPlan) -> CheckpointAnalysis:
    """The checkpoint analysis of a plan, for its workload or the assumed 70B example."""
    design_workload = getattr(plan.design, "workload", None)
    workload = design_workload or ASSUMED_WORKLOAD
    assumed = design_workload is None
    server_part = plan.catalog_part(plan.settings.server, GpuServer)
    servers, idle = _job_servers(plan, server_part)
    spare_names = {d.name for d in plan.gpu_nodes() if d.spare}
    gpu = server_part.gpu
    gpus = len(servers) * gpu.count
    peak, peak_source = peak_tflops(server_part, workload.precision)

    bytes_per_parameter, bytes_source = _bytes_per_parameter(workload)
    params = workload.model_parameters_b * 1e9
    checkpoint_bytes = params * bytes_per_parameter

    write, read = _checkpoint_paths(plan, len(servers), spare_names | idle)
    write_s, read_s = write.seconds(checkpoint_bytes), read.seconds(checkpoint_bytes)
    stall_s, background_s = _stall_s(workload, write_s, checkpoint_bytes, gpus)
    restart_s = workload.restart_minutes * 60 + read_s

    kinds = rel.rates(_units(plan, servers, spare_names | idle, gpu.count), workload.failure_rates.model_dump())
    mtbf_s = rel.job_mtbf_s(kinds)
    daly_s = rel.daly_interval_s(stall_s, mtbf_s)

    step = _step(workload, gpus, peak, read, server_part)
    days_of_compute = compute_days(workload, gpus, peak)
    interval_s, interval_from = _interval_s(workload, daly_s, days_of_compute, step.seconds)
    staging_in, staging_out = _staging_paths(plan, write, read)

    by_kind = {k.kind: k.per_unit_year for k in kinds}
    nics_per_server = _port_count(server_part, "compute")
    server_failures = gpu.count * by_kind["gpu"] + by_kind["server"] + nics_per_server * by_kind["nic_optics"]
    spares = rel.spares_needed(len(servers), server_failures, workload.repair_hours, workload.spare_confidence)

    domains = _domain_spares(plan, server_part, server_failures, workload)
    failover = _failover(domains, kinds, len(servers), gpu.count, server_failures, workload.repair_hours)
    recovery_s = restart_s + (failover.mean_wait_per_failure_s if failover else 0.0)
    goodput = rel.daly_efficiency(interval_s, stall_s, recovery_s, mtbf_s)
    run_days, run_days_from = _run_days(workload, days_of_compute, goodput)
    queue = workload.checkpoint_mode == "async" and background_s >= interval_s
    return CheckpointAnalysis(
        workload=workload,
        assumed=assumed,
        gpus=gpus,
        servers=len(servers),
        gpus_per_server=gpu.count,
        gpu_model=gpu.model,
        peak_tflops=peak,
        peak_source=peak_source,
        bytes_per_parameter=bytes_per_parameter,
        bytes_source=bytes_source,
        checkpoint_bytes=checkpoint_bytes,
        write=write,
        read=read,
        write_s=write_s,
        read_s=read_s,
        stall_s=stall_s,
        background_s=background_s,
        restart_s=restart_s,
        kinds=kinds,
        mtbf_s=mtbf_s,
        young_s=rel.young_interval_s(stall_s, mtbf_s),
        daly_s=daly_s,
        interval_s=interval_s,
        interval_from=interval_from,
        step=step,
        training_flops=training_flops(workload),
        compute_days=days_of_compute,
        gpus_needed=gpus_for_target(workload, peak, goodput),
        run_days=run_days,
        run_days_from=run_days_from,
        staging_in=staging_in,
        staging_out=staging_out,
        dataset_bytes=_dataset_bytes(workload),
        model_bytes=params * MODEL_EXPORT_BYTES_PER_PARAMETER,
        spares_needed=spares,
        spares_have=len(spare_names),
        server_failures_per_year=server_failures,
        domains=domains,
        failover=failover,
        notes=["the background write takes longer than the interval: checkpoints would queue"] if queue else [],
        staging_shared=bool(plan.settings.object_storage_shared),
    )


def _failover(
    domains: rel.DomainSpares | None,
    kinds: list[rel.KindRate],
    servers: int,
    gpus_per_server: int,
    server_failures: float,
    repair_hours: float,
) -> rel.TrayFailover | None:
    """How a job waits on a failed tray of an NVLink domain (None: no rack-scale domains)."""
    if domains is None:
        return None
    job_rate = sum(k.job_failures_per_hour for k in kinds)
    tray_share = servers * server_failures / rel.HOURS_PER_JULIAN_YEAR / job_rate if job_rate else 0.0
    return rel.tray_failover(domains, gpus_per_server, server_failures, repair_hours, min(1.0, tray_share))


def _bytes_per_parameter(workload: Workload) -> tuple[float, str]:
    """Checkpoint bytes per parameter (the design's, else the optimizer's state) and where the figure comes from."""
    bytes_per_parameter = workload.checkpoint_bytes_per_parameter or BYTES_PER_PARAMETER[workload.optimizer]
    bytes_source = "design (workload.checkpoint_bytes_per_parameter)"
    if workload.checkpoint_bytes_per_parameter is None:
        bytes_source = BYTES_SOURCE if workload.optimizer != "sgd-momentum" else "derived: bf16 2 + fp32 4 + 4"
    return bytes_per_parameter, bytes_source


def _stall_s(workload: Workload, write_s: float, checkpoint_bytes: float, gpus: int) -> tuple[float, float]:
    """(training stalled, write in the background) per checkpoint: an async checkpoint stalls only for the copy to
    host memory (the design's, else scaled by each GPU's share) and writes behind; a sync one stalls for the write."""
    if workload.checkpoint_mode != "async":
        return write_s, 0.0
    if workload.async_stall_seconds is not None:
        return workload.async_stall_seconds, write_s
    return ASYNC_STALL_S * (checkpoint_bytes / max(gpus, 1)) / ASYNC_REFERENCE_BYTES_PER_GPU, write_s


def _interval_s(workload: Workload, daly_s: float, compute_days: float | None, step_s: float) -> tuple[float, str]:
    """The checkpoint interval, a whole number of steps: the design's, else Daly's optimum, else (nothing fails)
    one checkpoint at the end of the run; and where it comes from."""
    if workload.checkpoint_interval_minutes is not None:
        wanted, interval_from = workload.checkpoint_interval_minutes * 60, "design"
    elif math.isfinite(daly_s):
        wanted, interval_from = daly_s, "Daly's optimum"
    else:  # nothing fails: one checkpoint at the end of the run
        days = workload.run_days or workload.target_days or compute_days or DEFAULT_RUN_DAYS
        wanted, interval_from = days * 86400, "the run's length (no failures)"
    return max(1, round(wanted / step_s)) * step_s, interval_from


def _dataset_bytes(workload: Workload) -> float | None:
    """The dataset to stage in: the design's size, else its training tokens at the bytes each token takes."""
    if workload.dataset_tb:
        return workload.dataset_tb * 1e12
    if workload.training_tokens_b:
        return workload.training_tokens_b * 1e9 * workload.dataset_bytes_per_token
    return None


def _run_days(workload: Workload, compute_days: float | None, goodput: float) -> tuple[float, str]:
    """The run length every simulation of the job replays (checkpoint.md, `simulate`, simulation.html)."""
    if workload.run_days:
        return workload.run_days, "workload.run_days"
    if workload.target_days:
        return workload.target_days, "workload.target_days"
    if compute_days:
        return compute_days / goodput, "the time to train on this plan"
    return DEFAULT_RUN_DAYS, "a default (the workload gives no days and no tokens)"


def _job_servers(plan: Plan, server_part: GpuServer) -> tuple[list[Device], set[str]]:
    """The production servers the job runs on, and the idle ones: on a rack-scale system the job takes a segment
    of each rack's trays (as --segment places it) and the rest stand idle as in-rack spares."""
    from gpucluster.analyse.scheduling import domain_servers, slurm_segment

    production = [d for d in plan.gpu_nodes() if not d.spare]
    segment = slurm_segment(domain_servers(server_part))
    if segment is None:
        return production, set()
    by_domain: dict[str | None, list[Device]] = {}
    for device in production:
        by_domain.setdefault(device.nvlink_domain, []).append(device)
    job: list[Device] = []
    idle: set[str] = set()
    for domain, members in by_domain.items():
        keep = members[:segment] if domain is not None else members
        job += keep
        idle |= {d.name for d in members[len(keep) :]}
    return job, idle


def _domain_spares(plan: Plan, tray: GpuServer, failures: float, workload: Workload) -> rel.DomainSpares | None:
    """For a rack-scale system: each rack keeps the trays outside the job's segment (2 of an NVL72's 18 with
    --segment=16) as in-rack spares; spare racks cover racks with more trays than that in repair at once."""
    from gpucluster.analyse.scheduling import domain_servers, slurm_segment  # the segment the launch template uses

    per_rack = domain_servers(tray)
    segment = slurm_segment(per_rack)
    if segment is None:
        return None
    racks = {d.nvlink_domain for d in plan.gpu_nodes() if d.nvlink_domain and not d.spare}
    spare_racks = {d.nvlink_domain for d in plan.gpu_nodes() if d.nvlink_domain and d.spare}
    if not racks:
        return None
    return rel.domain_spares(
        len(racks), per_rack, segment, failures, workload.repair_hours, workload.spare_confidence, len(spare_racks)
    )


def checkpoint_facts(plan: PhysicalPlan) -> CheckpointFacts:
    """The plain-JSON summary the design rule reads (rules.py, the Pulumi policy pack)."""
    a = analyse_checkpoints(plan)
    facts: CheckpointFacts = {
        "workload": "assumed" if a.assumed else "design",
        "model_parameters_b": a.workload.model_parameters_b,
        "checkpoint_tb": round(a.checkpoint_bytes / 1e12, 4),
        "mode": a.workload.checkpoint_mode,
        "write_seconds": round(a.write_s, 3),
        "stall_seconds": round(a.stall_s, 3),
        "interval_seconds": round(a.interval_s, 3),
        "interval_from": a.interval_from,
        "write_bottleneck": a.write.bottleneck.name,
        "write_gbytes_per_s": round(a.write.gbytes_per_s, 3),
        "mtbf_hours": round(a.mtbf_s / 3600, 4) if math.isfinite(a.mtbf_s) else None,
        "daly_interval_seconds": round(a.daly_s, 3) if math.isfinite(a.daly_s) else None,
        "goodput": round(a.goodput, 6),
        "goodput_at_daly": round(a.goodput_at_daly, 6),
        "training": training_facts(plan, a),
        "spares": {
            "needed": a.spares_needed,
            "have": a.spares_have,
            "confidence": a.workload.spare_confidence,
            "repair_hours": a.workload.repair_hours,
        },
    }
    if a.domains:  # rack-scale systems only (absent, not None, elsewhere: Pulumi drops None properties)
        facts["domain_spares"] = {
            "racks": a.domains.racks,
            "segment": a.domains.segment,
            "in_rack_spares": a.domains.in_rack_spares,
            "p_rack_short": round(a.domains.p_rack_short, 9),
            "spare_racks_needed": a.domains.spare_racks_needed,
            "spare_racks_have": a.domains.spare_racks_have,
        }
    return facts


def training_facts(plan: Plan, a: CheckpointAnalysis) -> TrainingFacts:
    """The workload against the plan, from the one training model (rule ``workload-fits-plan``)."""
    ttt = a.time_to_train_days
    dataset_tb = a.dataset_bytes / 1e12 if a.dataset_bytes else None
    facts = {
        "tokens_b": a.workload.training_tokens_b,
        "target_days": a.workload.target_days,
        "mfu": a.workload.mfu,
        "gpus": a.gpus,
        "gpu_model": a.gpu_model,
        "compute_days": round(a.compute_days, 3) if a.compute_days is not None else None,
        "goodput": round(a.goodput, 6),
        "time_to_train_days": round(ttt, 3) if ttt is not None else None,
        "gpus_needed": a.gpus_needed,
        "step_seconds": round(a.step.seconds, 3),
        "load_seconds": round(a.step.load_s, 3),
        "sync_seconds": round(a.step.sync_s, 3),
        "dataset_tb": round(dataset_tb, 3) if dataset_tb is not None else None,
        "filesystem_capacity_tb": round(_file_capacity_tb(plan), 3),
        "filesystem": plan.settings.parallel_filesystem_label(),
    }
    # what is not known is left out (Pulumi drops None-valued properties; the rule reads absent as unknown): the
    # keys of TrainingFacts, each of its type or None, so what is left is a TrainingFacts
    return cast(TrainingFacts, {key: value for key, value in facts.items() if value is not None})


def _file_capacity_tb(plan: Plan) -> float:
    """The parallel filesystem's capacity for files as delivered: a shared object store's share is not."""
    capacity = float(plan.settings.parallel_filesystem_capacity_tb)
    if plan.settings.object_storage_shared:
        capacity -= plan.settings.object_storage_capacity_tb or 0.0
    return capacity


def _port_count(part: RackMounted, role: str) -> int:
    return sum(group.port_count for group in part.port_groups(role))


def _port_gbps(part: RackMounted, role: str) -> float:
    return sum(group.speed_gbps * group.port_count for group in part.port_groups(role))


def _checkpoint_paths(plan: Plan, job_servers: int, spares: set[str]) -> tuple[TransferPath, TransferPath]:
    """Write and read paths between the job's servers and the parallel filesystem: the filesystem's
    throughput, the storage network's narrowest point, and the servers' own storage ports."""
    server_part = plan.catalog_part(plan.settings.server, GpuServer)
    ports_gbytes = job_servers * _port_gbps(server_part, "storage") / 8
    network = _storage_network_gbytes_per_s(plan, spares)
    write_pfs = float(plan.settings.parallel_filesystem_write_gbytes_per_s)
    read_pfs = float(plan.settings.parallel_filesystem_read_gbytes_per_s)
    blocks = plan.settings.parallel_filesystem_label()
    common = (
        Limit("storage network", network, "narrowest of leaf uplinks and storage-block ports (plan links)"),
        Limit("servers' storage ports", ports_gbytes, f"{job_servers} servers x storage ports (catalog)"),
    )
    write = TransferPath((Limit("parallel filesystem write", write_pfs, f"design/RA level ({blocks})"), *common))
    read = TransferPath((Limit("parallel filesystem read", read_pfs, f"design/RA level ({blocks})"), *common))
    return write, read


def _storage_network_gbytes_per_s(plan: Plan, spares: set[str]) -> float:
    """Capacity between GPU servers and storage blocks: the blocks' ports, and the uplinks of the servers' leaves
    and of the storage leaves (a fat tree above them carries what its leaves send up)."""
    roles: dict[str, str] = {}
    server_leaves: set[str] = set()
    storage_leaves: set[str] = set()
    block_gbps = 0.0
    found_in = queries(plan)
    for link in found_in.links("storage", 0):
        host, leaf = (link.a_device, link.b_device)
        role = roles.setdefault(host, plan.devices[host].role)
        if is_gpu_node(role) and host not in spares:
            server_leaves.add(leaf)
        elif plan.settings.is_parallel_filesystem_device(host, role):  # not another filesystem's blocks
            storage_leaves.add(leaf)
            block_gbps += link.speed_gbps
    uplinks: dict[str, float] = defaultdict(float)
    for link in found_in.links("storage", 1):
        uplinks[link.a_device] += link.speed_gbps
    limits = [block_gbps]
    if server_leaves - storage_leaves and storage_leaves - server_leaves and uplinks:
        limits.append(sum(uplinks[leaf] for leaf in server_leaves - storage_leaves))
        limits.append(sum(uplinks[leaf] for leaf in storage_leaves - server_leaves))
    return min(limits) / 8


def _staging_paths(
    plan: Plan, write: TransferPath, read: TransferPath
) -> tuple[TransferPath | None, TransferPath | None]:
    """Dataset in (object storage -> servers over in-band -> parallel filesystem) and finished model out."""
    block_id = plan.settings.object_storage_block
    if not block_id:
        return None, None
    block = plan.catalog_part(str(block_id), StorageBlock)
    count = int(plan.settings.object_storage_blocks)
    found_in = queries(plan)
    host_links = (link for network in found_in.networks() for link in found_in.links(network, 0))
    ports = sum(link.speed_gbps for link in host_links if plan.devices[link.a_device].role == "object-storage") / 8
    server_part = plan.catalog_part(plan.settings.server, GpuServer)
    servers = sum(1 for d in plan.gpu_nodes() if not d.spare)
    inband = servers * _port_gbps(server_part, "inband") / 8
    name = f"{count} x {block_id}"
    common = (
        Limit("object storage ports", ports, "object-storage links (plan)"),
        Limit("servers' in-band ports", inband, "staging runs on the GPU servers (catalog)"),
    )
    staging_in = TransferPath(
        (Limit("object storage read", count * block.read_gbytes_per_s, name), *common, *write.limits)
    )
    staging_out = TransferPath(
        (Limit("object storage write", count * block.write_gbytes_per_s, name), *common, *read.limits)
    )
    return staging_in, staging_out


def _units(plan: Plan, servers: list[Device], spares: set[str], gpus_per_server: int) -> dict[str, int]:
    """Units of each component kind the job depends on; optics on compute cables that serve only spares do not."""
    server_part = plan.catalog_part(plan.settings.server, GpuServer)
    optics = 0
    for cable in plan.cables:
        if cable.network != "compute":
            continue
        if spares and all(plan.links[i].a_device in spares or plan.links[i].b_device in spares for i in cable.links):
            continue
        optics += (cable.a_transceiver is not None) + (cable.b_transceiver is not None)
        optics += 2 if cable.media == "aoc" else 0
    return {
        "gpu": len(servers) * gpus_per_server,
        "server": len(servers),
        "nic_optics": len(servers) * _port_count(server_part, "compute") + optics,
        "switch": len(plan.switches("compute")),
        "software": len(servers),
    }


def _step(workload: Workload, gpus: int, peak_tflops: float, read: TransferPath, server_part: GpuServer) -> Step:
    """One step of the global batch; the gradients all-reduced with tensor parallelism inside the NVLink domain and
    data parallelism across it (ring all-reduce moves 2 (n-1)/n of the data per GPU, nccl-tests PERFORMANCE.md)."""
    tokens = workload.global_batch_tokens_m * 1e6
    params = workload.model_parameters_b * 1e9
    seconds = step_seconds(workload, gpus, peak_tflops)
    load_s = read.seconds(tokens * workload.dataset_bytes_per_token)
    gpu = server_part.gpu
    model_parallel = min(gpu.nvlink_domain_gpus, gpus)
    replicas = max(gpus // model_parallel, 1)
    port_gbytes = max((g.speed_gbps for g in server_part.port_groups("compute")), default=400) / 8
    gradient_bytes = 2.0 * params / model_parallel  # bf16 gradients of one GPU's shard
    sync_s = 2.0 * (replicas - 1) / replicas * gradient_bytes / (port_gbytes * 1e9) if replicas > 1 else 0.0
    compute_s = max(seconds - load_s - sync_s, 0.0)
    return Step(seconds, load_s, compute_s, sync_s, tokens)
