"""checkpoint.md and the goodput-against-interval chart (PNG and SVG): the checkpoint analysis of the plan,
Daly's model and the simulation side by side."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from gpucluster.design.load import LoadedDesign
from gpucluster.formats.templating import render
from gpucluster.plan.model import AnalysedPlan
from gpucluster.training import analyse_checkpoints, compare_intervals
from gpucluster.training import reliability as rel
from gpucluster.training.checkpoint import ASYNC_STALL_S, REPAIR_SOURCE, RESTART_SOURCE, CheckpointAnalysis
from gpucluster.training.intervals import DEFAULT_SEED, IntervalResult
from gpucluster.training.report import duration

BUILD_RUNS = 200  # simulated runs per interval in every build (gpucluster simulate runs more)
CHART = "checkpoint-goodput"
CHECKPOINT_RULES = ("rule:workload-fits-plan", "rule:checkpoint-write-time", "rule:spares-cover-repairs")


def write(plan: AnalysedPlan, loaded: LoadedDesign, folder: Path) -> None:
    a = analyse_checkpoints(plan)
    results = compare_intervals(a, runs=BUILD_RUNS, seed=DEFAULT_SEED)
    text = render(
        "checkpoint.md.j2",
        name=plan.name,
        a=a,
        w=a.workload,
        rows=_rows(a, results),
        kinds=[
            {
                "label": rel.KIND_LABELS[k.kind],
                "units": f"{k.units:,}",
                "rate": f"{k.per_unit_year:.4g}",
                "per_day": f"{k.job_failures_per_hour * 24:.3f}",
                "share": f"{k.job_failures_per_hour * a.mtbf_s / 3600:.1%}" if math.isfinite(a.mtbf_s) else "-",
                "source": k.source,
            }
            for k in a.kinds
        ],
        limits=lambda path: [{"name": x.name, "rate": f"{x.gbytes_per_s:,.1f}", "note": x.note} for x in path.limits],
        d=duration,
        tb=lambda nbytes: f"{nbytes / 1e12:,.2f} TB",
        findings=[f for f in plan.findings if f.rule in CHECKPOINT_RULES],
        runs=BUILD_RUNS,
        seed=DEFAULT_SEED,
        chart=CHART,
        async_stall=ASYNC_STALL_S,
        restart_source=RESTART_SOURCE,
        repair_source=REPAIR_SOURCE,
        server_rate=f"{a.server_failures_per_year:.3f}",
    )
    (folder / "checkpoint.md").write_text(text, encoding="utf-8")
    _chart(plan.name, a, results, folder)


def _rows(a: CheckpointAnalysis, results: list[IntervalResult]) -> list[dict[str, Any]]:
    rows = []
    for r in results:
        row = {
            "interval": duration(r.interval_s),
            "label": r.label,
            "daly": f"{r.goodput:.2%}",
            "loss": duration(r.loss_per_failure_s),
        }
        if r.runs is None:
            row |= {"sim": r.not_simulated, "failures": "-", "lost_gpu_h": "-"}
        else:
            s = r.runs.summary()
            row |= {
                "sim": f"{s['goodput']:.2%} ± {s['goodput_ci95']:.2%}",
                "failures": f"{s['failures']:.1f}",
                "lost_gpu_h": f"{s['lost_hours'] * a.gpus:,.0f}",
            }
        rows.append(row)
    return rows


def _chart(name: str, a: CheckpointAnalysis, results: list[IntervalResult], folder: Path) -> None:
    """Daly's goodput curve over the interval, the simulated means with 95 % intervals, and the optima; hash salt
    and metadata fixed so the same plan gives the same bytes."""
    with matplotlib.rc_context({"svg.hashsalt": "gpucluster", "svg.fonttype": "path", "font.size": 9}):
        figure = Figure(figsize=(7.5, 4.2), dpi=120)
        axes = figure.add_subplot()
        low = min(r.interval_s for r in results) / 2
        high = max(r.interval_s for r in results) * 2
        x = np.geomspace(low, high, 200)
        axes.plot(x / 60, [100 * a.goodput_at(v) for v in x], color="#1f77b4", label="Daly's complete model")
        simulated = [(r.interval_s / 60, r.runs.summary()) for r in results if r.runs is not None]
        if simulated:
            axes.errorbar(
                [minutes for minutes, _s in simulated],
                [100 * s["goodput"] for _m, s in simulated],
                yerr=[100 * s["goodput_ci95"] for _m, s in simulated],
                fmt="o",
                color="#d62728",
                capsize=3,
                label=f"simulated ({BUILD_RUNS} runs of {a.run_days:.3g} days, 95 % CI)",
            )
        marks = [("Young", a.young_s, ":"), ("Daly", a.daly_s, "--")]
        if a.interval_from == "design":
            marks.append(("design", a.interval_s, "-."))
        for label, seconds, style in marks:
            if math.isfinite(seconds):
                axes.axvline(
                    seconds / 60, color="#555555", linestyle=style, linewidth=1, label=f"{label} {duration(seconds)}"
                )
        axes.set_xscale("log")
        axes.set_xlabel("checkpoint interval (minutes of compute between checkpoints)")
        axes.set_ylabel("goodput (%)")
        workload = f"{a.workload.model_parameters_b:g}B" + (" (assumed)" if a.assumed else "")
        axes.set_title(
            f"{name}: {workload}, {a.gpus:,} GPUs, MTBF {duration(a.mtbf_s)}, "
            f"checkpoint pause {duration(a.stall_s)}, restart {duration(a.restart_s)}",
            fontsize=9,
        )
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(loc="lower center", fontsize=8)
        figure.tight_layout()
        figure.savefig(folder / f"{CHART}.svg", format="svg", metadata={"Date": None})
        figure.savefig(folder / f"{CHART}.png", format="png", metadata={"Software": None})
