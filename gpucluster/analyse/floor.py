"""The floor a design stands on: every rack and every in-row coolant distribution unit (CDU) at its floor position,
and from them the one floor figure every view quotes (the decision summary, compare, the floor plan's drawing).

* A rack's footprint is its catalog part's width and depth (600 x 1,200 mm where the catalog gives none).
* The in-row CDUs of a group (analyse/budget.py, N+1 per scalable unit) stand at the end of the row that holds
  the group's last rack, each a rack's footprint (the CDUs' own footprints are not in the catalog).
* The floor with aisles is the rectangle the racks and CDUs span: the rows and the aisles between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpucluster.analyse.budget import CduGroup, kept_power_budget
from gpucluster.plan.memo import per_plan
from gpucluster.plan.model import AnalysedPlan, Plan

DEFAULT_RACK_MM = (600.0, 1200.0)  # width, depth of a rack part without dimensions


@dataclass(frozen=True, slots=True)
class CduSpot:
    """One in-row CDU on the floor (millimetres from the first rack row's origin)."""

    name: str  # CDU1, CDU2 ... in group order
    group: CduGroup
    x_mm: float
    y_mm: float
    width_mm: float
    depth_mm: float


@dataclass(frozen=True, slots=True)
class Floor:
    """The racks' sizes, the CDUs' positions and the span they make together."""

    rack_sizes_mm: dict[str, tuple[float, float]]  # rack -> (width, depth)
    cdus: tuple[CduSpot, ...]
    width_mm: float  # across the rows (along a row), racks and CDUs
    depth_mm: float  # along the depth, rows and the aisles between them

    @property
    def area_m2(self) -> float:
        """The floor with aisles: the rectangle the racks and CDUs span."""
        return self.width_mm * self.depth_mm / 1e6

    @property
    def footprint_m2(self) -> float:
        """The floor under the racks and CDUs themselves."""
        racks = sum(w * d for w, d in self.rack_sizes_mm.values())
        return (racks + sum(c.width_mm * c.depth_mm for c in self.cdus)) / 1e6


@per_plan
def kept_floor(plan: AnalysedPlan) -> Floor:
    """floor_space(plan) with the CDUs of the plan's kept budget, made once per plan for the views that read it;
    the budget is read only where liquid-cooled rack systems need CDUs."""
    liquid = any(rack.rack_system for rack in plan.racks.values())
    return floor_space(plan, kept_power_budget(plan).cdus if liquid else ())


def floor_space(plan: Plan, cdus: Sequence[CduGroup]) -> Floor:
    """Every rack's size, the budget's CDU groups placed at their rows' ends, and the span of both."""
    sizes = rack_sizes_mm(plan)
    spots = _cdu_spots(plan, cdus, sizes)
    boxes = [(r.x_mm, r.y_mm, *sizes[r.name]) for r in plan.racks.values()]
    boxes += [(c.x_mm, c.y_mm, c.width_mm, c.depth_mm) for c in spots]
    width = max((x + w for x, _y, w, _d in boxes), default=0.0) - min((x for x, *_ in boxes), default=0.0)
    depth = max((y + d for _x, y, _w, d in boxes), default=0.0) - min((y for _x, y, *_ in boxes), default=0.0)
    return Floor(rack_sizes_mm=sizes, cdus=tuple(spots), width_mm=width, depth_mm=depth)


def rack_sizes_mm(plan: Plan) -> dict[str, tuple[float, float]]:
    """Rack -> (width, depth) of its catalog part, in millimetres (DEFAULT_RACK_MM where the catalog gives none)."""
    sizes = {}
    for rack in plan.racks.values():
        part = plan.catalog_parts[rack.part]
        sizes[rack.name] = (
            float(getattr(part, "width_mm", None) or DEFAULT_RACK_MM[0]),
            float(getattr(part, "depth_mm", None) or DEFAULT_RACK_MM[1]),
        )
    return sizes


def _cdu_spots(plan: Plan, cdus: Sequence[CduGroup], sizes: dict[str, tuple[float, float]]) -> list[CduSpot]:
    """Each group's units one after another at the end of the row holding the group's last liquid-cooled rack."""
    racks = [r for r in plan.racks.values() if r.rack_system]
    if not racks:
        return []
    row_end: dict[float, float] = {}
    for rack in plan.racks.values():
        row_end[rack.y_mm] = max(row_end.get(rack.y_mm, rack.x_mm), rack.x_mm + sizes[rack.name][0])
    spots: list[CduSpot] = []
    for group in cdus:
        members = [r for r in racks if f"SU {r.su}" == group.name] or racks
        last = max(members, key=lambda r: (r.y_mm, r.x_mm))
        width, depth = sizes[last.name]
        for _unit in range(group.units):
            x_mm = row_end[last.y_mm]
            row_end[last.y_mm] = x_mm + width
            spots.append(CduSpot(f"CDU{len(spots) + 1}", group, x_mm, last.y_mm, width, depth))
    return spots
