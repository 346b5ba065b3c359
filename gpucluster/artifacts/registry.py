"""The artifacts' registry: each artifact's writer module and the plan stage it reads, the order they run in, and
their writing as jobs."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpucluster.design.load import LoadedDesign
from gpucluster.plan.model import AnalysedPlan, PhysicalPlan

Writer = Callable[[Any, LoadedDesign, Path], None]  # its plan: the stage its Artifact reads
Job = Callable[..., Any]  # a writer, a part of one (its write_part with the part bound) or a prepare


@dataclass(frozen=True)
class Artifact:
    """An artifact's writer: the module whose write(plan, loaded, folder) puts its files into the folder it is given
    (or a write function itself), and the plan stage that write reads (its `plan` annotation says the same:
    tests/test_artifact_stages.py). A PhysicalPlan writer is handed the physical plan, and cannot read what the
    analyses derived."""

    writer: str | Writer
    reads: type[PhysicalPlan]  # PhysicalPlan or AnalysedPlan


# name -> its writer. Modules are imported when their artifact is written, so `--only plan` and `validate` do not pay
# for matplotlib, the spreadsheet and PDF libraries.
ARTIFACTS: dict[str, Artifact] = {
    "plan": Artifact("gpucluster.artifacts.plan_json", AnalysedPlan),
    "summary": Artifact("gpucluster.artifacts.summary", AnalysedPlan),
    "power": Artifact("gpucluster.artifacts.power", AnalysedPlan),
    "checkpoint": Artifact("gpucluster.artifacts.checkpoint", AnalysedPlan),
    "simulation": Artifact("gpucluster.artifacts.simulation_html", PhysicalPlan),
    "burn-in": Artifact("gpucluster.artifacts.burn_in", AnalysedPlan),
    "monitoring": Artifact("gpucluster.artifacts.monitoring", PhysicalPlan),
    "slurm": Artifact("gpucluster.artifacts.slurm", PhysicalPlan),
    "kubernetes": Artifact("gpucluster.artifacts.kubernetes", PhysicalPlan),
    "nccl": Artifact("gpucluster.artifacts.nccl", PhysicalPlan),
    "bom": Artifact("gpucluster.artifacts.bom", AnalysedPlan),
    "cabling": Artifact("gpucluster.artifacts.cabling", PhysicalPlan),
    "netbox": Artifact("gpucluster.artifacts.netbox", PhysicalPlan),
    "verify": Artifact("gpucluster.artifacts.verify_expected", PhysicalPlan),
    "switches": Artifact("gpucluster.artifacts.switch_config", PhysicalPlan),
    "printouts": Artifact("gpucluster.artifacts.printouts", PhysicalPlan),
    "decision-summary": Artifact("gpucluster.artifacts.decision", AnalysedPlan),
    "report": Artifact("gpucluster.artifacts.report", AnalysedPlan),
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
    entry = ARTIFACTS[name].writer
    return entry if callable(entry) else importlib.import_module(entry).write


def stage_read(job: str, plan: AnalysedPlan) -> PhysicalPlan:
    """The plan stage a writer's job reads (ARTIFACTS' `reads`): the analysed plan, or the physical plan it was
    made from (itself when its physical content is not that plan's: a copy with some of it replaced, in tests)."""
    physical = ARTIFACTS[job.split(":", 1)[0]].reads is PhysicalPlan
    return plan.made_from if physical and plan.memo_key is plan.made_from else plan


def writer_jobs(name: str, plan: AnalysedPlan) -> list[tuple[str, Job, frozenset[str]]]:
    """An artifact's writing as jobs, for writers side by side: [(name, its write, the jobs to finish before it)], or
    where its module splits its files into parts (``parts(plan) -> names`` and ``write_part(plan, loaded, folder,
    part)``, e.g. the cable schedule's CSV and its workbooks) one job per part, named ``artifact:part``; a part that
    needs others written first names them by ``part_needs(plan, part)``. ``artifact:prepare`` is the prepare job of a
    writer that runs last (PREPARE). A job is called with the stage its artifact reads (stage_read)."""
    if name.endswith(PREPARE):
        module_name = ARTIFACTS[name.removesuffix(PREPARE)].writer
        return [(name, importlib.import_module(str(module_name)).prepare, frozenset())]
    entry = ARTIFACTS[name].writer
    if callable(entry):
        return [(name, entry, frozenset())]
    module = importlib.import_module(entry)
    if not hasattr(module, "parts"):
        return [(name, module.write, frozenset())]
    needs: Callable[[PhysicalPlan, str], tuple[str, ...]] = getattr(module, "part_needs", lambda _plan, _part: ())
    stage = stage_read(name, plan)
    return [
        (
            f"{name}:{part}",
            _BoundPart(module.write_part, part),
            frozenset(f"{name}:{before}" for before in needs(stage, part)),
        )
        for part in module.parts(stage)
    ]


class _BoundPart:
    """A module's write_part with its part bound: a writer's job (functools.partial would put the part first)."""

    def __init__(self, write_part: Callable[[Any, LoadedDesign, Path, str], None], part: str) -> None:
        self.write_part, self.part = write_part, part

    def __call__(self, plan: PhysicalPlan, loaded: LoadedDesign, folder: Path) -> None:
        self.write_part(plan, loaded, folder, self.part)


def job_writer(job: str, plan: AnalysedPlan) -> Job:
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
