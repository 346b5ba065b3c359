"""Writers run side by side in forked worker processes, after planning (and some during it).

The plan is read-only once planned, so a forked worker shares it with the main process page by page
and needs no copy or pickling; each writer writes only its own files into the staging folder, so the
files are the same bytes whichever runs first (the atomic swap of the staging folder stays with the
caller). The main process hands out writers' jobs longest-first (a writer's previous cost is not kept, so
the order is the registry's hint, SLOW_FIRST; a writer whose files are independent parts runs as one job
per part), relays each worker's progress to the display, and collects its costs; a worker's exception is
raised again in the main process, and a worker that dies without a word is an error naming the job.

A worker runs job after job until its private memory passes a bound (WORKER_MEMORY_SHARE of the main
process's), then leaves and a fresh one is forked when needed: a fork of a large plan's process costs the
kernel a fraction of a second however little the job does (page tables copied, then torn down at exit), and
each worker copies the pages of the plan it touches (reference counts), so one worker for many short jobs
saves both while its memory stays bounded. A worker forked while planning goes on holds a copy of the plan
as it was then and runs only the jobs that read no more than that (artifacts.Reads).
"""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import select
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe, wait
from pathlib import Path
from typing import cast

from gpucluster.artifacts import Reads, _Shared, job_writer, reads
from gpucluster.design.load import LoadedDesign
from gpucluster.errors import fork_worker, portable_error, stop_if_terminated
from gpucluster.pipeline import hide_cabled, hide_derived
from gpucluster.plan.model import Plan
from gpucluster.runtime import profiling, progress

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
        # a worker started while the main process still plans is not read until planning ends, nor while it writes the
        # lock: it skips a report rather than wait for room in the pipe (the next report says as much)
        if self.quiet_when_full and not select.select([], [self.conn], [], 0)[1]:
            return
        self.conn.send(("progress", done, total, unit))


Job = tuple[str, bool, frozenset[str], bool]  # (name, runs last, the jobs it needs finished first, split yet)

# A worker whose private memory has passed this share of the main process's resident set when a job ends leaves (a
# fresh one is forked for the next job): what it copied of the plan and kept of its heap would otherwise only grow.
WORKER_MEMORY_SHARE = 0.25
# ... and at least this (MiB): a small plan's workers are never worth replacing
WORKER_MEMORY_MIN_MIB = 64.0
# How much lower an early worker's priority is than the main process's (os.nice): see _serve
EARLY_WORKER_NICENESS = 10
# The --profile line of the workers' CPU outside their jobs (its end MiB column: how many workers were forked)
WORKERS_OVERHEAD = "(workers: fork, start, exit)"


@dataclass
class _Worker:
    """A worker process as the main process sees it."""

    conn: Connection
    pid: int
    holds: Reads  # how much of the plan its copy holds: it runs only the jobs that read no more (artifacts.reads)
    queue: list[str] = field(default_factory=list)  # its jobs to run in turn, the first one running now
    jobs_cpu: float = 0.0  # CPU seconds its finished jobs took (the rest of its CPU is its start and exit)
    leaving: bool = False  # told to exit: waited for when its end of the pipe closes


class Workers:
    """The worker processes of one build's writers: some may start while the main process is still planning
    (`start_early`, on the links or the physical plan), the rest once it has finished (`run`); `stop` ends any still
    running."""

    def __init__(
        self,
        staging: Path,
        jobs: int,
        reporter: progress.Reporter | Callable[[str], None],  # a plain callable only hears writer names
        costs: list[profiling.Cost],
        sampler: profiling.PeakSampler,
    ) -> None:
        self.staging, self.jobs, self.reporter, self.costs, self.sampler = staging, jobs, reporter, costs, sampler
        self.workers: dict[Connection, _Worker] = {}
        self.done: set[str] = set()
        self.started: set[str] = set()
        self.forked = 0
        self.overhead_cpu = 0.0  # the workers' CPU seconds outside their jobs (fork, start and exit)
        self.memory_bound_mib = WORKER_MEMORY_MIN_MIB

    def pids(self) -> list[int]:
        return [worker.pid for worker in self.workers.values()]

    def _busy(self) -> list[_Worker]:
        return [worker for worker in self.workers.values() if worker.queue]

    def start_early(self, plan: Plan, loaded: LoadedDesign, work: Sequence[str], holds: Reads) -> None:
        """Start the jobs `work` (views of the plan as it is now, `holds`) while the main process goes on planning, on
        the CPUs it leaves (jobs - 1), in the order given. On the links alone (Reads.LINKS) the jobs are split in turn
        among the workers, each running its share one after another (short jobs, and most of them make the same
        scheduling view); on the physical plan each worker starts one job (long ones: the others wait for `run` to
        balance them). A worker sees what planning has not computed yet as stand-ins that fail when read
        (pipeline.hide_cabled, hide_derived)."""
        begin = getattr(self.reporter, "begin", self.reporter)
        workers = max(self.jobs - 1, 0)
        if holds == Reads.LINKS:
            shares = [list(work[index::workers]) for index in range(min(workers, len(work)))]
        else:
            shares = [[job] for job in work[:workers]]
        for share in shares:
            begin(share[0])  # the others when their turn comes
            self._fork(plan, loaded, share, holds, early=True)

    def run(
        self,
        plan: Plan,
        loaded: LoadedDesign,
        work: Sequence[tuple[str, bool]],
        jobs_of: Callable[[str], list[tuple[str, Write, frozenset[str]]]],
        meanwhile: Callable[[], None] | None = None,
    ) -> None:
        """Run the writers `work` ((name, runs last), in that order of preference) on up to `jobs` workers, each as the
        jobs `jobs_of` gives it ((name, write, the jobs it needs finished first); imported only when it is its turn;
        jobs started early are left out); one that runs last starts in a worker of its own when every other job has
        finished (it inherits what they shared). `meanwhile` runs in this process once every job has been handed out.
        Returns when every job (those started early too) has finished."""
        pending: list[Job] = [(name, last, frozenset(), False) for name, last in work]
        finish_main = getattr(self.reporter, "finish_main", None)
        if finish_main is not None:  # the main process's last stage (planning) is over: its bar stops its clock
            finish_main()
        # the plan's objects stay out of the workers' collections, so their pages stay shared; a plan frozen already
        # (a command's plan, kept for the life of the process: pipeline.plan_design) stays frozen after, or the
        # collector would walk all its objects again when the process ends (a noticeable part of a small build)
        kept = gc.get_freeze_count() > 0
        gc.freeze()
        self.memory_bound_mib = max(WORKER_MEMORY_MIN_MIB, WORKER_MEMORY_SHARE * profiling.rss_mib())
        try:
            while pending or self._busy():
                self._hand_out(plan, loaded, pending, jobs_of)
                if not pending and meanwhile is not None:  # the last jobs run: the main process's own work beside them
                    meanwhile()
                    meanwhile = None
                if self._busy() and not plan.graphs_built():  # the main process waits: it builds them meanwhile
                    _build_graphs(plan)
                if not self.workers:  # nothing can start: a job waits for one that is not in this build
                    waiting = ", ".join(f"{name} (after {', '.join(sorted(after))})" for name, _l, after, _s in pending)
                    raise WriterFailed(f"writer jobs wait for jobs that do not run: {waiting}")
                self._collect()
            if meanwhile is not None:  # every job had finished before (none to run)
                meanwhile()
            for worker in list(self.workers.values()):
                self._retire(worker)
            while self.workers:  # the workers told to leave: their costs
                self._collect()
        finally:
            if not kept:
                gc.unfreeze()
        if self.forked:
            self.costs.append(
                profiling.Cost(WORKERS_OVERHEAD, "workers", "worker", 0.0, self.overhead_cpu, 0.0, float(self.forked))
            )

    def _hand_out(
        self,
        plan: Plan,
        loaded: LoadedDesign,
        pending: list[Job],
        jobs_of: Callable[[str], list[tuple[str, Write, frozenset[str]]]],
    ) -> None:
        """Give each idle worker the next job it can run (or let it go), and fork workers for the CPUs left."""
        for worker in list(self.workers.values()):
            if worker.queue or worker.leaving:
                continue
            index = self._next(pending, jobs_of, worker.holds)
            if index is None or pending[index][1]:  # nothing it can run, or the last job: that one gets a fresh worker
                self._retire(worker)
                continue
            name = pending.pop(index)[0]
            self._begin(name)
            worker.conn.send(("job", name))
            worker.queue.append(name)
        while sum(1 for worker in self.workers.values() if not worker.leaving) < self.jobs:
            index = self._next(pending, jobs_of, Reads.WHOLE)
            if index is None:
                return
            name, last = pending[index][:2]
            if last and self.workers:  # runs alone, in a worker forked after every other has left
                return
            if reads(name) == Reads.WHOLE:  # a view of the whole plan may read the graphs: they are shared, not rebuilt
                _build_graphs(plan)
            pending.pop(index)
            self._begin(name)
            holds = Reads.WHOLE if plan.graphs_built() else Reads.PHYSICAL
            self._fork(plan, loaded, [name], holds)

    def _begin(self, name: str) -> None:
        begin = getattr(self.reporter, "begin", self.reporter)
        begin(name)
        self.started.add(name)

    def _next(
        self, pending: list[Job], jobs_of: Callable[[str], list[tuple[str, Write, frozenset[str]]]], holds: Reads
    ) -> int | None:
        """The first pending job a worker holding `holds` of the plan may start now: not one that runs last while
        others run or wait, nor one whose jobs before it have not finished. A writer met on the way is split into its
        jobs (its module imported) first."""
        index = 0
        while index < len(pending):
            name, last, after, split = pending[index]
            if not split:  # a writer's turn: its jobs take its place
                pending[index : index + 1] = [
                    (label, last, needs, True) for label, _job, needs in jobs_of(name) if label not in self.started
                ]
                continue
            if last:
                return index if index == 0 and not self._busy() else None
            if reads(name) <= holds and after <= self.done:
                return index
            index += 1
        return None

    def _fork(self, plan: Plan, loaded: LoadedDesign, queue: list[str], holds: Reads, early: bool = False) -> None:
        parent_end, child_end = Pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = fork_worker()
        if pid:
            child_end.close()
            self.workers[parent_end] = _Worker(parent_end, pid, holds, list(queue))
            self.started.update(queue)
            self.forked += 1
            return
        parent_end.close()
        _serve(child_end, plan, loaded, self.staging, list(queue), holds, early)

    def _retire(self, worker: _Worker) -> None:
        """Tell an idle worker to leave (its costs are taken when it has)."""
        if not worker.leaving:
            worker.leaving = True
            with contextlib.suppress(OSError):
                worker.conn.send(("exit",))

    def _collect(self) -> None:
        """Wait a moment for the workers: relay their progress and shared values, and collect the jobs that finished
        and the workers that left."""
        stop_if_terminated()
        self.sampler.sample(self.pids())
        update = getattr(self.reporter, "update_stage", None)
        end = getattr(self.reporter, "end", None)
        ready = cast(list[Connection], wait(list(self.workers), timeout=0.25))  # wait returns what it was given
        for conn in ready:
            worker = self.workers[conn]
            try:
                message = conn.recv()
            except EOFError:
                message = ("gone",)
            if message[0] == "progress":
                if update is not None and worker.queue:
                    update(worker.queue[0], *message[1:])
                continue
            if message[0] == "shared":  # a value for the writers forked from now on (artifacts.share)
                _Shared.values[message[1]] = message[2]
                continue
            if message[0] == "done":
                name, wall_s, cpu_s, peak_mib, private_mib = message[1:]
                worker.queue.pop(0)
                self.done.add(name)
                self.costs.append(profiling.Cost(name, "writer", "worker", wall_s, cpu_s, peak_mib, private_mib))
                worker.jobs_cpu += cpu_s
                if end is not None:
                    end(name)
                if worker.queue:  # the next of the jobs it was forked with has begun
                    self._begin(worker.queue[0])
                if not worker.queue and private_mib > self.memory_bound_mib:
                    self._retire(worker)
                continue
            del self.workers[conn]
            conn.close()
            _pid, status, usage = os.wait4(worker.pid, 0)
            self.overhead_cpu += max(usage.ru_utime + usage.ru_stime - worker.jobs_cpu, 0.0)
            if message[0] == "gone" and worker.leaving and not worker.queue and status == 0:
                continue
            name = worker.queue[0] if worker.queue else "(none)"
            raise _failure(name, message, status)

    def stop(self) -> None:
        """An error or an interrupt: stop the workers still running."""
        for conn, worker in list(self.workers.items()):
            try:
                os.kill(worker.pid, signal.SIGTERM)
                os.waitpid(worker.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            conn.close()
        self.workers.clear()


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


def _serve(
    conn: Connection, plan: Plan, loaded: LoadedDesign, staging: Path, queue: list[str], holds: Reads, early: bool
) -> None:
    """The worker: run its jobs (those it was forked with, then those the main process sends), say how each went, and
    leave without running the parent's exit handlers when told to, or at the first failure."""
    code = 0
    try:
        if early:  # forked mid-planning: the cycle collector is paused there
            gc.freeze()
            gc.enable()
            # planning (the main process and its analyses' process) is the build's critical path: a worker started
            # beside it takes what CPU they leave, not a third of each core (it stays so after: with only the
            # writers running, a niceness changes nothing)
            os.nice(EARLY_WORKER_NICENESS)
        if holds == Reads.LINKS:  # the cables, and what is derived, are still to come
            hide_cabled(plan)
        elif early:
            hide_derived(plan)
        _Shared.send = lambda key, value: conn.send(("shared", key, value))
        while True:
            if not queue:
                message = conn.recv()
                if message[0] != "job":
                    break
                queue.append(message[1])
            name = queue.pop(0)
            progress.install(_PipeReporter(conn, name, quiet_when_full=True))
            start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
            job_writer(name, plan)(plan, loaded, staging)
            after = resource.getrusage(resource.RUSAGE_SELF)
            cpu_s = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            wall_s = time.perf_counter() - start
            conn.send(("done", name, wall_s, cpu_s, after.ru_maxrss / 1024, profiling.private_mib()))
    except EOFError:  # the main process is gone
        code = 1
    except BaseException as error:  # every failure goes back to the main process
        code = 1
        with contextlib.suppress(BaseException):
            conn.send(("error", portable_error(error, WriterFailed)))
    finally:
        try:
            conn.close()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _failure(name: str, message: tuple[object, ...], status: int) -> BaseException:
    if message[0] == "error":
        error = cast(BaseException, message[1])  # ("error", the exception portable_error made)
        if isinstance(error, WriterFailed):
            return WriterFailed(f"writer {name} failed in its worker:\n{error}")
        return error
    return WriterFailed(f"writer {name}: its worker ended without a result ({_how(status)})")


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
