"""Artifact writers: each one a view of the plan, written into a staging folder that replaces the
design's output folder only when every writer has succeeded (so a failed or interrupted build
leaves the previous output as it was)."""

from __future__ import annotations

import contextlib
import enum
import functools
import importlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from gpucluster.artifacts import output_folder
from gpucluster.design.load import LoadedDesign
from gpucluster.plan.model import Plan
from gpucluster.runtime import profiling

if TYPE_CHECKING:
    from gpucluster.artifacts._workers import Workers

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
    "decision-summary": "gpucluster.artifacts.decision",
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
PREPARED: frozenset[str] = frozenset({"report"})  # the writers that run last and have a prepare job
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


# Writers, or parts of one ("artifact:part"), that read only the physical plan (devices, racks, links, cables and their
# power: plan/build.py), not what the pipeline derives from it (pipeline.DERIVED: graphs, analyses, totals, rule facts,
# findings, burn-in tests): with writers side by side they start as soon as the physical plan is complete, on the CPUs
# the main process leaves while it computes the rest (in a worker the rest are stand-ins that fail when read). In order
# of preference (the longest first).
EARLY: tuple[str, ...] = ("cabling", "plan:records")
# Writers, or parts of one, that read only the devices, racks and links (not the cables nor what the cables stage adds,
# pipeline.CABLED, nor the graphs or anything derived): with writers side by side they start as soon as the links
# exist, one after another in one worker while the main process chooses the cables (one CPU is otherwise idle there:
# the graph analyses beside it take a fraction of the stage). In order (the longest first). Not the Slurm, NCCL and
# Kubernetes writers: the fabric tree they read (scheduling.fabric_tree) walks the graphs, which the main process builds
# once after planning.
LINKED: tuple[str, ...] = ("monitoring", "switches")


class Reads(enum.IntEnum):
    """How much of the plan a writer's job reads, which says how early in planning it may start: a worker forked at a
    stage runs only jobs that read no more than its copy of the plan holds."""

    LINKS = 0  # devices, racks and links (LINKED)
    PHYSICAL = 1  # the physical plan: cables and device power too (EARLY)
    WHOLE = 2  # everything planning computes, the graphs too


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


def writer_jobs(name: str, plan: Plan) -> list[tuple[str, Writer, frozenset[str]]]:
    """An artifact's writing as jobs, for writers side by side: [(name, its write, the jobs to finish before it)], or
    where its module splits its files into parts (``parts(plan) -> names`` and ``write_part(plan, loaded, folder,
    part)``, e.g. the cable schedule's CSV and its workbooks) one job per part, named ``artifact:part``; a part that
    needs others written first names them in the module's ``PART_NEEDS`` (part -> parts). ``artifact:prepare`` is the
    prepare job of a writer that runs last (PREPARE)."""
    if name.endswith(PREPARE):
        return [(name, importlib.import_module(str(ARTIFACTS[name.removesuffix(PREPARE)])).prepare, frozenset())]
    entry = ARTIFACTS[name]
    if callable(entry):
        return [(name, entry, frozenset())]
    module = importlib.import_module(entry)
    if not hasattr(module, "parts"):
        return [(name, module.write, frozenset())]
    needs: dict[str, tuple[str, ...]] = getattr(module, "PART_NEEDS", {})
    return [
        (
            f"{name}:{part}",
            functools.partial(_write_part, module.write_part, part),
            frozenset(f"{name}:{before}" for before in needs.get(part, ())),
        )
        for part in module.parts(plan)
    ]


def early(job: str) -> bool:
    """Whether a writer's job reads the physical plan alone (EARLY or LINKED names it or its artifact)."""
    return reads(job) < Reads.WHOLE


def reads(job: str) -> Reads:
    """How much of the plan a writer's job reads (LINKED, EARLY name it or its artifact; else all of it)."""
    artifact = job.split(":", 1)[0]
    if job in LINKED or artifact in LINKED:
        return Reads.LINKS
    if job in EARLY or artifact in EARLY:
        return Reads.PHYSICAL
    return Reads.WHOLE


def job_writer(job: str, plan: Plan) -> Writer:
    """The write function of one of writer_jobs' jobs, by its name (a worker forked before the job was known finds it
    so)."""
    name = job if job.endswith(PREPARE) else job.split(":", 1)[0]
    for label, write, _needs in writer_jobs(name, plan):
        if label == job:
            return write
    raise KeyError(f"no writer job {job!r}")


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
    with Writing(plan.name, out_dir, only, progress, jobs, costs, sampler) as writing:
        return writing.finish(plan, loaded)


class Writing:
    """One build's writing of its artifacts, as a context. `start_early` may start the writers of the physical plan
    alone (EARLY) while planning goes on; `finish` writes the rest and swaps the staging folder in. The output folder's
    lock and the staging folder are taken when the first of them is called. Leaving the context on an error (a
    writer's, or planning's: a design rule) stops the writers still running and removes the staging folder (and the
    output folder, when this build made it and it is empty): nothing half-written."""

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
        self.names = sorted(set(only if only is not None else ARTIFACTS), key=_order)
        side_by_side = len(self.names) > 1 or any(early(name) or _splits(name) for name in self.names)
        self.jobs = jobs if jobs > 1 and side_by_side and hasattr(os, "fork") else 1
        self.workers: Workers | None = None
        self.staging = Path()
        self._opened: contextlib.ExitStack | None = None

    def __enter__(self) -> Writing:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._opened is not None:
            self._opened.close()
            self._opened = None

    def _open(self) -> None:
        """Take the output folder's lock and make the staging folder (once)."""
        if self._opened is not None:
            return
        with contextlib.ExitStack() as stack:
            if not self.out_dir.is_dir():
                self.out_dir.mkdir(parents=True, exist_ok=True)
                stack.callback(output_folder.remove_if_empty, self.out_dir)  # last: after the lock is let go
            _Shared.values.clear()
            stack.enter_context(output_folder.build_lock(self.out_dir))
            stack.callback(_Shared.values.clear)
            output_folder.recover(self.final)
            output_folder.remove_stale_staging(self.final)
            self.staging = Path(tempfile.mkdtemp(prefix=f".{self.final.name}.", suffix=".tmp", dir=self.out_dir))
            stack.callback(shutil.rmtree, self.staging, ignore_errors=True)  # gone already once swapped in
            if self.jobs > 1:
                from gpucluster.artifacts._workers import Workers

                self.workers = Workers(self.staging, self.jobs, self.say, self.costs, self.sampler)
                stack.callback(self.workers.stop)
            self._opened = stack.pop_all()

    def pids(self) -> list[int]:
        """The worker processes running now (for the memory sampler)."""
        return self.workers.pids() if self.workers is not None else []

    def start_linked(self, plan: Plan, loaded: LoadedDesign) -> None:
        """The devices, racks and links are complete (pipeline.plan_design's `linked`): start the writers of them alone
        (LINKED), in one worker one after another, on the CPU planning leaves, when writers run side by side."""
        self._start_early(plan, loaded, Reads.LINKS)

    def start_early(self, plan: Plan, loaded: LoadedDesign) -> None:
        """The physical plan is complete (pipeline.plan_design's `physical`): start the writers of it alone (EARLY),
        longest first, on the CPUs planning leaves, when writers run side by side."""
        self._start_early(plan, loaded, Reads.PHYSICAL)

    def _start_early(self, plan: Plan, loaded: LoadedDesign, stage: Reads) -> None:
        if self.jobs == 1:
            return
        self._open()
        assert self.workers is not None
        registry = LINKED if stage == Reads.LINKS else EARLY
        ready = [
            label
            for name in sorted(self.names, key=functools.partial(_early_order, registry=registry))
            if reads(name) == stage or any(entry.startswith(f"{name}:") for entry in registry)
            for label, _write, needs in writer_jobs(name, plan)
            if reads(label) == stage and not needs
        ]
        self.workers.start_early(plan, loaded, ready, stage)

    def finish(
        self,
        plan: Plan,
        loaded: LoadedDesign,
        meanwhile: Callable[[], None] | None = None,
        beside: Callable[[], tuple[Path, Path] | None] | None = None,
    ) -> Path:
        """Write the artifacts not written yet (wait for those started early) and swap the staging folder in.
        `meanwhile` (the main process's own work after the writers, e.g. the plan lock) runs once every writer's job has
        been handed out, beside the last ones (the report alone leaves a CPU idle), or after them one at a time.
        `beside` (called before the swap, so its failure leaves the output as it was) gives a file renamed with it."""
        self._open()
        if self.workers is not None:
            work = [(name, name in RUNS_LAST) for name in sorted(self.names + _preparations(self.names), key=_order)]
            self.workers.run(plan, loaded, work, functools.partial(writer_jobs, plan=plan), meanwhile)
        else:
            for name in self.names:
                self.say(name)
                start, cpu = time.perf_counter(), profiling.cpu_seconds()
                writer(name)(plan, loaded, self.staging)
                self.costs.append(
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
                self.sampler.sample([])
            finish = getattr(self.say, "end", None)
            if finish is not None and self.names:
                finish(self.names[-1])
            if meanwhile is not None:
                meanwhile()
        output_folder.swap(self.staging, self.final, beside() if beside is not None else None)
        return self.final


def _splits(name: str) -> bool:
    """Whether an artifact's module writes its files as parts (its module is imported to tell)."""
    entry = ARTIFACTS.get(name)
    return isinstance(entry, str) and hasattr(importlib.import_module(entry), "parts")


def _early_order(name: str, registry: tuple[str, ...]) -> int:
    """Writers with early jobs in their registry's order (EARLY, LINKED)."""
    for index, entry in enumerate(registry):
        if entry == name or entry.startswith(f"{name}:"):
            return index
    return len(registry)


def _preparations(names: list[str]) -> list[str]:
    """The prepare jobs (PREPARE) of the writers among `names` that run last and have one (PREPARED: their modules
    are imported when their jobs' turn comes, while other writers run, not before the first one starts)."""
    return [name + PREPARE for name in names if name in RUNS_LAST and name in PREPARED]


def _order(name: str) -> tuple[bool, int, int]:
    """Writers that read the others' files last; the slowest first; then registry order."""
    slow = SLOW_FIRST.index(name) if name in SLOW_FIRST else len(SLOW_FIRST)
    return name in RUNS_LAST, slow, list(ARTIFACTS).index(name) if name in ARTIFACTS else len(ARTIFACTS)
