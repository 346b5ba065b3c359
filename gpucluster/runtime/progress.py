"""Progress of a long build: which stage or writer runs, and within it how far it is (rows, racks, pages).

Planning stages and writers announce themselves by calling the reporter with their name (the
``Callable[[str], None]`` that ``plan_design`` and ``write_artifacts`` take); long loops inside them wrap
their items in :func:`track`, which reports to the reporter of the current process. The command line
installs a reporter that draws rich progress bars (count, rate, time left) when stderr is a terminal,
prints one line per stage when asked to on a pipe, and nothing otherwise; a writer running in a worker
process reports through a pipe to the parent, which draws for it (gpucluster/artifacts/pool.py).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:  # rich is imported only when bars are drawn
    from rich.console import Console
    from rich.progress import TaskID

T = TypeVar("T")
_CHECK_EVERY = 512  # items between clock reads in track(): keeps its cost far below the work per item
_INTERVAL_S = 0.1  # at most this often a report


@runtime_checkable
class Reporter(Protocol):
    """Where progress goes: a stage starting (by name), and counts within the running stage."""

    def __call__(self, stage: str) -> None: ...

    def update(self, done: int, total: int | None, unit: str) -> None: ...


class Silent:
    """Reports nothing (the default: library use, tests, CI logs); the reporters that only hear stage names extend
    it, so track() skips counting for them."""

    def __call__(self, stage: str) -> None:
        pass

    def update(self, done: int, total: int | None, unit: str) -> None:
        pass

    def update_stage(self, stage: str, done: int, total: int | None, unit: str) -> None:
        pass

    def end(self, stage: str) -> None:
        pass


class _State:
    reporter: Reporter = Silent()


def current() -> Reporter:
    return _State.reporter


def install(reporter: Reporter | Callable[[str], None] | None) -> Reporter:
    """Make `reporter` this process's reporter (a plain callable only hears stage names); return the previous one."""
    previous = _State.reporter
    if reporter is None:
        _State.reporter = Silent()
    elif isinstance(reporter, Reporter):  # has update() too
        _State.reporter = reporter
    else:
        _State.reporter = _StagesOnly(reporter)
    return previous


def track(items: Iterable[T], total: int | None, unit: str) -> Iterator[T]:
    """Yield `items`, reporting how many have passed (of `total`, in `unit`) at most every 0.1 s, and once at
    the end. With the silent reporter it costs one comparison per item."""
    reporter = _State.reporter
    if isinstance(reporter, Silent):
        yield from items
        return
    last = time.monotonic()
    reporter.update(0, total, unit)
    done = 0
    for done, item in enumerate(items, start=1):
        yield item
        if not done % _CHECK_EVERY:
            now = time.monotonic()
            if now - last >= _INTERVAL_S:
                last = now
                reporter.update(done, total, unit)
    reporter.update(done, total if total is not None else done, unit)


class _StagesOnly(Silent):
    def __init__(self, say: Callable[[str], None]):
        self.say = say

    def __call__(self, stage: str) -> None:
        self.say(stage)


class Lines(Silent):
    """One line per stage with the seconds since the start (for `--progress` on a pipe or log)."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def __call__(self, stage: str) -> None:
        print(f"[{time.monotonic() - self.start:6.1f}s] {stage}", file=sys.stderr, flush=True)


class Bars:
    """rich progress bars on stderr, one per running stage or writer: count of its unit, rate, time left.

    Drawn without rich's refresh thread (a worker process is forked while it draws): each report redraws,
    at most every 0.1 s. Use as a context manager; stages that finish stay on the screen with their time."""

    def __init__(self, console: Console | None = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description:<32}"),
            BarColumn(),
            TaskProgressColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]:<8}"),
            TextColumn("{task.fields[rate]:>12}"),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=console or Console(stderr=True),
            auto_refresh=False,
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}
        self.started: dict[str, float] = {}
        self.running_in_main = ""
        self.last_refresh = 0.0

    def __enter__(self) -> Bars:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish_main()
        self.progress.refresh()
        self.progress.stop()

    def __call__(self, stage: str) -> None:
        """A stage of the main process starts: the previous one is finished."""
        self.finish_main()
        self.begin(stage)
        self.running_in_main = stage

    def begin(self, stage: str) -> None:
        if stage not in self.tasks:
            self.tasks[stage] = self.progress.add_task(stage, total=None, unit="", rate="")
            self.started[stage] = time.monotonic()
        self.refresh(force=True)

    def update(self, done: int, total: int | None, unit: str) -> None:
        """Progress of the stage running in this process."""
        if self.running_in_main:
            self.update_stage(self.running_in_main, done, total, unit)

    def update_stage(self, stage: str, done: int, total: int | None, unit: str) -> None:
        """Progress of a named stage or writer (one running in a worker process, too)."""
        if stage not in self.tasks:
            self.begin(stage)
        elapsed = time.monotonic() - self.started[stage]
        rate = f"{done / elapsed:,.0f}/s" if elapsed > 0 and done else ""
        self.progress.update(self.tasks[stage], completed=done, total=total, unit=unit, rate=rate)
        self.refresh()

    def end(self, stage: str) -> None:
        """A stage or writer is done: its bar is full."""
        task = self.tasks.get(stage)
        if task is not None:
            state = self.progress.tasks[self.progress.task_ids.index(task)]
            total = state.total if state.total is not None else max(state.completed, 1)
            self.progress.update(task, completed=total, total=total)
            self.progress.stop_task(task)
        self.refresh(force=True)

    def finish_main(self) -> None:
        if self.running_in_main:
            self.end(self.running_in_main)
            self.running_in_main = ""

    def refresh(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last_refresh >= _INTERVAL_S:
            self.last_refresh = now
            self.progress.refresh()
