"""One floor figure (analyse/floor.py): the decision summary and compare quote the same floor, and the in-row CDUs
the floor plan draws are part of it."""

from __future__ import annotations

import pytest
from conftest import planned

from gpucluster.analyse.bom import bom_for
from gpucluster.analyse.budget import kept_power_budget
from gpucluster.analyse.floor import kept_floor
from gpucluster.artifacts.decision import facility
from gpucluster.artifacts.floor_plan import floor_plan
from gpucluster.growth.compare import Alternative, floor_space
from gpucluster.training import analyse_checkpoints


@pytest.fixture(scope="module")
def gb200() -> Alternative:
    loaded, plan = planned("gb200-nvl72-1su")
    return Alternative(
        str(loaded.path), plan, bom_for(plan, loaded), kept_power_budget(plan), analyse_checkpoints(plan)
    )


def test_the_cdus_stand_in_the_floor_and_widen_the_span_past_the_racks(gb200: Alternative) -> None:
    plan = gb200.plan
    floor = kept_floor(plan)
    [group] = gb200.budget.cdus
    assert len(floor.cdus) == group.units == 2
    racks_end = max(r.x_mm + floor.rack_sizes_mm[r.name][0] for r in plan.racks.values())
    racks_start = min(r.x_mm for r in plan.racks.values())
    cdus_end = max(c.x_mm + c.width_mm for c in floor.cdus)
    assert cdus_end > racks_end  # a CDU past the last rack of the longest row
    assert floor.width_mm == pytest.approx(max(cdus_end, racks_end) - racks_start)
    racks_m2 = sum(w * d for w, d in floor.rack_sizes_mm.values()) / 1e6
    assert floor.footprint_m2 == pytest.approx(racks_m2 + 2 * 0.6 * 1.2)  # each CDU a 600 x 1,200 mm rack's place


def test_the_summary_and_compare_quote_the_same_floor(gb200: Alternative) -> None:
    plan = gb200.plan
    floor = kept_floor(plan)
    [(_what, span, detail)] = [row for row in facility(plan, gb200.budget) if row[0] == "Floor space"]
    assert span == f"{floor.width_mm / 1000:,.1f} m x {floor.depth_mm / 1000:,.1f} m"
    assert f"{floor.area_m2:,.0f} m2 with aisles" in detail and "14 racks and 2 CDUs" in detail
    rows = {row.name: row.values for row in floor_space([gb200])}
    assert rows["Floor with aisles (the rows' span)"] == (pytest.approx(floor.area_m2),)
    assert rows["Rack footprint"] == (pytest.approx(floor.footprint_m2),)


def test_the_floor_plan_draws_the_floor_s_racks_and_cdus(gb200: Alternative) -> None:
    plan = gb200.plan
    floor = kept_floor(plan)
    drawn = floor_plan(plan)
    assert {r.name for r in drawn.racks} == set(plan.racks) | {c.name for c in floor.cdus}
    footprint = sum(r.width * r.depth for r in drawn.racks) / 1e6
    assert footprint == pytest.approx(floor.footprint_m2)


def test_a_design_without_rack_systems_has_no_cdus_and_its_span_is_the_racks() -> None:
    _loaded, plan = planned("lab-4-servers")
    floor = kept_floor(plan)
    assert floor.cdus == ()
    racks = list(plan.racks.values())
    width = max(r.x_mm + floor.rack_sizes_mm[r.name][0] for r in racks) - min(r.x_mm for r in racks)
    depth = max(r.y_mm + floor.rack_sizes_mm[r.name][1] for r in racks) - min(r.y_mm for r in racks)
    assert (floor.width_mm, floor.depth_mm) == (pytest.approx(width), pytest.approx(depth))
