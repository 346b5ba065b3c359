"""The plan lock's cost on one design: plan it, then time (CPU seconds, medians of the runs) writing its lock,
reading and checking it back, and planning the design again under it, against planning it without one.

    .venv/bin/python bench/lock.py bench/designs/h100-16384.yaml [-n 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from gpucluster import load_design, plan_design
from gpucluster.growth.phases import write_lock
from gpucluster.plan.lock import read_lock

T = TypeVar("T")


def _cpu(step: Callable[[], T], runs: int) -> tuple[float, T]:
    """The median CPU seconds of ``runs`` runs (at least one) of a step, and what its last run returned."""
    times = []
    for _ in range(max(1, runs)):
        start = time.process_time()
        result = step()
        times.append(time.process_time() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("design", type=Path)
    parser.add_argument("-n", "--runs", type=int, default=5)
    args = parser.parse_args()
    loaded = load_design(args.design)
    plan_s, plan = _cpu(lambda: plan_design(loaded), args.runs)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "plan.lock.json"
        write_s, _ = _cpu(lambda: write_lock(plan, path), args.runs)
        read_s, lock = _cpu(lambda: read_lock(path, plan.name, plan.catalog_parts), args.runs)
        locked_s, _ = _cpu(lambda: plan_design(loaded, lock=lock), args.runs)
        size = path.stat().st_size
    print(f"{args.design.name}: {len(plan.devices):,} devices, {len(plan.links):,} links, {len(plan.cables):,} cables")
    print(f"lock {size / 2**20:,.1f} MiB; CPU s, medians of {args.runs}:")
    print(f"  write {write_s:.2f}  read {read_s:.2f}  plan {plan_s:.2f}  plan under the lock {locked_s:.2f}")


if __name__ == "__main__":
    main()
