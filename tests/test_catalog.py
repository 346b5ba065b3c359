"""The parts catalog: every fact cites its source, and a user's catalog file adds or overrides parts."""

from __future__ import annotations

import pytest
from conftest import write_design

from gpucluster import DesignError, load_design, plan_design
from gpucluster.catalog.load import load_catalog
from gpucluster.catalog.schema import GpuServer, Switch, uncited_fields


def test_every_packaged_part_cites_a_source_for_every_fact():
    catalog = load_catalog()
    assert len(catalog.parts) > 50
    assert all(not uncited_fields(part) for part in catalog.parts.values())


def test_required_parts_are_in_the_catalog():
    catalog = load_catalog()
    for server in ("dgx-h100", "dgx-h200", "dgx-b200", "hgx-h100-oem", "hgx-h200-oem", "hgx-b200-oem"):
        assert isinstance(catalog.parts[server], GpuServer)
    for switch in ("qm9700", "qm9790", "q3400-ra", "sn5600", "sn4600c", "sn2201"):
        assert isinstance(catalog.parts[switch], Switch)
    assert catalog.get("qm9700", Switch).radix == 64


def test_a_citation_resolves_to_the_source_text():
    catalog = load_catalog()
    assert "http" in catalog.citation("dgx-h100", "power_max_w")


def test_a_user_catalog_file_adds_a_part_the_design_can_use(tmp_path):
    (tmp_path / "mine.yaml").write_text(
        """
sources: {vendor-sheet: "https://example.com/rack-sheet.pdf"}
parts:
  - kind: rack
    id: my-52u-rack
    vendor: Example
    model: R52
    u_height: 52
    width_mm: 600
    depth_mm: 1200
    sources: {u_height: vendor-sheet, width_mm: vendor-sheet, depth_mm: vendor-sheet}
""",
        encoding="utf-8",
    )
    path = write_design(tmp_path, "name: x\ncatalog: [mine.yaml]\nsite: {rack: my-52u-rack}\ncompute: {servers: 4}\n")
    plan = plan_design(load_design(path))
    assert {rack.height_u for rack in plan.racks.values()} == {52}


def test_a_user_catalog_value_without_a_source_is_refused_with_its_location(tmp_path):
    (tmp_path / "mine.yaml").write_text(
        "parts:\n  - {kind: rack, id: r, vendor: v, model: m, u_height: 42, width_mm: 600, depth_mm: 1200}\n",
        encoding="utf-8",
    )
    path = write_design(tmp_path, "name: x\ncatalog: [mine.yaml]\ncompute: {servers: 4}\n")
    with pytest.raises(DesignError) as caught:
        load_design(path)
    assert any("mine.yaml:2:46: parts.0.u_height: no source cited" in str(p) for p in caught.value.problems)
