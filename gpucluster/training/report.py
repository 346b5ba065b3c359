"""Plain-text lines shared by `gpucluster simulate` and checkpoint.md."""

from __future__ import annotations

import math

from gpucluster.training import reliability as rel
from gpucluster.training.checkpoint import CheckpointAnalysis
from gpucluster.training.intervals import IntervalResult


def duration(seconds: float) -> str:
    """A duration in the unit a reader thinks in."""
    if not math.isfinite(seconds):
        return "never"
    if seconds < 1:
        return f"{seconds * 1000:.1f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def header_lines(a: CheckpointAnalysis) -> list[str]:
    w = a.workload
    kinds = ", ".join(
        f"{rel.KIND_LABELS[k.kind]} {k.job_failures_per_hour * 24:.2f}" for k in a.kinds if k.job_failures_per_hour
    )
    assumed = " (assumed: the design has no workload section)" if a.assumed else ""
    return [
        f"job: {w.model_parameters_b:g}B parameters{assumed} on {a.gpus:,} {a.gpu_model} GPUs ({a.servers:,} servers)",
        f"failures per day: {kinds}; job MTBF {duration(a.mtbf_s)}",
        f"checkpoint {a.checkpoint_bytes / 1e12:.2f} TB ({a.bytes_per_parameter:g} B/parameter), {w.checkpoint_mode}: "
        f"write {duration(a.write_s)} at {a.write.gbytes_per_s:,.1f} GB/s ({a.write.bottleneck.name}), "
        f"GPU pause {duration(a.stall_s)}; restart {duration(a.restart_s)} (incl. reading it back)",
        f"optimal interval: Young {duration(a.young_s)}, Daly {duration(a.daly_s)}; "
        f"{a.interval_from} interval {duration(a.interval_s)} -> goodput {a.goodput:.2%}",
        *failover_lines(a),
    ]


def failover_lines(a: CheckpointAnalysis) -> list[str]:
    """How a job on a rack-scale system goes on after a tray fails (none elsewhere)."""
    f, d = a.failover, a.domains
    if f is None or d is None:
        return []
    return [
        f"tray failure: the tray's {f.gpus_per_tray} GPUs leave its NVLink domain; the job (a segment of {f.segment} "
        f"of each rack's {f.trays_per_rack} trays, --segment={f.segment}) restarts from its checkpoint with the "
        f"segment on one of the rack's {f.spare_trays} spare trays",
        f"  no spare tray free in that rack: {f.p_no_spare_tray:.2e} per tray failure -> one of the "
        f"{d.spare_racks_have} spare racks takes the segment"
        + (f" (all taken: {f.p_no_spare_rack:.2e})" if d.spare_racks_have else " (the plan has none)"),
        f"  neither: the job waits {duration(f.wait_s)} on average for a tray back from its {f.repair_hours:g} h "
        f"repair; {f.p_wait:.2e} of all failures, {duration(f.mean_wait_per_failure_s)} per failure on average "
        "(NVL72 tray failure rates are not published: the tray fails as 4 GPUs, a host and its NICs at the rates "
        "above)",
    ]


def comparison_lines(a: CheckpointAnalysis, results: list[IntervalResult], days: float, seed: int) -> list[str]:
    """The interval comparison table, as `gpucluster simulate` prints it."""
    runs = next((r.runs.wall_s.size for r in results if r.runs is not None), 0)
    lines = [
        *header_lines(a),
        f"simulated: {runs:,} runs of {days:.4g} days each, seed {seed}",
        "",
        f"{'interval':>10}  {'':14} {'Daly':>7}  {'simulated (95% CI)':>19}  {'failures':>8}  "
        f"{'lost/failure':>12}  {'work lost GPU-h':>15}",
    ]
    for r in results:
        if r.runs is None:
            lines.append(f"{duration(r.interval_s):>10}  {r.label:14} {r.goodput:7.2%}  ({r.not_simulated})")
            continue
        s = r.runs.summary()
        lines.append(
            f"{duration(r.interval_s):>10}  {r.label:14} {r.goodput:7.2%}  "
            f"{s['goodput']:9.2%} ± {s['goodput_ci95']:6.2%}  {s['failures']:8.1f}  "
            f"{duration(s['lost_per_failure_hours'] * 3600):>12}  {s['lost_hours'] * a.gpus:15,.0f}"
        )
    waited = [r.runs.summary() for r in results if r.runs is not None and r.runs.waits is not None]
    if waited:
        waits = sum(s["waits"] for s in waited) / len(waited)
        hours = sum(s["waiting_hours"] for s in waited) / len(waited)
        lines.append(f"waits for a tray repair: {waits:.3g} a run, {duration(hours * 3600)} a run (intervals' mean)")
    return lines
