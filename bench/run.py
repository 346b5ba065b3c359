"""Whole-process benchmarks: wall time and peak memory (maximum resident set) of gpucluster commands.

    python bench/run.py                 # every case, 5 runs each, medians
    python bench/run.py plan-256 -n 3   # chosen cases

Each run is a fresh process (start-up included), timed from outside; peak memory is the kernel's
ru_maxrss of the finished child (os.wait4). These machines are noisy: quote medians and ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

from gpucluster.artifacts import ARTIFACTS
from gpucluster.runtime.profiling import pss_mib

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench" / "designs"
GPUCLUSTER = [sys.executable, "-m", "gpucluster.cli"]
PREVIEW = [sys.executable, str(ROOT / "bench" / "preview_mocks.py")]


def _build(design: str, *artifacts: str, flags: tuple[str, ...] = ()) -> list[str]:
    """`gpucluster build` of a bench design (of these artifacts; default all) into the scratch folder {out},
    without a plan lock (a build writes its lock beside the design: not into bench/designs/)."""
    only = [word for artifact in artifacts for word in ("--only", artifact)]
    return [*GPUCLUSTER, "build", str(BENCH / design), "-o", "{out}", *flags, *only, "--no-lock"]


def _verify(design: Path, discovery: str) -> list[str]:
    return [*GPUCLUSTER, "verify", str(design), "--ibnetdiscover", f"{{data}}/{discovery}", "-o", "{out}"]


_ALL_BUT_PRINTOUTS = [name for name in ARTIFACTS if name != "printouts"]

# name -> (what it measures, command; {out} is a scratch folder)
CASES: dict[str, tuple[str, list[str]]] = {
    "plan-256": ("gpucluster build, 256 GPUs (plan.json)", _build("h100-256.yaml", "plan")),
    "plan-4096": ("gpucluster build, 4,096 GPUs (plan.json)", _build("h100-4096.yaml", "plan")),
    "plan-16384": ("gpucluster build, 16,384 GPUs (plan.json)", _build("h100-16384.yaml", "plan")),
    "power-4096": (
        "gpucluster build, 4,096 GPUs (plan.json and the power-and-cooling budget)",
        _build("h100-4096.yaml", "plan", "power"),
    ),
    "ops-16384": (
        "gpucluster build, 16,384 GPUs (plan.json, monitoring, burn-in)",
        _build("h100-16384.yaml", "plan", "monitoring", "burn-in"),
    ),
    "scheduler-16384": (
        "gpucluster build, 16,384 GPUs (plan.json, Slurm, Kubernetes, NCCL configs)",
        _build("h100-16384.yaml", "plan", "slurm", "kubernetes", "nccl"),
    ),
    "charts-16384": (
        "gpucluster build, 16,384 GPUs (plan.json, power and checkpoint charts): report-16384 without the report",
        _build("h100-16384.yaml", "plan", "power", "checkpoint"),
    ),
    "report-16384": (
        "gpucluster build, 16,384 GPUs (plan.json, power and checkpoint charts, report.html and report.pdf)",
        _build("h100-16384.yaml", "plan", "power", "checkpoint", "report"),
    ),
    "plan-gb200-9216": (
        "gpucluster build, 9,216 GPUs in 128 GB200 NVL72 racks (plan.json)",
        _build("gb200-9216.yaml", "plan"),
    ),
    "build-gb200-9216": (
        "gpucluster build, 9,216 GPUs in 128 GB200 NVL72 racks (every artifact)",
        _build("gb200-9216.yaml"),
    ),
    "plan-131072": ("gpucluster build, 131,072 GPUs (plan.json)", _build("h100-131072.yaml", "plan")),
    "simulate-16384": (
        "gpucluster simulate, 16,384 GPUs, 1,000 runs of 90 days at 5 intervals (planning included)",
        [*GPUCLUSTER, "simulate", str(BENCH / "h100-16384.yaml"), "--runs", "1000", "--days", "90"],
    ),
    "preview-256": (
        "Pulumi program under mocks, 256 GPUs (auto: per device)",
        [*PREVIEW, str(BENCH / "h100-256.yaml")],
    ),
    "preview-1024": (
        "Pulumi program under mocks, 1,016 GPUs, the default design (auto: per device)",
        [*PREVIEW, str(ROOT / "designs" / "superpod-h200-4su.yaml")],
    ),
    "preview-4096-device": (
        "Pulumi program under mocks, 4,096 GPUs, per device (above the auto threshold)",
        [*PREVIEW, str(BENCH / "h100-4096.yaml"), "--granularity", "device"],
    ),
    "preview-16384": (
        "Pulumi program under mocks, 16,384 GPUs (auto: per rack)",
        [*PREVIEW, str(BENCH / "h100-16384.yaml")],
    ),
    "preview-16384-device": (
        "Pulumi program under mocks, 16,384 GPUs, per device",
        [*PREVIEW, str(BENCH / "h100-16384.yaml"), "--granularity", "device"],
    ),
    # the BOM's own share is bom-131072 minus plan-131072 (same planning, plus bom.xlsx and bom.csv)
    "bom-131072": (
        "gpucluster build, 131,072 GPUs (plan.json + bom.xlsx + bom.csv)",
        _build("h100-131072.yaml", "plan", "bom"),
    ),
    "bom-4096": (
        "gpucluster build, 4,096 GPUs (plan.json + bom.xlsx + bom.csv)",
        _build("h100-4096.yaml", "plan", "bom"),
    ),
    "validate-131072": (
        "gpucluster validate, 131,072 GPUs (planning alone: the baseline of cabling-131072)",
        [*GPUCLUSTER, "validate", str(BENCH / "h100-131072.yaml")],
    ),
    "build-16384": (
        "gpucluster build --profile, 16,384 GPUs, every artifact but the printouts, writers side by side",
        _build("h100-16384.yaml", *_ALL_BUT_PRINTOUTS, flags=("--profile",)),
    ),
    "build-131072": (
        "gpucluster build --profile, 131,072 GPUs, every artifact but the printouts, writers side by side",
        _build("h100-131072.yaml", *_ALL_BUT_PRINTOUTS, flags=("--profile",)),
    ),
    "build-131072-j1": (
        "gpucluster build --profile -j 1, 131,072 GPUs, every artifact but the printouts, one writer at a time",
        _build("h100-131072.yaml", *_ALL_BUT_PRINTOUTS, flags=("--profile", "-j1")),
    ),
    "cabling-131072": (
        "gpucluster build, 131,072 GPUs (cable schedule: cabling.csv and a workbook per network)",
        _build("h100-131072.yaml", "cabling"),
    ),
    "printouts-16384": (
        "gpucluster build, 16,384 GPUs (rack cabling printouts: PDF, HTML, SVG per rack, cluster PDF)",
        _build("h100-16384.yaml", "printouts"),
    ),
    "verify-1024": (
        "gpucluster verify, the 4-SU default design (1,016 GPUs): its compute fabric's ibnetdiscover output",
        _verify(ROOT / "designs" / "superpod-h200-4su.yaml", "discovery-1024.txt"),
    ),
    "verify-16384": (
        "gpucluster verify, 16,384 GPUs: a synthetic ibnetdiscover output of the compute fabric (planning included)",
        _verify(BENCH / "h100-16384.yaml", "discovery-16384.txt"),
    ),
    "lock-16384": (
        "the plan lock of 16,384 GPUs: write, read, and plan under it (CPU seconds of each, in one process)",
        [sys.executable, str(ROOT / "bench" / "lock.py"), str(BENCH / "h100-16384.yaml")],
    ),
}
# Inputs a case reads, made once before its runs in a scratch folder ({data}).
SYNTHETIC = [sys.executable, str(ROOT / "bench" / "synthetic_discovery.py")]
PREPARE: dict[str, list[str]] = {
    "verify-1024": [*SYNTHETIC, str(ROOT / "designs" / "superpod-h200-4su.yaml"), "{data}/discovery-1024.txt"],
    "verify-16384": [*SYNTHETIC, str(BENCH / "h100-16384.yaml"), "{data}/discovery-16384.txt"],
}  # fmt: skip


class Run(NamedTuple):
    wall_s: float
    peak_mib: float  # the largest ru_maxrss of the process and its workers (the kernel's; not their sum)
    tree_mib: float  # the peak, sampled every 2 s, of the proportional set size summed over the process tree
    status: int
    cpu_s: float  # user + system, the process and every worker it waited for
    stderr: str


def _tree(pid: int) -> list[int]:
    """A process and its descendants (Linux /proc)."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    queue += [int(child) for child in children.read().split()]
        except OSError:
            continue
    return found


def run_once(command: list[str]) -> Run:
    """One run, timed from outside. CPU time is the figure that holds on a busy machine; the tree's summed
    proportional set size is what several worker processes together hold (shared pages counted once)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT)
        peak_tree = [0.0]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(2.0):
                peak_tree[0] = max(peak_tree[0], pss_mib(_tree(process.pid)))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _pid, status, usage = os.wait4(process.pid, 0)
        done.set()
        sampler.join()
        wall = time.perf_counter() - start
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    cpu = usage.ru_utime + usage.ru_stime
    return Run(wall, usage.ru_maxrss / 1024, peak_tree[0], os.waitstatus_to_exitcode(status), cpu, stderr)


def _profile_rows(stderr: str) -> dict[str, tuple[float, float]]:
    """name -> (wall s, cpu s) from `gpucluster build --profile`'s table (stderr)."""
    rows = {}
    for line in stderr.splitlines():
        fields = line[40:].split()
        if len(fields) == 5 and fields[0] in ("main", "worker"):
            rows[line[:40].strip()] = (float(fields[1]), float(fields[2]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", default=list(CASES), help=f"cases to run (default all): {', '.join(CASES)}")
    parser.add_argument("-n", "--runs", type=int, default=5, help="counted runs per case (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="uncounted runs first (default 1)")
    args = parser.parse_args()
    print(
        f"{'case':20} {'runs':>4} {'wall s (min / median / max)':>30} {'peak MiB (median)':>18} {'cpu s (median)':>15}"
        f" {'tree PSS MiB (median)':>22}"
    )
    for name in args.cases:
        _what, template = CASES[name]
        walls, peaks, cpus, trees = [], [], [], []
        profiles: dict[str, list[tuple[float, float]]] = {}
        data = tempfile.mkdtemp(prefix="gpucluster-bench-data-")
        if name in PREPARE:
            subprocess.run([part.replace("{data}", data) for part in PREPARE[name]], cwd=ROOT, check=True)
        for i in range(args.warmup + args.runs):
            out = tempfile.mkdtemp(prefix="gpucluster-bench-")
            try:
                command = [part.replace("{out}", out).replace("{data}", data) for part in template]
                run = run_once(command)
            finally:
                shutil.rmtree(out, ignore_errors=True)
            if run.status != 0:
                sys.exit(f"{name}: exit status {run.status}\n{run.stderr[-2000:]}")
            if i >= args.warmup:
                walls.append(run.wall_s)
                peaks.append(run.peak_mib)
                cpus.append(run.cpu_s)
                trees.append(run.tree_mib)
                for stage, figures in _profile_rows(run.stderr).items():
                    profiles.setdefault(stage, []).append(figures)
        shutil.rmtree(data, ignore_errors=True)
        print(
            f"{name:20} {len(walls):>4} {min(walls):9.2f} / {statistics.median(walls):7.2f} / {max(walls):7.2f}"
            f" {statistics.median(peaks):18.0f} {statistics.median(cpus):15.2f} {statistics.median(trees):22.0f}"
        )
        for stage, rows in profiles.items():  # cases run with --profile: each stage's and writer's medians
            wall = statistics.median(f[0] for f in rows)
            cpu = statistics.median(f[1] for f in rows)
            print(f"    {stage:40} wall {wall:8.2f} s   cpu {cpu:8.2f} s")


if __name__ == "__main__":
    main()
