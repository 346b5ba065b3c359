"""Sizing a cluster from a workload: the 6·N·D rule gives the training FLOPs; the GPU's dense peak (from
the catalog, with its source), the expected MFU and goodput give the GPUs that finish in the target days.

Training FLOPs ≈ 6 N D (Kaplan et al. 2020 section 2.1; Chinchilla, Hoffmann et al. 2022); GPUs =
6 N D / (peak x MFU x goodput x wall seconds) (reliability-facts.md 4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import yaml

from gpucluster.catalog.load import Catalog
from gpucluster.catalog.schema import GpuServer
from gpucluster.design.schema import Workload

# Dense peak by precision relative to the catalog's dense BF16: FP16 runs at the BF16 rate; FP8 doubles it
# on Hopper and Blackwell (H100 SXM 1,978.9 vs 989.4 TFLOPS dense; B200 4,500 vs 2,250; reliability-facts 4).
PEAK_FACTOR = {"bf16": 1.0, "fp16": 1.0, "fp8": 2.0}

# Goodput assumed when sizing GPUs for a target: about 0.9 for the best-run large jobs (Llama 3 ">90%
# effective training time", MegaScale ">90%", Meta RSC ETTR ~0.9; reliability-facts.md 4).
SIZING_GOODPUT = 0.9


@dataclass(frozen=True)
class Sizing:
    """GPUs and servers a workload needs on one server model."""

    server: GpuServer
    workload: Workload
    flops: float
    peak_tflops: float
    peak_source: str
    goodput: float
    gpus_needed: int
    servers: int

    @property
    def gpus(self) -> int:
        return self.servers * self.server.gpu.count

    @property
    def days_on_servers(self) -> float:
        """Wall days on the rounded-up servers, at the MFU and goodput assumed."""
        return gpu_days(self.flops, self.peak_tflops, self.workload.mfu, self.goodput) / self.gpus


def peak_tflops(server: GpuServer, precision: str) -> tuple[float, str]:
    """Dense peak per GPU at a precision, and where the figure comes from."""
    source = f"catalog {server.id} gpu.bf16_dense_tflops ({server.sources.get('gpu.bf16_dense_tflops', 'uncited')})"
    if precision == "fp8":
        source += "; FP8 dense = 2 x BF16 dense on Hopper/Blackwell"
    return server.gpu.bf16_dense_tflops * PEAK_FACTOR[precision], source


def training_flops(workload: Workload) -> float | None:
    """6 N D, or None when the workload names no token count."""
    if not workload.training_tokens_b:
        return None
    return 6.0 * workload.model_parameters_b * 1e9 * workload.training_tokens_b * 1e9


def gpu_days(flops: float, peak: float, mfu: float, goodput: float = 1.0) -> float:
    """GPU-days to do ``flops`` at ``peak`` TFLOPS x MFU x goodput."""
    return flops / (peak * 1e12 * mfu * goodput) / 86400


def size(catalog: Catalog, server_id: str, workload: Workload, goodput: float = SIZING_GOODPUT) -> Sizing:
    """The GPUs and whole servers that train ``workload`` in its target days."""
    if not workload.training_tokens_b or not workload.target_days:
        raise ValueError("sizing needs training_tokens_b and target_days")
    server = catalog.get(server_id, GpuServer)
    peak, source = peak_tflops(server, workload.precision)
    flops = training_flops(workload) or 0.0
    gpus = math.ceil(gpu_days(flops, peak, workload.mfu, goodput) / workload.target_days)
    servers = math.ceil(gpus / server.gpu.count)
    return Sizing(server, workload, flops, peak, source, goodput, gpus, servers)


def sizing_lines(s: Sizing) -> list[str]:
    w = s.workload
    return [
        f"workload: {w.model_parameters_b:g}B parameters x {w.training_tokens_b:g}B tokens = "
        f"{s.flops:.3g} FLOPs (6·N·D)",
        f"GPU: {s.server.gpu.model}, {s.peak_tflops:,.1f} TFLOPS dense {w.precision} ({s.peak_source})",
        f"at {w.mfu:.0%} MFU and {s.goodput:.0%} goodput in {w.target_days:g} days: {s.gpus_needed:,} GPUs "
        f"-> {s.servers:,} x {s.server.id} ({s.gpus:,} GPUs, {s.days_on_servers:.1f} days)",
    ]


def starter_design(s: Sizing, name: str) -> str:
    """A design file for the sizing: the servers and the workload; everything else keeps its defaults."""
    w = s.workload
    workload = {"model_parameters_b": w.model_parameters_b, "training_tokens_b": w.training_tokens_b}
    workload |= {"target_days": w.target_days, "precision": w.precision, "mfu": w.mfu}
    document = {
        "name": name,
        "description": f"{w.model_parameters_b:g}B model, {w.training_tokens_b:g}B tokens in {w.target_days:g} days",
        "compute": {"server": s.server.id, "servers": s.servers},
        "workload": workload,
    }
    header = "".join(f"# {line}\n" for line in ["Starter design written by `gpucluster size`:", *sizing_lines(s)])
    return header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
