"""Located problems in a user's input: every error names the file, line, field and what is allowed."""

from __future__ import annotations

from dataclasses import dataclass

MAX_FIELD_CHARS = 120  # a field path is cut short: a key can be as long as the file it stands in
MAX_REPORTED = 50  # problems printed for one input; the rest are counted


@dataclass(frozen=True)
class Problem:
    """One located finding in an input file."""

    file: str
    line: int
    column: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}" if self.line else self.file
        field = self.field if len(self.field) <= MAX_FIELD_CHARS else self.field[: MAX_FIELD_CHARS - 3] + "..."
        return f"{where}: {field}: {self.message}" if field else f"{where}: {self.message}"


class DesignError(Exception):
    """Bad input: the command reports each problem and exits with status 2, writing nothing."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))

    def __reduce__(self) -> tuple[type[DesignError], tuple[list[Problem]]]:
        """Pickled with its problems (a writer's error crosses from its worker process to the main one)."""
        return (type(self), (self.problems,))


class MissingSystemLibrary(Exception):
    """A system library an artifact needs is not installed (e.g. Pango for PDF rendering): the message
    says which Debian packages provide it. The command reports it and exits 1 (not bad input)."""


def portable_error(error: BaseException, fallback: type[Exception] = RuntimeError) -> BaseException:
    """An exception a forked process can send to the main one: the exception itself where it survives pickling, else
    `fallback` carrying its traceback as text (so the main process raises it again, located, whichever it was)."""
    import pickle
    import traceback

    try:
        copy = pickle.loads(pickle.dumps(error))
        if type(copy) is type(error) and str(copy) == str(error):
            return copy
    except Exception:  # fall back to the text
        pass
    return fallback("".join(traceback.format_exception(error)).rstrip())


# SIGTERM's number once a build has been asked to stop (cli's handler): the exception the handler raises is lost when
# the signal lands inside a finalizer (__del__, a weakref callback), where Python ignores exceptions, so the build's
# loops ask again (stop_if_terminated) at each planning stage and each turn of the writers' loop.
_TERMINATED: list[int] = []


def terminated(signum: int | None) -> None:
    """Record (a signal's number) or forget (None) that the build was asked to stop."""
    _TERMINATED.clear()
    if signum is not None:
        _TERMINATED.append(signum)


def stop_if_terminated() -> None:
    """Raise SystemExit(128 + signal) when the build was asked to stop and is still going."""
    if _TERMINATED:
        raise SystemExit(128 + _TERMINATED[0])


def sigterm_default() -> None:
    """SIGTERM's default action in a forked child (a worker, a multiprocessing pool's process): the build's handler,
    which it inherits, raises to unwind the build, and where that raise is lost (in a finalizer) a pool's process
    went on and blocked for ever on its task queue while the pool, terminating it, waited for it to end."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def fork_worker() -> int:
    """os.fork with SIGTERM and SIGINT held back across it: a signal landing in the fork handlers Python and logging run
    (where an exception is printed as ignored and lost) is delivered after them instead. The child (0 returned) gets
    SIGTERM's default action, so stopping it needs no help from Python."""
    import os
    import signal

    held = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        pid = os.fork()
        if pid == 0:
            sigterm_default()
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)
    return pid
