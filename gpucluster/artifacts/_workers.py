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
import pickle
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, Pipe, wait
from pathlib import Path
from typing import cast

from gpucluster import profiling, progress
from gpucluster.artifacts import _Shared
from gpucluster.design.load import LoadedDesign
from gpucluster.plan.model import Plan

Write = Callable[[Plan, LoadedDesign, Path], None]


class WriterFailed(RuntimeError):
    """A writer failed in a worker with an exception that could not be sent back as it was."""


class _PipeReporter:
    """A worker's reporter: progress goes to the main process, which draws it."""

    def __init__(self, conn: Connection, name: str):
        self.conn, self.name = conn, name

    def __call__(self, stage: str) -> None:
        pass

    def update(self, done: int, total: int | None, unit: str) -> None:
        self.conn.send(("progress", done, total, unit))


def run_parallel(
    plan: Plan,
    loaded: LoadedDesign,
    staging: Path,
    work: Sequence[tuple[str, bool]],
    jobs_of: Callable[[str], list[tuple[str, Write]]],
    jobs: int,
    reporter: progress.Reporter | Callable[[str], None],  # a plain callable only hears writer names
    costs: list[profiling.Cost],
    sampler: profiling.PeakSampler,
) -> None:
    """Run the writers `work` ((name, runs last), in that order of preference) on up to `jobs` workers, each as the
    jobs `jobs_of` gives it (imported only when it is its turn); one that runs last starts only when every other
    has finished."""
    pending: list[tuple[str, Write | None, bool]] = [(name, None, last) for name, last in work]
    running: dict[Connection, tuple[str, int, float]] = {}  # conn -> (writer, pid, start)
    begin = getattr(reporter, "begin", reporter)
    update = getattr(reporter, "update_stage", None)
    end = getattr(reporter, "end", None)
    finish_main = getattr(reporter, "finish_main", None)
    if finish_main is not None:  # the main process's last stage (planning) is over: its bar stops its clock
        finish_main()
    gc.freeze()  # the plan's objects stay out of the workers' collections, so their pages stay shared
    try:
        while pending or running:
            while pending and len(running) < jobs and not (pending[0][2] and running):
                name, write, last = pending.pop(0)
                if write is None:  # a writer's turn: its jobs take its place
                    pending[:0] = [(label, job, last) for label, job in jobs_of(name)]
                    continue
                begin(name)
                conn, pid = _fork(plan, loaded, staging, name, write)
                running[conn] = (name, pid, time.perf_counter())
            sampler.sample([pid for _name, pid, _start in running.values()])
            ready = cast(list[Connection], wait(list(running), timeout=0.25))  # wait returns what it was given
            for conn in ready:
                name, pid, start = running[conn]
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
                del running[conn]
                conn.close()
                _pid, status, usage = os.wait4(pid, 0)
                if message[0] != "done":
                    raise _failure(name, message, status)
                costs.append(
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
    finally:
        gc.unfreeze()
        for _name, pid, _start in running.values():  # an error or an interrupt: stop the others
            try:
                os.kill(pid, signal.SIGTERM)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def _fork(plan: Plan, loaded: LoadedDesign, staging: Path, name: str, write: Write) -> tuple[Connection, int]:
    parent_end, child_end = Pipe(duplex=False)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        child_end.close()
        return parent_end, pid
    # the worker: write one artifact, say how it went, and leave without running the parent's exit handlers
    parent_end.close()
    code = 0
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        progress.install(_PipeReporter(child_end, name))
        _Shared.send = lambda key, value: child_end.send(("shared", key, value))
        write(plan, loaded, staging)
        child_end.send(("done", profiling.private_mib()))
    except BaseException as error:  # every failure goes back to the main process
        code = 1
        with contextlib.suppress(BaseException):
            child_end.send(("error", _portable(error)))
    finally:
        try:
            child_end.close()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _portable(error: BaseException) -> BaseException:
    """The exception itself where it survives pickling, else its traceback as text."""
    try:
        copy = pickle.loads(pickle.dumps(error))
        if type(copy) is type(error) and str(copy) == str(error):
            return copy
    except Exception:  # fall back to the text
        pass
    return WriterFailed("".join(traceback.format_exception(error)).rstrip())


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
