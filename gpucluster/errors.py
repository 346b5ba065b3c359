"""Located problems in a user's input: every error names the file, line, field and what is allowed."""

from __future__ import annotations

from dataclasses import dataclass


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
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class DesignError(Exception):
    """Bad input: the command reports each problem and exits with status 2, writing nothing."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))

    def __reduce__(self) -> tuple:
        """Pickled with its problems (a writer's error crosses from its worker process to the main one)."""
        return (type(self), (self.problems,))


class MissingSystemLibrary(Exception):
    """A system library an artifact needs is not installed (e.g. Pango for PDF rendering): the message
    says which Debian packages provide it. The command reports it and exits 1 (not bad input)."""
