"""The artifacts' registry: each artifact's writer module, the order they run in, and their writing as jobs."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpucluster.design.load import LoadedDesign
from gpucluster.plan.model import Plan

Writer = Callable[[Plan, LoadedDesign, Path], None]
Job = Callable[..., Any]  # a writer, a part of one (its write_part with the part bound) or a prepare

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
# others: its module's ``prepare(plan, loaded)`` runs as the job ``<name>:prepare`` (placed by SLOW_FIRST), and what it
# returns is handed to its ``write(plan, loaded, folder, prepared)``, which then does only what reads the others' files.
# The report's figures, drawings and tables take seconds at scale; one after another (one job), ``write`` does it all.
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


def default_jobs() -> int:
    """Worker processes for the writers: the CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def writer(name: str) -> Writer:
    """The write function of an artifact."""
    entry = ARTIFACTS[name]
    return entry if callable(entry) else importlib.import_module(entry).write


def writer_jobs(name: str, plan: Plan) -> list[tuple[str, Job, frozenset[str]]]:
    """An artifact's writing as jobs, for writers side by side: [(name, its write, the jobs to finish before it)], or
    where its module splits its files into parts (``parts(plan) -> names`` and ``write_part(plan, loaded, folder,
    part)``, e.g. the cable schedule's CSV and its workbooks) one job per part, named ``artifact:part``; a part that
    needs others written first names them by ``part_needs(plan, part)``. ``artifact:prepare`` is the prepare job of a
    writer that runs last (PREPARE)."""
    if name.endswith(PREPARE):
        return [(name, importlib.import_module(str(ARTIFACTS[name.removesuffix(PREPARE)])).prepare, frozenset())]
    entry = ARTIFACTS[name]
    if callable(entry):
        return [(name, entry, frozenset())]
    module = importlib.import_module(entry)
    if not hasattr(module, "parts"):
        return [(name, module.write, frozenset())]
    needs: Callable[[Plan, str], tuple[str, ...]] = getattr(module, "part_needs", lambda _plan, _part: ())
    return [
        (
            f"{name}:{part}",
            _BoundPart(module.write_part, part),
            frozenset(f"{name}:{before}" for before in needs(plan, part)),
        )
        for part in module.parts(plan)
    ]


class _BoundPart:
    """A module's write_part with its part bound: a writer's job (functools.partial would put the part first)."""

    def __init__(self, write_part: Callable[[Plan, LoadedDesign, Path, str], None], part: str) -> None:
        self.write_part, self.part = write_part, part

    def __call__(self, plan: Plan, loaded: LoadedDesign, folder: Path) -> None:
        self.write_part(plan, loaded, folder, self.part)


def job_writer(job: str, plan: Plan) -> Job:
    """The function of one of writer_jobs' jobs, by its name (a worker finds it so: only names cross processes)."""
    name = job if job.endswith(PREPARE) else job.split(":", 1)[0]
    for label, write, _needs in writer_jobs(name, plan):
        if label == job:
            return write
    raise KeyError(f"no writer job {job!r}")


def order(name: str) -> tuple[bool, int, int]:
    """Writers that read the others' files last; the slowest first; then registry order."""
    slow = SLOW_FIRST.index(name) if name in SLOW_FIRST else len(SLOW_FIRST)
    return name in RUNS_LAST, slow, list(ARTIFACTS).index(name) if name in ARTIFACTS else len(ARTIFACTS)
