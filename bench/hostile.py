"""The hostile-input corpus timed: every case of tests/hostile/ run as `gpucluster build` in a fresh process
under a 2 GiB address-space limit, one at a time; prints the slowest cases by wall time and by CPU time and the
largest peak memory (ru_maxrss of the finished child, os.wait4).

    python bench/hostile.py            # every case once
    python bench/hostile.py -n 3       # every case 3 times, medians

The machines are shared and noisy: CPU time (user + system) says what a case costs; wall time adds whatever
else the machine was doing. Quote medians.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hostile"))

from corpus import prepare, run_case  # noqa: E402  (tests/hostile/corpus.py; mypy_path in pyproject.toml)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--runs", type=int, default=1, help="runs per case (medians are reported)")
    parser.add_argument("--top", type=int, default=5, help="slowest cases to list")
    args = parser.parse_args()
    figures: dict[str, tuple[float, float, float]] = {}  # wall s, CPU s, peak MiB
    returncodes: dict[str, int | None] = {}
    with tempfile.TemporaryDirectory() as scratch:
        cases = prepare(Path(scratch))
        for case in cases:
            outcomes = [run_case(case, Path(scratch) / f"out-{case.name}-{i}") for i in range(args.runs)]
            figures[case.name] = (
                statistics.median(o.wall_s for o in outcomes),
                statistics.median(o.cpu_s for o in outcomes),
                max(o.max_rss_mib for o in outcomes),
            )
            returncodes[case.name] = outcomes[-1].returncode
    print(f"{len(figures)} cases, {args.runs} run(s) each (medians); exit status 2 expected from every case")
    wrong = sorted(name for name, code in returncodes.items() if code != 2)
    if wrong:
        print(f"NOT exit 2: {', '.join(wrong)}")
    for label, index in (("wall", 0), ("CPU", 1), ("peak memory", 2)):
        print(f"\nslowest by {label}:" if index < 2 else f"\nlargest {label}:")
        for name, f in sorted(figures.items(), key=lambda item: -item[1][index])[: args.top]:
            print(f"  {name:45} wall {f[0]:5.2f} s  CPU {f[1]:5.2f} s  peak {f[2]:6.1f} MiB")
    walls = [f[0] for f in figures.values()]
    cpus = [f[1] for f in figures.values()]
    print(f"\nall cases: median wall {statistics.median(walls):.2f} s, median CPU {statistics.median(cpus):.2f} s")


if __name__ == "__main__":
    main()
