"""The failure model and the checkpoint-interval formulas against published figures."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gpucluster import load_design, plan_design
from gpucluster.training import analyse_checkpoints
from gpucluster.training import reliability as rel

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("mtbf_h", "expected_min"), [(24, 117), (6, 57), (0.25, 9.1)])
def test_daly_interval_matches_dalys_published_validation_points(mtbf_h: float, expected_min: float) -> None:
    # Daly 2006 figure captions: T_s = 500 h, R = 10 min, delta = 5 min
    assert rel.daly_interval_s(5 * 60, mtbf_h * 3600) / 60 == pytest.approx(expected_min, rel=0.02)


def test_young_interval_is_sqrt_2_c_m() -> None:
    assert rel.young_interval_s(60, 3 * 3600) == pytest.approx(math.sqrt(2 * 60 * 3 * 3600))


def test_dalys_interval_is_near_the_numerical_optimum_of_his_complete_model() -> None:
    delta, restart, mtbf = 300.0, 600.0, 6 * 3600.0
    grid = [10 * i for i in range(1, 2000)]
    best = max(grid, key=lambda tau: rel.daly_efficiency(tau, delta, restart, mtbf))
    assert rel.daly_interval_s(delta, mtbf) == pytest.approx(best, rel=0.01)
    assert 0 < rel.daly_efficiency(best, delta, restart, mtbf) < 1


def test_expected_loss_per_failure_is_about_half_a_segment_when_failures_are_rare() -> None:
    assert rel.expected_loss_per_failure_s(3600, 60, 1e9) == pytest.approx(1830, rel=1e-3)
    assert rel.expected_loss_per_failure_s(3600, 60, 3600) < 1830


def test_spares_are_the_poisson_quantile_of_servers_in_repair() -> None:
    # mean in repair = 1000 servers x 0.8766 / year x 10 h / 8766 h = 1.0; P(N <= 2) = 0.920, P(N <= 3) = 0.981
    assert rel.spares_needed(1000, 0.8766, 10, 0.95) == 3
    assert rel.spares_needed(1000, 0.8766, 10, 0.90) == 2
    assert rel.spares_needed(1000, 0.0, 10, 0.99) == 0


def test_design_overrides_replace_one_rate_and_keep_the_other_defaults() -> None:
    kinds = {k.kind: k for k in rel.rates({"gpu": 8, "switch": 1}, {"gpu": 1.0, "switch": None})}
    assert kinds["gpu"].per_unit_year == 1.0 and kinds["gpu"].source.startswith("design")
    assert kinds["switch"].per_unit_year == rel.SWITCH_FAILURES_PER_YEAR


def test_default_rates_reproduce_llama3_interruptions_on_a_16384_gpu_plan() -> None:
    """The defaults are derived from Llama 3's 419 interruptions in 54 days on 16,384 H100; on this tool's
    16,384-GPU plan (the reference the network share was calibrated on) they give the same job MTBF."""
    plan = plan_design(load_design(ROOT / "bench" / "designs" / "h100-16384.yaml"))
    a = analyse_checkpoints(plan)
    units = {k.kind: k.units for k in a.kinds}
    assert units["switch"] == rel.REFERENCE_COMPUTE_SWITCHES
    assert units["nic_optics"] == rel.REFERENCE_NIC_OPTICS
    assert units["gpu"] == rel.LLAMA3_GPUS
    assert a.mtbf_s / 3600 == pytest.approx(54 * 24 / 419, rel=1e-3)  # 3.09 h
