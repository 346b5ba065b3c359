"""What each device draws, with the optics and active-cable ends in its cages (the rule every view uses):

* a device's *maximum* is its catalog ``power_max_w`` plus the pluggable optics and active-cable
  ends in its cages, unless the catalog says that maximum already covers them
  (``power_max_includes_optics``: the QM9700's 1.72 kW is "with active cables",
  https://networking-docs.nvidia.com/qm97x0hw/specifications);
* its *typical* draw is the catalog ``power_typical_w`` plus the optics at their typical power
  (NVIDIA's switch typical figures are "with passive cables"), never above the maximum;
* optics are counted once per (device, cage): one twin-port transceiver serves both links of its cage.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from gpucluster.catalog.load import Catalog
from gpucluster.catalog.schema import Cable as CablePart
from gpucluster.catalog.schema import Transceiver
from gpucluster.plan.cables import CAGE_ACCEPTS, cable_ends
from gpucluster.plan.facts import DevicePower as DevicePower
from gpucluster.plan.model import Plan, RackPlan


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

    def fitted(
        cable_part: str, network: str, a_transceiver: str | None, b_transceiver: str | None
    ) -> tuple[CageModule | None, ...]:
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
    kinds: dict[tuple[str, str, str | None, str | None], tuple[CageModule | None, ...]] = {}
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
