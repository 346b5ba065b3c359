"""The growth reserve as built: what the spines, the central racks, the floor and the power are planned for
beyond the scalable units the design fills now (``compute_fabric.final_scalable_units``)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from gpucluster.catalog.ports import device_ports
from gpucluster.plan.model import Plan

RESERVED_NETWORKS = ("compute", "storage", "inband")  # the networks a growth reserve sizes


@dataclass(frozen=True)
class GrowthReserve:
    """The reserve of a plan: units built and planned for, free ports above the leaves, floor and power."""

    scalable_units: int
    final_scalable_units: int
    storage_final_scalable_units: int
    upper_ports: dict[str, tuple[int, int]]  # network -> (ports in use, ports) on its switches above the leaves
    reserved_racks: int  # floor positions kept free for the units to come (as wide as the widest unit)
    it_power_max_kw: float  # now
    it_power_final_kw: float  # estimated: now + each unit to come drawing what the fullest unit's racks draw


def growth_reserve(plan: Plan) -> GrowthReserve | None:
    """The plan's growth reserve, or None when it is planned for the units it fills."""
    built = plan.settings.scalable_units
    final = plan.settings.final_scalable_units or built
    storage_final = plan.settings.storage_final_scalable_units or built
    if max(final, storage_final) <= built:
        return None
    upper = {d.name: d.network for d in plan.devices.values() if d.role == "switch" and (d.tier or 0) >= 2}
    used: Counter[str] = Counter()
    for link in plan.links:  # the fabric ports of its own network (not its management port)
        if upper.get(link.b_device) == link.network:
            used[link.b_device] += 1
        if upper.get(link.a_device) == link.network:
            used[link.a_device] += 1
    ports: dict[str, tuple[int, int]] = {}
    for network in RESERVED_NETWORKS:
        switches = [d for d in plan.switches(network) if d.name in upper]
        total = sum(len(device_ports(plan.part(d.name)).get("fabric", ())) for d in switches)
        ports[network] = (sum(used[d.name] for d in switches), total)
    racks_per_unit = Counter(r.su for r in plan.racks.values() if r.su is not None)
    power_per_unit: defaultdict[int, float] = defaultdict(float)
    for rack in plan.racks.values():
        if rack.su is not None:
            power_per_unit[rack.su] += rack.power_max_w
    fullest = max(power_per_unit.values(), default=0.0)
    now_kw = sum(r.power_max_w for r in plan.racks.values()) / 1000
    return GrowthReserve(
        scalable_units=built,
        final_scalable_units=final,
        storage_final_scalable_units=storage_final,
        upper_ports=ports,
        reserved_racks=max(racks_per_unit.values(), default=0) * max(0, final - built),
        it_power_max_kw=now_kw,
        it_power_final_kw=now_kw + fullest / 1000 * max(0, final - built),
    )


def reserve_line(reserve: GrowthReserve) -> str:
    """One line for the summary and the report."""
    ports = ", ".join(
        f"{network} {used:,} of {total:,}" for network, (used, total) in reserve.upper_ports.items() if total
    )
    storage = reserve.storage_final_scalable_units
    storage_note = f" (storage network for {storage})" if storage != reserve.final_scalable_units else ""
    return (
        f"growth reserve: planned for {reserve.final_scalable_units} scalable units, {reserve.scalable_units} built"
        f"{storage_note}; ports above the leaves in use: {ports}; {reserve.reserved_racks} floor positions kept free; "
        f"IT power {reserve.it_power_max_kw:,.1f} kW now, about {reserve.it_power_final_kw:,.1f} kW at the final size "
        "(estimated from the fullest unit's racks)"
    )
