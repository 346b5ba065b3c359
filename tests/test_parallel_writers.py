"""Writers run side by side in one pool of forked processes give the same files as one after another, and a worker's
failure fails the build as it would in one process: its error, nothing half-written."""

from __future__ import annotations

import gc
import os
import time

import pytest
from click.testing import CliRunner
from conftest import DESIGNS

import gpucluster.artifacts as artifacts
from gpucluster import load_design, plan_design, write_artifacts
from gpucluster.artifacts import Artifact, registry
from gpucluster.artifacts.pool import WriterFailed
from gpucluster.cli import main
from gpucluster.errors import DesignError, Problem
from gpucluster.plan.model import AnalysedPlan
from gpucluster.runtime.profiling import Cost


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def lab():
    loaded = load_design(DESIGNS / "lab-4-servers.yaml")
    return loaded, plan_design(loaded)


@pytest.mark.slow
def test_writers_in_workers_write_the_same_bytes_as_in_one_process(lab, tmp_path):
    loaded, plan = lab
    names = [name for name in artifacts.ARTIFACTS if name not in ("printouts", "report")]
    serial = write_artifacts(plan, loaded, tmp_path / "serial", names, jobs=1)
    costs: list[Cost] = []
    parallel = write_artifacts(plan, loaded, tmp_path / "parallel", names, jobs=3, costs=costs)
    assert _files(serial) == _files(parallel)
    jobs = [c for c in costs if c.kind == "writer"]
    assert sorted({c.name.split(":")[0] for c in jobs}) == sorted(names)
    assert {c.name for c in jobs} >= {"cabling:csv", "cabling:compute", "power:workbook", "power:chart"}
    assert {c.process for c in costs} == {"worker"}
    assert all(c.seconds > 0 and c.peak_rss_mib > 0 for c in jobs)


def _pid_and_frozen(plan, loaded, staging):
    (staging / f"{os.getpid()}.{len(list(staging.iterdir()))}").write_text(str(gc.get_freeze_count() > 0))


def test_the_pool_runs_job_after_job_in_at_most_jobs_processes_each_keeping_the_plan_frozen(lab, tmp_path):
    """One pool of `jobs` forked processes for every writer: the plan was moved out of the cycle collector's reach
    before the fork, so a collection in a worker does not touch (and copy) the plan's pages."""
    loaded, plan = lab
    names = [f"probe{index}" for index in range(6)]
    with pytest.MonkeyPatch.context() as patch:
        for name in names:
            patch.setitem(artifacts.ARTIFACTS, name, Artifact(_pid_and_frozen, AnalysedPlan))
        folder = write_artifacts(plan, loaded, tmp_path, names, jobs=2)
    marks = list(folder.iterdir())
    assert len(marks) == 6 and {mark.read_text() for mark in marks} == {"True"}
    pids = {int(mark.name.split(".")[0]) for mark in marks}
    assert 1 <= len(pids) <= 2 and os.getpid() not in pids


def _sigterm_action(plan, loaded, staging):
    import signal

    (staging / "sigterm.txt").write_text(str(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL))


def test_the_pools_processes_take_sigterms_default_action(lab, tmp_path):
    """The pool's processes are forks of the build, whose SIGTERM handler raises to unwind; where that raise is lost
    (in a finalizer) a pool process blocked for ever on its task queue and the build waited for it: default action."""
    import signal

    loaded, plan = lab
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)  # as the build's handler is installed
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setitem(artifacts.ARTIFACTS, "probe", Artifact(_sigterm_action, AnalysedPlan))
            folder = write_artifacts(plan, loaded, tmp_path, ["probe", "summary"], jobs=2)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert (folder / "sigterm.txt").read_text() == "True"


@pytest.mark.parametrize("kept", [False, True])
def test_writers_side_by_side_leave_a_kept_plan_frozen_and_any_other_as_it_was(lab, tmp_path, kept):
    """A command's plan is frozen for the life of the process (pipeline.plan_design's `kept`): the writers keep it so,
    or the cycle collector walks all of it again when the process ends; a library caller's objects are let go."""
    loaded, plan = lab
    gc.unfreeze()
    try:
        if kept:
            gc.freeze()
        write_artifacts(plan, loaded, tmp_path, ["plan", "nccl"], jobs=2)
        assert (gc.get_freeze_count() > 0) is kept
    finally:
        gc.unfreeze()


def test_the_writers_that_read_the_others_files_run_after_them(lab, tmp_path):
    loaded, plan = lab
    seen = {}

    def gather(plan, loaded, staging):
        seen["files"] = sorted(p.name for p in staging.iterdir())
        (staging / "gathered.txt").write_text("\n".join(seen["files"]))

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(artifacts.ARTIFACTS, "gather", Artifact(gather, AnalysedPlan))
        patch.setattr(registry, "RUNS_LAST", frozenset({"gather"}))
        folder = write_artifacts(plan, loaded, tmp_path, ["gather", "plan", "summary", "nccl"], jobs=2)
    assert (folder / "gathered.txt").read_text().splitlines() == ["launch", "nccl", "plan.json", "summary.md"]


_MAIN_PID = os.getpid()


def _prepare_counts(plan, loaded):
    return {"racks": len(plan.racks), "pid": os.getpid()}


def _write_counts(plan, loaded, staging, prepared=None):
    counts = prepared or _prepare_counts(plan, loaded)
    (staging / "seen.txt").write_text(f"{counts['racks']} {counts['pid'] != _MAIN_PID}")  # prepared in a worker?


@pytest.mark.parametrize("jobs", [1, 2])
def test_what_a_last_writers_prepare_job_returns_reaches_its_write(lab, tmp_path, jobs):
    """The report prepares its views beside the other writers (artifacts.PREPARED): the prepare job's value comes
    back from its worker and is handed to the write, in another worker; one after another, the write makes it."""
    loaded, plan = lab
    module = type(os)("counts_writer")
    module.prepare, module.write = _prepare_counts, _write_counts
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(__import__("sys").modules, "counts_writer", module)
        patch.setitem(artifacts.ARTIFACTS, "counts", Artifact("counts_writer", AnalysedPlan))
        patch.setattr(registry, "RUNS_LAST", frozenset({"counts"}))
        patch.setattr(registry, "PREPARED", frozenset({"counts"}))
        folder = write_artifacts(plan, loaded, tmp_path, ["counts", "summary"], jobs=jobs)
    assert (folder / "seen.txt").read_text() == f"{len(plan.racks)} {jobs > 1}"


def _broken(plan, loaded, staging):
    (staging / "half-written.txt").write_text("partial")
    raise RuntimeError("disk full")


def _bad_input(plan, loaded, staging):
    raise DesignError([Problem("prices.csv", 3, 1, "unit_price", "not a number")])


def _killed(plan, loaded, staging):
    os.kill(os.getpid(), 9)


def _unpicklable(plan, loaded, staging):
    class Local(Exception):
        pass

    raise Local("a local exception class")


@pytest.mark.parametrize(
    ("failing", "error", "says"),
    [
        (_broken, RuntimeError, "disk full"),
        (_bad_input, DesignError, "prices.csv:3:1: unit_price: not a number"),
        (_killed, WriterFailed, "its worker ended without a result (killed, or out of memory?)"),
        (_unpicklable, WriterFailed, "a local exception class"),
    ],
)
def test_a_writer_failing_in_a_worker_fails_the_build_and_leaves_the_previous_output(
    lab, tmp_path, failing, error, says
):
    loaded, plan = lab
    folder = write_artifacts(plan, loaded, tmp_path, ["plan", "summary"], jobs=2)
    before = _files(folder)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(artifacts.ARTIFACTS, "failing", Artifact(failing, AnalysedPlan))
        with pytest.raises(error) as raised:
            write_artifacts(plan, loaded, tmp_path, ["plan", "failing", "summary", "nccl"], jobs=2)
    assert says in str(raised.value)
    assert error is not WriterFailed or "failing" in str(raised.value).split(":")[0]  # the writer is named
    if isinstance(raised.value, DesignError):
        assert raised.value.problems == [Problem("prices.csv", 3, 1, "unit_price", "not a number")]
    assert _files(folder) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder.name]


def test_build_profile_prints_each_stage_and_writer_with_seconds_and_memory(tmp_path):
    design = str(DESIGNS / "lab-4-servers.yaml")
    only = ["--only", "plan", "--only", "summary", "--only", "nccl"]
    result = CliRunner().invoke(main, ["build", design, "-o", str(tmp_path), "--profile", *only])
    assert result.exit_code == 0, result.stderr
    rows = {line[:40].strip(): line[40:].split() for line in result.stderr.splitlines()}
    for stage in ("plan: load design", "plan: cables", "plan: analyses and design rules"):
        assert rows[stage][0] == "main", result.stderr
    for writer in ("plan", "summary", "nccl"):
        where, wall, cpu, peak, _end = rows[writer]
        # a short job in a worker that ran others before it may take under 5 ms
        assert where == "worker" and float(wall) >= 0 and float(cpu) >= 0 and float(peak) > 0, rows[writer]
    assert "peak memory" in result.stderr
    assert "wrote" in result.stdout and "plan:" not in result.stdout


def test_jobs_one_writes_in_the_main_process(tmp_path):
    design = str(DESIGNS / "lab-4-servers.yaml")
    result = CliRunner().invoke(
        main, ["build", design, "-o", str(tmp_path), "--profile", "-j", "1", "--only", "plan", "--only", "nccl"]
    )
    assert result.exit_code == 0, result.stderr
    rows = {line[:40].strip(): line[40:].split() for line in result.stderr.splitlines()}
    assert rows["plan"][0] == rows["nccl"][0] == "main"


def _build(tmp_path, out, *args):
    design = str(DESIGNS / "lab-4-servers.yaml")
    return CliRunner().invoke(main, ["build", design, "-o", str(tmp_path / out), "--no-lock", *args])


def _half_then_bad_input(plan, loaded, staging):
    (staging / "half-written.txt").write_text("partial")
    raise DesignError([Problem("prices.csv", 3, 1, "unit_price", "not a number")])


def test_a_writer_failing_in_a_worker_exits_2_and_leaves_the_previous_output(tmp_path):
    assert _build(tmp_path, "out", "-j", "2", "--only", "plan", "--only", "nccl").exit_code == 0
    folder = tmp_path / "out" / "lab-4-servers"
    before = _files(folder)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(artifacts.ARTIFACTS, "nccl", Artifact(_half_then_bad_input, AnalysedPlan))
        result = _build(tmp_path, "out", "-j", "2", "--only", "plan", "--only", "nccl")
    assert result.exit_code == 2 and "prices.csv:3:1: unit_price: not a number" in result.output
    assert "Traceback" not in result.output
    assert _files(folder) == before
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [folder.name]


def test_a_design_rule_error_exits_2_and_writes_nothing(tmp_path):
    brief = DESIGNS.parent / "tests" / "designs" / "brief-h200-512.yaml"  # fails rule:workload-fits-plan
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["build", str(brief), "-o", str(out), "--no-lock", "-j", "2"])
    assert result.exit_code == 2 and "rule:workload-fits-plan" in result.output, result.output
    assert not out.exists()


def test_the_lock_written_beside_the_last_writers_is_the_one_written_after_them(tmp_path):
    """The build writes the plan lock while its last writers run (the report alone leaves a CPU idle), under a name
    of its own that replaces the lock once the build has succeeded: the same bytes as written after the writers."""
    design = str(DESIGNS / "lab-4-servers.yaml")
    only = ["--only", "plan", "--only", "summary", "--only", "nccl"]
    for jobs in ("1", "2"):
        lock = tmp_path / f"j{jobs}.lock.json"
        result = CliRunner().invoke(
            main, ["build", design, "-o", str(tmp_path / jobs), "--lock", str(lock), "-j", jobs, *only]
        )
        assert result.exit_code == 0 and f"wrote {lock}" in result.output, result.output
    assert (tmp_path / "j1.lock.json").read_bytes() == (tmp_path / "j2.lock.json").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["j1.lock.json", "j2.lock.json"]


def test_a_build_failing_after_its_lock_was_written_beside_the_writers_leaves_the_lock_as_it_was(tmp_path):
    design = str(DESIGNS / "lab-4-servers.yaml")
    lock = tmp_path / "lab.lock.json"
    args = ["build", design, "-o", str(tmp_path / "out"), "--lock", str(lock), "-j", "2", "--only", "plan"]
    assert CliRunner().invoke(main, args).exit_code == 0
    before = lock.stat().st_ino, lock.read_bytes()
    staged = tmp_path / ".lab.lock.json.new"

    def last(plan, loaded, staging):  # the lock is written beside it, in the main process
        deadline = time.monotonic() + 60
        while not staged.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        raise RuntimeError(f"the lock was staged: {staged.exists()}")

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(artifacts.ARTIFACTS, "report", Artifact(last, AnalysedPlan))  # runs last (RUNS_LAST)
        patch.setattr(registry, "PREPARED", frozenset())
        result = CliRunner().invoke(main, [*args, "--only", "nccl", "--only", "report"])
    assert result.exit_code != 0 and "the lock was staged: True" in str(result.exception)
    assert (lock.stat().st_ino, lock.read_bytes()) == before and not staged.exists()


def test_a_worker_frees_a_jobs_cyclic_garbage_before_its_next_job():
    """A worker lives for the whole writing phase: what a job left in reference cycles is collected after it even
    where the collector would not have run yet."""
    import weakref

    from gpucluster.artifacts.pool import release_freed_memory

    class Node:
        pass

    enabled = gc.isenabled()
    gc.disable()
    try:
        node = Node()
        node.self = node  # a cycle: reference counting alone never frees it
        alive = weakref.ref(node)
        del node
        assert alive() is not None
        release_freed_memory()
        assert alive() is None
    finally:
        if enabled:
            gc.enable()
