"""Writers running in the pool when the build stops in the main process (an interrupt, Ctrl-C, or a failure there):
they end at once, no process is left behind and nothing is written."""

from __future__ import annotations

import os
import time

import pytest
from conftest import DESIGNS

import gpucluster.artifacts as artifacts
from gpucluster import load_design, plan_design
from gpucluster.artifacts import Artifact, Writing
from gpucluster.plan.model import AnalysedPlan


def _slow_writer(plan, loaded, staging):
    (staging / "half-written.txt").write_text("partial")
    time.sleep(120)


@pytest.mark.parametrize("stop", [KeyboardInterrupt, MemoryError])
def test_the_build_stopped_while_writers_run_ends_them_and_writes_nothing(tmp_path, monkeypatch, stop):
    loaded = load_design(DESIGNS / "lab-4-servers.yaml")
    plan = plan_design(loaded)
    forked: list[int] = []
    real_fork = os.fork

    def fork() -> int:
        pid = real_fork()
        if pid:
            forked.append(pid)
        return pid

    def main_process_work() -> None:  # runs once every job is handed out (the build writes its lock there)
        time.sleep(0.5)
        raise stop()

    monkeypatch.setattr(os, "fork", fork)
    monkeypatch.setitem(artifacts.ARTIFACTS, "nccl", Artifact(_slow_writer, AnalysedPlan))
    out = tmp_path / "out"
    began = time.monotonic()
    with pytest.raises(stop), Writing(loaded.design.name, out, ["nccl", "summary"], jobs=2) as writing:
        writing.finish(plan, loaded, main_process_work)
    assert time.monotonic() - began < 60  # the sleeping writer was ended, not waited for
    assert forked, "no writer process was started"
    for pid in forked:  # each reaped: none left running or as a zombie
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    assert not out.exists()
