"""The program side of `pulumi preview`, whole process: plan a design and register its component tree
with the real Pulumi SDK against mocks (no CLI, no engine).

    python bench/preview_mocks.py designs/superpod-h200-4su.yaml [--granularity auto|device|rack]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from gpucluster.components.offline import run_offline

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("design", type=Path)
    parser.add_argument("--granularity", default="auto", choices=["auto", "device", "rack"])
    args = parser.parse_args()
    start = time.perf_counter()
    run = run_offline(ROOT / "__main__.py", {"design": str(args.design.resolve()), "granularity": args.granularity})
    seconds = time.perf_counter() - start
    kinds = Counter(r.type.rsplit(":", 1)[1] for r in run.resources)
    print(f"{len(run.resources)} resources in {seconds:.1f} s: {dict(kinds.most_common())}")


if __name__ == "__main__":
    main()
