"""Values made from a complete plan once and kept while the plan lives: one small cache per function, keyed by the
plan's memo_key (a physical plan, which the analysed plan made from it shares: a plan is read-only once planned,
so what is made from it stays true). A function's own cache, typed by
what it returns: no shared board of values under string keys, and nothing stored on the plan itself."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from gpucluster.plan.model import Plan

T = TypeVar("T")
PlanT = TypeVar("PlanT", bound="Plan")
KEPT_PLANS = 4  # plans whose values each function keeps (a build has one plan; tests and `diff` a few)


def per_plan(make: Callable[[PlanT], T]) -> Callable[[PlanT], T]:
    """`make`, called once per plan: later calls with the same plan (or a later stage of it) return the value it
    made then."""
    kept: list[tuple[weakref.ref[Plan], T]] = []  # the latest first

    @functools.wraps(make)
    def made_once(plan: PlanT) -> T:
        key = plan.memo_key
        for index, (held, value) in enumerate(kept):
            if held() is key:
                if index:
                    kept.insert(0, kept.pop(index))
                return value
        value = make(plan)
        alive = [entry for entry in kept if entry[0]() is not None]
        kept[:] = [(weakref.ref(key), value), *alive[: KEPT_PLANS - 1]]
        return value

    return made_once
