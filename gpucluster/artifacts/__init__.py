"""Artifact writers: each one a view of the plan, written into a staging folder that replaces the
design's output folder only when every writer has succeeded (so a failed or interrupted build
leaves the previous output as it was)."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import importlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import ClassVar

from gpucluster import profiling
from gpucluster.design.load import LoadedDesign
from gpucluster.plan.model import Plan

Writer = Callable[[Plan, LoadedDesign, Path], None]

# name -> the module whose write(plan, loaded, folder) puts that artifact's files into the folder it is
# given. Modules are imported when their artifact is written, so `--only plan` and `validate` do not pay
# for matplotlib, the spreadsheet and PDF libraries.
ARTIFACTS: dict[str, str | Writer] = {
    "plan": "gpucluster.artifacts.plan_json",
    "summary": "gpucluster.artifacts.summary",
    "power": "gpucluster.artifacts.power",
    "checkpoint": "gpucluster.artifacts.checkpoint",
    "simulation": "gpucluster.artifacts.simulation_html",
    "burn-in": "gpucluster.artifacts.burn_in",
    "monitoring": "gpucluster.artifacts.monitoring",
    "slurm": "gpucluster.artifacts.slurm",
    "kubernetes": "gpucluster.artifacts.kubernetes",
    "nccl": "gpucluster.artifacts.nccl",
    "bom": "gpucluster.artifacts.bom",
    "cabling": "gpucluster.artifacts.cabling",
    "netbox": "gpucluster.artifacts.netbox",
    "verify": "gpucluster.artifacts.verify_expected",
    "switches": "gpucluster.artifacts.switch_config",
    "printouts": "gpucluster.artifacts.printouts",
    "report": "gpucluster.artifacts.report",
}
# Writers that read what the others wrote (the report links to every file and shows their charts) run after them,
# whatever order the registry or --only gives.
RUNS_LAST: frozenset[str] = frozenset({"report"})
# A writer that runs last may do the part of its work that reads no other file beforehand, side by side with the
# others: its module's ``prepare(plan, loaded, folder)`` runs as the job ``<name>:prepare`` (placed by SLOW_FIRST) and
# shares (``share``) what it made for its ``write``, which then does only what reads the others' files. The report's
# figures, drawings and tables take seconds at scale; one after another (one job), ``write`` does it all.
PREPARE = ":prepare"
# Writers that take longest at scale start first when writers run side by side, longest first (measured at 131,072
# GPUs with `gpucluster build --profile`), so that short ones fill the end; the others follow in registry order.
SLOW_FIRST: tuple[str, ...] = (
    "cabling",
    "verify",
    "power",
    "netbox",
    "burn-in",
    "bom",
    "report:prepare",
    "monitoring",
    "plan",
    "checkpoint",
    "switches",
    "slurm",
)


class _Shared:
    """Values one writer computes that a later one needs too (the report shows the BOM writer's BOM): held for one
    write_artifacts. A writer in a worker process sends its values to the main process (``send``), whose workers
    forked after that inherit them; the report, which runs last, finds them."""

    values: ClassVar[dict[str, object]] = {}
    send: ClassVar[Callable[[str, object], None] | None] = None


def share(key: str, value: object) -> None:
    """Keep `value` under `key` for the writers that run after this one in this build."""
    _Shared.values[key] = value
    if _Shared.send is not None:
        _Shared.send(key, value)


def shared(key: str) -> object | None:
    """A value an earlier writer of this build shared (None when it did not run, or runs beside this one)."""
    return _Shared.values.get(key)


def default_jobs() -> int:
    """Worker processes for the writers: the CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def writer(name: str) -> Writer:
    """The write function of an artifact."""
    entry = ARTIFACTS[name]
    return entry if callable(entry) else importlib.import_module(entry).write


def writer_jobs(name: str, plan: Plan) -> list[tuple[str, Writer]]:
    """An artifact's writing as independent jobs, for writers side by side: [(name, its write)], or where its
    module splits its files into parts (``parts(plan) -> names`` and ``write_part(plan, loaded, folder, part)``,
    e.g. the cable schedule's CSV and its workbooks) one job per part, named ``artifact:part``; ``artifact:prepare`` is
    the prepare job of a writer that runs last (PREPARE)."""
    if name.endswith(PREPARE):
        return [(name, importlib.import_module(str(ARTIFACTS[name.removesuffix(PREPARE)])).prepare)]
    entry = ARTIFACTS[name]
    if callable(entry):
        return [(name, entry)]
    module = importlib.import_module(entry)
    if not hasattr(module, "parts"):
        return [(name, module.write)]
    return [(f"{name}:{part}", functools.partial(_write_part, module.write_part, part)) for part in module.parts(plan)]


def _write_part(write_part: Callable[..., None], part: str, plan: Plan, loaded: LoadedDesign, folder: Path) -> None:
    write_part(plan, loaded, folder, part)


def write_artifacts(
    plan: Plan,
    loaded: LoadedDesign,
    out_dir: Path | str,
    only: Iterable[str] | None = None,
    progress: Callable[[str], None] | None = None,
    jobs: int = 1,
    costs: list[profiling.Cost] | None = None,
    sampler: profiling.PeakSampler | None = None,
) -> Path:
    """Write the chosen artifacts (default: all) to ``out_dir/<design name>/`` atomically; return that folder.

    With `jobs` above 1 the writers run side by side in that many forked worker processes (POSIX only);
    the files are the same either way. Each writer's cost is appended to `costs` when given."""
    from gpucluster import progress as progress_display

    say = progress or progress_display.current()
    costs = [] if costs is None else costs
    sampler = sampler or profiling.PeakSampler()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / plan.name
    _Shared.values.clear()
    with _build_lock(out_dir), contextlib.ExitStack() as cleanup:
        cleanup.callback(_Shared.values.clear)
        _recover(final)
        _remove_stale_staging(final)
        staging = Path(tempfile.mkdtemp(prefix=f".{plan.name}.", suffix=".tmp", dir=out_dir))
        try:
            chosen = set(only if only is not None else ARTIFACTS)
            names = sorted(chosen, key=_order)
            if jobs > 1 and len(names) > 1 and hasattr(os, "fork"):
                from gpucluster.artifacts._workers import run_parallel

                work = [(name, name in RUNS_LAST) for name in sorted(names + _preparations(names), key=_order)]
                jobs_of = functools.partial(writer_jobs, plan=plan)
                run_parallel(plan, loaded, staging, work, jobs_of, jobs, say, costs, sampler)
            else:
                for name in names:
                    say(name)
                    start, cpu = time.perf_counter(), profiling.cpu_seconds()
                    writer(name)(plan, loaded, staging)
                    costs.append(
                        profiling.Cost(
                            name,
                            "writer",
                            "main",
                            time.perf_counter() - start,
                            profiling.cpu_seconds() - cpu,
                            profiling.peak_rss_mib(),
                            profiling.rss_mib(),
                        )
                    )
                    sampler.sample([])
                finish = getattr(say, "end", None)
                if finish is not None and names:
                    finish(names[-1])
            _swap(staging, final)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return final


@contextlib.contextmanager
def _build_lock(out_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on the output folder for the build, so builds into one folder take turns and any
    staging folder found while holding it belongs to a build that is gone (the kernel drops a killed process's lock)."""
    fd = os.open(out_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _remove_stale_staging(final: Path) -> None:
    """Delete staging folders left by builds of this design that were killed mid-way (SIGKILL, power loss),
    which no `finally` could remove."""
    for stale in final.parent.glob(f".{final.name}.*.tmp"):
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)


def _preparations(names: list[str]) -> list[str]:
    """The prepare jobs (PREPARE) of the writers among `names` that run last and have one."""
    return [
        name + PREPARE
        for name in names
        if name in RUNS_LAST
        and isinstance(ARTIFACTS[name], str)
        and hasattr(importlib.import_module(str(ARTIFACTS[name])), "prepare")
    ]


def _order(name: str) -> tuple[bool, int, int]:
    """Writers that read the others' files last; the slowest first; then registry order."""
    slow = SLOW_FIRST.index(name) if name in SLOW_FIRST else len(SLOW_FIRST)
    return name in RUNS_LAST, slow, list(ARTIFACTS).index(name) if name in ARTIFACTS else len(ARTIFACTS)


def _swap(staging: Path, final: Path) -> None:
    """Replace `final` with `staging`: rename the old folder aside, move the new one in, delete the old."""
    os.chmod(staging, 0o755)
    old = final.with_name(f".{final.name}.old")
    if old.exists():
        shutil.rmtree(old)
    if final.exists():
        os.replace(final, old)
    os.replace(staging, final)
    shutil.rmtree(old, ignore_errors=True)


def _recover(final: Path) -> None:
    """A build interrupted between the two renames left the previous output aside: put it back."""
    old = final.with_name(f".{final.name}.old")
    if old.exists() and not final.exists():
        os.replace(old, final)
