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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench" / "designs"
GPUCLUSTER = [sys.executable, "-m", "gpucluster.cli"]
PREVIEW = [sys.executable, str(ROOT / "bench" / "preview_mocks.py")]


def _only(*artifacts: str) -> list[str]:
    return [word for artifact in artifacts for word in ("--only", artifact)]


# name -> (what it measures, command; {out} is a scratch folder)
CASES: dict[str, tuple[str, list[str]]] = {
    "plan-256": (
        "gpucluster build, 256 GPUs (plan.json)",
        [*GPUCLUSTER, "build", str(BENCH / "h100-256.yaml"), "-o", "{out}", "--only", "plan"],
    ),
    "plan-4096": (
        "gpucluster build, 4,096 GPUs (plan.json)",
        [*GPUCLUSTER, "build", str(BENCH / "h100-4096.yaml"), "-o", "{out}", "--only", "plan"],
    ),
    "plan-16384": (
        "gpucluster build, 16,384 GPUs (plan.json)",
        [*GPUCLUSTER, "build", str(BENCH / "h100-16384.yaml"), "-o", "{out}", "--only", "plan"],
    ),
    "power-4096": (
        "gpucluster build, 4,096 GPUs (plan.json and the power-and-cooling budget)",
        [*GPUCLUSTER, "build", str(BENCH / "h100-4096.yaml"), "-o", "{out}", "--only", "plan", "--only", "power"],
    ),
    "ops-16384": (
        "gpucluster build, 16,384 GPUs (plan.json, monitoring, burn-in)",
        [*GPUCLUSTER, "build", str(BENCH / "h100-16384.yaml"), "-o", "{out}", *_only("plan", "monitoring", "burn-in")],
    ),
    "scheduler-16384": (
        "gpucluster build, 16,384 GPUs (plan.json, Slurm, Kubernetes, NCCL configs)",
        [
            *GPUCLUSTER,
            "build",
            str(BENCH / "h100-16384.yaml"),
            "-o",
            "{out}",
            *_only("plan", "slurm", "kubernetes", "nccl"),
        ],
    ),
    "charts-16384": (
        "gpucluster build, 16,384 GPUs (plan.json, power and checkpoint charts): report-16384 without the report",
        [*GPUCLUSTER, "build", str(BENCH / "h100-16384.yaml"), "-o", "{out}", *_only("plan", "power", "checkpoint")],
    ),
    "report-16384": (
        "gpucluster build, 16,384 GPUs (plan.json, power and checkpoint charts, report.html and report.pdf)",
        [
            *GPUCLUSTER,
            "build",
            str(BENCH / "h100-16384.yaml"),
            "-o",
            "{out}",
            *_only("plan", "power", "checkpoint", "report"),
        ],
    ),
    "plan-131072": (
        "gpucluster build, 131,072 GPUs (plan.json)",
        [*GPUCLUSTER, "build", str(BENCH / "h100-131072.yaml"), "-o", "{out}", "--only", "plan"],
    ),
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
        [*GPUCLUSTER, "build", str(BENCH / "h100-131072.yaml"), "-o", "{out}", "--only", "plan", "--only", "bom"],
    ),
    "bom-4096": (
        "gpucluster build, 4,096 GPUs (plan.json + bom.xlsx + bom.csv)",
        [*GPUCLUSTER, "build", str(BENCH / "h100-4096.yaml"), "-o", "{out}", "--only", "plan", "--only", "bom"],
    ),
    "validate-131072": (
        "gpucluster validate, 131,072 GPUs (planning alone: the baseline of cabling-131072)",
        [*GPUCLUSTER, "validate", str(BENCH / "h100-131072.yaml")],
    ),
    "cabling-131072": (
        "gpucluster build, 131,072 GPUs (cable schedule: cabling.csv and cabling.xlsx)",
        [*GPUCLUSTER, "build", str(BENCH / "h100-131072.yaml"), "-o", "{out}", "--only", "cabling"],
    ),
    "printouts-16384": (
        "gpucluster build, 16,384 GPUs (rack cabling printouts: PDF, HTML, SVG per rack, cluster PDF)",
        [*GPUCLUSTER, "build", str(BENCH / "h100-16384.yaml"), "-o", "{out}", "--only", "printouts"],
    ),
    "verify-1024": (
        "gpucluster verify, the 4-SU default design (1,016 GPUs): its compute fabric's ibnetdiscover output",
        [
            *GPUCLUSTER,
            "verify",
            str(ROOT / "designs" / "superpod-h200-4su.yaml"),
            "--ibnetdiscover",
            "{data}/discovery-1024.txt",
            "-o",
            "{out}",
        ],
    ),
    "verify-16384": (
        "gpucluster verify, 16,384 GPUs: a synthetic ibnetdiscover output of the compute fabric (planning included)",
        [
            *GPUCLUSTER,
            "verify",
            str(BENCH / "h100-16384.yaml"),
            "--ibnetdiscover",
            "{data}/discovery-16384.txt",
            "-o",
            "{out}",
        ],
    ),
}
# Inputs a case reads, made once before its runs in a scratch folder ({data}).
SYNTHETIC = [sys.executable, str(ROOT / "bench" / "synthetic_discovery.py")]
PREPARE: dict[str, list[str]] = {
    "verify-1024": [*SYNTHETIC, str(ROOT / "designs" / "superpod-h200-4su.yaml"), "{data}/discovery-1024.txt"],
    "verify-16384": [*SYNTHETIC, str(BENCH / "h100-16384.yaml"), "{data}/discovery-16384.txt"],
}  # fmt: skip


def run_once(command: list[str]) -> tuple[float, float, int, float]:
    """(wall seconds, peak resident MiB, exit status, CPU seconds) of one run. CPU time (user + system,
    the process and the workers it waited for) is the figure that holds on a busy machine."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    _pid, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    cpu = usage.ru_utime + usage.ru_stime
    return wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", default=list(CASES), help=f"cases to run (default all): {', '.join(CASES)}")
    parser.add_argument("-n", "--runs", type=int, default=5, help="counted runs per case (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="uncounted runs first (default 1)")
    args = parser.parse_args()
    print(
        f"{'case':20} {'runs':>4} {'wall s (min / median / max)':>30} {'peak MiB (median)':>18} {'cpu s (median)':>15}"
    )
    for name in args.cases:
        _what, template = CASES[name]
        walls, peaks, cpus = [], [], []
        data = tempfile.mkdtemp(prefix="gpucluster-bench-data-")
        if name in PREPARE:
            subprocess.run([part.replace("{data}", data) for part in PREPARE[name]], cwd=ROOT, check=True)
        for i in range(args.warmup + args.runs):
            out = tempfile.mkdtemp(prefix="gpucluster-bench-")
            try:
                command = [part.replace("{out}", out).replace("{data}", data) for part in template]
                wall, peak, status, cpu = run_once(command)
            finally:
                shutil.rmtree(out, ignore_errors=True)
            if status != 0:
                sys.exit(f"{name}: exit status {status}")
            if i >= args.warmup:
                walls.append(wall)
                peaks.append(peak)
                cpus.append(cpu)
        shutil.rmtree(data, ignore_errors=True)
        print(
            f"{name:20} {len(walls):>4} {min(walls):9.2f} / {statistics.median(walls):7.2f} / {max(walls):7.2f}"
            f" {statistics.median(peaks):18.0f} {statistics.median(cpus):15.2f}"
        )


if __name__ == "__main__":
    main()
