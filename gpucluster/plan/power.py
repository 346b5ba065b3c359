"""Power and cooling: what each device draws with its optics, how each rack's load reaches it over PDUs and
circuits, and the cooling that removes its heat.

A circuit's usable power is its apparent power (sqrt(3) x V_LL x I for three-phase, V x I for
single-phase) times the continuous-load fraction (NEC 80 % rule), at power factor 1: a 415 V
three-phase 60 A circuit gives 43.1 kVA, 34.5 kW usable (the Raritan PX3-5878's 34.5 kVA,
https://d3b2us605ptvk2.cloudfront.net/product-selector/pdus/PX3-5878I2R-P1Q1R1/PX3-5878I2R-P1Q1R1A5D5_spec.pdf).
Every PDU is fed by one circuit. With 2N the rack has an A and a B feed and each feed alone
carries the whole rack; with N all the rack's circuits share its load.

Device power (the rule every view uses):

* a device's *maximum* is its catalog ``power_max_w`` plus the pluggable optics and active-cable
  ends in its cages, unless the catalog says that maximum already covers them
  (``power_max_includes_optics``: the QM9700's 1.72 kW is "with active cables",
  https://networking-docs.nvidia.com/qm97x0hw/specifications);
* its *typical* draw is the catalog ``power_typical_w`` plus the optics at their typical power
  (NVIDIA's switch typical figures are "with passive cables"), never above the maximum;
* optics are counted once per (device, cage): one twin-port transceiver serves both links of its cage.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict, deque
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cache
from typing import cast

from gpucluster.catalog.load import Catalog
from gpucluster.catalog.schema import Cable as CablePart
from gpucluster.catalog.schema import Pdu, PowerShelf, Psus, RackMounted, RackSystem, Transceiver
from gpucluster.design.schema import PowerFeed
from gpucluster.plan.cables import CAGE_ACCEPTS
from gpucluster.plan.model import Cable, Plan, RackPlan
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
    psus = getattr(part, "psus", None)
    if not psus or psus.rating_w <= 0:
        return 1
    needed = math.ceil(float(getattr(part, "power_max_w", 0.0)) / psus.rating_w - 1e-9)
    for pdus in range(2, psus.count + 1):
        if psus.count - math.ceil(psus.count / pdus) >= needed:
            return pdus
    return psus.count


def pdus_needed(load_w: float, inlets: dict[str, int], pdu: Pdu, feed: PowerFeed, spread: int = 1) -> int:
    """PDUs for one rack, each on its own circuit: enough circuits for its maximum load and enough outlets for its
    inlets, and no more.

    N+1 (the RA's): the circuits that carry the load plus one, and at least the PDUs the devices' power supplies
    need to survive a PDU loss (`spread`, from pdus_to_keep_psus) where that costs at most one PDU more (a DGX
    B200's 5+1 supplies would need six PDUs: it runs capped on a PDU loss, and the rule says so).
    2N: an even count, half on feed A and half on feed B, each half carrying the rack. N: the circuits the load
    needs.
    """
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


# ------------------------------------------------------------------------------------------ device power


@dataclass(frozen=True, slots=True)
class DevicePower:
    """One device's draw in watts, its optics shown apart."""

    typical_w: float
    max_w: float
    catalog_typical_w: float
    catalog_max_w: float
    optics_typical_w: float  # modules and active-cable ends in its cages
    optics_max_w: float
    optics_in_catalog_max: bool  # the catalog maximum already covers the optics


@dataclass(frozen=True, slots=True)
class CageModule:
    """What fills one occupied cage: a transceiver, or the end of an active cable (which draws power)."""

    part: str  # catalog id of the transceiver, or of the active cable
    network: str  # the network of the cable that put it there
    transceiver: bool  # False: an active (ACC/AOC) cable's end, ordered with its cable
    typical_w: float
    max_w: float


def module_power_w(part: Transceiver) -> tuple[float, float]:
    """(typical, maximum) watts of a transceiver: its typical figure, or its maximum where the catalog has none."""
    maximum = float(part.power_max_w)
    return (maximum if part.power_typical_w is None else float(part.power_typical_w)), maximum


def cage_modules(plan: Plan) -> dict[tuple[str, int], CageModule]:
    """(device, cage) -> the module in it, for every cage that holds a transceiver or an active cable's
    end: what the power budget draws and the BOM counts. A twin-port cage serving two links (and two
    cables) holds one module; were its cables to disagree, it holds the hungriest (the first on ties):
    what the cage would draw. A cageless port (cage 0, e.g. RJ45) holds none."""
    parts = plan.catalog_parts

    @cache
    def module_of(part_id: str, network: str, transceiver: bool, leg: bool = False) -> CageModule | None:
        part = parts[part_id]
        if transceiver:
            module = plan.catalog_part(part_id, Transceiver)
            typical, maximum = module_power_w(module)
            if leg and module.split_power_max_w is not None:  # 200G mode: half its lanes lit
                maximum = float(module.split_power_max_w)
                typical = min(typical, float(module.split_power_typical_w or maximum))
            return CageModule(part_id, network, True, typical, maximum)
        per_end_w = float(getattr(part, "power_per_end_w", 0.0) or 0.0)
        return CageModule(part_id, network, False, per_end_w, per_end_w) if per_end_w else None

    def fitted(cable_part: str, network: str, a_transceiver: str | None, b_transceiver: str | None) -> tuple:
        """(the module at the cable's a end, at its b end); () for passive copper: nothing in its cages draws or is
        ordered apart."""
        active = module_of(cable_part, network, False)
        if active is None and a_transceiver is None and b_transceiver is None:
            return ()
        leg = bool(getattr(parts[cable_part], "splits_port", False))  # a host module on a splitter leg
        return tuple(
            module_of(t, network, True, leg and getattr(parts[t], "ports", 2) == 1) if t else active
            for t in (a_transceiver, b_transceiver)
        )

    # a few dozen kinds of cable (part, network, modules) among hundreds of thousands: each kind's modules once
    kinds: dict[tuple[str, str, str | None, str | None], tuple] = {}
    links = plan.links
    result: dict[tuple[str, int], CageModule] = {}

    def fit(end: tuple[str, int], module: CageModule | None) -> None:
        """The module into a cage (a cageless port holds none); a cage two cables share keeps the hungriest."""
        if module is not None and end[1]:
            held = result.get(end)
            if held is None or module.max_w > held.max_w:
                result[end] = module

    for cable in plan.cables:
        kind = (cable.cable_part, cable.network, cable.a_transceiver, cable.b_transceiver)
        modules = kinds.get(kind)
        if modules is None:
            modules = kinds[kind] = fitted(*kind)
        if not modules:
            continue
        if len(cable.links) == 1:  # most cables: the cable's ends are its link's ends (cable_ends and fit, inlined)
            link = links[cable.links[0]]
            module = modules[0]
            if module is not None and link.a_cage:
                end = (link.a_device, link.a_cage)
                held = result.get(end)
                if held is None or module.max_w > held.max_w:
                    result[end] = module
            module = modules[1]
            if module is not None and link.b_cage:
                end = (link.b_device, link.b_cage)
                held = result.get(end)
                if held is None or module.max_w > held.max_w:
                    result[end] = module
            continue
        for ends, module in zip(cable_ends(plan, cable), modules, strict=True):
            for end in ends:
                fit(end, module)
    return result


def optics_power_w(plan: Plan) -> dict[str, tuple[float, float]]:
    """(typical, maximum) watts of the optics in each device's cages, counted once per (device, cage)."""
    per_device: dict[str, tuple[float, float]] = {}
    for (device, _cage), module in cage_modules(plan).items():
        t, m = per_device.get(device, (0.0, 0.0))
        per_device[device] = (t + module.typical_w, m + module.max_w)
    return per_device


def cable_ends(plan: Plan, cable: Cable) -> tuple[Collection[tuple[str, int]], Collection[tuple[str, int]]]:
    """The distinct (device, cage) ends at the cable's a side and b side.

    The a side is the links' a side, except for a 1:2 splitter whose shared (twin-port) cage is on
    the links' b side: a cable's a end is always the end its links share.
    """
    if len(cable.links) == 1:  # most cables: the cable's ends are its link's ends
        link = plan.links[cable.links[0]]
        return ((link.a_device, link.a_cage),), ((link.b_device, link.b_cage),)
    links = [plan.links[i] for i in cable.links]
    a = {(link.a_device, link.a_cage) for link in links}
    b = {(link.b_device, link.b_cage) for link in links}
    return (b, a) if len(a) > 1 and len(b) == 1 else (a, b)


def optics_allowance_w(plan: Plan, catalog: Catalog) -> dict[str, float]:
    """Before cabling, the most the optics in each device's used cages can draw: per cage, the
    hungriest catalog module or active-cable end that fits it. Racks are packed with this, so they
    stay within their power budget whatever media the cables get."""
    used: dict[str, set[int]] = defaultdict(set)
    for link in plan.links:
        if link.a_cage:
            used[link.a_device].add(link.a_cage)
        if link.b_cage:
            used[link.b_device].add(link.b_cage)
    modules = [(t.cage_type, t.ports, t.end, t.power_max_w) for t in catalog.of_kind(Transceiver)]
    modules += [
        (end, 0, "any", c.power_per_end_w)
        for c in catalog.of_kind(CablePart)
        if c.power_per_end_w
        for end in (c.end_a, c.end_b)
    ]
    per_cage = cache(lambda part_id, switch: _cage_allowance_w(catalog.parts[part_id], switch, modules))
    result = {}
    for name, cages in used.items():
        device = plan.devices[name]
        part = catalog.parts[device.part]
        if getattr(part, "power_max_includes_optics", False):
            continue
        watts = per_cage(device.part, device.role == "switch")
        result[name] = sum(watts.get(cage, 0.0) for cage in cages)
    return result


def _cage_allowance_w(part: object, switch: bool, modules: Sequence[tuple[str, int, str, float]]) -> dict[int, float]:
    """Cage number (unique across the device, as catalog.ports numbers them) -> the most a module in it draws."""
    result = {}
    offset = 0
    for group in getattr(part, "ports", []):
        accepts = CAGE_ACCEPTS.get(group.cage_type, (group.cage_type,))
        fitting = [
            watts
            for cage_type, ports, end, watts in modules
            if cage_type in accepts
            and ports in (0, group.ports_per_cage, group.ethernet_planes)
            and end in ("any", "switch" if switch else "host")
        ]
        for cage in range(offset + 1, offset + group.cages + 1):
            result[cage] = max(fitting, default=0.0)
        offset += group.cages
    return result


def device_powers(plan: Plan) -> dict[str, DevicePower]:
    """Each device's draw with its optics, as the planner computed it (or computed now, for a plan
    assembled without the planner): every view reads this instead of recomputing it."""
    return plan.device_power or device_power(plan)


def device_power(plan: Plan) -> dict[str, DevicePower]:
    """Every device's typical and maximum draw with its optics (the rule in the module docstring)."""
    optics = optics_power_w(plan)
    result = {}
    for name, device in plan.devices.items():
        part = plan.catalog_parts[device.part]
        typical = float(getattr(part, "power_typical_w", 0.0))
        maximum = float(getattr(part, "power_max_w", 0.0))
        included = bool(getattr(part, "power_max_includes_optics", False))
        optics_typical, optics_max = optics.get(name, (0.0, 0.0))
        device_max = maximum + (0.0 if included else optics_max)
        result[name] = DevicePower(
            typical_w=min(typical + optics_typical, device_max),
            max_w=device_max,
            catalog_typical_w=typical,
            catalog_max_w=maximum,
            optics_typical_w=optics_typical,
            optics_max_w=optics_max,
            optics_in_catalog_max=included,
        )
    return result


def rack_devices(rack: RackPlan) -> list[str]:
    """Everything in a rack that draws power: its devices and its PDUs."""
    return [*rack.devices, *rack.pdus]


def add_optics_power(plan: Plan) -> dict[str, DevicePower]:
    """Once the cables (and so the optics) are known, make each rack's load include them."""
    powers = device_power(plan)
    for rack in plan.racks.values():
        names = rack_devices(rack)
        rack.power_max_w = sum(powers[n].max_w for n in names)
        rack.power_typical_w = sum(powers[n].typical_w for n in names)
    return powers


# --------------------------------------------------------------------------------------------- circuits


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


# --------------------------------------------------------------------------------------------- power cords


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


def power_cords(plan: Plan) -> list[PowerCord]:
    """Every PSU's cord to a PDU outlet of its rack, in rack and device order.

    2N: the first half of a device's PSUs (rounded up) go to feed A and the rest to feed B; within a feed, cords
    take the PDUs in turn. N+1 (the RA's): the PSUs take the rack's PDUs in turn, each on its own feed, so a DGX's
    six PSUs split 2-2-2 over three PDUs and losing any one PDU or feed leaves four. N: the PDUs in turn.
    Each cord takes the outlet type that mates with the inlet (C20 -> C19), else any free outlet, as pdus_needed
    counted them (adapter cord). A PSU for which no outlet is left gets no cord (the outlet design rule reports
    that rack). Made once per plan and kept with its queries (the design rules, the BOM, NetBox and the printouts read
    it: 150,000 cords at 131,072 GPUs); a list to read, not to change."""
    views = plan.queries().views
    made = views.get("power.cords")
    if made is None:
        made = views["power.cords"] = _power_cords(plan)
    return cast(list[PowerCord], made)


def _power_cords(plan: Plan) -> list[PowerCord]:
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


# Heat one rack's cooling can remove, by cooling type, when the design does not say
# (COOLING_SOURCES: air ~25-30 kW practical with containment; active rear-door heat exchangers
# up to ~60 kW; direct liquid cooling 50-120+ kW per rack, GB200/GB300 NVL72 ~120-140 kW).
COOLING_CAPACITY_KW = {"air": 30.0, "rear-door": 60.0, "liquid": 140.0}
COOLING_SOURCES = {
    "air": "https://www.yobitel.com/knowledge-base/rear-door-heat-exchanger (air ~25-30 kW with containment)",
    "rear-door": "https://www.coolnetpower.com/blog/how-much-heat-can-a-rear-door-heat-exchanger-remove/ (active RDHx)",
    "liquid": "https://ai-infrastructure.net/datacentre-physical/ (DLC 50-120+ kW; NVL72 ~120-140 kW)",
}


def cooling_capacity_kw(site: object) -> float:
    capacity = getattr(site, "cooling_capacity_kw", None)
    return float(capacity) if capacity else COOLING_CAPACITY_KW[getattr(site, "cooling", "air")]


def liquid_heat_w(part: object, power_w: float) -> float:
    """The share of a part's heat its liquid loop takes (catalog `cooling`); the rest goes to the air."""
    cooling = getattr(part, "cooling", None)
    if cooling is None or cooling.method != "liquid":
        return 0.0
    return power_w * cooling.liquid_fraction


def cooling_needed(air_kw: float, liquid_kw: float) -> str:
    """The cooling a rack needs by its density: the lightest type whose default capacity takes its
    air-side heat (air, then rear-door); beyond that, or with liquid-cooled parts, direct liquid."""
    if liquid_kw > 0:
        return "liquid"
    for kind in ("air", "rear-door"):
        if air_kw <= COOLING_CAPACITY_KW[kind] + 1e-9:
            return kind
    return "liquid"


def cooling_against_site(air_kw: float, liquid_kw: float, site_cooling: str, capacity_kw: float) -> str:
    """What a rack needs against what the site gives: the heat its cooling takes of its capacity, and where the
    rack needs more (or could do with less) than the site's type."""
    needed = cooling_needed(air_kw, liquid_kw)
    heat = air_kw + liquid_kw if site_cooling == "liquid" else air_kw
    text = f"{site_cooling}: {heat:.1f} of {capacity_kw:g} kW"
    if liquid_kw > 0 and site_cooling != "liquid":
        return f"{text}; needs a coolant loop for {liquid_kw:.1f} kW"
    if heat > capacity_kw + 1e-9:
        return f"{text}; over by {heat - capacity_kw:.1f} kW (needs {needed})"
    if needed != site_cooling:
        return f"{text} ({needed} alone would do)"
    return text
