"""The writers' jobs, one after another in this process or side by side in one standard process pool.

Side by side, the jobs run in a ``concurrent.futures.ProcessPoolExecutor`` of forked processes made after planning:
the plan is read-only by then, so the workers share it with the main process page by page (no copy, no pickling:
only a job's name goes to a worker, and its cost, and a prepare job's value, come back). Before the fork the plan is
moved out of the cycle collector's reach (``gc.freeze``): a collection in a worker would otherwise touch every one of
its objects and copy their pages. Each writer writes only its own files into the staging folder, so the files are the
same bytes whichever runs first. The main process hands out at most one job per worker (longest first, the order of
artifacts.SLOW_FIRST) and relays the workers' progress. The writers' modules are imported before the fork, so the
workers share them too rather than each importing its own copy.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import resource
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from gpucluster.artifacts import registry as artifacts
from gpucluster.artifacts.registry import PREPARE, job_writer, stage_read, writer, writer_jobs
from gpucluster.design.load import LoadedDesign
from gpucluster.errors import portable_error, sigterm_default, stop_if_terminated
from gpucluster.plan.model import AnalysedPlan
from gpucluster.runtime import profiling, progress


class WriterFailed(RuntimeError):
    """A writer failed in a worker with an exception that could not be sent back as it was, or its worker died."""


@dataclass(frozen=True)
class Build:
    """What one build's writers read and where they write, and where their progress and costs go."""

    plan: AnalysedPlan  # each writer reads the stage it declares of it (registry.stage_read)
    loaded: LoadedDesign
    staging: Path
    say: Callable[[str], None]  # a progress.Reporter, or a callable that only hears writer names
    costs: list[profiling.Cost]
    sampler: profiling.PeakSampler


def run_in_turn(build: Build, names: Sequence[str], meanwhile: Callable[[], None] | None) -> None:
    """Each writer in this process, in order; then `meanwhile`."""
    for name in names:
        build.say(name)
        start, cpu = time.perf_counter(), profiling.cpu_seconds()
        writer(name)(stage_read(name, build.plan), build.loaded, build.staging)
        wall_s, cpu_s = time.perf_counter() - start, profiling.cpu_seconds() - cpu
        peak, end = profiling.peak_rss_mib(), profiling.rss_mib()
        build.costs.append(profiling.Cost(name, "writer", "main", wall_s, cpu_s, peak, end))
        build.sampler.sample([])
    finish = getattr(build.say, "end", None)
    if finish is not None and names:
        finish(names[-1])
    if meanwhile is not None:
        meanwhile()


@dataclass(frozen=True)
class _Inherited:
    """What a forked worker finds in its copy of the main process: the build, and its end of the progress pipe."""

    build: Build
    progress: Connection
    lock: Any  # a multiprocessing Lock: one message at a time in the pipe


_INHERITED: list[_Inherited] = []  # set while a pool runs; a worker forked then holds it


@dataclass
class _Pending:
    """One of the writers' jobs, waiting for its turn."""

    name: str
    last: bool  # runs when every other job has finished
    needs: frozenset[str] = frozenset()


def run_side_by_side(build: Build, names: Sequence[str], jobs: int, meanwhile: Callable[[], None] | None) -> None:
    """The writers `names` (in order of preference) as jobs on a pool of `jobs` forked processes; `meanwhile` runs
    here once every job has been handed out. A job's failure (an exception, or its worker dying) stops the others
    and is raised here."""
    finish_main = getattr(build.say, "finish_main", None)
    if finish_main is not None:  # the main process's last stage (planning) is over: its bar stops its clock
        finish_main()
    pending = _jobs(build.plan, names)  # each writer's module imported here, before the fork: shared, not once a worker
    kept = gc.get_freeze_count() > 0  # a command's plan stays frozen (pipeline.plan_design's `kept`)
    gc.freeze()
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    _INHERITED.append(_Inherited(build, send, context.Lock()))
    executor = ProcessPoolExecutor(jobs, mp_context=context, initializer=sigterm_default)
    try:
        _Scheduler(build, executor, receive, jobs).run(pending, meanwhile)
        executor.shutdown()
    except BaseException:
        _stop(executor)
        raise
    finally:
        _INHERITED.clear()
        receive.close()
        send.close()
        if not kept:
            gc.unfreeze()


def _jobs(plan: AnalysedPlan, names: Sequence[str]) -> list[_Pending]:
    """The writers' jobs in order of preference: a last writer's prepare job where SLOW_FIRST places it, the others
    in the order of `names`, each writer split into its jobs (artifacts.registry.writer_jobs)."""
    last = artifacts.RUNS_LAST
    writers = [*(name + PREPARE for name in names if name in last and name in artifacts.PREPARED), *names]
    slow = artifacts.SLOW_FIRST
    writers.sort(key=lambda name: slow.index(name) if name.endswith(PREPARE) and name in slow else len(slow))
    return [
        _Pending(label, name in last, needs) for name in writers for label, _write, needs in writer_jobs(name, plan)
    ]


class _Scheduler:
    """Hands out the jobs, relays progress, collects results and costs."""

    def __init__(self, build: Build, executor: ProcessPoolExecutor, receive: Connection, jobs: int) -> None:
        self.build, self.executor, self.receive, self.jobs = build, executor, receive, jobs
        self.running: dict[Future[tuple[object, profiling.Cost]], str] = {}
        self.done: set[str] = set()
        self.prepared: dict[str, object] = {}  # writer -> what its prepare job returned

    def run(self, pending: list[_Pending], meanwhile: Callable[[], None] | None) -> None:
        begin = getattr(self.build.say, "begin", self.build.say)
        while pending or self.running:
            while len(self.running) < self.jobs and (job := self._next(pending)) is not None:
                begin(job)
                future = self.executor.submit(_run_job, job, self.prepared.get(job))
                self.running[future] = job
            if not pending and meanwhile is not None:  # the last jobs run: the main process's own work beside them
                meanwhile()
                meanwhile = None
            if not self.running:
                waiting = ", ".join(f"{job.name} (after {', '.join(sorted(job.needs))})" for job in pending)
                raise WriterFailed(f"writer jobs wait for jobs that do not run: {waiting}")
            finished, _ = wait(self.running, timeout=0.25, return_when=FIRST_COMPLETED)
            self._relay()
            stop_if_terminated()
            self.build.sampler.sample([child.pid or 0 for child in multiprocessing.active_children()])
            for future in finished:
                self._collect(future)
        if meanwhile is not None:  # there was no job to run
            meanwhile()

    def _next(self, pending: list[_Pending]) -> str | None:
        """The first pending job that may start now: not one that runs last while others run or wait, nor one whose
        jobs before it have not finished."""
        for index, job in enumerate(pending):
            if job.last:
                return pending.pop(index).name if index == 0 and not self.running else None
            if job.needs <= self.done:
                return pending.pop(index).name
        return None

    def _relay(self) -> None:
        """The workers' progress messages, to the display."""
        update = getattr(self.build.say, "update_stage", None)
        while self.receive.poll():
            job, *values = self.receive.recv()
            if update is not None:
                update(job, *values)

    def _collect(self, future: Future[tuple[object, profiling.Cost]]) -> None:
        job = self.running.pop(future)
        try:
            value, cost = future.result()
        except WriterFailed as error:  # one that could not cross as itself: its traceback as text
            raise WriterFailed(f"writer {job} failed in its worker:\n{error}") from None
        except BrokenProcessPool:  # a worker died (killed, out of memory): every job then running is named
            running = " or ".join(sorted([job, *self.running.values()]))
            raise WriterFailed(
                f"writer {running}: its worker ended without a result (killed, or out of memory?)"
            ) from None
        self.done.add(job)
        self.build.costs.append(cost)
        if job.endswith(PREPARE):
            self.prepared[job.removesuffix(PREPARE)] = value
        end = getattr(self.build.say, "end", None)
        if end is not None:
            end(job)


def _run_job(job: str, prepared: object) -> tuple[object, profiling.Cost]:
    """A worker: run one job of the build it inherited; its value (a prepare job's) and its cost go back. An exception
    goes back as itself where it survives pickling, else as WriterFailed with its traceback."""
    inherited = _INHERITED[0]
    build = inherited.build
    progress.install(_PipeReporter(inherited, job))
    start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    try:
        write, plan = job_writer(job, build.plan), stage_read(job, build.plan)
        if job.endswith(PREPARE):
            value = write(plan, build.loaded)
        elif job in artifacts.PREPARED and prepared is not None:
            value = write(plan, build.loaded, build.staging, prepared)
        else:
            value = write(plan, build.loaded, build.staging)
    except BaseException as error:
        raise portable_error(error, WriterFailed) from None
    release_freed_memory()
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    wall_s = time.perf_counter() - start
    peak_mib, private_mib = after.ru_maxrss / 1024, profiling.private_mib()
    return value, profiling.Cost(job, "writer", "worker", wall_s, cpu_s, peak_mib, private_mib)


# glibc's malloc_trim, where the C library has it (None elsewhere: musl, macOS)
_MALLOC_TRIM = getattr(ctypes.CDLL(None), "malloc_trim", None)


def release_freed_memory() -> None:
    """What a job left behind, given back before the worker's next job: its cyclic garbage collected, and the C
    heap's free pages returned to the system. A worker lives for the whole writing phase (CPython refuses
    max_tasks_per_child with fork), so a job's peak would otherwise stay with it for every later job."""
    gc.collect()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _send(inherited: _Inherited, message: tuple[object, ...]) -> None:
    with inherited.lock:
        inherited.progress.send(message)


class _PipeReporter:
    """A worker's reporter: its job's progress goes to the main process, which draws it."""

    def __init__(self, inherited: _Inherited, job: str) -> None:
        self.inherited, self.job = inherited, job

    def __call__(self, stage: str) -> None:
        pass

    def update(self, done: int, total: int | None, unit: str) -> None:
        _send(self.inherited, (self.job, done, total, unit))


def _stop(executor: ProcessPoolExecutor) -> None:
    """An error or an interrupt: cancel what has not started and end the workers (each reaped)."""
    executor.shutdown(wait=False, cancel_futures=True)
    children = multiprocessing.active_children()
    for child in children:
        child.terminate()
    for child in children:
        child.join()
    executor.shutdown(wait=True)
