"""The pipeline: the stages in order, each importing only the ones before it.

design -> catalog -> physical plan (plan/) -> derived models (analyses, totals, checkpoint and failure
model, burn-in plan; the power budget and the schedulers' view are computed by the views that need them)
-> design rules (rules.py) -> views (artifacts/, components/). tests/test_imports.py checks the order.
"""

from __future__ import annotations

from gpucluster.burn_in import burn_in_plan
from gpucluster.design.load import LoadedDesign
from gpucluster.errors import DesignError, Problem
from gpucluster.plan.analysis import analyse
from gpucluster.plan.build import Progress, build_physical_plan
from gpucluster.plan.lock import Lock
from gpucluster.plan.model import Plan
from gpucluster.plan.totals import totals
from gpucluster.rules import refresh_findings
from gpucluster.training.checkpoint import checkpoint_facts

__all__ = ["Progress", "plan_design", "refresh_findings"]


def plan_design(loaded: LoadedDesign, progress: Progress | None = None, lock: Lock | None = None) -> Plan:
    """Run every stage up to the design rules: the plan every view reads. A design the planner cannot build
    that no located check caught first (a device no rack can hold, a tier no switch can close) is still bad
    input: it is reported against the design file, never as a traceback. Under a `lock` (plan/lock.py) what it
    holds keeps its place, ports and cable ids."""
    say = progress or (lambda _message: None)
    try:
        plan = build_physical_plan(loaded, say, lock)
    except ValueError as exc:
        raise DesignError([Problem(str(loaded.path), 0, 0, "", f"cannot plan this design: {exc}")]) from None
    plan.analysis = analyse(plan)
    plan.totals = totals(plan)
    plan.settings.checkpoint = checkpoint_facts(plan)
    plan.burn_in = burn_in_plan(plan)
    refresh_findings(plan)
    return plan
