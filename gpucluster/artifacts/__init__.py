"""Artifact writers: each one a view of the plan, written into a staging folder that replaces the
design's output folder only when every writer has succeeded (so a failed or interrupted build
leaves the previous output as it was)."""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

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


def writer(name: str) -> Writer:
    """The write function of an artifact."""
    entry = ARTIFACTS[name]
    return entry if callable(entry) else importlib.import_module(entry).write


def write_artifacts(
    plan: Plan,
    loaded: LoadedDesign,
    out_dir: Path | str,
    only: Iterable[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Write the chosen artifacts (default: all) to ``out_dir/<design name>/`` atomically; return that folder."""
    say = progress or (lambda _message: None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / plan.name
    _recover(final)
    staging = Path(tempfile.mkdtemp(prefix=f".{plan.name}.", suffix=".tmp", dir=out_dir))
    try:
        names = sorted(only if only is not None else ARTIFACTS, key=lambda name: name in RUNS_LAST)
        for name in names:
            say(name)
            writer(name)(plan, loaded, staging)
        _swap(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


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
