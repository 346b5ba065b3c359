"""simulation.html: a self-contained page that replays a training run on the plan (a node failing, the job rolling
back to its last checkpoint) at the checkpoint interval the reader picks: one seeded sequence of failures from the
plan's rates, replayed with the Python simulator's rules (gpucluster/training/simulate.py).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from gpucluster.design.load import LoadedDesign
from gpucluster.formats.templating import render
from gpucluster.plan.model import PhysicalPlan, Plan
from gpucluster.training import analyse_checkpoints
from gpucluster.training import reliability as rel
from gpucluster.training.checkpoint import CheckpointAnalysis
from gpucluster.training.intervals import DEFAULT_SEED
from gpucluster.training.report import duration

MAX_SERVER_NAMES = 4096  # beyond this the page names failed servers by number
# The page draws each compute and checkpoint piece of the run: its shortest interval keeps them below this.
MAX_TIMELINE_SEGMENTS = 5000


def write(plan: PhysicalPlan, loaded: LoadedDesign, folder: Path) -> None:
    a = analyse_checkpoints(plan)
    text = render(
        "simulation.html.j2",
        name=plan.name,
        assumed=a.assumed,
        model_b=f"{a.workload.model_parameters_b:g}",
        params=page_parameters(plan, a),
        horizon=duration(a.run_days * 86400),
        horizon_from=a.run_days_from,
    )
    (folder / "simulation.html").write_text(text, encoding="utf-8")


def page_parameters(plan: Plan, a: CheckpointAnalysis) -> dict[str, Any]:
    """The plain data the page's script replays (JSON inside the page)."""
    servers = [d.name for d in plan.gpu_nodes() if not d.spare]
    leaves = sorted(d.name for d in plan.switches("compute", 1))
    spines = sorted(d.name for d in plan.switches("compute", 2))
    storage = sorted(
        d.name for d in plan.devices.values() if plan.settings.is_parallel_filesystem_device(d.name, d.role)
    )
    horizon = a.run_days * 86400  # the run checkpoint.md simulates
    low = max(a.step.seconds, min(a.interval_s, a.daly_s) / 16, horizon / MAX_TIMELINE_SEGMENTS)
    high = min(max(a.interval_s, a.daly_s) * 16, horizon / 2)
    return {
        "seed": DEFAULT_SEED,
        "gpus": a.gpus,
        "servers": a.servers,
        "gpus_per_server": a.gpus_per_server,
        "server_names": servers[:MAX_SERVER_NAMES],
        "leaves": leaves[:8],
        "spines": spines[:4],
        "storage_names": storage[:4],
        "storage_label": plan.settings.parallel_filesystem_label(),
        "fabric_label": f"{len(plan.switches('compute'))} x {plan.settings.compute_switch}",
        "kinds": [
            {"kind": k.kind, "label": rel.KIND_LABELS[k.kind], "per_hour": k.job_failures_per_hour}
            for k in a.kinds
            if k.job_failures_per_hour > 0
        ],
        "step": {"load": a.step.load_s, "compute": a.step.compute_s, "sync": a.step.sync_s},
        "step_s": a.step.seconds,
        "stall_s": a.stall_s,
        "background_s": a.background_s,
        "restart_s": a.recovery_s,  # with a rack-scale job's mean wait for a repair, as the goodput counts it
        "write_s": a.write_s,
        "bottleneck": a.write.bottleneck.name,
        "checkpoint_tb": a.checkpoint_bytes / 1e12,
        "mtbf_s": a.mtbf_s if math.isfinite(a.mtbf_s) else 1e300,
        "young_s": a.young_s if math.isfinite(a.young_s) else 1e300,
        "daly_s": a.daly_s if math.isfinite(a.daly_s) else 1e300,
        "interval_s": min(max(a.interval_s, low), high),
        "interval_from_text": "The design's interval." if a.interval_from == "design" else "Starts at Daly's optimum.",
        "interval_min_s": low,
        "interval_max_s": max(high, low * 2),
        "horizon_s": horizon,
        "horizon_from": a.run_days_from,
    }
