"""Artifact writers: each one a view of the plan, written into a staging folder that replaces the
design's output folder only when every writer has succeeded (so a failed or interrupted build
leaves the previous output as it was)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from gpucluster.artifacts import (
    bom,
    burn_in,
    checkpoint,
    kubernetes,
    monitoring,
    nccl,
    plan_json,
    power,
    report,
    simulation_html,
    slurm,
    summary,
)
from gpucluster.design.load import LoadedDesign
from gpucluster.plan.model import Plan

Writer = Callable[[Plan, LoadedDesign, Path], None]

# name -> writer; each writer puts its files into the folder it is given.
ARTIFACTS: dict[str, Writer] = {
    "plan": plan_json.write,
    "summary": summary.write,
    "power": power.write,
    "checkpoint": checkpoint.write,
    "simulation": simulation_html.write,
    "burn-in": burn_in.write,
    "monitoring": monitoring.write,
    "slurm": slurm.write,
    "kubernetes": kubernetes.write,
    "nccl": nccl.write,
    "bom": bom.write,
    "report": report.write,
}
# Writers that read what the others wrote (the report links to every file and shows their charts) run after them,
# whatever order the registry or --only gives.
RUNS_LAST: frozenset[str] = frozenset({"report"})


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
            ARTIFACTS[name](plan, loaded, staging)
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
