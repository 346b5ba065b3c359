"""The output folder of a build: its lock, the staging folder the writers fill, and the swap that puts the new
output in place of the old one whole (a failed or killed build leaves the previous output as it was)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path


def remove_if_empty(folder: Path) -> None:
    """A folder this build made, when a failed build left nothing in it."""
    with contextlib.suppress(OSError):
        folder.rmdir()


@contextlib.contextmanager
def build_lock(out_dir: Path) -> Iterator[None]:
    """An exclusive lock on the output folder: builds into one folder take turns, and a staging folder found while
    holding it belongs to a build that is gone (the kernel drops a killed process's lock)."""
    fd = os.open(out_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def remove_stale_staging(final: Path) -> None:
    """Delete staging folders left by builds of this design that were killed mid-way (SIGKILL, power loss),
    which no `finally` could remove."""
    for stale in final.parent.glob(f".{final.name}.*.tmp"):
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)


def remove_stale_file(staged: Path) -> None:
    """Delete a file a killed build left under a name of its own (the plan lock's new file and its temporary),
    which is never read as the lock."""
    for stale in (staged, staged.with_name(f".{staged.name}.tmp")):
        if stale.is_file() and not stale.is_symlink():
            stale.unlink()


def swap(staging: Path, final: Path, beside: tuple[Path, Path] | None = None) -> None:
    """Replace `final` with `staging`: the old folder renamed aside, the new one in, the old deleted. `beside` (the
    new plan lock and the one it replaces) is renamed right after, so output and lock change together; should that
    fail, the previous output is put back."""
    os.chmod(staging, 0o755)
    old = final.with_name(f".{final.name}.old")
    if old.exists():
        shutil.rmtree(old)
    had_output = final.exists()
    if had_output:
        os.replace(final, old)
    try:
        os.replace(staging, final)
        if beside is not None:
            os.replace(*beside)
    except OSError:
        if final.exists() and not staging.exists():
            os.replace(final, staging)  # the new output back to staging, which the caller removes
        if had_output:
            os.replace(old, final)
        raise
    shutil.rmtree(old, ignore_errors=True)


def recover(final: Path) -> None:
    """A build interrupted between the two renames left the previous output aside: put it back."""
    old = final.with_name(f".{final.name}.old")
    if old.exists() and not final.exists():
        os.replace(old, final)
