"""What each stage of a build costs: wall and CPU seconds and memory, measured by the kernel (tracemalloc would
slow a 131,072-GPU build several times over).

Memory of a planning stage is the main process's peak resident set so far (``ru_maxrss``, a high-water mark: a stage
that allocates less than an earlier one shows the earlier peak) and its resident set when the stage ends; of a writer
in a worker, the worker's own peak and its private pages when it ends (what it allocated plus the plan pages it
touched and so copied). The build's total is the peak, sampled every 5 s with --profile, of the proportional set size
(shared pages divided among their processes) summed over the main process and its workers.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

_MIB = 1024 * 1024
_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True, slots=True)
class Cost:
    """One stage or writer: where it ran, its wall and CPU seconds, and memory in MiB (see the module doc)."""

    name: str
    kind: str  # "stage" (planning, main process) | "writer" | "workers" (the writers' workers outside their jobs)
    process: str  # "main" | "worker"
    seconds: float
    cpu_seconds: float
    peak_rss_mib: float  # the process's ru_maxrss at the end of the stage
    end_mib: float  # main: resident set at the end; worker: private memory at the end


def peak_rss_mib() -> float:
    """This process's peak resident set so far (Linux gives ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mib() -> float:
    """This process's resident set now."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * _PAGE / _MIB
    except OSError:
        return 0.0


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rollup(pid: int | str) -> dict[str, int]:
    """Fields of /proc/<pid>/smaps_rollup in KiB (empty when the process is gone or the file is absent)."""
    fields: dict[str, int] = {}
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return fields
    for line in text.splitlines()[1:]:
        key, _, rest = line.partition(":")
        value = rest.split()
        if value and value[0].isdigit():
            fields[key] = int(value[0])
    return fields


def private_mib(pid: int | str = "self") -> float:
    """Memory only this process holds (private clean + dirty pages)."""
    fields = _rollup(pid)
    return (fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)) / 1024


def pss_mib(pids: list[int]) -> float:
    """Proportional set size summed over processes: shared pages counted once in total."""
    return sum(_rollup(pid).get("Pss", 0) for pid in pids) / 1024


class Stopwatch:
    """Times the main process's stages: each call to it ends the previous stage and starts the next."""

    def __init__(self) -> None:
        self.costs: list[Cost] = []
        self._name = ""
        self._start = 0.0
        self._cpu = 0.0

    def __call__(self, stage: str) -> None:
        self.stop()
        self._name, self._start, self._cpu = stage, time.perf_counter(), cpu_seconds()

    def stop(self) -> None:
        if self._name:
            wall_s, cpu_s = time.perf_counter() - self._start, cpu_seconds() - self._cpu
            self.costs.append(Cost(self._name, "stage", "main", wall_s, cpu_s, peak_rss_mib(), rss_mib()))
            self._name = ""


class PeakSampler:
    """The peak of the build's summed proportional set size, sampled when asked at most every 5 s (and when planning
    ends). Off unless enabled (for --profile): the kernel walks every page table to sum it, which
    sampled each second cost a large build much CPU on a busy machine."""

    def __init__(self, enabled: bool = False, interval_s: float = 5.0) -> None:
        self.enabled, self.interval_s = enabled, interval_s
        self.peak_mib = 0.0
        self._last = 0.0

    def sample(self, workers: list[int], force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if force or now - self._last >= self.interval_s:
            self._last = now
            self.peak_mib = max(self.peak_mib, pss_mib([os.getpid(), *workers]))


def profile_lines(costs: list[Cost], wall_s: float, peak_total_mib: float, jobs: int) -> list[str]:
    """The --profile table: one line per stage and writer, then the build's totals."""
    lines = [
        f"{'stage / writer':40} {'where':>6} {'wall s':>8} {'cpu s':>8} {'peak RSS MiB':>13} {'end MiB':>9}",
    ]
    for cost in costs:
        label = f"{'plan: ' if cost.kind == 'stage' else ''}{cost.name}"
        lines.append(
            f"{label:40} {cost.process:>6} {cost.seconds:8.2f} {cost.cpu_seconds:8.2f} "
            f"{cost.peak_rss_mib:13.0f} {cost.end_mib:9.0f}"
        )
    planning = sum(c.seconds for c in costs if c.kind == "stage")
    writers_cpu = sum(c.cpu_seconds for c in costs if c.kind in ("writer", "workers"))
    lines.append(
        f"planning {planning:.2f} s; writers {writers_cpu:.2f} CPU s on {jobs} worker(s); whole build {wall_s:.2f} s; "
        f"peak memory {peak_total_mib:.0f} MiB (proportional set size of all its processes, sampled)"
    )
    lines.append(
        "end MiB: for a planning stage the resident set when it ended; for a writer in a worker, the memory only "
        "that worker held when it ended"
    )
    return lines
