"""Writers run side by side in forked worker processes, after planning.

The plan is read-only once planned, so a forked worker shares it with the main process page by page
and needs no copy or pickling; each writer writes only its own files into the staging folder, so the
files are the same bytes whichever runs first (the atomic swap of the staging folder stays with the
caller). The main process hands out writers longest-first (a writer's previous cost is not kept, so
the order is the registry's hint, SLOW_FIRST; a writer whose files are independent parts runs as one job
per part), relays each worker's progress to the display, and
collects its costs; a worker's exception is raised again in the main process, and a worker that dies
without a word is an error naming the writer and how it ended.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import sys
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, Pipe, wait
from pathlib import Path
from typing import cast

from gpucluster import profiling, progress
from gpucluster.artifacts import _Shared, early
from gpucluster.design.load import LoadedDesign
from gpucluster.errors import fork_worker, portable_error, stop_if_terminated
from gpucluster.pipeline import hide_derived
from gpucluster.plan.model import Plan

Write = Callable[[Plan, LoadedDesign, Path], None]


class WriterFailed(RuntimeError):
    """A writer failed in a worker with an exception that could not be sent back as it was."""


class _PipeReporter:
    """A worker's reporter: progress goes to the main process, which draws it."""

    def __init__(self, conn: Connection, name: str, quiet_when_full: bool = False):
        self.conn, self.name, self.quiet_when_full = conn, name, quiet_when_full

    def __call__(self, stage: str) -> None:
        pass

    def update(self, done: int, total: int | None, unit: str) -> None:
        # a worker started while the main process still plans is not read until planning ends: it skips a report
        # rather than wait for room in the pipe (the next report says as much)
        if self.quiet_when_full and not select.select([], [self.conn], [], 0)[1]:
            return
        self.conn.send(("progress", done, total, unit))


Job = tuple[str, "Write | None", bool, frozenset[str]]  # (name, its write or None: not split yet, runs last, after)


class Workers:
    """The worker processes of one build's writers: some may start while the main process is still planning
    (`start_early`, on the physical plan), the rest once it has finished (`run`); `stop` ends any still running."""

    def __init__(
        self,
        staging: Path,
        jobs: int,
        reporter: progress.Reporter | Callable[[str], None],  # a plain callable only hears writer names
        costs: list[profiling.Cost],
        sampler: profiling.PeakSampler,
    ) -> None:
        self.staging, self.jobs, self.reporter, self.costs, self.sampler = staging, jobs, reporter, costs, sampler
        self.running: dict[Connection, tuple[str, int, float]] = {}  # conn -> (writer, pid, start)
        self.done: set[str] = set()
        self.started: set[str] = set()

    def pids(self) -> list[int]:
        return [pid for _name, pid, _start in self.running.values()]

    def start_early(self, plan: Plan, loaded: LoadedDesign, work: Sequence[tuple[str, Write]]) -> None:
        """Start the jobs `work` (views of the physical plan alone) now, while the main process goes on planning: as
        many as the CPUs the main process leaves (jobs - 1), in the order given. Each sees what the derived stages
        compute as stand-ins that fail when read (pipeline.hide_derived)."""
        begin = getattr(self.reporter, "begin", self.reporter)
        for name, write in work[: max(self.jobs - 1, 0)]:
            begin(name)
            conn, pid = _fork(plan, loaded, self.staging, name, write, early=True)
            self.running[conn] = (name, pid, time.perf_counter())
            self.started.add(name)

    def run(
        self,
        plan: Plan,
        loaded: LoadedDesign,
        work: Sequence[tuple[str, bool]],
        jobs_of: Callable[[str], list[tuple[str, Write, frozenset[str]]]],
    ) -> None:
        """Run the writers `work` ((name, runs last), in that order of preference) on up to `jobs` workers, each as the
        jobs `jobs_of` gives it ((name, write, the jobs it needs finished first); imported only when it is its turn;
        jobs started early are left out); one that runs last starts only when every other has finished. Returns when
        every job (those started early too) has finished."""
        pending: list[Job] = [(name, None, last, frozenset()) for name, last in work]
        begin = getattr(self.reporter, "begin", self.reporter)
        update = getattr(self.reporter, "update_stage", None)
        end = getattr(self.reporter, "end", None)
        finish_main = getattr(self.reporter, "finish_main", None)
        if finish_main is not None:  # the main process's last stage (planning) is over: its bar stops its clock
            finish_main()
        # the plan's objects stay out of the workers' collections, so their pages stay shared; a plan frozen already
        # (a command's plan, kept for the life of the process: pipeline.plan_design) stays frozen after, or the
        # collector would walk all its objects again when the process ends (0.2 s of a 256-GPU build's second)
        kept = gc.get_freeze_count() > 0
        gc.freeze()
        try:
            while pending or self.running:
                while len(self.running) < self.jobs:
                    ready = self._next(pending)
                    if ready is None:
                        break
                    name, write, last, _after = pending.pop(ready)
                    if write is None:  # a writer's turn: its jobs take its place
                        pending[ready:ready] = [
                            (label, job, last, needs)
                            for label, job, needs in jobs_of(name)
                            if label not in self.started
                        ]
                        continue
                    if not early(name):  # a view of the whole plan may read the graphs: they are shared, not rebuilt
                        _build_graphs(plan)
                    begin(name)
                    conn, pid = _fork(plan, loaded, self.staging, name, write)
                    self.running[conn] = (name, pid, time.perf_counter())
                    self.started.add(name)
                if self.running and not plan.graphs_built():  # the main process waits: it builds them meanwhile
                    _build_graphs(plan)
                if not self.running:  # nothing can start: a job waits for one that is not in this build
                    waiting = ", ".join(f"{name} (after {', '.join(sorted(after))})" for name, _w, _l, after in pending)
                    raise WriterFailed(f"writer jobs wait for jobs that do not run: {waiting}")
                self._collect(update, end)
        finally:
            if not kept:
                gc.unfreeze()

    def _next(self, pending: list[Job]) -> int | None:
        """The first pending job that may start now: not one that runs last while others run or wait, nor one whose
        jobs before it have not finished."""
        for index, (_name, _write, last, after) in enumerate(pending):
            if last and (self.running or index > 0):
                return None
            if after <= self.done:
                return index
        return None

    def _collect(self, update: Callable[..., None] | None, end: Callable[[str], None] | None) -> None:
        """Wait a moment for the workers: relay their progress and shared values, and collect those that finished."""
        stop_if_terminated()
        self.sampler.sample(self.pids())
        ready = cast(list[Connection], wait(list(self.running), timeout=0.25))  # wait returns what it was given
        for conn in ready:
            name, pid, start = self.running[conn]
            try:
                message = conn.recv()
            except EOFError:
                message = ("gone",)
            if message[0] == "progress":
                if update is not None:
                    update(name, *message[1:])
                continue
            if message[0] == "shared":  # a value for the writers forked from now on (artifacts.share)
                _Shared.values[message[1]] = message[2]
                continue
            del self.running[conn]
            conn.close()
            _pid, status, usage = os.wait4(pid, 0)
            if message[0] != "done":
                raise _failure(name, message, status)
            self.done.add(name)
            self.costs.append(
                profiling.Cost(
                    name,
                    "writer",
                    "worker",
                    time.perf_counter() - start,
                    usage.ru_utime + usage.ru_stime,
                    usage.ru_maxrss / 1024,
                    message[1],
                )
            )
            if end is not None:
                end(name)

    def stop(self) -> None:
        """An error or an interrupt: stop the workers still running."""
        for conn, (_name, pid, _start) in list(self.running.items()):
            try:
                os.kill(pid, signal.SIGTERM)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            conn.close()
        self.running.clear()


def run_parallel(
    plan: Plan,
    loaded: LoadedDesign,
    staging: Path,
    work: Sequence[tuple[str, bool]],
    jobs_of: Callable[[str], list[tuple[str, Write, frozenset[str]]]],
    jobs: int,
    reporter: progress.Reporter | Callable[[str], None],
    costs: list[profiling.Cost],
    sampler: profiling.PeakSampler,
) -> None:
    """Run the writers `work` side by side (Workers.run), none started early."""
    workers = Workers(staging, jobs, reporter, costs, sampler)
    try:
        workers.run(plan, loaded, work, jobs_of)
    finally:
        workers.stop()


def _build_graphs(plan: Plan) -> None:
    """The plan's graphs, built in the main process (planning left them to the first view that needs them, so that
    its analyses could run beside the cabling) without the cycle collector, then kept out of its reach as the plan is
    (gc.freeze): the workers forked after this share them page by page."""
    if plan.graphs_built():
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        _ = plan.graphs  # built on first use
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _fork(
    plan: Plan, loaded: LoadedDesign, staging: Path, name: str, write: Write, early: bool = False
) -> tuple[Connection, int]:
    parent_end, child_end = Pipe(duplex=False)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = fork_worker()
    if pid:
        child_end.close()
        return parent_end, pid
    # the worker: write one artifact, say how it went, and leave without running the parent's exit handlers
    parent_end.close()
    code = 0
    try:
        if early:  # forked mid-planning: the cycle collector is paused there, and the derived stages still to come
            gc.freeze()
            gc.enable()
            hide_derived(plan)
        progress.install(_PipeReporter(child_end, name, quiet_when_full=early))
        _Shared.send = lambda key, value: child_end.send(("shared", key, value))
        write(plan, loaded, staging)
        child_end.send(("done", profiling.private_mib()))
    except BaseException as error:  # every failure goes back to the main process
        code = 1
        with contextlib.suppress(BaseException):
            child_end.send(("error", portable_error(error, WriterFailed)))
    finally:
        try:
            child_end.close()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _failure(name: str, message: tuple, status: int) -> BaseException:
    if message[0] == "error":
        error = message[1]
        if isinstance(error, WriterFailed):
            return WriterFailed(f"writer {name} failed in its worker:\n{error}")
        return error
    return WriterFailed(f"writer {name}: its worker ended without a result ({_how(status)})")


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
