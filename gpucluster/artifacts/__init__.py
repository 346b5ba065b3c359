"""Artifact writers: each one a view of the plan, written into a staging folder that replaces the
design's output folder only when every writer has succeeded (so a failed or interrupted build
leaves the previous output as it was). Which writers there are: artifacts/registry.py."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from gpucluster.artifacts import output_folder
from gpucluster.artifacts.registry import ARTIFACTS, Artifact, default_jobs, order
from gpucluster.design.load import LoadedDesign
from gpucluster.plan.model import AnalysedPlan
from gpucluster.runtime import profiling

__all__ = ["ARTIFACTS", "Artifact", "Writing", "default_jobs", "write_artifacts"]


def write_artifacts(
    plan: AnalysedPlan,
    loaded: LoadedDesign,
    out_dir: Path | str,
    only: Iterable[str] | None = None,
    progress: Callable[[str], None] | None = None,
    jobs: int = 1,
    costs: list[profiling.Cost] | None = None,
    sampler: profiling.PeakSampler | None = None,
) -> Path:
    """Write the chosen artifacts (default: all) to ``out_dir/<design name>/`` atomically; return that folder.

    With `jobs` above 1 the writers run side by side in a pool of that many forked processes (POSIX only);
    the files are the same either way. Each writer's cost is appended to `costs` when given."""
    with Writing(plan.name, out_dir, only, progress, jobs, costs, sampler) as writing:
        return writing.finish(plan, loaded)


class Writing:
    """One build's writing of its artifacts, as a context: `finish` writes them into a staging folder (the output
    folder's lock taken meanwhile) and swaps it in. Leaving the context on an error (a writer's, or an interrupt) stops
    the writers still running and removes the staging folder (and the output folder, when this build made it and it is
    empty): nothing half-written."""

    def __init__(
        self,
        name: str,
        out_dir: Path | str,
        only: Iterable[str] | None = None,
        progress: Callable[[str], None] | None = None,
        jobs: int = 1,
        costs: list[profiling.Cost] | None = None,
        sampler: profiling.PeakSampler | None = None,
    ) -> None:
        from gpucluster.runtime import progress as progress_display

        self.say = progress or progress_display.current()
        self.costs = [] if costs is None else costs
        self.sampler = sampler or profiling.PeakSampler()
        self.out_dir = Path(out_dir)
        self.final = self.out_dir / name
        self.names = sorted(set(only if only is not None else ARTIFACTS), key=order)
        self.jobs = jobs if jobs > 1 and hasattr(os, "fork") else 1
        self.staging = Path()
        self._opened = contextlib.ExitStack()

    def __enter__(self) -> Writing:
        return self

    def __exit__(self, *exc: object) -> None:
        self._opened.close()

    def _open(self) -> None:
        """Take the output folder's lock and make the staging folder."""
        with contextlib.ExitStack() as stack:
            if not self.out_dir.is_dir():
                self.out_dir.mkdir(parents=True, exist_ok=True)
                stack.callback(output_folder.remove_if_empty, self.out_dir)  # last: after the lock is let go
            stack.enter_context(output_folder.build_lock(self.out_dir))
            output_folder.recover(self.final)
            output_folder.remove_stale_staging(self.final)
            self.staging = Path(tempfile.mkdtemp(prefix=f".{self.final.name}.", suffix=".tmp", dir=self.out_dir))
            stack.callback(shutil.rmtree, self.staging, ignore_errors=True)  # gone already once swapped in
            self._opened = stack.pop_all()

    def finish(
        self,
        plan: AnalysedPlan,
        loaded: LoadedDesign,
        meanwhile: Callable[[], None] | None = None,
        beside: Callable[[], tuple[Path, Path] | None] | None = None,
    ) -> Path:
        """Write the artifacts and swap the staging folder in. `meanwhile` (the main process's own work after the
        writers, e.g. the plan lock) runs once every writer's job has been handed out, beside the last ones, or after
        them one at a time. `beside` (called before the swap, so its failure leaves the output as it was) gives a file
        renamed with it."""
        from gpucluster.artifacts import pool

        self._open()
        build = pool.Build(plan, loaded, self.staging, self.say, self.costs, self.sampler)
        if self.jobs > 1:
            pool.run_side_by_side(build, self.names, self.jobs, meanwhile)
        else:
            pool.run_in_turn(build, self.names, meanwhile)
        output_folder.swap(self.staging, self.final, beside() if beside is not None else None)
        return self.final
