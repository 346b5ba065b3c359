"""Writers started on the physical plan while planning goes on (artifacts EARLY) when planning then stops: an
interrupt (Ctrl-C) or a failure in a later stage ends them at once, leaves no process behind and writes nothing."""

from __future__ import annotations

import os
import time

import pytest
from conftest import DESIGNS

import gpucluster.artifacts as artifacts
from gpucluster import load_design, pipeline, plan_design
from gpucluster.artifacts import Writing


def _slow_writer(plan, loaded, staging):
    (staging / "half-written.txt").write_text("partial")
    time.sleep(120)


@pytest.mark.parametrize("stop", [KeyboardInterrupt, MemoryError])
def test_planning_stopped_after_writers_started_ends_them_and_writes_nothing(tmp_path, monkeypatch, stop):
    loaded = load_design(DESIGNS / "lab-4-servers.yaml")
    forked: list[int] = []
    real_fork = os.fork

    def fork() -> int:
        pid = real_fork()
        if pid:
            forked.append(pid)
        return pid

    def later_stage(plan):
        raise stop()

    monkeypatch.setattr(os, "fork", fork)
    monkeypatch.setitem(artifacts.ARTIFACTS, "nccl", _slow_writer)
    monkeypatch.setattr(artifacts, "EARLY", ("nccl",))
    monkeypatch.setattr(artifacts, "LINKED", ())
    monkeypatch.setattr(pipeline, "totals", later_stage)
    out = tmp_path / "out"
    began = time.monotonic()
    with pytest.raises(stop), Writing(loaded.design.name, out, ["nccl", "summary"], jobs=2) as writing:
        plan_design(loaded, physical=lambda physical: writing.start_early(physical, loaded))
    assert time.monotonic() - began < 60  # the sleeping writer was ended, not waited for
    assert forked, "no writer was started early"
    for pid in forked:  # each reaped: none left running or as a zombie
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    assert not out.exists()
