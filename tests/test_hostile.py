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

WHOLE_FILE = {"size-file-too-large"}  # a problem of the whole file names the file (no line to point at)
LOCATED = re.compile(r"\.(yaml|yml|csv):\d+:\d+: ")


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
