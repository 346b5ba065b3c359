"""Failure model of a training job and the checkpoint-interval formulas (Young 1974, Daly 2006).

Every GPU depends on every other GPU at each step, so any failure of a component the job uses stops
the whole job: the job's failure rate is the sum over component kinds of (units x rate per unit).
Failures are a Poisson process (the assumption behind Young's and Daly's formulas).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

DAYS_PER_JULIAN_YEAR = 365.25  # failure rates per year of running: the mean year, leap days included
HOURS_PER_JULIAN_YEAR = DAYS_PER_JULIAN_YEAR * 24

# Llama 3 405B pre-training, 54-day snapshot on 16,384 H100 (2,048 servers): 419 unexpected interruptions
# by root cause (Dubey et al., "The Llama 3 Herd of Models", arXiv:2407.21783, section 3.3.4, Table 5).
# Counts are used, not the printed percentages, which disagree
# with them (148/419 is 35.3 %, printed 30.1 %).
LLAMA3_DAYS = 54.0
LLAMA3_GPUS = 16_384
LLAMA3_SERVERS = 2_048
LLAMA3_EVENTS = {
    # faulty GPU 148, HBM3 72, SRAM 19, GPU system processor 17, silent data corruption 6, thermal/sensor 6
    "gpu": 148 + 72 + 19 + 17 + 6 + 6,
    # unplanned host maintenance 32, SSD 3, power supply 3, chassis 2, IO expansion board 2, CPU 2, memory 2
    "server": 32 + 3 + 3 + 2 + 2 + 2 + 2,
    # software bug 54, NCCL watchdog timeouts 7, dependency 2
    "software": 54 + 7 + 2,
    # NIC 7, network switch/cable 35 (shared below between switches and NICs/optics)
    "network": 7 + 35,
}
LLAMA3_SOURCE = "Llama 3 405B, 54 days on 16,384 H100: arXiv:2407.21783 Table 5"

# Commodity data-centre switches: "ToRs and AggS are highly reliable, with failure rates of about 5% and
# 10%" a year (Gill, Jain, Nagappan, "Understanding Network Failures in Data Centers", SIGCOMM 2011; summary
# at study.space). The ToR figure is used for every compute-fabric switch.
SWITCH_FAILURES_PER_YEAR = 0.05
SWITCH_SOURCE = "Gill et al., SIGCOMM 2011: ToR switches fail at about 5 % a year"

# The 16,384-GPU plan of this tool (bench/designs/h100-16384.yaml: 2,048 DGX H100, three-tier NDR fat tree),
# used to share Llama 3's network interruptions between switches and NICs/optics: 1,280 compute switches,
# 16,384 compute NICs and 98,304 transceivers on compute cables (tests/test_reliability.py re-plans it).
REFERENCE_COMPUTE_SWITCHES = 1_280
REFERENCE_NIC_OPTICS = 16_384 + 98_304

_LLAMA3_YEARS = LLAMA3_DAYS / DAYS_PER_JULIAN_YEAR
_SWITCH_EVENTS = REFERENCE_COMPUTE_SWITCHES * SWITCH_FAILURES_PER_YEAR * _LLAMA3_YEARS

KINDS = ("gpu", "server", "nic_optics", "switch", "software")
KIND_LABELS = {
    "gpu": "GPU",
    "server": "GPU server (host parts)",
    "nic_optics": "NIC and optics",
    "switch": "compute-fabric switch",
    "software": "software (per server)",
}

# Failures per unit and year, with how each figure was obtained.
DEFAULT_RATES_PER_YEAR: dict[str, tuple[float, str]] = {
    "gpu": (
        LLAMA3_EVENTS["gpu"] / (LLAMA3_GPUS * _LLAMA3_YEARS),
        f"derived: 268 GPU-category interruptions / 16,384 GPUs / 54 days; {LLAMA3_SOURCE}",
    ),
    "server": (
        LLAMA3_EVENTS["server"] / (LLAMA3_SERVERS * _LLAMA3_YEARS),
        f"derived: 46 host and unplanned-maintenance interruptions / 2,048 servers / 54 days; {LLAMA3_SOURCE}",
    ),
    "nic_optics": (
        (LLAMA3_EVENTS["network"] - _SWITCH_EVENTS) / (REFERENCE_NIC_OPTICS * _LLAMA3_YEARS),
        "derived: Llama 3's 42 NIC and switch/cable interruptions in 54 days, less the 9.5 the switch rate "
        "gives 1,280 switches, over the 114,688 NICs and optics of this tool's 16,384-GPU plan; " + LLAMA3_SOURCE,
    ),
    "switch": (SWITCH_FAILURES_PER_YEAR, SWITCH_SOURCE),
    "software": (
        LLAMA3_EVENTS["software"] / (LLAMA3_SERVERS * _LLAMA3_YEARS),
        f"derived: 63 software, NCCL-timeout and dependency interruptions / 2,048 servers / 54 days; {LLAMA3_SOURCE}",
    ),
}


@dataclass(frozen=True)
class KindRate:
    """One component kind in a job: how many units it uses and how often each fails."""

    kind: str
    units: int
    per_unit_year: float
    source: str

    @property
    def job_failures_per_hour(self) -> float:
        return self.units * self.per_unit_year / HOURS_PER_JULIAN_YEAR


def rates(units: dict[str, int], overrides: dict[str, float | None] | None = None) -> list[KindRate]:
    """Per-kind failure rates for a job using these units; a design's overrides replace the defaults."""
    result = []
    for kind in KINDS:
        value, source = DEFAULT_RATES_PER_YEAR[kind]
        override = (overrides or {}).get(kind)
        if override is not None:
            value, source = override, "design (workload.failure_rates)"
        result.append(KindRate(kind, units.get(kind, 0), value, source))
    return result


def job_mtbf_s(kinds: list[KindRate]) -> float:
    """Mean time between job-stopping failures: the inverse of the summed rate (inf when nothing fails)."""
    per_hour = sum(k.job_failures_per_hour for k in kinds)
    return 3600.0 / per_hour if per_hour > 0 else math.inf


def young_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Young (1974): T = sqrt(2 C M), compute time between checkpoints."""
    return math.sqrt(2.0 * checkpoint_s * mtbf_s)


def daly_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Daly (2006) higher-order optimum: sqrt(2dM)[1 + sqrt(d/2M)/3 + (d/2M)/9] - d for d < 2M, else M."""
    if checkpoint_s >= 2.0 * mtbf_s:
        return mtbf_s
    x = checkpoint_s / (2.0 * mtbf_s)
    return math.sqrt(2.0 * checkpoint_s * mtbf_s) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - checkpoint_s


def daly_efficiency(interval_s: float, checkpoint_s: float, restart_s: float, mtbf_s: float) -> float:
    """Daly's complete model: useful share of wall time, tau / (M e^(R/M) (e^((tau+d)/M) - 1)); failures strike
    during compute, checkpoint and restart alike."""
    if math.isinf(mtbf_s):
        return 1.0 if math.isinf(interval_s) else interval_s / (interval_s + checkpoint_s)
    return interval_s / (mtbf_s * math.exp(restart_s / mtbf_s) * math.expm1((interval_s + checkpoint_s) / mtbf_s))


def expected_loss_per_failure_s(interval_s: float, checkpoint_s: float, mtbf_s: float) -> float:
    """Expected time since the last completed checkpoint when a failure strikes: E[X | X < tau + d], the
    work (and partial checkpoint) to redo; about half a segment when failures are rare."""
    segment = interval_s + checkpoint_s
    if math.isinf(mtbf_s):
        return segment / 2.0
    rate = 1.0 / mtbf_s
    return 1.0 / rate - segment / math.expm1(rate * segment)


def spares_needed(servers: int, failures_per_server_year: float, repair_hours: float, confidence: float) -> int:
    """Fewest spare servers s with P(servers in repair at once <= s) >= confidence: a Poisson quantile of
    mean servers x rate x repair time (servers in repair at once as a Poisson count; for scale, BLOOM-176B kept 4
    spare nodes for 48: stas00/ml-engineering, fault-tolerance chapter)."""
    mean = servers * failures_per_server_year * repair_hours / HOURS_PER_JULIAN_YEAR
    if mean <= 0:
        return 0
    term = math.exp(-mean)
    if term == 0.0:  # very large means: normal approximation
        return math.ceil(mean + statistics.NormalDist().inv_cdf(confidence) * math.sqrt(mean))
    total, spares = term, 0
    while total < confidence and spares < servers:
        spares += 1
        term *= mean / spares
        if total + term == total:  # the tail no longer adds anything a float can hold
            break
        total += term
    return spares


@dataclass(frozen=True)
class DomainSpares:
    """A rack keeps serving its job segment (16 of an NVL72's 18 trays) while at most ``in_rack_spares`` trays are
    in repair; beyond that the job needs a spare rack."""

    racks: int
    trays_per_rack: int
    segment: int
    trays_in_repair_per_rack: float  # mean
    p_rack_short: float  # P(more trays of one rack in repair at once than it keeps spare)
    spare_racks_needed: int
    spare_racks_have: int

    @property
    def in_rack_spares(self) -> int:
        return self.trays_per_rack - self.segment


def domain_spares(
    racks: int,
    trays_per_rack: int,
    segment: int,
    failures_per_tray_year: float,
    repair_hours: float,
    confidence: float,
    spare_racks_have: int = 0,
) -> DomainSpares:
    """Trays of one rack in repair at once are Poisson (mean trays x rate x repair time); spare racks cover the racks
    short of their segment at once (a Poisson quantile, as spares_needed does for servers)."""
    mean = trays_per_rack * failures_per_tray_year * repair_hours / HOURS_PER_JULIAN_YEAR
    p_short = poisson_tail(mean, trays_per_rack - segment + 1)
    short_per_year = racks * p_short * HOURS_PER_JULIAN_YEAR / repair_hours if repair_hours else 0.0
    needed = spares_needed(racks, short_per_year / racks if racks else 0.0, repair_hours, confidence)
    return DomainSpares(racks, trays_per_rack, segment, mean, p_short, needed, spare_racks_have)


@dataclass(frozen=True)
class TrayFailover:
    """How a job in segments of NVLink domains goes on after one of its trays fails: the tray's GPUs leave the domain
    (NVLink partitions isolate them: NVIDIA's NVL72 Enterprise RA) and the job restarts from its checkpoint on a spare
    tray of the rack, else a spare rack, else it waits for a tray back from repair.

    Trays in repair are Poisson (the M/G/inf queue) and a failure sees the time-average state (PASTA). NVL72 tray
    failure rates are not published: a tray fails as its GPUs, host and NICs at this module's rates (assumption)."""

    trays_per_rack: int
    segment: int
    gpus_per_tray: int
    repair_hours: float
    p_no_spare_tray: float  # the failed tray's rack has all its spare trays in repair already
    p_no_spare_rack: float  # every spare rack already stands in for another rack
    wait_s: float  # then the mean wait for one of the rack's trays to come back from repair
    tray_share: float  # share of the job's failures that take a tray out for repair (the rest restart in place)

    @property
    def spare_trays(self) -> int:
        return self.trays_per_rack - self.segment

    @property
    def p_wait(self) -> float:
        """Share of the job's failures after which it waits for a repair."""
        return self.tray_share * self.p_no_spare_tray * self.p_no_spare_rack

    @property
    def mean_wait_per_failure_s(self) -> float:
        return self.p_wait * self.wait_s


def poisson_tail(mean: float, k: int) -> float:
    """P(X >= k) for X ~ Poisson(mean)."""
    if k <= 0:
        return 1.0
    term = math.exp(-mean)
    below = term
    for i in range(1, k):
        term *= mean / i
        below += term
    return max(0.0, 1.0 - below)


def tray_failover(
    domains: DomainSpares, gpus_per_tray: int, tray_failures_per_year: float, repair_hours: float, tray_share: float
) -> TrayFailover:
    """A rack short of its segment waits for the first of its trays in repair: with the others' repairs at stages
    spread evenly, it is back after repair / (spares + 1) on average (derived: the least of n uniform residual
    times has mean repair / (n + 1))."""
    spares = domains.trays_per_rack - domains.segment
    others = (domains.trays_per_rack - 1) * tray_failures_per_year * repair_hours / HOURS_PER_JULIAN_YEAR
    p_tray = poisson_tail(others, spares)
    racks_short = max(0, domains.racks - 1) * domains.p_rack_short
    p_rack = poisson_tail(racks_short, domains.spare_racks_have)
    wait_s = repair_hours * 3600 / (spares + 1)
    return TrayFailover(
        domains.trays_per_rack, domains.segment, gpus_per_tray, repair_hours, p_tray, p_rack, wait_s, tray_share
    )
