"""Python's cyclic garbage collector, paused around work that makes very many objects and no cycles."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cycle_collector_paused() -> Iterator[None]:
    """Run the body with the cycle collector off. Reference counting still frees at once whatever is not in a cycle;
    the collector resumes (and finds the few cycles left) when the body ends. A writer that builds half a million
    link records would otherwise have the collector walk all of them again each time enough new objects pile up."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
