"""The in-row CDUs' electrical input: the catalog's published figure (CoolIT CHx2000, 12.24 kW) counted in the
facility power beside the IT load, and a unit whose draw is not published (HPE, Supermicro) counted as nothing and
named so in the views."""

from __future__ import annotations

import pytest
from conftest import write_design

from gpucluster import load_design, plan_design
from gpucluster.analyse.budget import power_budget
from gpucluster.artifacts.floor_plan import floor_plan
from gpucluster.artifacts.power import write_part
from gpucluster.catalog.load import load_catalog
from gpucluster.catalog.schema import Cdu

CHX2000_W = 12_240  # CoolIT CHx2000 product page, "12.24 kW" electrical consumption (relayed: catalog source)


def _gb200(tmp_path, cdu: str):
    text = (
        f"name: nvl\nsite: {{cooling: liquid, cooling_capacity_kw: 140, cdu: {cdu}}}\n"
        "compute: {server: gb200-nvl72, gpus: 576}\n"
        "storage_network: {technology: ethernet, switch: sn5600}\nparallel_filesystem: {kind: vast}\n"
    )
    loaded = load_design(write_design(tmp_path, text))
    return loaded, plan_design(loaded)


def test_the_catalog_gives_the_chx2000_s_published_draw_and_none_for_the_unpublished() -> None:
    catalog = load_catalog()
    parts = catalog.parts
    assert parts["coolit-chx2000"].power_w == CHX2000_W
    units = [p for p in parts.values() if isinstance(p, Cdu)]
    assert {p.id for p in units if p.power_w is None} == {"hpe-inrow-cdu-1300kw", "supermicro-inrow-cdu-1800kw"}
    assert parts["coolit-chx2000"].sources["power_w"] == "CHX2000_POWER_R"
    assert '"12.24 kW"' in catalog.source_text["rack_scale.yaml:CHX2000_POWER_R"]


def test_a_published_cdu_draw_adds_to_the_facility_power_beside_the_it_load(tmp_path) -> None:
    loaded, plan = _gb200(tmp_path, "coolit-chx2000")
    budget = power_budget(plan)
    [group] = budget.cdus
    assert group.units == 2 and group.power_w == 2 * CHX2000_W  # N+1: the spare runs too
    racks_max = sum(r.load.max_w for r in budget.racks)
    assert budget.total.max_w == pytest.approx(racks_max)  # the IT load stays the racks'
    assert budget.facility_max_w == pytest.approx((racks_max + 2 * CHX2000_W) * budget.pue)
    assert "CDU1: coolant distribution unit coolit-chx2000 for SU 1 (1+1), 12.24 kW" in floor_plan(plan).svg()
    write_part(plan, loaded, tmp_path, "chart")
    text = (tmp_path / "power-cooling.md").read_text()
    assert "| In-row CDUs beside it, kW | 24.5 | 24.5 |" in text
    assert "| coolit-chx2000 |" in text and "| 24.5 |" in text


def test_an_unpublished_cdu_draw_adds_nothing_and_the_views_say_so(tmp_path) -> None:
    loaded, plan = _gb200(tmp_path, "hpe-inrow-cdu-1300kw")
    budget = power_budget(plan)
    [group] = budget.cdus
    assert group.power_w is None and budget.cdus_w == 0
    assert budget.facility_max_w == pytest.approx(budget.total.max_w * budget.pue)
    assert "for SU 1 (1+1), draw not published" in floor_plan(plan).svg()
    write_part(plan, loaded, tmp_path, "chart")
    text = (tmp_path / "power-cooling.md").read_text()
    assert "| In-row CDUs beside it, kW | not published, not counted | not published, not counted |" in text
    assert "| 1,300.0 | not published, not counted |" in text  # the SU's CDU row
