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
    """A system library an artifact needs is not installed (e.g. Pango): exit 1, not bad input."""


def portable_error(error: BaseException, fallback: type[Exception] = RuntimeError) -> BaseException:
    """An exception a forked process can send to the main one: itself where it survives pickling, else `fallback`
    carrying its traceback as text."""
    import contextlib
    import pickle
    import traceback

    with contextlib.suppress(Exception):  # else fall back to the text
        copy = pickle.loads(pickle.dumps(error))
        if type(copy) is type(error) and str(copy) == str(error):
            return copy
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
    """SIGTERM's default action in a pool's process: the build's handler it inherits raises, and a raise lost in a
    finalizer left the process blocked for ever on its task queue while the pool waited for it to end."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
