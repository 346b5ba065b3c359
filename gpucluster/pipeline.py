"""The pipeline: the stages in order, each importing only the ones before it.

design -> catalog -> physical plan (plan/) -> derived models (analyses, totals, checkpoint and failure
model, burn-in plan; the power budget and the schedulers' view are computed by the views that need them)
-> design rules (rules.py) -> views (artifacts/, components/). tests/test_imports.py checks the order.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import NoReturn, cast

from gpucluster.analyse.burn_in import burn_in_plan
from gpucluster.analyse.rules import refresh_findings
from gpucluster.analyse.scheduling import check_slurm_partitions
from gpucluster.analyse.totals import totals
from gpucluster.design.load import LoadedDesign
from gpucluster.errors import DesignError, Problem, fork_worker, portable_error
from gpucluster.plan.analysis import analyse
from gpucluster.plan.build import Progress, build_physical_plan
from gpucluster.plan.lock import Lock
from gpucluster.plan.model import NetworkAnalysis, Plan
from gpucluster.runtime import profiling
from gpucluster.runtime.progress import install as install_progress
from gpucluster.training.checkpoint import checkpoint_facts

__all__ = ["CABLED", "DERIVED", "Progress", "hide_cabled", "hide_derived", "plan_design", "refresh_findings"]

# What plan_design computes after the physical plan (Plan's fields, and Settings' that the derived models set)
DERIVED: tuple[str, ...] = ("analysis", "totals", "facts", "findings", "burn_in")
DERIVED_SETTINGS: tuple[str, ...] = ("checkpoint",)
# What the cables stage adds to a plan whose devices, racks and links are complete (plan/build.py: the cables, each
# device's draw with its optics, and each rack's load, which includes them: RackPlan's fields)
CABLED: tuple[str, ...] = ("cables", "device_power")
CABLED_RACK: tuple[str, ...] = ("power_max_w", "power_typical_w")


def plan_design(
    loaded: LoadedDesign,
    progress: Progress | None = None,
    lock: Lock | None = None,
    *,
    kept: bool = False,
    physical: Callable[[Plan], None] | None = None,
    jobs: int = 1,
    linked: Callable[[Plan], None] | None = None,
) -> Plan:
    """Run every stage up to the design rules: the plan every view reads. A design the planner cannot build
    that no located check caught first (a device no rack can hold, a tier no switch can close) is still bad
    input: it is reported against the design file, never as a traceback. Under a `lock` (plan/lock.py) what it
    holds keeps its place, ports and cable ids. A plan `kept` lives as long as the process (a command's plan):
    Python's cycle collector then leaves its objects alone for good (gc.freeze). `physical` is called with the
    plan once its physical part is complete (devices, racks, links, graphs, cables, device power: no later stage
    changes them), before the derived models (DERIVED) are computed: views of the physical plan alone may start
    there; `linked` is called earlier, once its devices, racks and links are complete, before the cables are chosen
    (CABLED: what views of the links alone must not read yet). With `jobs` above 1 (processes planning may use) a
    large plan's graph analyses run in a forked process while the main one chooses the cables (they read only the
    links; that process builds the graphs it walks, and the main one builds its own when a view first needs them:
    Plan.graphs); the result is the same."""
    say = progress or (lambda _message: None)
    with _cycle_collector_paused(freeze=kept), _AnalysesAside() as aside:

        def links_complete(plan: Plan) -> None:
            check_slurm_partitions(loaded, plan)  # before any view starts: a bad partition leaves nothing written
            if jobs > 1 and len(plan.links) >= ASIDE_MIN_LINKS and hasattr(os, "fork"):
                aside.start(plan)
            if linked is not None:
                linked(plan)

        try:
            plan = build_physical_plan(loaded, say, lock, links_complete)
        except ValueError as exc:
            raise DesignError([Problem(str(loaded.path), 0, 0, "", f"cannot plan this design: {exc}")]) from None
        if physical is not None:
            physical(plan)
        say("analyses and design rules")
        plan.analysis = aside.result(plan)
        plan.totals = totals(plan)
        plan.settings.checkpoint = checkpoint_facts(plan)
        plan.burn_in = burn_in_plan(plan)
        refresh_findings(plan)
    return plan


# Links from which the graph analyses run beside the cabling (below, the fork costs more than it saves)
ASIDE_MIN_LINKS = 50_000


class _AnalysesAside:
    """The graph analyses (plan/analysis.py) in a forked process while the main process plans the cables: the forked
    process shares the plan's links page by page, builds the graphs and sends back only the analyses (small typed
    records)."""

    def __init__(self) -> None:
        self.pid, self.fd = 0, -1

    def __enter__(self) -> _AnalysesAside:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.pid:  # planning failed or was interrupted before the result was taken
            with suppress(ProcessLookupError, ChildProcessError):
                os.kill(self.pid, signal.SIGTERM)
                os.waitpid(self.pid, 0)
            profiling.side_process_ended(self.pid)
            self.pid = 0

    def start(self, plan: Plan) -> None:
        read, write = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = fork_worker()
        if pid:
            os.close(write)
            self.pid, self.fd = pid, read
            profiling.side_process_started(pid)
            return
        code = 1
        try:  # the forked process: analyse, send the result (or the error) and leave without the parent's exit handlers
            os.close(read)
            install_progress(None)
            try:
                payload = pickle.dumps(("done", analyse(plan)), pickle.HIGHEST_PROTOCOL)
                code = 0
            except BaseException as error:
                payload = pickle.dumps(("error", portable_error(error)), pickle.HIGHEST_PROTOCOL)
            with open(write, "wb") as out:
                out.write(payload)
        finally:
            os._exit(code)

    def result(self, plan: Plan) -> dict[str, NetworkAnalysis]:
        """The analyses: those of the forked process when one was started, else computed here."""
        if not self.pid:
            return analyse(plan)
        with open(self.fd, "rb") as source:
            self.fd = -1
            payload = source.read()
        _pid, status = os.waitpid(self.pid, 0)
        profiling.side_process_ended(self.pid)
        self.pid = 0
        if not payload:
            raise RuntimeError(f"the graph analyses' process ended without a result (wait status {status})")
        kind, value = pickle.loads(payload)
        if kind == "error":
            raise value
        return cast(dict[str, NetworkAnalysis], value)


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


class NotYetPlanned:
    """Stands for what planning has not computed yet (hide_derived, hide_cabled): any use of it (as a collection, an
    object, a number or text) is an error that says which part of the plan was read too early."""

    def __init__(self, name: str):
        object.__setattr__(self, "_name", name)

    def _fail(self, *_args: object, **_kwargs: object) -> NoReturn:
        raise RuntimeError(
            f"plan.{object.__getattribute__(self, '_name')} was read by a view started before planning computed it: "
            "start that view later (artifacts/__init__.py LINKED, EARLY)"
        )

    def __repr__(self) -> str:
        return f"<plan.{object.__getattribute__(self, '_name')}: not planned yet>"

    def __getattr__(self, _attribute: str) -> NoReturn:
        self._fail()

    __iter__ = __len__ = __bool__ = __getitem__ = __contains__ = __eq__ = __hash__ = __reduce_ex__ = _fail
    __deepcopy__ = __copy__ = __call__ = __str__ = __format__ = _fail
    __float__ = __int__ = __index__ = __round__ = __neg__ = __abs__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __ne__ = _fail


def hide_derived(plan: Plan) -> None:
    """Replace what the derived stages compute with stand-ins that fail when read: for a view that runs on the
    physical plan alone (a copy of it: a forked worker's), so reading something not planned yet cannot go unseen. The
    graphs too, unless built already: the main process builds them once for the views that read them after planning
    (a view reading them in such a worker would build them again there, seconds at scale)."""
    if not plan.graphs_built():
        plan.graphs = NotYetPlanned("graphs")  # type: ignore[assignment]
    for name in DERIVED:
        setattr(plan, name, NotYetPlanned(name))
    for name in DERIVED_SETTINGS:
        setattr(plan.settings, name, NotYetPlanned(f"settings.{name}"))


def hide_cabled(plan: Plan) -> None:
    """Also replace what the cables stage computes (CABLED) with stand-ins that fail when read: for a view that runs on
    the devices, racks and links alone (a forked worker's copy, started before the cables are chosen)."""
    hide_derived(plan)
    for name in CABLED:
        setattr(plan, name, NotYetPlanned(name))
    for rack in plan.racks.values():
        for name in CABLED_RACK:
            setattr(rack, name, NotYetPlanned(f"racks[{rack.name!r}].{name}"))
