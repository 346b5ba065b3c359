"""The PDUs a rack needs and the circuits that feed them.

A circuit's usable power is its apparent power (sqrt(3) x V_LL x I for three-phase, V x I for
single-phase) times the continuous-load fraction (NEC 80 % rule), at power factor 1: a 415 V
three-phase 60 A circuit gives 43.1 kVA, 34.5 kW usable (the Raritan PX3-5878's 34.5 kVA,
https://d3b2us605ptvk2.cloudfront.net/product-selector/pdus/PX3-5878I2R-P1Q1R1/PX3-5878I2R-P1Q1R1A5D5_spec.pdf).
Every PDU is fed by one circuit. With 2N the rack has an A and a B feed and each feed alone
carries the whole rack; with N all the rack's circuits share its load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

from gpucluster.catalog.load import Catalog
from gpucluster.catalog.schema import Pdu, PowerShelf, Psus, RackSystem
from gpucluster.design.schema import PowerFeed
from gpucluster.plan.model import Plan, RackPlan
from gpucluster.plan.racks import pdu_feeds, rack_inlets

# IEC 60320: the outlet that mates with each appliance inlet.
OUTLET_FOR_INLET = {"C14": "C13", "C20": "C19", "C16": "C15", "C22": "C21"}
SQRT3 = math.sqrt(3)


def circuit_kva(voltage_v: float, phases: int, current_a: float) -> float:
    return (SQRT3 if phases == 3 else 1.0) * voltage_v * current_a / 1000.0


def usable_circuit_kw(feed: PowerFeed) -> float:
    """Continuous power one circuit of the site's feed can carry (power factor 1)."""
    return circuit_kva(feed.voltage_v, feed.phases, feed.breaker_a) * feed.continuous_load_fraction


def circuit_w(pdu: Pdu, feed: PowerFeed) -> float:
    """Continuous power one PDU's circuit carries: the smaller of the feed's circuit and the PDU's own rating."""
    pdu_kw = circuit_kva(pdu.voltage_v, pdu.phases, pdu.current_a) * feed.continuous_load_fraction
    return min(usable_circuit_kw(feed), pdu_kw) * 1000.0


def choose_pdu(catalog: Catalog, feed: PowerFeed, wanted: str | None, compute: bool = True) -> Pdu | None:
    """The design's PDU, or the catalog PDU that matches the feed (phases, voltage within 5 %, current): for compute
    racks the one with the most C19 outlets (GPU servers have C20 inlets), for the others the one with the most C13
    outlets (switches and appliances have C14 inlets), as the H100 RA picks a PDU per rack kind (Table 7)."""
    if wanted:
        return catalog.get(wanted, Pdu)
    matching = [
        p
        for p in catalog.of_kind(Pdu)
        if p.phases == feed.phases
        and abs(p.voltage_v - feed.voltage_v) <= 0.05 * feed.voltage_v
        and p.current_a == feed.breaker_a
    ]
    outlet = "C19" if compute else "C13"
    matching.sort(key=lambda p: (-p.outlets.get(outlet, 0), -sum(p.outlets.values()), p.id))
    return matching[0] if matching else None


def pdus_to_keep_psus(part: object) -> int:
    """Fewest PDUs a device's power supplies can be spread over so that losing any one PDU leaves enough of them
    to carry its maximum: 3 for a DGX H100 (6 x 3.3 kW for 10.2 kW: 2-2-2 leaves 4), 2 for a switch's 1+1."""
    psus: Psus | None = getattr(part, "psus", None)
    if not psus or psus.rating_w <= 0:
        return 1
    needed = math.ceil(float(getattr(part, "power_max_w", 0.0)) / psus.rating_w - 1e-9)
    for pdus in range(2, psus.count + 1):
        if psus.count - math.ceil(psus.count / pdus) >= needed:
            return pdus
    return psus.count


def pdus_needed(load_w: float, inlets: dict[str, int], pdu: Pdu, feed: PowerFeed, spread: int = 1) -> int:
    """PDUs for one rack, each on its own circuit: enough for its maximum load and its inlets, and no more. N+1 (the
    RA's): the load's circuits plus one, and the PDUs the power supplies need to survive a PDU loss (`spread`) where
    that costs at most one more (a DGX B200's 5+1 would need six: it runs capped, and the rule says so). 2N: an even
    count, each half carrying the rack. N: the circuits the load needs."""
    if load_w <= 0:
        return 0
    carrying = max(1, math.ceil(load_w / circuit_w(pdu, feed) - 1e-9))
    if feed.redundancy == "2N":
        per_side = carrying
        for inlet, count in inlets.items():
            per_side = max(per_side, math.ceil(count / (_outlets_for(pdu, inlet) * 2)))
        return per_side * 2
    by_outlets = max((math.ceil(count / _outlets_for(pdu, inlet)) for inlet, count in inlets.items()), default=0)
    if feed.redundancy == "N":
        return max(carrying, by_outlets)
    return max(carrying + 1, by_outlets, min(spread, carrying + 2))


def _outlets_for(pdu: Pdu, inlet: str) -> int:
    """Outlets of one PDU that take a device inlet: the mating type, else any outlet (with an adapter cord)."""
    return pdu.outlets.get(OUTLET_FOR_INLET.get(inlet, inlet), 0) or sum(pdu.outlets.values())


@dataclass(frozen=True, slots=True)
class RackCircuits:
    """A rack's circuits (one per PDU) and what they carry."""

    rack: str
    feeds: tuple[str, ...]  # ("A", "B") with 2N, ("A",) with N
    circuits_per_feed: int
    circuit_usable_w: float  # continuous power one circuit carries
    capacity_w: float  # continuous load the rack may draw and keep its redundancy
    load_max_w: float
    circuit_load_w: float  # per circuit, all feeds up, at the rack's maximum
    circuit_load_failover_w: float  # per circuit with one feed lost (2N); equal to circuit_load_w with N
    inlets: int  # power-supply cords in the rack
    outlets: int  # outlets of all its PDUs
    outlets_ok: bool  # every cord has an outlet of its type (or an adapter's) on its feed
    carrying: int = 0  # circuits left to carry the rack when one feed is lost (2N: one feed's; N+1: all but one)

    @property
    def circuits(self) -> int:
        return self.circuits_per_feed * len(self.feeds)


def rack_circuits(plan: Plan, rack: RackPlan, feed: PowerFeed) -> RackCircuits:
    """The circuits of one rack against its maximum load and its power cords."""
    if rack.rack_system:
        return shelf_circuits(plan, rack, feed)
    pdus = [cast(Pdu, plan.part(name)) for name in rack.pdus]
    feeds = tuple(dict.fromkeys(pdu_feeds(len(pdus), feed.redundancy))) or (
        ("A", "B") if feed.redundancy == "2N" else ("A",)
    )
    per_feed = len(pdus) // len(feeds)
    # the circuits left to carry the rack when the redundancy is used: one feed's (2N), all but one (N+1), all (N)
    carrying = {"2N": per_feed, "N+1": len(pdus) - 1, "N": len(pdus)}[feed.redundancy]
    usable = min((circuit_w(p, feed) for p in pdus), default=0.0)
    inlets = rack_inlets(plan.catalog_parts, [plan.devices[n] for n in rack.devices])
    outlets_ok = all(count <= sum(_outlets_for(p, inlet) for p in pdus) for inlet, count in inlets.items())
    load = rack.power_max_w
    return RackCircuits(
        rack=rack.name,
        feeds=feeds,
        circuits_per_feed=per_feed,
        circuit_usable_w=usable,
        capacity_w=carrying * usable,
        load_max_w=load,
        circuit_load_w=load / len(pdus) if pdus else 0.0,
        circuit_load_failover_w=load / carrying if carrying else 0.0,
        inlets=sum(inlets.values()),
        outlets=sum(sum(p.outlets.values()) for p in pdus),
        outlets_ok=outlets_ok and (bool(pdus) or not inlets),
        carrying=carrying,
    )


def shelf_circuits(plan: Plan, rack: RackPlan, feed: PowerFeed) -> RackCircuits:
    """A rack-scale system's power: one facility circuit per power shelf, each shelf delivering the smaller of its
    rating and its circuit's continuous power (shelf conversion losses are not published and not modelled). With
    N+N half the shelves stand on feed A and half on feed B, and either half carries the rack; with N+1 all but one
    shelf carry it."""
    system = cast(RackSystem, plan.catalog_parts[str(rack.rack_system)])
    shelf = cast(PowerShelf, plan.catalog_parts[system.power_shelf])
    shelves = system.power_shelves
    two_feeds = system.power_shelf_redundancy == "N+N"
    feeds = ("A", "B") if two_feeds else ("A",)
    carrying = {"N+N": shelves // 2, "N+1": shelves - 1, "N": shelves}[system.power_shelf_redundancy]
    usable = min(usable_circuit_kw(feed) * 1000.0, shelf.rating_w)
    load = rack.power_max_w
    return RackCircuits(
        rack=rack.name,
        feeds=feeds,
        circuits_per_feed=shelves // len(feeds),
        circuit_usable_w=usable,
        capacity_w=carrying * usable,
        load_max_w=load,
        circuit_load_w=load / shelves,
        circuit_load_failover_w=load / carrying if carrying else 0.0,
        inlets=shelves,
        outlets=shelves,
        outlets_ok=True,
        carrying=carrying,
    )


def circuit_kind(feed: PowerFeed, pdu: Pdu) -> str:
    """How the site names a circuit: '415 V 3-phase 60 A'."""
    amps = min(feed.breaker_a, pdu.current_a)
    return f"{feed.voltage_v:g} V {feed.phases}-phase {amps:g} A"
