"""Rack-scale NVLink systems (GB200/GB300 NVL72) and the B300 servers: catalog figures pinned to their sources
(rack-scale-facts.md, hardware-facts.md) and the plans built from them."""

from __future__ import annotations

import pytest
from conftest import write_design
from pydantic import ValidationError

from gpucluster import load_design, plan_design
from gpucluster.catalog.load import load_catalog
from gpucluster.catalog.schema import GpuServer, NvlinkSwitchTray, PowerShelf, RackSystem

NVL72 = ("gb200-nvl72", "gb300-nvl72")


@pytest.mark.parametrize("system_id", NVL72)
def test_an_nvl72_rack_holds_72_gpus_on_18_switch_chips_with_1296_backplane_links(system_id):
    catalog = load_catalog()
    system = catalog.get(system_id, RackSystem)
    tray = catalog.get(system.compute_tray, GpuServer)
    switch_tray = catalog.get(system.nvlink_switch_tray, NvlinkSwitchTray)
    gpus = system.compute_trays * tray.gpu.count
    chips = system.nvlink_switch_trays * switch_tray.switch_chips
    assert (system.compute_trays, tray.gpu.count, gpus) == (18, 4, 72)
    assert tray.cpu.sockets == 2 and tray.u_height == 1
    assert (system.nvlink_switch_trays, chips) == (9, 18)
    assert tray.gpu.nvlink_domain_gpus == gpus
    assert system.nvlink_links_per_gpu == chips  # one link from every GPU to every chip
    assert gpus * system.nvlink_links_per_gpu == 1296
    assert gpus * system.nvlink_links_per_gpu <= chips * switch_tray.nvlink_ports_per_chip


@pytest.mark.parametrize("system_id", NVL72)
def test_eight_33_kw_shelves_give_132_kw_with_n_plus_n(system_id):
    catalog = load_catalog()
    system = catalog.get(system_id, RackSystem)
    shelf = catalog.get(system.power_shelf, PowerShelf)
    assert (system.power_shelves, shelf.psus.count, shelf.psus.rating_w, shelf.rating_w) == (8, 6, 5500, 33000)
    assert system.power_shelf_redundancy == "N+N"
    assert system.power_shelves * shelf.rating_w / 2 == 132_000


@pytest.mark.parametrize("system_id", NVL72)
def test_an_nvl72_rack_s_parts_add_up_to_its_published_power(system_id):
    catalog = load_catalog()
    system = catalog.get(system_id, RackSystem)
    parts_w = (
        system.compute_trays * catalog.parts[system.compute_tray].power_max_w
        + system.nvlink_switch_trays * catalog.parts[system.nvlink_switch_tray].power_max_w
        + system.management_switches * catalog.parts[system.management_switch].power_max_w
        + system.power_shelves * catalog.parts[system.power_shelf].power_max_w
    )
    assert parts_w == pytest.approx(system.published_power_w, abs=5)


def test_gb200_and_gb300_trays_carry_their_published_nics():
    catalog = load_catalog()
    gb200 = catalog.get("gb200-compute-tray", GpuServer)
    compute = [g for g in gb200.ports if g.role == "compute"]
    assert sum(g.port_count for g in compute) == 4
    assert {(g.cage_type, g.speed_gbps, g.technology) for g in compute} == {("osfp", 400, "infiniband-ndr")}
    names = [name for g in compute for name, _cage in g.port_names()]
    assert names == ["Left Bay OSFP P3", "Left Bay OSFP P4", "Right Bay OSFP P3", "Right Bay OSFP P4"]
    assert [d for g in compute for d in g.os_devices or []] == ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5"]
    assert sorted(g.speed_gbps for g in gb200.ports if g.role in ("storage", "inband")) == [200, 200, 400, 400]
    gb300 = catalog.get("gb300-compute-tray", GpuServer)
    assert [(g.port_count, g.speed_gbps, g.technology) for g in gb300.port_groups("compute")] == [
        (4, 800, "infiniband-xdr")
    ]


def test_dgx_b300_is_a_10u_server_with_eight_800g_connectx_8():
    catalog = load_catalog()
    dgx = catalog.get("dgx-b300", GpuServer)
    assert (dgx.u_height, dgx.power_max_w, dgx.gpu.count) == (10, 19700, 8)
    assert [(g.port_count, g.speed_gbps) for g in dgx.port_groups("compute")] == [(8, 800)]
    assert dgx.psus is not None and (dgx.psus.count, dgx.psus.rating_w) == (12, 3200)
    assert catalog.get("hgx-b300-oem", GpuServer).u_height == 9


def test_a_rack_system_whose_layout_disagrees_with_its_counts_is_refused():
    catalog = load_catalog()
    data = catalog.get("gb200-nvl72", RackSystem).model_dump()
    data["compute_trays"] = 17
    with pytest.raises(ValidationError, match="layout places 18 compute-trays, the rack has 17"):
        RackSystem.model_validate(data)


# DGX B300 XDR RA Table 3 (hardware-facts.md 1.2), built with the real DGX B300 (no UFM slot, as the table
# counts 72 nodes per SU): SU -> (nodes, leaf, spine, node-leaf links, leaf-spine links).
B300_XDR_TABLE_3 = {1: (72, 8, 4, 576, 576), 2: (144, 16, 8, 1152, 1152), 4: (288, 32, 18, 2304, 2304)}


@pytest.mark.parametrize("scalable_units", sorted(B300_XDR_TABLE_3))
def test_a_dgx_b300_xdr_design_matches_the_b300_xdr_ra_table_3(tmp_path, scalable_units):
    nodes, leaf, spine, node_leaf, leaf_spine = B300_XDR_TABLE_3[scalable_units]
    path = write_design(
        tmp_path,
        f"name: ra\nsite: {{rack_power_budget_kw: 85, cooling_capacity_kw: 85}}\n"
        f"compute: {{server: dgx-b300, servers: {nodes}, spare_servers: 0}}\n"
        "compute_fabric: {switch: q3400-ra, scalable_unit_servers: 72, fabric_managers: 0}\n",
    )
    plan = plan_design(load_design(path))
    assert plan.totals["scalable_units"] == scalable_units
    assert plan.totals["gpus"] == nodes * 8
    assert plan.totals["switches"]["compute"] == {"leaf": leaf, "spine": spine}
    assert plan.totals["links"]["compute"] == {"host-leaf": node_leaf, "leaf-spine": leaf_spine}
    assert plan.settings["servers_per_rack"] == 4  # the RA's four DGX B300 per rack
