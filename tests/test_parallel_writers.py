"""Writers run side by side in forked workers give the same files as one after another, and a worker's
failure fails the build as it would in one process: its error, nothing half-written."""

from __future__ import annotations

import gc
import os
import time

import pytest
from click.testing import CliRunner
from conftest import DESIGNS, EXAMPLES

import gpucluster.artifacts as artifacts
from gpucluster import load_design, pipeline, plan_design, write_artifacts
from gpucluster.artifacts import Writing, _workers
from gpucluster.artifacts._workers import WORKERS_OVERHEAD, WriterFailed
from gpucluster.cli import main
from gpucluster.errors import DesignError, Problem
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
    (overhead,) = [c for c in costs if c.kind == "workers"]
    assert overhead.name == WORKERS_OVERHEAD and 3 <= overhead.end_mib < len(jobs)  # workers took job after job


def test_a_worker_past_its_memory_bound_is_replaced_and_the_files_stay_the_same(lab, tmp_path, monkeypatch):
    loaded, plan = lab
    names = ["plan", "summary", "nccl", "slurm", "switches"]
    serial = write_artifacts(plan, loaded, tmp_path / "serial", names, jobs=1)
    monkeypatch.setattr(_workers, "WORKER_MEMORY_MIN_MIB", 0.0)
    monkeypatch.setattr(_workers, "WORKER_MEMORY_SHARE", 0.0)
    costs: list[Cost] = []
    parallel = write_artifacts(plan, loaded, tmp_path / "parallel", names, jobs=2, costs=costs)
    assert _files(serial) == _files(parallel)
    jobs = [c for c in costs if c.kind == "writer"]
    (overhead,) = [c for c in costs if c.kind == "workers"]
    assert overhead.end_mib == len(jobs) == 6  # one worker a job: each left past its bound (plan.json: two jobs)


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
        patch.setitem(artifacts.ARTIFACTS, "gather", gather)
        patch.setattr(artifacts, "RUNS_LAST", frozenset({"gather"}))
        folder = write_artifacts(plan, loaded, tmp_path, ["gather", "plan", "summary", "nccl"], jobs=2)
    assert (folder / "gathered.txt").read_text().splitlines() == ["launch", "nccl", "plan.json", "summary.md"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_value_one_writer_shares_reaches_the_writers_that_run_after_it_and_no_later_build(lab, tmp_path, jobs):
    """The BOM writer shares its BOM and the report, which runs last, uses it rather than counting the plan again;
    in a worker the value goes to the main process, whose later workers inherit it."""
    loaded, plan = lab

    def counts(plan, loaded, staging):
        artifacts.share("counted", {"racks": len(plan.racks)})

    def reader(plan, loaded, staging):
        (staging / "seen.txt").write_text(repr(artifacts.shared("counted")))

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(artifacts.ARTIFACTS, "counts", counts)
        patch.setitem(artifacts.ARTIFACTS, "reader", reader)
        patch.setattr(artifacts, "RUNS_LAST", frozenset({"reader"}))
        folder = write_artifacts(plan, loaded, tmp_path, ["reader", "counts", "summary"], jobs=jobs)
        assert (folder / "seen.txt").read_text() == repr({"racks": len(plan.racks)})
        assert artifacts.shared("counted") is None  # gone with the build
        folder = write_artifacts(plan, loaded, tmp_path, ["reader", "summary"], jobs=jobs)
        assert (folder / "seen.txt").read_text() == "None"


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
        (_killed, WriterFailed, "writer failing: its worker ended without a result (killed by SIGKILL)"),
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
        patch.setitem(artifacts.ARTIFACTS, "failing", failing)
        with pytest.raises(error) as raised:
            write_artifacts(plan, loaded, tmp_path, ["plan", "failing", "summary", "nccl"], jobs=2)
    assert says in str(raised.value)
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
    for writer in ("plan:records", "plan:head", "summary", "nccl"):  # plan.json in two parts side by side
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


@pytest.mark.slow
@pytest.mark.parametrize("aside", [False, True])
def test_writers_started_while_planning_goes_on_write_the_same_bytes_as_one_process(tmp_path, monkeypatch, aside):
    """The cable schedule and plan.json's records start on the physical plan (EARLY) while the rest is planned; with
    the graph analyses in a process of their own, the main process builds the graphs the views read while it waits."""
    if aside:
        monkeypatch.setattr(pipeline, "ASIDE_MIN_LINKS", 0)
    serial = _build(tmp_path, "serial", "-j", "1")
    parallel = _build(tmp_path, "parallel", "-j", "2", "--profile")
    assert serial.exit_code == parallel.exit_code == 0, parallel.output
    assert _files(tmp_path / "serial") == _files(tmp_path / "parallel")
    rows = [line.split()[0] for line in parallel.stderr.splitlines() if line[40:].split()[:1] == ["worker"]]
    assert {"plan:records", "plan:head", "cabling:csv"} <= set(rows)


def test_a_writer_started_on_the_physical_plan_that_reads_what_is_derived_later_fails_naming_it(tmp_path):
    loaded = load_design(DESIGNS / "lab-4-servers.yaml")
    seen = {}

    def reads_totals(plan, loaded, staging):
        (staging / "totals.txt").write_text(str(plan.totals.cables))

    def reads_cables(plan, loaded, staging):
        seen["cables"] = len(plan.cables)  # in the worker: not seen here
        (staging / "cables.txt").write_text(str(len(plan.cables)))

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(artifacts.ARTIFACTS, "nccl", reads_cables)
        patch.setattr(artifacts, "EARLY", ("nccl",))
        patch.setattr(artifacts, "LINKED", ())
        with Writing(loaded.design.name, tmp_path / "fine", ["nccl", "summary"], jobs=2) as writing:
            plan = plan_design(loaded, physical=lambda physical: writing.start_early(physical, loaded))
            folder = writing.finish(plan, loaded)
        assert (folder / "cables.txt").read_text() == str(len(plan.cables)) and not seen
        patch.setitem(artifacts.ARTIFACTS, "nccl", reads_totals)
        early_reader = Writing(loaded.design.name, tmp_path / "early", ["nccl", "summary"], jobs=2)
        with pytest.raises(RuntimeError, match=r"plan\.totals was read by a view started"), early_reader:
            plan = plan_design(loaded, physical=lambda physical: early_reader.start_early(physical, loaded))
            early_reader.finish(plan, loaded)
    assert not (tmp_path / "early").exists()


def _half_then_bad_input(plan, loaded, staging):
    (staging / "half-written.txt").write_text("partial")
    raise DesignError([Problem("prices.csv", 3, 1, "unit_price", "not a number")])


def test_a_writer_failing_in_a_worker_started_while_planning_exits_2_and_leaves_the_previous_output(tmp_path):
    assert _build(tmp_path, "out", "-j", "2", "--only", "plan", "--only", "nccl").exit_code == 0
    folder = tmp_path / "out" / "lab-4-servers"
    before = _files(folder)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(artifacts.ARTIFACTS, "nccl", _half_then_bad_input)
        patch.setattr(artifacts, "EARLY", ("nccl",))
        patch.setattr(artifacts, "LINKED", ())
        result = _build(tmp_path, "out", "-j", "2", "--only", "plan", "--only", "nccl")
    assert result.exit_code == 2 and "prices.csv:3:1: unit_price: not a number" in result.output
    assert "Traceback" not in result.output
    assert _files(folder) == before
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [folder.name]


def test_a_design_rule_error_after_writers_started_on_the_physical_plan_exits_2_and_writes_nothing(tmp_path):
    brief = DESIGNS.parent / "tests" / "designs" / "brief-h200-512.yaml"  # fails rule:workload-fits-plan
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["build", str(brief), "-o", str(out), "--no-lock", "-j", "2"])
    assert result.exit_code == 2 and "rule:workload-fits-plan" in result.output, result.output
    assert not out.exists()


def _planned_with_early_writers(writing: Writing, loaded) -> tuple:
    """Plan `loaded` as the build does, starting the writers of the links and of the physical plan as planning reaches
    them; the plan and the written folder."""
    plan = plan_design(
        loaded,
        linked=lambda linked: writing.start_linked(linked, loaded),
        physical=lambda physical: writing.start_early(physical, loaded),
        jobs=2,
    )
    return plan, writing.finish(plan, loaded)


@pytest.mark.slow
@pytest.mark.parametrize("design", [name for name in EXAMPLES if name != "h100-16k-3tier"])
def test_writers_of_the_links_alone_started_before_the_cables_write_the_same_bytes_as_one_process(tmp_path, design):
    """The LINKED writers start in one worker as soon as the links exist, on a copy of the plan where the cables, the
    racks' loads and everything derived are stand-ins that fail when read: every example design's files are the same
    as those written after planning, one writer at a time (a registry entry that reads too much fails here)."""
    loaded = load_design(DESIGNS / f"{design}.yaml")
    names = list(artifacts.LINKED)
    costs: list[Cost] = []
    with Writing(loaded.design.name, tmp_path / "early", names, jobs=2, costs=costs) as writing:
        plan, early = _planned_with_early_writers(writing, loaded)
    serial = write_artifacts(plan, loaded, tmp_path / "serial", names, jobs=1)
    assert _files(early) == _files(serial)
    assert sorted(c.name for c in costs if c.kind == "writer") == sorted(names)
    (overhead,) = [c for c in costs if c.kind == "workers"]
    assert overhead.end_mib == 1  # all of them in the worker started on the links


@pytest.mark.parametrize(
    ("reads", "field"),
    [
        (lambda plan: len(plan.cables), r"plan\.cables"),
        (lambda plan: plan.device_power[next(iter(plan.devices))], r"plan\.device_power"),
        (lambda plan: round(next(iter(plan.racks.values())).power_max_w), r"plan\.racks\['\w+'\]\.power_max_w"),
        (lambda plan: f"{next(iter(plan.racks.values())).power_typical_w}", r"\.power_typical_w"),
        (lambda plan: plan.totals.gpus, r"plan\.totals"),
        (lambda plan: len(plan.graphs), r"plan\.graphs"),
    ],
)
def test_a_writer_started_on_the_links_that_reads_the_cables_or_what_follows_them_fails_naming_it(
    tmp_path, reads, field
):
    loaded = load_design(DESIGNS / "lab-4-servers.yaml")

    def reader(plan, loaded, staging):
        (staging / "read.txt").write_text(str(reads(plan)))

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(artifacts.ARTIFACTS, "nccl", reader)
        patch.setattr(artifacts, "LINKED", ("nccl",))
        writing = Writing(loaded.design.name, tmp_path / "early", ["nccl", "summary"], jobs=2)
        too_early = field + " was read by a view started before planning computed it"
        with pytest.raises(RuntimeError, match=too_early), writing:
            plan = plan_design(loaded, linked=lambda linked: writing.start_linked(linked, loaded))
            writing.finish(plan, loaded)
        # after planning (one process), the same writer reads them all
        folder = write_artifacts(plan_design(loaded), loaded, tmp_path / "late", ["nccl"], jobs=1)
        assert (folder / "read.txt").exists()
    assert not (tmp_path / "early").exists()


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
        patch.setitem(artifacts.ARTIFACTS, "report", last)  # runs last (RUNS_LAST)
        patch.setattr(artifacts, "PREPARED", frozenset())
        result = CliRunner().invoke(main, [*args, "--only", "nccl", "--only", "report"])
    assert result.exit_code != 0 and "the lock was staged: True" in str(result.exception)
    assert (lock.stat().st_ino, lock.read_bytes()) == before and not staged.exists()


def test_a_worker_started_while_planning_goes_on_yields_the_cpu_to_planning(tmp_path):
    """Planning (the main process and its analyses' process) is the build's critical path: a worker started beside it
    runs at a lower priority, so it takes the CPU they leave; a worker started after planning does not."""

    def niceness(plan, loaded, staging):
        (staging / "niceness.txt").write_text(str(os.nice(0) - main_niceness))

    main_niceness = os.nice(0)
    loaded = load_design(DESIGNS / "lab-4-servers.yaml")
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(artifacts.ARTIFACTS, "nccl", niceness)
        for registry, expected in (
            ("LINKED", _workers.EARLY_WORKER_NICENESS),
            ("EARLY", _workers.EARLY_WORKER_NICENESS),
        ):
            patch.setattr(artifacts, "LINKED", ("nccl",) if registry == "LINKED" else ())
            patch.setattr(artifacts, "EARLY", ("nccl",) if registry == "EARLY" else ())
            with Writing(loaded.design.name, tmp_path / registry, ["nccl", "summary"], jobs=2) as writing:
                _plan, folder = _planned_with_early_writers(writing, loaded)
            assert int((folder / "niceness.txt").read_text()) == expected, registry
        patch.setattr(artifacts, "EARLY", ())
        folder = write_artifacts(plan_design(loaded), loaded, tmp_path / "after", ["nccl", "summary"], jobs=2)
        assert (folder / "niceness.txt").read_text() == "0"
