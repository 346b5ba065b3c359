"""Hostile input: every case of the corpus (tests/hostile/) ends in exit status 2 with a located message (file and
line, or the field path), no traceback, nothing written and nothing quoted from a foreign file, within the
timeout under a 2 GiB address-space limit. Time and memory are measured (bench/hostile.py reports them); the
timeout only catches a hang."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "hostile"))

from corpus import SECRET, Case, case_names, prepare, run_case

pytestmark = pytest.mark.slow  # one `gpucluster build` process per case of the corpus

WHOLE_FILE = {"size-file-too-large"}  # a problem of the whole file names the file (no line to point at)
LOCATED = re.compile(r"\.(yaml|yml|csv|json):\d+:\d+: ")


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Case]:
    return {case.name: case for case in prepare(tmp_path_factory.mktemp("hostile"))}


@pytest.mark.parametrize("name", case_names())
def test_hostile_input_ends_in_a_located_error_and_writes_nothing(name: str, corpus: dict[str, Case], tmp_path):
    case = corpus[name]
    out = tmp_path / "out"
    outcome = run_case(case, out)
    output = outcome.stdout + outcome.stderr
    assert outcome.returncode is not None, f"{name}: still running after the timeout"
    assert outcome.returncode == 2, f"{name}: exit {outcome.returncode}\n{output[-3000:]}"
    assert "Traceback" not in output, output[-3000:]
    assert case.expect in outcome.stderr, f"{name}: expected {case.expect!r} in\n{outcome.stderr[:2000]}"
    lines = [line for line in outcome.stderr.splitlines() if line.lower().startswith("error: ")]
    assert lines, outcome.stderr
    if name.startswith("argv-") or name in WHOLE_FILE:
        assert str(case.design) in outcome.stderr
    else:
        assert LOCATED.search(lines[0]) or re.search(r"\.(yaml|csv): [a-z_]+(\.[a-z_0-9]+)*: ", lines[0]), lines[0]
    assert SECRET not in output
    assert not out.exists() or not any(out.iterdir()), f"{name}: wrote {sorted(out.rglob('*'))[:5]}"
    assert len(outcome.stderr) < 20_000, "an error message never echoes the input at length"


ABSURD_WORKLOAD = (
    "name: absurd\ncompute: {servers: 4}\n"
    "workload: {model_parameters_b: 70, run_days: 3650, restart_minutes: 1440,"
    " failure_rates: {gpu: 100, server: 100, software: 100}}\n"
)


def test_an_absurd_workload_builds_in_seconds_and_says_why_it_was_not_simulated(tmp_path):
    """Schema-valid but absurd: tens of thousands of failures per run. The analytic figures stand; the simulator
    refuses each interval with its reason instead of stepping through them for minutes."""
    design = tmp_path / "absurd.yaml"
    design.write_text(ABSURD_WORKLOAD, encoding="utf-8")
    out = tmp_path / "out"
    outcome = run_case(
        Case("absurd", design, ""), out, args=["build", str(design), "-o", str(out), "--only", "checkpoint"]
    )
    assert outcome.returncode == 0, outcome.stderr[-2000:]
    text = (out / "absurd" / "checkpoint.md").read_text(encoding="utf-8")
    assert "not simulated: a r" in text  # a run ... failures, or a restart ... interrupted: the reason


def test_simulate_refuses_more_work_than_it_can_do_with_the_reason(tmp_path):
    design = tmp_path / "absurd.yaml"
    design.write_text(ABSURD_WORKLOAD, encoding="utf-8")
    outcome = run_case(
        Case("absurd", design, ""),
        tmp_path / "out",
        args=["simulate", str(design), "--runs", "100000", "--days", "3650"],
    )
    assert outcome.returncode == 0, outcome.stderr[-2000:]
    assert "not simulated" in outcome.stdout and "Traceback" not in outcome.stderr
