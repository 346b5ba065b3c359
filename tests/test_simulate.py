"""The Monte Carlo run simulator agrees with Daly's complete model within sampling error."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpucluster.training import reliability as rel
from gpucluster.training.simulate import JobModel, simulate

CASES = [
    # (interval s, checkpoint s, restart s, MTBF s): near-optimal, long checkpoints, restarts that fail often
    (1116.0, 60.0, 900.0, 3.09 * 3600),
    (3600.0, 600.0, 300.0, 4 * 3600),
    (600.0, 30.0, 3600.0, 2 * 3600),
]


@pytest.mark.parametrize(("tau", "delta", "restart", "mtbf"), CASES)
def test_time_to_finish_fixed_work_agrees_with_daly_within_sampling_error(
    tau: float, delta: float, restart: float, mtbf: float
) -> None:
    work = 500 * tau
    runs = simulate(JobModel(tau, delta, restart, {"gpu": 3600 / mtbf}), 2000, work_s=work, seed=11)
    expected = work / rel.daly_efficiency(tau, delta, restart, mtbf)
    standard_error = runs.wall_s.std(ddof=1) / math.sqrt(runs.wall_s.size)
    assert abs(runs.wall_s.mean() - expected) < 4 * standard_error
    assert np.all(runs.work_s == 500 * tau)


@pytest.mark.parametrize(("tau", "delta", "restart", "mtbf"), CASES)
def test_goodput_over_a_fixed_run_agrees_with_daly_within_sampling_error(
    tau: float, delta: float, restart: float, mtbf: float
) -> None:
    runs = simulate(JobModel(tau, delta, restart, {"gpu": 3600 / mtbf}), 1000, horizon_s=60 * 86400, seed=5)
    s = runs.summary()
    expected = rel.daly_efficiency(tau, delta, restart, mtbf)
    assert abs(s["goodput"] - expected) < 2 * s["goodput_ci95"] + 0.001  # 4 standard errors + end effects
    assert s["failures"] == pytest.approx(60 * 86400 / mtbf, rel=0.02)


def test_every_second_of_a_run_is_work_checkpoint_lost_work_or_restart() -> None:
    model = JobModel(1800.0, 120.0, 600.0, {"gpu": 0.5, "switch": 0.1}, background_s=0.0)
    for kwargs in ({"horizon_s": 10 * 86400}, {"work_s": 50 * 1800.0}):
        runs = simulate(model, 300, seed=1, **kwargs)
        assert np.allclose(runs.wall_s, runs.work_s + runs.checkpoint_s + runs.lost_s + runs.restart_s)


def test_same_seed_same_runs_other_seed_other_runs() -> None:
    model = JobModel(1800.0, 60.0, 600.0, {"gpu": 0.3})
    a, b = (simulate(model, 100, horizon_s=30 * 86400, seed=3) for _ in range(2))
    c = simulate(model, 100, horizon_s=30 * 86400, seed=4)
    assert np.array_equal(a.work_s, b.work_s) and np.array_equal(a.failures, b.failures)
    assert not np.array_equal(a.work_s, c.work_s)


def test_failures_are_shared_among_component_kinds_by_their_rates() -> None:
    runs = simulate(JobModel(3600.0, 60.0, 600.0, {"gpu": 0.3, "switch": 0.1}), 500, horizon_s=30 * 86400, seed=2)
    gpu, switch = runs.failures_by_kind["gpu"].sum(), runs.failures_by_kind["switch"].sum()
    assert gpu + switch == runs.failures.sum()
    assert gpu / (gpu + switch) == pytest.approx(0.75, abs=0.01)


def test_a_failure_during_an_async_write_loses_that_checkpoint_too() -> None:
    base = dict(interval_s=1800.0, stall_s=1.0, restart_s=600.0, failures_per_hour={"gpu": 0.5})
    blocking_like = simulate(JobModel(**base), 2000, horizon_s=20 * 86400, seed=9)
    with_window = simulate(JobModel(**base, background_s=900.0), 2000, horizon_s=20 * 86400, seed=9)
    extra = (
        with_window.lost_s.sum() / with_window.failures.sum()
        - blocking_like.lost_s.sum() / blocking_like.failures.sum()
    )
    # a failure lands within 900 s of a completed checkpoint about half the time: about 900 s more lost on average
    assert 600 < extra < 1200


def test_a_background_write_longer_than_the_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="queue"):
        JobModel(600.0, 1.0, 60.0, {"gpu": 1.0}, background_s=700.0)
