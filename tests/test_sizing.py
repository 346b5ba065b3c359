"""Sizing from a workload (6·N·D) and the starter design `gpucluster size` writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gpucluster import load_design
from gpucluster.catalog.load import load_catalog
from gpucluster.cli import main
from gpucluster.design.schema import Workload
from gpucluster.training import size
from gpucluster.training.model import gpu_days, training_flops


def test_llama3_405b_needs_its_published_compute() -> None:
    # 405B x 15.6T tokens: 6ND = 3.79e25 FLOPs; 62.9-71.2 days on 16,384 H100 at 43-38 % MFU (arXiv:2407.21783)
    workload = Workload(model_parameters_b=405, training_tokens_b=15_600)
    flops = training_flops(workload)
    assert flops == pytest.approx(3.79e25, rel=0.01)
    assert gpu_days(flops, 989.4, 0.43) / 16_384 == pytest.approx(62.9, rel=0.01)
    assert gpu_days(flops, 989.4, 0.38) / 16_384 == pytest.approx(71.2, rel=0.01)


def test_sizing_rounds_up_to_whole_servers_that_meet_the_target() -> None:
    workload = Workload(model_parameters_b=70, training_tokens_b=2000, target_days=30, mfu=0.4)
    s = size(load_catalog(), "dgx-h100", workload)
    assert s.gpus_needed == 910  # 8.4e23 / (989.4e12 x 0.4 x 0.9) = 27,295 GPU-days / 30 days
    assert s.servers == 114 and s.gpus == 912
    assert s.days_on_servers <= 30


def test_fp8_doubles_the_peak_and_halves_the_gpus() -> None:
    catalog = load_catalog()
    bf16 = size(catalog, "dgx-b200", Workload(model_parameters_b=70, training_tokens_b=2000, target_days=30))
    fp8 = size(
        catalog, "dgx-b200", Workload(model_parameters_b=70, training_tokens_b=2000, target_days=30, precision="fp8")
    )
    assert fp8.peak_tflops == 2 * bf16.peak_tflops == 4500
    assert fp8.gpus_needed == pytest.approx(bf16.gpus_needed / 2, abs=1)


def test_size_writes_a_starter_design_that_loads(tmp_path: Path) -> None:
    out = tmp_path / "starter.yaml"
    result = CliRunner().invoke(
        main,
        ["size", "--parameters-b", "8", "--tokens-b", "300", "--days", "10", "--server", "dgx-h200", "-o", str(out)],
    )
    assert result.exit_code == 0, result.output
    assert "6·N·D" in result.output and f"wrote {out}" in result.output
    design = load_design(out).design
    assert (
        design.compute.server == "dgx-h200" and design.compute.servers == 6
    )  # 1.44e22 FLOPs: 468 GPU-days / 10 days = 47 GPUs
    assert design.workload is not None and design.workload.training_tokens_b == 300


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--mfu", "2"], "error: --mfu"),
        (["--server", "dgx-h1000"], "unknown GPU server or rack-scale system 'dgx-h1000'"),
    ],
)
def test_size_rejects_bad_input_with_exit_2(tmp_path: Path, args: list[str], words: str) -> None:
    base = ["size", "--parameters-b", "8", "--tokens-b", "300", "--days", "10", "-o", str(tmp_path / "x.yaml")]
    result = CliRunner().invoke(main, base + args)
    assert result.exit_code == 2 and words in result.output
    assert not (tmp_path / "x.yaml").exists()


def test_a_problem_of_the_starter_design_is_told_of_what_the_user_gave_not_a_temporary_file(tmp_path):
    from gpucluster import plan_design
    from gpucluster.errors import DesignError
    from gpucluster.training.starter import _plan_text

    def plan_file(path: str):
        return plan_design(load_design(path))

    with pytest.raises(DesignError) as error:
        _plan_text("name: x\ncompute: {servers: 4}\nsite: {rows: -1}\n", tmp_path, "from.yaml", plan_file)
    assert [p.file for p in error.value.problems] == ["from.yaml"] * len(error.value.problems)
    assert str(error.value.problems[0]).startswith("from.yaml: site")
    assert list(tmp_path.iterdir()) == []
