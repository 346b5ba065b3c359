"""Monte Carlo simulation of a training run with failures and checkpoints, vectorised over runs (numpy).

A run computes in segments of ``interval`` seconds, each followed by a checkpoint pause of ``stall`` seconds (an
async checkpoint is durable ``background`` seconds later). A failure throws away everything since the last durable
checkpoint and the job restarts (a restart can itself fail; on a rack-scale system the job may first wait for a
repair, counted apart). Failures are memoryless, so the segments before the next one are geometric and its offset
a truncated exponential: each loop iteration advances every run by one whole failure cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


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
    wall_s: npt.NDArray[np.float64]  # elapsed time (the horizon, or the time to finish the work)
    work_s: npt.NDArray[np.float64]  # compute time kept in durable checkpoints (and, at the horizon, in a final one)
    lost_s: np.ndarray  # time thrown away by failures (compute and checkpoints since the last durable one)
    restart_s: np.ndarray  # time spent restarting
    checkpoint_s: np.ndarray  # GPU pauses for checkpoints that were kept
    failures: np.ndarray  # failures per run
    failures_by_kind: dict[str, np.ndarray]
    waiting_s: np.ndarray | None = None  # time spent waiting for a repair (rack-scale systems)
    waits: np.ndarray | None = None  # failures after which the job waited

    @property
    def goodput(self) -> npt.NDArray[np.float64]:
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
    """Refuse a run the simulator cannot step through in seconds: the work grows with the failures a run sees and
    with e^(rate x restart) (an interrupted restart is drawn again)."""
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
    segment = model.interval_s + model.stall_s
    horizon = math.inf if horizon_s is None else float(horizon_s)
    needed = math.inf if work_s is None else math.ceil(work_s / model.interval_s - 1e-9)
    tally = _Tally.of(runs, len(kinds))
    may_wait = model.wait_probability > 0 and model.wait_s > 0
    active = np.arange(runs)
    p_fail = -math.expm1(-model.rate_per_s * segment)  # a segment is struck by a failure
    while active.size:
        n = active.size
        tt = tally.t[active]
        # segments completed before the next failure (geometric), capped by the horizon and the work left
        successes = rng.geometric(p_fail, n) - 1 if p_fail > 0 else np.full(n, np.iinfo(np.int64).max // 4)
        room = np.floor((horizon - tt) / segment) if math.isfinite(horizon) else np.full(n, np.inf)
        left = needed - tally.done[active] if math.isfinite(needed) else np.full(n, np.inf)
        limit = np.minimum(room, left)
        offset = _truncated_exponential(rng, model.rate_per_s, segment, n)  # where in its segment the failure strikes
        # the failure comes before the run ends: within the segments that fit, or in the last, partial one
        in_tail = (successes == room) & (room < left) & (tt + room * segment + offset < horizon)
        ending = (successes >= limit) & ~in_tail
        if ending.any():
            _end(tally, model, active[ending], tt[ending], limit[ending].astype(np.int64), left[ending], horizon)
        going = ~ending
        idx = active[going]
        if idx.size:
            _strike(tally, model, rng, idx, successes[going], offset[going], kinds, horizon)
            over = tally.t[idx] >= horizon
            tally.t[idx[over]] = horizon
            active = idx[~over]
        else:
            active = idx
    return Runs(
        model=model,
        wall_s=tally.t,
        work_s=tally.done * model.interval_s + tally.tail_work,
        lost_s=tally.lost,
        restart_s=tally.restarting,
        checkpoint_s=tally.done * model.stall_s + tally.tail_checkpoint,
        failures=tally.failures,
        failures_by_kind={kind: tally.by_kind[i] for i, kind in enumerate(kinds)},
        waiting_s=tally.waiting if may_wait else None,
        waits=tally.waits if may_wait else None,
    )


@dataclass
class _Tally:
    """Each run's clock and what it has spent so far, one array element per run."""

    t: np.ndarray  # wall time
    done: np.ndarray  # durable segments
    lost: np.ndarray  # work lost to failures
    restarting: np.ndarray
    failures: np.ndarray
    by_kind: np.ndarray  # failures per kind (kinds x runs)
    tail_work: np.ndarray  # work in the final, partial segment of a run ended by the horizon
    tail_checkpoint: np.ndarray
    waiting: np.ndarray  # waiting for a spare after a failure
    waits: np.ndarray

    @classmethod
    def of(cls, runs: int, kinds: int) -> _Tally:
        """Every run at time 0 with nothing spent."""
        return cls(
            np.zeros(runs),
            np.zeros(runs, dtype=np.int64),
            np.zeros(runs),
            np.zeros(runs),
            np.zeros(runs, dtype=np.int64),
            np.zeros((kinds, runs), dtype=np.int64),
            np.zeros(runs),
            np.zeros(runs),
            np.zeros(runs),
            np.zeros(runs, dtype=np.int64),
        )


def _end(
    tally: _Tally, model: JobModel, idx: np.ndarray, tt: np.ndarray, k: np.ndarray, left: np.ndarray, horizon: float
) -> None:
    """The runs at idx end before their next failure: their work is done after k more segments, or the horizon
    comes mid-segment and they save what they have computed since (a final checkpoint)."""
    segment = model.interval_s + model.stall_s
    tally.done[idx] += k
    finished = k == left
    tally.t[idx] = np.where(finished, tt + k * segment, horizon)
    tail = np.where(finished, 0.0, horizon - tt - k * segment)
    tally.tail_work[idx] = np.minimum(tail, model.interval_s)
    tally.tail_checkpoint[idx] = tail - tally.tail_work[idx]


def _strike(
    tally: _Tally,
    model: JobModel,
    rng: np.random.Generator,
    idx: np.ndarray,
    k: np.ndarray,
    offset: np.ndarray,
    kinds: list[str],
    horizon: float,
) -> None:
    """The runs at idx complete k segments and fail `offset` into the next, lose that work, restart and may wait for
    a spare. The random draws come in a fixed order, so a seed gives the same runs."""
    segment = model.interval_s + model.stall_s
    tally.done[idx] += k
    lost_now = offset.copy()
    if model.background_s > 0:
        # the checkpoint this segment started from was still being written: roll back one more
        undone = (k > 0) & (offset < model.background_s)
        tally.done[idx] -= undone
        lost_now += undone * segment
    tally.t[idx] += k * segment + offset
    tally.lost[idx] += lost_now
    rate = model.rate_per_s
    restart, extra = _restarts(rng, rate, model.restart_s, math.exp(-rate * model.restart_s), idx.size)
    tally.t[idx] += restart
    tally.restarting[idx] += restart - np.maximum(tally.t[idx] - horizon, 0.0)  # a restart cut short by the horizon
    struck = 1 + extra
    tally.failures[idx] += struck
    if kinds:
        weights = np.array([model.failures_per_hour[kind] for kind in kinds], dtype=float)
        draws = rng.choice(len(kinds), size=int(struck.sum()), p=weights / weights.sum())
        np.add.at(tally.by_kind, (draws, np.repeat(idx, struck)), 1)
    if model.wait_probability > 0 and model.wait_s > 0:  # the failures of this cycle that found no spare
        waited = rng.binomial(struck, model.wait_probability)
        hit = waited > 0
        if hit.any():
            wait = np.zeros(idx.size)
            wait[hit] = rng.gamma(waited[hit], model.wait_s)  # a sum of exponential waits
            start = tally.t[idx]
            tally.t[idx] += wait
            tally.waiting[idx] += np.clip(horizon - start, 0.0, wait)  # a wait cut short by the horizon
            tally.waits[idx] += waited


def _truncated_exponential(rng: np.random.Generator, rate: float, upper: float, n: int) -> npt.NDArray[np.float64]:
    """Exponential(rate) draws conditioned on falling below ``upper`` (inverse transform)."""
    u = rng.random(n)
    draws: npt.NDArray[np.float64] = -np.log1p(u * np.expm1(-rate * upper)) / rate  # numpy types ufuncs' results Any
    return draws


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
