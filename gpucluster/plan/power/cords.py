"""Each power supply's cord to a PDU outlet of its rack, and what losing a feed (or a PDU) takes from the devices."""

from __future__ import annotations

import math
from collections import Counter, defaultdict, deque
from dataclasses import dataclass
from typing import cast

from gpucluster.catalog.schema import Pdu, Psus, RackMounted
from gpucluster.design.schema import PowerFeed
from gpucluster.plan.memo import per_plan
from gpucluster.plan.model import Plan, RackPlan
from gpucluster.plan.power.circuits import OUTLET_FOR_INLET
from gpucluster.plan.racks import pdu_feeds


@dataclass(frozen=True, slots=True)
class PowerCord:
    """One power-supply cord: a device's PSU (1-based) plugged into an outlet of a PDU in its rack."""

    device: str
    psu: int
    pdu: str
    outlet: str  # the outlet's name on the PDU (pdu_outlet_names)
    feed: str  # "A" or "B" (2N), "A" with N


def pdu_outlet_names(pdu: Pdu) -> list[tuple[str, str]]:
    """(outlet name, IEC 60320 type) of every outlet of a PDU model, numbered per type: C19-01, C19-02, C13-01 ..."""
    return [(f"{kind}-{n:02d}", kind) for kind, count in pdu.outlets.items() for n in range(1, count + 1)]


def rack_feeds(plan: Plan, rack: RackPlan) -> dict[str, list[str]]:
    """The rack's PDUs by feed, in the order add_pdus named them (a1, b1, a2 ... with 2N; a, b, c with N+1)."""
    redundancy = plan.design.site.power_feed.redundancy
    feeds: dict[str, list[str]] = defaultdict(list)
    for name, feed in zip(rack.pdus, pdu_feeds(len(rack.pdus), redundancy), strict=True):
        feeds[feed].append(name)
    return dict(feeds)


class _FreeOutlets:
    """A PDU's free outlets in order, kept per type: a cord takes the first free outlet of the type that mates with
    its inlet, else the first free outlet of any type (an adapter cord). Per type, so that a 131,072-GPU plan's
    150,000 cords do not each scan and shorten a list of the PDU's outlets."""

    def __init__(self, outlets: list[tuple[str, str]]):
        self.by_type: dict[str, deque[tuple[int, str]]] = {}  # type -> (position among all outlets, name)
        for position, (name, kind) in enumerate(outlets):
            self.by_type.setdefault(kind, deque()).append((position, name))

    def copy(self) -> _FreeOutlets:
        """The same outlets, free apart: one PDU model's outlets are named once, and each PDU takes a copy."""
        free = _FreeOutlets([])
        free.by_type = {kind: deque(outlets) for kind, outlets in self.by_type.items()}
        return free

    def take(self, wanted: str) -> str | None:
        """The outlet a cord for the `wanted` type takes, now no longer free (None: none is left)."""
        free = self.by_type.get(wanted)
        if not free:
            free = min((q for q in self.by_type.values() if q), key=lambda q: q[0][0], default=None)
            if free is None:
                return None
        return free.popleft()[1]


@per_plan
def power_cords(plan: Plan) -> list[PowerCord]:
    """Every PSU's cord to a PDU outlet of its rack, in rack and device order.

    2N: the first half of a device's PSUs (rounded up) on feed A, the rest on B, each feed's PDUs in turn. N+1 (the
    RA's) and N: the rack's PDUs in turn, so a DGX's six PSUs split 2-2-2 over three. A cord takes the outlet that
    mates with its inlet, else any (an adapter cord, as pdus_needed counted); a PSU with no outlet left gets none
    (the outlet rule reports the rack). Made once per plan, for the rules, BOM, NetBox and printouts: read only."""
    redundancy = plan.design.site.power_feed.redundancy
    cords: list[PowerCord] = []
    devices, parts = plan.devices, plan.catalog_parts
    # per PDU model its outlets, and per part its PSUs and the outlet type they want: a few parts among 150,000 cords
    outlets_of: dict[str, _FreeOutlets] = {}
    psus_of: dict[str, tuple[Psus | None, str]] = {}
    for rack in plan.racks.values():
        feeds = rack_feeds(plan, rack)
        feed_of = {pdu: name for name, pdus in feeds.items() for pdu in pdus}
        # the pools a PSU's cord may go to: per feed with 2N, the whole rack otherwise
        pools = feeds if redundancy == "2N" else ({"*": list(rack.pdus)} if rack.pdus else {})
        free = {}
        for name in rack.pdus:
            model = devices[name].part
            if model not in outlets_of:
                outlets_of[model] = _FreeOutlets(pdu_outlet_names(cast(Pdu, parts[model])))
            free[name] = outlets_of[model].copy()
        turn = dict.fromkeys(pools, 0)
        for device_name in rack.devices:
            part_id = devices[device_name].part
            found = psus_of.get(part_id)
            if found is None:
                psus = getattr(parts[part_id], "psus", None)
                found = psus_of[part_id] = (psus, OUTLET_FOR_INLET.get(psus.inlet, psus.inlet) if psus else "")
            psus, wanted = found
            if not psus or not pools:
                continue
            on_a = math.ceil(psus.count / 2) if len(pools) > 1 else psus.count
            for psu in range(1, psus.count + 1):
                pool = ("A" if psu <= on_a else "B") if len(pools) > 1 else next(iter(pools))
                pdus = pools[pool]
                for attempt in range(len(pdus)):
                    pdu = pdus[(turn[pool] + attempt) % len(pdus)]
                    outlet = free[pdu].take(wanted)
                    if outlet is not None:
                        cords.append(PowerCord(device_name, psu, pdu, outlet, feed_of[pdu]))
                        turn[pool] = (turn[pool] + attempt + 1) % len(pdus)
                        break
    return cords


@dataclass(frozen=True, slots=True)
class FeedLoss:
    """Devices of one model that cannot run at full power when one PDU or feed of their rack is lost."""

    part: str
    devices: int
    psus: int
    psu_rating_w: float
    surviving_psus: int  # PSUs left after losing the feed that carries the most of them
    surviving_w: float
    max_w: float
    typical_w: float
    split: str = ""  # how its PSUs spread over the rack's feeds, e.g. "3 + 3" or "2 + 2 + 2"


def feed_loss(plan: Plan, feed: PowerFeed) -> list[FeedLoss]:
    """With 2N or N+1, losing one feed (with 2N all the PDUs on it, with N+1 one PDU) takes the PSUs corded to it
    (power_cords); the PSUs left must carry the device. Lists the models whose remaining PSU capacity is below their
    catalog maximum (they run power-capped, or stop if below typical); each model at its worst-placed device."""
    if feed.redundancy == "N":
        return []
    spread: dict[str, Counter[str]] = defaultdict(Counter)
    for cord in power_cords(plan):
        spread[cord.device][cord.feed] += 1
    worst: dict[str, tuple[int, str]] = {}
    counts: Counter[str] = Counter()
    for device, on_feed in spread.items():
        part_id = plan.devices[device].part
        counts[part_id] += 1
        surviving = sum(on_feed.values()) - max(on_feed.values())
        split = " + ".join(str(n) for _feed, n in sorted(on_feed.items()))
        if part_id not in worst or surviving < worst[part_id][0]:
            worst[part_id] = (surviving, split)
    result = []
    for part_id, (surviving, split) in sorted(worst.items()):
        part = plan.catalog_parts[part_id]
        psus = getattr(part, "psus", None)
        if not psus or not isinstance(part, RackMounted):
            continue
        surviving_w = surviving * psus.rating_w
        if surviving_w < part.power_max_w:
            result.append(
                FeedLoss(
                    part=part_id,
                    devices=counts[part_id],
                    psus=psus.count,
                    psu_rating_w=psus.rating_w,
                    surviving_psus=surviving,
                    surviving_w=surviving_w,
                    max_w=part.power_max_w,
                    typical_w=part.power_typical_w,
                    split=split,
                )
            )
    return result
