"""The compute fabric of a rack-scale SuperPOD built rail-aligned per rack, as the GB200 SuperPOD RA builds it.

RA-11338-001 (network fabrics) gives each scalable unit four spine-leaf groups, one per compute rail, each of one
leaf per compute rack (8) and 6 spines, and a core tier joining the groups; its Table 3 (relayed, see
docs/sources/rack-scale.md) counts 2 SU 64 leaves / 48 spines / 18 cores up to 16 SU 512 / 384 / 144. The figures
follow from the parts: a leaf takes one rack's trays on its rail (18 ports) and as many uplinks (non-blocking); a
group's spines are the fewest that divide a leaf's uplinks evenly and, as many ports up as down, fit their radix
(8 x 18 / 6 = 24 down, 24 up on a 64-port QM9700); the cores are as many as the spines' uplinks fill, sized for
the final size, each spine's uplinks going round them in turn (_add_cores).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gpucluster.catalog.ports import PortPool, device_ports
from gpucluster.catalog.schema import Switch
from gpucluster.plan.fabric import ClosResult, HostPort, LeafGroup, _add_switch, _attach_hosts, _uplink, port_slots
from gpucluster.plan.model import PlanDraft, Tier


@dataclass(frozen=True, slots=True)
class RackAlignedShape:
    """Per scalable unit: rails, racks (one leaf each per rail), hosts and uplinks per leaf, spines per rail."""

    rails: int
    racks: int
    leaf_hosts: int  # a rack's trays on one rail
    leaf_uplinks: int
    spines_per_group: int
    spine_uplinks: int  # as many up as down: non-blocking above the leaves
    radix: int

    def cores(self, units: int) -> int:
        """The cores that the spines of `units` scalable units fill."""
        return math.ceil(units * self.rails * self.spines_per_group * self.spine_uplinks / self.radix)

    def counts(self, units: int) -> tuple[int, int, int]:
        """(leaves, spines, cores) for `units` scalable units."""
        return units * self.rails * self.racks, units * self.rails * self.spines_per_group, self.cores(units)


def rack_aligned_shape(switch: Switch, trays_per_rack: int, racks_per_unit: int, rails: int) -> RackAlignedShape | None:
    """The RA's per-rack layout for this switch, or None where a leaf takes two racks' rail or more (then the
    generic rail-optimized tree packs whole racks per leaf, as the B300 XDR RA's Q3400 leaves of 72 ports do)."""
    pool = device_ports(switch)["fabric"]
    radix = len(pool)
    non_blocking_hosts = radix // 2
    if not trays_per_rack <= non_blocking_hosts < 2 * trays_per_rack:
        return None
    uplinks = trays_per_rack
    for spines in range(1, uplinks + 1):
        down = racks_per_unit * uplinks // spines
        if uplinks % spines == 0 and 2 * down <= radix:
            return RackAlignedShape(rails, racks_per_unit, trays_per_rack, uplinks, spines, down, radix)
    return None


def build_rack_aligned(
    plan: PlanDraft,
    shape: RackAlignedShape,
    part: Switch,
    rack_groups: dict[int, list[list[HostPort]]],
    managers: Sequence[HostPort],
    final_units: int,
) -> ClosResult:
    """Leaves per (unit, rail, rack), spines per (unit, rail), cores for the final size. `rack_groups`: each unit's
    racks' tray ports; `managers` (the UFM pair's ports) go onto free ports of rack 1's leaves, a split port a rail."""
    pool = device_ports(part)["fabric"]
    result = ClosResult()
    units = sorted(rack_groups)
    spare_ports = _manager_leaf_ports(managers, pool, shape.rails)
    leaf_links = spine_links = 0
    leaf_down_gbps = leaf_up_gbps = spine_up_gbps = 0.0
    spines_by_unit: list[list[str]] = []
    per_spine = shape.leaf_uplinks // shape.spines_per_group  # a leaf's uplinks to each spine of its group
    for unit in units:
        unit_spines: list[str] = []
        for rail in range(1, shape.rails + 1):
            label = f"su{unit:02d}-r{rail}"
            group = LeafGroup(label, [], 1.0, unit, rail)
            spines = [
                _add_switch(plan, f"compute-spine-{label}-{s}", part, "compute", 2, group)
                for s in range(1, shape.spines_per_group + 1)
            ]
            leaves = []
            for rack, trays in enumerate(rack_groups[unit], start=1):
                leaf = _add_switch(plan, f"compute-leaf-{label}-{rack}", part, "compute", 1, group)
                leaves.append(leaf.name)
                hosts = [p for p in trays if p.rail == rail]
                if unit == units[0] and rack == 1:
                    hosts += spare_ports.get(rail, [])
                _attach_hosts(plan, "compute", leaf.name, pool, hosts)
                # the GPU traffic the leaf brings up: a UFM's management ports on a spare leaf port are not
                # bandwidth its uplinks must carry (the leaf stays non-blocking for its trays)
                leaf_down_gbps += sum(min(p.speed_gbps, pool.speed_gbps) for p in hosts if p.purpose == "gpu")
                leaf_links += len(hosts)
                for u in range(shape.leaf_uplinks):
                    port = len(pool) - shape.leaf_uplinks + u
                    spine = spines[u // per_spine]
                    spine_port = (rack - 1) * per_spine + u % per_spine
                    speed = pool.speed_gbps
                    _uplink(plan, "compute", 2, (leaf.name, pool.names[port], pool.cages[port]), spine.name, pool,
                            spine_port, speed)  # fmt: skip
                    spine_links += 1
                    leaf_up_gbps += speed
            result.leaves[label] = leaves
            unit_spines += [s.name for s in spines]
        spines_by_unit.append(unit_spines)
    leaves_total = len(units) * shape.rails * shape.racks
    result.tiers.append(
        Tier("compute", 1, "leaf", part.id, leaves_total, leaf_links, spine_links, leaf_down_gbps, leaf_up_gbps)
    )
    spine_total = sum(map(len, spines_by_unit))
    cores = shape.cores(max(final_units, len(units)))
    core_links = _add_cores(plan, shape, part, pool, spines_by_unit, cores) if cores else 0
    spine_up_gbps = core_links * pool.speed_gbps
    result.tiers.append(
        Tier("compute", 2, "spine", part.id, spine_total, spine_links, core_links, leaf_up_gbps, spine_up_gbps)
    )
    if cores:
        result.tiers.append(Tier("compute", 3, "core", part.id, cores, core_links, 0, spine_up_gbps, 0.0))
    return result


def _manager_leaf_ports(managers: Sequence[HostPort], pool: PortPool, rails: int) -> dict[int, list[HostPort]]:
    """The fabric managers' ports by rail: the two that share a split port together, each pair on the next rail."""
    by_rail: dict[int, list[HostPort]] = {}
    index = 0
    i = 0
    while i < len(managers):
        pair = 2 if port_slots(managers[i : i + 2], pool) == 1 and i + 1 < len(managers) else 1
        by_rail.setdefault(index % rails + 1, []).extend(managers[i : i + pair])
        index += 1
        i += pair
    return by_rail


def _add_cores(
    plan: PlanDraft, shape: RackAlignedShape, part: Switch, pool: PortPool, spines_by_unit: list[list[str]], cores: int
) -> int:
    """Cores joining the spine-leaf groups: the k-th uplink of the fabric's i-th spine (numbered in unit, rail and
    spine order, units to come included) goes to core (i * uplinks + k) mod cores, on that core's next port."""
    width = max(2, len(str(cores)))
    names = [_add_switch(plan, f"compute-core-{c + 1:0{width}d}", part, "compute", 3, None).name for c in range(cores)]
    per_unit = shape.rails * shape.spines_per_group
    links = 0
    for unit_index, spines in enumerate(spines_by_unit):
        for s, spine in enumerate(spines):
            i = unit_index * per_unit + s
            for k in range(shape.spine_uplinks):
                number = i * shape.spine_uplinks + k
                core, port = number % cores, number // cores
                lower = len(pool) - shape.spine_uplinks + k
                _uplink(plan, "compute", 3, (spine, pool.names[lower], pool.cages[lower]), names[core], pool, port,
                        pool.speed_gbps)  # fmt: skip
                links += 1
    return links
