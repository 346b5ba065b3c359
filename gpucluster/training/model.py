"""The one training model every view uses (`size`, checkpoint.md, simulation.html, rule ``workload-fits-plan``),
so they cannot disagree; its formulas are in docs/artifacts.md (Checkpoints, failures and the run simulator).

Training FLOPs = 6·N·D (Kaplan et al. 2020 section 2.1). MFU is over the whole step as PaLM defines it
(Chowdhery et al. 2022, appendix B), so loading and sync are inside the step, never added to it.
"""

from __future__ import annotations

import math

from gpucluster.catalog.schema import GpuServer
from gpucluster.design.schema import Workload

# Dense peak by precision relative to the catalog's dense BF16: FP16 runs at the BF16 rate; FP8 doubles it
# on Hopper and Blackwell (H100 SXM 1,978.9 vs 989.4 TFLOPS dense; B200 4,500 vs 2,250;
# https://glennklockwood.com/garden/processors/h100, https://glennklockwood.com/garden/processors/B200).
PEAK_FACTOR = {"bf16": 1.0, "fp16": 1.0, "fp8": 2.0}

# Goodput assumed when sizing GPUs for a target before a plan exists: about 0.9 for the best-run large jobs
# (Llama 3, arXiv:2407.21783: ">90% effective training time"; MegaScale, arXiv:2402.15627: ">90%"; Meta RSC,
# arXiv:2410.21680: ETTR ~0.9).
SIZING_GOODPUT = 0.9


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


def step_seconds(workload: Workload, gpus: int, peak: float) -> float:
    """One step of the global batch at the workload's MFU (loading and sync inside it)."""
    tokens = workload.global_batch_tokens_m * 1e6
    return 6.0 * workload.model_parameters_b * 1e9 * tokens / (max(gpus, 1) * peak * 1e12 * workload.mfu)


def compute_days(workload: Workload, gpus: int, peak: float) -> float | None:
    """Days of training at the workload's MFU on ``gpus``, with nothing lost (= steps x step time)."""
    flops = training_flops(workload)
    return gpu_days(flops, peak, workload.mfu) / max(gpus, 1) if flops else None


def time_to_train_days(workload: Workload, gpus: int, peak: float, goodput: float) -> float | None:
    """Wall-clock days: the compute time over the goodput."""
    days = compute_days(workload, gpus, peak)
    return days / goodput if days is not None and goodput > 0 else None


def gpus_for_target(workload: Workload, peak: float, goodput: float) -> int | None:
    """GPUs that train the workload in its target days at ``goodput``."""
    flops = training_flops(workload)
    if not flops or not workload.target_days:
        return None
    return math.ceil(gpu_days(flops, peak, workload.mfu, goodput) / workload.target_days)
