"""Rack power distribution: the PDU model for the site's feed and how many each rack needs.

A circuit's usable power is its apparent power (sqrt(3) x V_LL x I for three-phase, V x I for
single-phase) times the continuous-load fraction (NEC 80 % rule), at power factor 1: a 415 V
three-phase 60 A circuit gives 43.1 kVA, 34.5 kW usable (hardware-facts §5, Raritan PX3-5878).
With 2N feeds each side carries the whole rack; with N the circuits share it.
"""

from __future__ import annotations

import math

from gpucluster.catalog.load import Catalog
from gpucluster.catalog.schema import Pdu
from gpucluster.design.schema import PowerFeed

# IEC 60320: the outlet that mates with each appliance inlet.
OUTLET_FOR_INLET = {"C14": "C13", "C20": "C19", "C16": "C15", "C22": "C21"}


def circuit_kva(voltage_v: float, phases: int, current_a: float) -> float:
    return (math.sqrt(3) if phases == 3 else 1.0) * voltage_v * current_a / 1000.0


def usable_circuit_kw(feed: PowerFeed) -> float:
    """Continuous power one circuit of the site's feed can carry (power factor 1)."""
    return circuit_kva(feed.voltage_v, feed.phases, feed.breaker_a) * feed.continuous_load_fraction


def choose_pdu(catalog: Catalog, feed: PowerFeed, wanted: str | None) -> Pdu | None:
    """The design's PDU, or the catalog PDU that matches the feed (phases, voltage within 5 %, current)."""
    if wanted:
        return catalog.get(wanted, Pdu)
    matching = [
        p
        for p in catalog.of_kind(Pdu)
        if p.phases == feed.phases
        and abs(p.voltage_v - feed.voltage_v) <= 0.05 * feed.voltage_v
        and p.current_a == feed.breaker_a
    ]
    # prefer the one with the most high-power (C19) outlets: GPU servers use C20 inlets
    matching.sort(key=lambda p: (-p.outlets.get("C19", 0), p.id))
    return matching[0] if matching else None


def pdus_needed(load_w: float, inlets: dict[str, int], pdu: Pdu, feed: PowerFeed) -> int:
    """PDUs for one rack: enough circuits for its maximum load and enough outlets for its inlets.

    With 2N the count is even: half on feed A, half on feed B, and each device's power supplies
    are split across both.
    """
    if load_w <= 0:
        return 0
    circuit_w = (
        min(
            usable_circuit_kw(feed),
            circuit_kva(pdu.voltage_v, pdu.phases, pdu.current_a) * feed.continuous_load_fraction,
        )
        * 1000.0
    )
    per_side = max(1, math.ceil(load_w / circuit_w))
    sides = 2 if feed.redundancy == "2N" else 1
    for inlet, count in inlets.items():
        outlet = OUTLET_FOR_INLET.get(inlet, inlet)
        per_pdu = pdu.outlets.get(outlet, 0)
        if per_pdu == 0:
            # fall back to any outlet type the PDU has (with a C19-to-C14 style cord)
            per_pdu = sum(pdu.outlets.values())
        per_side = max(per_side, math.ceil(count / (per_pdu * sides)))
    return per_side * sides
