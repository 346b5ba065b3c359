"""The pipeline: the stages in order, each importing only the ones before it.

design -> catalog -> physical plan (plan/) -> derived models (analyses, totals, checkpoint and failure
model, burn-in plan; the power budget and the schedulers' view are computed by the views that need them)
-> design rules (rules.py) -> views (artifacts/, components/). tests/test_imports.py checks the order.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from gpucluster.analyse.burn_in import burn_in_plan
from gpucluster.analyse.rules import rule_facts, rule_findings
from gpucluster.analyse.scheduling import check_slurm_partitions
from gpucluster.analyse.totals import totals
from gpucluster.design.load import LoadedDesign
from gpucluster.errors import DesignError, Problem
from gpucluster.plan.analysis import analyse
from gpucluster.plan.build import Progress, build_physical_plan
from gpucluster.plan.lock import Lock
from gpucluster.plan.model import PHYSICAL, AnalysedPlan, PhysicalPlan, Plan
from gpucluster.training.checkpoint import checkpoint_facts

__all__ = ["Progress", "analyse_plan", "plan_design"]


def plan_design(
    loaded: LoadedDesign, progress: Progress | None = None, lock: Lock | None = None, *, kept: bool = False
) -> AnalysedPlan:
    """Run every stage up to the design rules: the plan every view reads. A design the planner cannot build
    that no located check caught first (a device no rack can hold, a tier no switch can close) is still bad
    input: it is reported against the design file, never as a traceback. Under a `lock` (plan/lock.py) what it
    holds keeps its place, ports and cable ids. A plan `kept` lives as long as the process (a command's plan):
    Python's cycle collector then leaves its objects alone for good (gc.freeze)."""
    say = progress or (lambda _message: None)
    with _cycle_collector_paused(freeze=kept):

        def links_complete(plan: Plan) -> None:
            check_slurm_partitions(loaded, plan)  # before the cables: a bad partition fails at once

        try:
            physical = build_physical_plan(loaded, say, lock, links_complete)
        except ValueError as exc:
            raise DesignError([Problem(str(loaded.path), 0, 0, "", f"cannot plan this design: {exc}")]) from None
        say("analyses and design rules")
        return analyse_plan(physical)


def analyse_plan(physical: PhysicalPlan) -> AnalysedPlan:
    """The analysed plan of a physical plan: its graph analyses, totals, checkpoint model, burn-in plan, the design
    rules' facts, and every finding (the planner's, then the rules'). A changed plan (tests, what-ifs) is a changed
    physical plan analysed again: an analysed plan's own derived values are of the plan it was made from."""
    if isinstance(physical, AnalysedPlan):
        raise TypeError("analyse the physical plan an analysed plan was made from (its made_from), changed")
    analysis, counted = analyse(physical), totals(physical)
    checkpoint = checkpoint_facts(physical)
    burn_in = burn_in_plan(physical)
    facts = rule_facts(physical, checkpoint, burn_in)
    return AnalysedPlan(
        **{name: getattr(physical, name) for name in PHYSICAL},
        analysis=analysis,
        totals=counted,
        checkpoint=checkpoint,
        burn_in=burn_in,
        facts=facts,
        findings=[*physical.planner_findings, *rule_findings(facts)],
        made_from=physical,
    )


@contextmanager
def _cycle_collector_paused(freeze: bool) -> Iterator[None]:
    """Planning allocates millions of objects (links, cables, index entries) that live as long as the plan; Python's
    cyclic garbage collector would walk all of them again each time enough new ones pile up, a large share
    of planning's CPU. Reference counting still frees everything that is not in a cycle at once; the
    collector runs again (and finds the few cycles planning left) once the plan is made. With `freeze`, what
    planning allocated is moved out of the collector's reach first (else its next run, on the first allocation
    after, walks it all once more; forked writers keep their pages shared too)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()
