"""Monte Carlo simulation of a training run with failures and checkpoints, vectorised over runs (numpy).

A run computes in segments: ``interval`` seconds of steps (load, compute, sync; the interval is a whole
number of steps), then a checkpoint that pauses the GPUs for ``stall`` seconds. An async checkpoint is
durable only ``background`` seconds after the pause. Failures arrive as a Poisson process per component
kind (the job stops on any of them); a failure throws away everything since the last durable checkpoint,
including a checkpoint being written, and the job restarts, which takes ``restart`` seconds and can
itself be interrupted by a failure. On a rack-scale system a failure may also leave the job waiting for a repair
before it restarts (``wait_probability``, ``wait_s``: no spare tray in the failed tray's rack and no spare rack,
gpucluster.training.reliability.TrayFailover); the wait is drawn per failure and counted apart.

Because failures are memoryless, the number of segments completed before the next failure is geometric
and the failure's offset in its segment a truncated exponential, so each loop iteration advances every
run by one whole failure cycle: a 90-day run of a 16,384-GPU job (about 700 failures) is about 700
vectorised steps, whatever the number of runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class JobModel:
    """The job as the simulator sees it (seconds; failure rates per hour by component kind)."""

    interval_s: float
    stall_s: float
    restart_s: float
    failures_per_hour: dict[str, float]
    background_s: float = 0.0
    wait_probability: float = 0.0  # a failure leaves the job waiting for a repair (rack-scale: no spare tray/rack)
    wait_s: float = 0.0  # how long it waits, on average (drawn exponential)

    def __post_init__(self) -> None:
        if self.interval_s <= 0 or self.stall_s < 0 or self.restart_s < 0 or self.background_s < 0:
            raise ValueError("interval must be positive; stall, restart and background not negative")
        if not 0 <= self.wait_probability <= 1 or self.wait_s < 0:
            raise ValueError("the wait probability must be within 0..1 and the wait not negative")
        if self.background_s >= self.interval_s + self.stall_s:
            raise ValueError("the background write outlasts the interval: checkpoints would queue")

    @property
    def rate_per_s(self) -> float:
        return sum(self.failures_per_hour.values()) / 3600.0


@dataclass(frozen=True)
class Runs:
    """Per-run results of a simulation (arrays over runs)."""

    model: JobModel
    wall_s: np.ndarray  # elapsed time (the horizon, or the time to finish the work)
    work_s: np.ndarray  # compute time kept in durable checkpoints (and, at the horizon, in a final one)
    lost_s: np.ndarray  # time thrown away by failures (compute and checkpoints since the last durable one)
    restart_s: np.ndarray  # time spent restarting
    checkpoint_s: np.ndarray  # GPU pauses for checkpoints that were kept
    failures: np.ndarray  # failures per run
    failures_by_kind: dict[str, np.ndarray]
    waiting_s: np.ndarray | None = None  # time spent waiting for a repair (rack-scale systems)
    waits: np.ndarray | None = None  # failures after which the job waited

    @property
    def goodput(self) -> np.ndarray:
        return self.work_s / self.wall_s

    def summary(self) -> dict[str, float]:
        """Means and the 95 % half-width of the mean goodput."""
        goodput = self.goodput
        n = len(goodput)
        failures = np.maximum(self.failures, 1)
        return {
            "runs": n,
            "goodput": float(goodput.mean()),
            "goodput_ci95": float(1.96 * goodput.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0,
            "failures": float(self.failures.mean()),
            "lost_hours": float(self.lost_s.mean() / 3600),
            "lost_per_failure_hours": float((self.lost_s / failures).mean() / 3600),
            "restart_hours": float(self.restart_s.mean() / 3600),
            "checkpoint_hours": float(self.checkpoint_s.mean() / 3600),
            "waits": float(self.waits.mean()) if self.waits is not None else 0.0,
            "waiting_hours": float(self.waiting_s.mean() / 3600) if self.waiting_s is not None else 0.0,
        }


MAX_FAILURE_CYCLES = 10_000  # failures per run the loop steps through (one vectorised step each)
MAX_RUN_CYCLES = 10_000_000  # failure cycles over all runs (each run is an element of every step's arrays)
MAX_RESTART_ATTEMPTS = 100.0  # mean restarts per failure (each interrupted restart is one more draw)


class SimulationRefused(ValueError):
    """The run would take the simulator too long to step through; the message says why."""


def check_work(model: JobModel, horizon_s: float | None, work_s: float | None, runs: int = 1) -> None:
    """Refuse a run the simulator cannot step through in seconds: its loop advances every run by one failure
    cycle per step, and a restart interrupted by failures is drawn again, so the work grows with the failures
    a run sees and with e^(rate x restart)."""
    rate = model.rate_per_s
    if rate <= 0:
        return
    restarts = math.exp(min(rate * model.restart_s, 700.0))
    if restarts > MAX_RESTART_ATTEMPTS:
        raise SimulationRefused(
            f"a restart of {model.restart_s / 60:,.0f} min is interrupted by failures {restarts - 1:,.3g} times "
            f"on average (job MTBF {1 / rate / 60:,.3g} min): the job never runs"
        )
    horizon = horizon_s if horizon_s is not None else (work_s or 0) / max(1e-9, 1 - rate * model.interval_s) * 2
    if not math.isfinite(horizon):
        raise SimulationRefused("the run has no finite length")
    cycles = horizon * rate
    most = min(MAX_FAILURE_CYCLES, MAX_RUN_CYCLES // max(runs, 1))
    if cycles > most:
        raise SimulationRefused(
            f"a run sees about {cycles:,.0f} failures; the simulator steps through at most {most:,} per run "
            f"at {runs:,} runs (shorten the run, lower the failure rates or simulate fewer runs)"
        )


def simulate(
    model: JobModel,
    runs: int,
    *,
    horizon_s: float | None = None,
    work_s: float | None = None,
    seed: int = 0,
) -> Runs:
    """Simulate ``runs`` independent runs, each until ``horizon_s`` of wall time has passed or ``work_s``
    of compute is checkpointed (whichever is given; with both, whichever comes first)."""
    if horizon_s is None and work_s is None:
        raise ValueError("give horizon_s or work_s")
    check_work(model, horizon_s, work_s, runs)
    rng = np.random.default_rng(seed)
    kinds = sorted(k for k, v in model.failures_per_hour.items() if v > 0)
    rate = model.rate_per_s
    weights = np.array([model.failures_per_hour[k] for k in kinds], dtype=float)
    segment = model.interval_s + model.stall_s
    horizon = math.inf if horizon_s is None else float(horizon_s)
    needed = math.inf if work_s is None else math.ceil(work_s / model.interval_s - 1e-9)

    t = np.zeros(runs)
    done = np.zeros(runs, dtype=np.int64)  # durable segments
    lost = np.zeros(runs)
    restarting = np.zeros(runs)
    failures = np.zeros(runs, dtype=np.int64)
    by_kind = np.zeros((len(kinds), runs), dtype=np.int64)
    tail_work = np.zeros(runs)
    tail_checkpoint = np.zeros(runs)
    waiting = np.zeros(runs)
    waits = np.zeros(runs, dtype=np.int64)
    may_wait = model.wait_probability > 0 and model.wait_s > 0
    active = np.arange(runs)

    p_fail = -math.expm1(-rate * segment)  # a segment is struck by a failure
    p_restart_ok = math.exp(-rate * model.restart_s)
    while active.size:
        n = active.size
        tt = t[active]
        # segments completed before the next failure (geometric), capped by the horizon and the work left
        successes = rng.geometric(p_fail, n) - 1 if p_fail > 0 else np.full(n, np.iinfo(np.int64).max // 4)
        room = np.floor((horizon - tt) / segment) if math.isfinite(horizon) else np.full(n, np.inf)
        left = needed - done[active] if math.isfinite(needed) else np.full(n, np.inf)
        limit = np.minimum(room, left)
        offset = _truncated_exponential(rng, rate, segment, n)  # where in its segment the failure strikes
        # the failure comes before the run ends: within the segments that fit, or in the last, partial one
        in_tail = (successes == room) & (room < left) & (tt + room * segment + offset < horizon)
        ending = (successes >= limit) & ~in_tail
        if ending.any():
            idx = active[ending]
            k = limit[ending].astype(np.int64)
            done[idx] += k
            finished = k == left[ending]
            t[idx] = np.where(finished, tt[ending] + k * segment, horizon)
            # the run ends at the horizon mid-segment and saves what it has computed since (a final checkpoint)
            tail = np.where(finished, 0.0, horizon - tt[ending] - k * segment)
            tail_work[idx] = np.minimum(tail, model.interval_s)
            tail_checkpoint[idx] = tail - tail_work[idx]
        going = ~ending
        idx = active[going]
        if idx.size:
            k = successes[going]
            done[idx] += k
            offset = offset[going]
            lost_now = offset.copy()
            if model.background_s > 0:
                # the checkpoint this segment started from was still being written: roll back one more
                undone = (k > 0) & (offset < model.background_s)
                done[idx] -= undone
                lost_now += undone * segment
            t[idx] += k * segment + offset
            lost[idx] += lost_now
            restart, extra = _restarts(rng, rate, model.restart_s, p_restart_ok, idx.size)
            t[idx] += restart
            restarting[idx] += restart - np.maximum(t[idx] - horizon, 0.0)  # a restart cut short by the horizon
            struck = 1 + extra
            failures[idx] += struck
            if kinds:
                draws = rng.choice(len(kinds), size=int(struck.sum()), p=weights / weights.sum())
                np.add.at(by_kind, (draws, np.repeat(idx, struck)), 1)
            if may_wait:  # the failures of this cycle that found no spare tray and no spare rack
                waited = rng.binomial(struck, model.wait_probability)
                hit = waited > 0
                if hit.any():
                    wait = np.zeros(idx.size)
                    wait[hit] = rng.gamma(waited[hit], model.wait_s)  # a sum of exponential waits
                    start = t[idx]
                    t[idx] += wait
                    waiting[idx] += np.clip(horizon - start, 0.0, wait)  # a wait cut short by the horizon
                    waits[idx] += waited
            over = t[idx] >= horizon
            t[idx[over]] = horizon
            active = idx[~over]
        else:
            active = idx
    return Runs(
        model=model,
        wall_s=t,
        work_s=done * model.interval_s + tail_work,
        lost_s=lost,
        restart_s=restarting,
        checkpoint_s=done * model.stall_s + tail_checkpoint,
        failures=failures,
        failures_by_kind={kind: by_kind[i] for i, kind in enumerate(kinds)},
        waiting_s=waiting if may_wait else None,
        waits=waits if may_wait else None,
    )


def _truncated_exponential(rng: np.random.Generator, rate: float, upper: float, n: int) -> np.ndarray:
    """Exponential(rate) draws conditioned on falling below ``upper`` (inverse transform)."""
    u = rng.random(n)
    return -np.log1p(u * np.expm1(-rate * upper)) / rate


def _restarts(
    rng: np.random.Generator, rate: float, restart_s: float, p_ok: float, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Time to restart successfully when failures can interrupt the restart itself, and the number of
    failures that did (a restart begins again after each)."""
    if restart_s == 0 or rate == 0:
        return np.zeros(n), np.zeros(n, dtype=np.int64)
    failed = rng.geometric(p_ok, n) - 1
    total = np.full(n, float(restart_s))
    pending = failed.copy()
    while pending.any():
        hit = pending > 0
        total[hit] += _truncated_exponential(rng, rate, restart_s, int(hit.sum()))
        pending[hit] -= 1
    return total, failed
