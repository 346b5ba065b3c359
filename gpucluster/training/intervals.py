"""Checkpoint intervals compared: Daly's complete model against the Monte Carlo simulation of the run."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from gpucluster.training.checkpoint import CheckpointAnalysis
from gpucluster.training.simulate import JobModel, Runs, SimulationRefused, simulate

DEFAULT_SEED = 20240721  # any fixed seed: the same design always gives the same figures
DALY_MULTIPLES = (0.25, 0.5, 1.0, 2.0, 4.0)  # intervals tried around Daly's optimum


@dataclass(frozen=True)
class IntervalResult:
    """One checkpoint interval: what the analytic model expects and what the simulation saw."""

    labels: tuple[str, ...]  # "Daly", "Young", "design", or empty
    interval_s: float
    goodput: float  # Daly's complete model
    loss_per_failure_s: float  # expected work thrown away per failure (analytic)
    runs: Runs | None  # None when the interval cannot run or be simulated
    not_simulated: str = ""  # why runs is None

    @property
    def label(self) -> str:
        return ", ".join(self.labels)


def job_model(a: CheckpointAnalysis, interval_s: float) -> JobModel:
    """The simulator's view of a plan's job at one interval."""
    return JobModel(
        interval_s=interval_s,
        stall_s=a.stall_s,
        restart_s=a.restart_s,
        failures_per_hour={k.kind: k.job_failures_per_hour for k in a.kinds},
        background_s=a.background_s,
        wait_probability=a.failover.p_wait if a.failover else 0.0,
        wait_s=a.failover.wait_s if a.failover else 0.0,
    )


def candidate_intervals(
    a: CheckpointAnalysis, minutes: list[float] | None = None
) -> list[tuple[float, tuple[str, ...]]]:
    """(interval, labels) in increasing order, each a whole number of steps: the given minutes, or
    multiples of Daly's optimum with Young's and the design's interval."""
    wanted: list[tuple[float, str]] = []
    if minutes:
        wanted += [(m * 60, "") for m in minutes]
    else:
        if math.isfinite(a.daly_s):
            wanted += [(a.daly_s * f, "Daly" if f == 1.0 else "") for f in DALY_MULTIPLES]
            wanted.append((a.young_s, "Young"))
        if a.interval_from == "design" or not math.isfinite(a.daly_s):
            wanted.append((a.interval_s, "design" if a.interval_from == "design" else ""))
    by_steps: dict[int, set[str]] = defaultdict(set)
    for seconds, label in wanted:
        by_steps[max(1, round(seconds / a.step.seconds))] |= {label} - {""}
    order = {"design": 0, "Daly": 1, "Young": 2}
    return [
        (steps * a.step.seconds, tuple(sorted(labels, key=order.__getitem__)))
        for steps, labels in sorted(by_steps.items())
    ]


def compare_intervals(
    a: CheckpointAnalysis,
    *,
    runs: int,
    days: float | None = None,
    minutes: list[float] | None = None,
    seed: int = DEFAULT_SEED,
) -> list[IntervalResult]:
    """Simulate ``runs`` runs of ``days`` (default the workload's run length) at each candidate interval."""
    horizon = (days or a.run_days) * 86400
    results = []
    for interval_s, labels in candidate_intervals(a, minutes):
        goodput = a.goodput_at(interval_s)
        loss = a.loss_per_failure_s(interval_s)
        try:
            model = job_model(a, interval_s)
        except ValueError:
            results.append(IntervalResult(labels, interval_s, goodput, loss, None, "background write too long"))
            continue
        try:
            simulated = simulate(model, runs, horizon_s=horizon, seed=seed)
        except SimulationRefused as refused:
            results.append(IntervalResult(labels, interval_s, goodput, loss, None, f"not simulated: {refused}"))
            continue
        results.append(IntervalResult(labels, interval_s, goodput, loss, simulated))
    return results
