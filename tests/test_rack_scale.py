"""Rack-scale NVLink systems (GB200/GB300 NVL72) and the B300 servers: catalog figures pinned to their sources
(the citations beside them in the catalog) and the plans built from them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import write_design
from pydantic import ValidationError

from gpucluster import load_design, plan_design
from gpucluster.catalog.load import load_catalog
from gpucluster.catalog.schema import GpuServer, NvlinkSwitchTray, PowerShelf, RackSystem
from gpucluster.plan.queries import links_on

NVL72 = ("gb200-nvl72", "gb300-nvl72")
# NVIDIA/k8s-dra-driver-gpu v25.12.0 CRDs, copied from the release (first line of each file names the commit)
UPSTREAM = Path(__file__).resolve().parent / "upstream"
DESIGNS = Path(__file__).resolve().parent.parent / "designs"


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
    # the GB200 RA's BlueField-3 ports: 4 x 200GbE per tray on its storage and in-band fabric (relayed, GB200_RA_NS)
    assert sorted(g.speed_gbps for g in gb200.ports if g.role in ("storage", "inband")) == [200, 200, 200, 200]
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


# DGX B300 XDR RA Table 3, built with the real DGX B300 (no UFM slot, as the table
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
    assert plan.totals.scalable_units == scalable_units
    assert plan.totals.gpus == nodes * 8
    assert plan.totals.switches["compute"] == {"leaf": leaf, "spine": spine}
    assert plan.totals.links["compute"] == {"host-leaf": node_leaf, "leaf-spine": leaf_spine}
    assert plan.settings.servers_per_rack == 4  # the RA's four DGX B300 per rack


def test_the_b300_xdr_example_lists_the_ufm_s_server_slot_against_table_3_s_72_nodes():
    """Issue 31 item 7: Table 3's SU has no free port for the UFM pair (8 x 72 hosts + 72 uplinks, 4 x 144 spine
    ports), so its slot in SU 1 is a deviation the report names, with the alternative."""
    from conftest import planned

    from gpucluster.analyse.deviations import deviations

    _loaded, plan = planned("b300-xdr-1su")
    (found,) = [d for d in deviations(plan) if d.subject == "UFM placement (XDR)"]
    assert "72 nodes per SU" in found.reference and "SU 1 holds 71 servers" in found.plan
    assert "own-leaf" in found.note
    assert plan.totals.switches["compute"] == {"leaf": 8, "spine": 4}


@pytest.mark.parametrize(
    ("design", "tray_ports", "leaf_ratio"),
    [("gb200-nvl72-1su", [200] * 4, 5 / 3), ("gb300-nvl72-4su", [400] * 2, 4 / 3)],
)
def test_storage_and_in_band_share_one_ethernet_fabric_as_the_gb200_ra_builds_it(design, tray_ports, leaf_ratio):
    """Issue 31 item 2: one "Storage and In-band Ethernet Fabric" (GB200 RA) carries every tray's BlueField-3 ports
    (GB200 4 x 200GbE at 5:3, relayed; GB300 two 400G ports, the ERA's converged north-south) and the control
    plane's: no in-band network of its own."""
    from conftest import planned

    _loaded, plan = planned(design)
    assert plan.switches("inband") == []
    trays = {d.name for d in plan.gpu_nodes()}
    by_tray: dict[str, list[float]] = {}
    down: dict[str, float] = {}
    up: dict[str, float] = {}
    for k in links_on(plan, "storage"):
        if k.tier == 0:
            down[k.b_device] = down.get(k.b_device, 0) + k.speed_gbps
            if k.a_device in trays:
                by_tray.setdefault(k.a_device, []).append(k.speed_gbps)
        elif k.tier == 1:
            up[k.a_device] = up.get(k.a_device, 0) + k.speed_gbps
    assert set(by_tray) == trays and all(sorted(v) == tray_ports for v in by_tray.values())
    hosts = {k.a_device for k in links_on(plan, "storage") if k.tier == 0}
    assert {d.name for d in plan.devices_with("management-server")} <= hosts
    tray_leaves = {k.b_device for k in links_on(plan, "storage") if k.tier == 0 and k.a_device in trays}
    assert all(down[leaf] / up[leaf] == pytest.approx(leaf_ratio, rel=0.03) for leaf in tray_leaves)


# ----------------------------------------------------------------------------------------------- planning


def _nvl72(tmp_path, extra: str = "", system: str = "gb200-nvl72", gpus: int = 576, site: str = ""):
    text = (
        f"name: nvl\nsite: {{cooling: liquid{site or ', cooling_capacity_kw: 140'}}}\n"
        f"compute: {{server: {system}, gpus: {gpus}}}\n"
        "storage_network: {technology: ethernet, switch: sn5600}\nparallel_filesystem: {kind: vast}\n" + extra
    )
    return write_design(tmp_path, text)


@pytest.fixture(scope="module")
def gb200_1su():
    from conftest import planned

    return planned("gb200-nvl72-1su")


# GB200 SuperPOD RA (RA-11338-001), network fabrics, Table 3 as relayed (the RA's own table was not found in the
# stored copies; searches in docs/sources/rack-scale.md): per SU 4 spine-leaf groups (one per rail) of 8 leaves (one
# per compute rack) and 6 spines, cores above. SU -> (leaf, spine, core). 1 SU is not a row of the table: the plan
# keeps its 9 cores (the per-SU figure of every row) so the four groups are one subnet for the UFM pair.
GB200_RA_TABLE_3 = {2: (64, 48, 18), 4: (128, 96, 36), 8: (256, 192, 72), 16: (512, 384, 144)}
GB200_ONE_SU = (32, 24, 9)


def _port_use(plan, network="compute"):
    """Every switch of a network: (tier, ports in use, ports it has)."""
    from gpucluster.catalog.ports import device_ports

    used: dict[str, int] = {}
    for link in links_on(plan, network):
        used[link.a_device] = used.get(link.a_device, 0) + 1
        used[link.b_device] = used.get(link.b_device, 0) + 1
    return [
        (switch.tier, used.get(switch.name, 0), len(device_ports(plan.part(switch.name))["fabric"]))
        for switch in plan.switches(network)
    ]


def _assert_rack_aligned(plan, scalable_units):
    """Every leaf serves one rail of one rack (18 trays), non-blocking; 8 leaves and 6 spines per rail group; the
    spines and cores use 48 and 64 of their 64 ports; every spine reaches every core when there is one tier above."""
    hosts: dict[str, list] = {}
    ups: dict[str, list] = {}
    for k in links_on(plan, "compute"):
        if k.tier == 0:
            hosts.setdefault(k.b_device, []).append(k)
        else:
            ups.setdefault(k.a_device, []).append(k)
    groups: dict[tuple, list] = {}
    for leaf in plan.switches("compute", 1):
        trays = [k for k in hosts[leaf.name] if k.purpose == "gpu"]
        assert len(trays) == 18
        assert {k.rail for k in trays} == {leaf.rail}
        assert len({plan.devices[k.a_device].nvlink_domain for k in trays}) == 1
        assert sum(k.speed_gbps for k in trays) <= sum(k.speed_gbps for k in ups[leaf.name])
        groups.setdefault((leaf.su, leaf.rail), []).append(leaf.name)
        assert {plan.devices[k.b_device].su for k in ups[leaf.name]} == {leaf.su}
        assert {plan.devices[k.b_device].rail for k in ups[leaf.name]} == {leaf.rail}
        assert len({k.b_device for k in ups[leaf.name]}) == 6
    assert len(groups) == 4 * scalable_units and all(len(v) == 8 for v in groups.values())
    for tier, used, ports in _port_use(plan):
        assert used == {2: 48, 3: 64}.get(tier, used) and used <= ports, (tier, used, ports)


@pytest.mark.parametrize("scalable_units", sorted(GB200_RA_TABLE_3))
def test_a_gb200_superpod_fabric_has_the_ra_s_table_3_counts(tmp_path, scalable_units):
    leaf, spine, core = GB200_RA_TABLE_3[scalable_units]
    plan = plan_design(load_design(_nvl72(tmp_path, gpus=576 * scalable_units)))
    assert plan.totals.scalable_units == scalable_units
    assert plan.totals.switches["compute"] == {"leaf": leaf, "spine": spine, "core": core}
    trays = 144 * scalable_units * 4
    ufm = 4  # the UFM pair's four NDR200 ports
    assert plan.totals.links["compute"] == {"host-leaf": trays + ufm, "leaf-spine": trays, "spine-core": trays}
    _assert_rack_aligned(plan, scalable_units)


def test_a_one_su_gb200_fabric_is_rail_aligned_per_rack_with_a_core_joining_its_groups(gb200_1su):
    _loaded, plan = gb200_1su
    assert plan.totals.switches["compute"] == dict(zip(("leaf", "spine", "core"), GB200_ONE_SU, strict=True))
    _assert_rack_aligned(plan, 1)
    from gpucluster.analyse.deviations import deviations

    non_blocking = [f for f in plan.findings if f.rule.endswith("compute-fabric-non-blocking")]
    assert [f.severity for f in non_blocking] == ["ok"]  # the UFM's ports on spare leaf ports are not GPU traffic
    (found,) = [d for d in deviations(plan) if d.subject == "Compute fabric (1 SU)"]
    assert "32 leaves, 24 spines, 9 cores" in found.plan and "assumption" in found.note


def test_the_gb200_fabric_managers_take_free_leaf_ports_of_su_1_not_a_leaf_of_their_own(tmp_path):
    plan = plan_design(load_design(_nvl72(tmp_path)))
    managers = {d.name for d in plan.devices_with("fabric-manager")}
    assert len(managers) == 2
    leaves = [k.b_device for k in links_on(plan, "compute") if k.a_device in managers]
    assert len(set(leaves)) == 2 and all(plan.devices[n].su == 1 and plan.devices[n].rail for n in leaves)


# GB300 NVL72 on Quantum-X800 Q3400-RA: an SU's 576 XDR tray ports are the B300 XDR RA SU's 576 DGX B300 ports, so
# without the UFM slot (the table counts nodes only) the fabric is that RA's Table 3 (1, 2, 4 SU) and at 16 SU
# every leaf reaches each of 72 spines once. SU -> (leaf, spine, host-leaf links, leaf-spine links).
GB300_XDR_FABRIC = {1: (8, 4, 576, 576), 2: (16, 8, 1152, 1152), 4: (32, 18, 2304, 2304), 16: (128, 72, 9216, 9216)}


@pytest.mark.parametrize("scalable_units", sorted(GB300_XDR_FABRIC))
def test_a_gb300_xdr_fabric_has_the_b300_xdr_ra_s_counts_per_576_ports(tmp_path, scalable_units):
    leaf, spine, host_leaf, leaf_spine = GB300_XDR_FABRIC[scalable_units]
    extra = "compute_fabric: {technology: infiniband-xdr, switch: q3400-ra, fabric_managers: 0}\n"
    path = _nvl72(tmp_path, extra, system="gb300-nvl72", gpus=576 * scalable_units, site=", cooling_capacity_kw: 150")
    plan = plan_design(load_design(path))
    assert plan.totals.switches["compute"] == {"leaf": leaf, "spine": spine}
    assert plan.totals.links["compute"] == {"host-leaf": host_leaf, "leaf-spine": leaf_spine}
    assert all(used > ports / 2 for _tier, used, ports in _port_use(plan))


def test_each_nvl72_rack_is_one_whole_nvlink_domain_with_nothing_else_in_it(gb200_1su):
    _loaded, plan = gb200_1su
    systems = [rack for rack in plan.racks.values() if rack.rack_system]
    assert len(systems) == 8 and all(rack.part == "nvidia-mgx-rack" for rack in systems)
    for rack in systems:
        devices = [plan.devices[n] for n in rack.devices]
        roles = sorted({d.role for d in devices})
        assert roles == ["compute-tray", "nvlink-switch-tray", "power-shelf", "switch"]
        trays = [d for d in devices if d.role == "compute-tray"]
        assert len(trays) == 18 and {d.nvlink_domain for d in trays} == {rack.nvlink_domain}
        assert sum(d.role == "nvlink-switch-tray" for d in devices) == 9
        assert sum(d.role == "power-shelf" for d in devices) == 8
        assert [d.part for d in devices if d.role == "switch"] == ["sn2201", "sn2201"]  # the in-rack OOB pair
        assert not rack.pdus  # power shelves on the busbar instead
        units = sorted(u for d in devices for u in range(d.u_position, d.u_position + int(d.u_height)))
        assert units == list(range(1, 38))  # 37 x 1U, no gap, no overlap
    trays_by_domain = {}
    for device in plan.gpu_nodes():
        trays_by_domain.setdefault(device.nvlink_domain, set()).add(device.rack)
    assert all(len(racks) == 1 for racks in trays_by_domain.values())  # a domain never spans racks


def test_compute_trays_have_their_own_role_and_every_view_counts_them_as_gpu_nodes(gb200_1su):
    import csv
    import io

    import hostlist

    from gpucluster.analyse.bom import build_bom
    from gpucluster.analyse.burn_in import burn_in_facts
    from gpucluster.artifacts.monitoring.targets import prometheus_config, scrape_targets, server_leaves
    from gpucluster.artifacts.netbox import netbox_files
    from gpucluster.artifacts.slurm import slurm_files
    from gpucluster.plan.registry import ROLES, elevation_fill, is_gpu_node

    _loaded, plan = gb200_1su
    trays = sorted(d.name for d in plan.devices.values() if d.role == "compute-tray")
    assert len(trays) == 144 and not plan.devices_with("gpu-server")
    assert is_gpu_node("compute-tray") and is_gpu_node("gpu-server") and not is_gpu_node("nvlink-switch-tray")
    assert sorted(d.name for d in plan.gpu_nodes()) == trays
    assert plan.totals.servers == 144 and plan.totals.gpus == 576
    # Slurm: every tray a node; Kubernetes: every tray a labelled node
    conf = slurm_files(plan)["slurm.conf"]
    nodes = [
        n
        for line in conf.splitlines()
        if line.startswith("NodeName=")
        for n in hostlist.expand_hostlist(line.split()[0][9:])
    ]
    assert sorted(nodes) == trays
    # BOM: the trays' line is of their role, with their GPUs
    [line] = [b for b in build_bom(plan).lines if b.kind == "compute-tray"]
    assert line.quantity == 144 and line.notes.startswith("576 GPUs")
    # monitoring: every tray a DCGM target labelled with its role, its HCAs relabelled to rails
    config = prometheus_config(plan, scrape_targets(plan, plan.gpu_nodes(), server_leaves(plan)), [])
    dcgm = next(job for job in config["scrape_configs"] if job["job_name"] == "dcgm")
    assert sorted(t["labels"]["node"] for t in dcgm["static_configs"]) == trays
    assert {t["labels"]["role"] for t in dcgm["static_configs"]} == {"compute-tray"}
    node = next(job for job in config["scrape_configs"] if job["job_name"] == "node")
    assert any(r.get("regex", "").startswith("compute-tray;mlx5_") for r in node["metric_relabel_configs"])
    # burn-in covers every tray; NetBox and the elevations take the role's registry entry
    assert burn_in_facts(plan, plan.burn_in)["servers_covered"] == 144
    files = netbox_files(plan)
    roles = [
        row
        for name, text in files.items()
        if name.endswith("02-device-roles.csv")
        for row in csv.reader(io.StringIO(text))
    ]
    assert ["compute-tray", "compute-tray", ROLES["compute-tray"].colour[1:].lower()] in roles
    devices = [row for name, text in files.items() if "05-devices" in name for row in csv.reader(io.StringIO(text))]
    assert sorted(row[0] for row in devices if row[1] == "compute-tray") == trays
    assert elevation_fill("compute-tray") != elevation_fill("gpu-server")


def test_the_bom_lists_each_rack_s_manifolds_tray_quick_disconnects_and_cdu_hoses(gb200_1su):
    from gpucluster.analyse.bom import build_bom

    _loaded, plan = gb200_1su
    lines = {b.item: b for b in build_bom(plan).lines if b.kind == "coolant-part"}
    # 8 racks: a supply and a return manifold and hose each; one UQD pair per compute tray and per switch tray
    assert {item: b.quantity for item, b in lines.items()} == {
        "nvl72-rack-manifold": 16,
        "uqdb04-coupling-pair": 8 * (18 + 9),
        "fd83-cdu-hose": 16,
    }
    assert all(b.section == "racks-power" and "ships with the rack system" in b.notes for b in lines.values())
    assert lines["uqdb04-coupling-pair"].notes == (
        "18 per DGX GB200 NVL72 rack (1 per compute-tray); 9 per DGX GB200 NVL72 rack (1 per nvlink-switch-tray); "
        "ships with the rack system: not ordered separately"
    )


def test_a_rack_system_naming_a_coolant_part_the_catalog_lacks_is_refused_with_its_location(tmp_path):
    import yaml

    from gpucluster import DesignError

    catalog = load_catalog()
    system = catalog.get("gb200-nvl72", RackSystem).model_dump(exclude_none=True)
    system |= {"id": "my-nvl72", "coolant_parts": [{"part": "no-such-manifold", "per": "rack", "count": 2}]}
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump({"parts": [system]}), encoding="utf-8")
    path = write_design(tmp_path, "name: x\ncatalog: [mine.yaml]\ncompute: {server: my-nvl72, gpus: 72}\n")
    with pytest.raises(DesignError) as caught:
        load_design(path)
    assert any(
        "mine.yaml" in str(p)
        and "coolant_parts.0.part" in str(p)
        and "'no-such-manifold' is not a coolant_part" in str(p)
        for p in caught.value.problems
    )


def test_an_nvl72_rack_loads_the_floor_with_its_published_weight_against_the_tia_942_rating(tmp_path, gb200_1su):
    _loaded, plan = gb200_1su
    racks = [r for r in plan.facts["racks"] if "rack_system" in r]
    assert {r["loaded_weight_kg"] for r in racks} == {1360}  # the rack as shipped (STH), trays 32 kg each
    # 1,360 kg on a 600 x 2,400 mm floor cell (rack width x row pitch): 9.3 kPa of TIA-942 Rated-3's 12 kPa
    assert [r["floor_load_kpa"] for r in racks] == [pytest.approx(1360 * 9.80665 / (0.6 * 2.4) / 1000, abs=0.01)] * 8
    assert [f.severity for f in plan.findings if f.rule == "rule:floor-loading"] == ["ok"]
    assert load_catalog().get("gb300-compute-tray", GpuServer).weight_kg == 32
    tight = plan_design(load_design(_nvl72(tmp_path, site=", cooling_capacity_kw: 140, row_pitch_mm: 1500")))
    [error] = [f for f in tight.findings if f.rule == "rule:floor-loading"]
    assert error.severity == "error" and "8 racks" in error.message and "14.8 kPa" in error.message


def test_a_gb200_su_is_8_racks_576_gpus_within_the_ra_s_1_2_mw(gb200_1su):
    from gpucluster.analyse.budget import power_budget

    _loaded, plan = gb200_1su
    assert plan.totals.scalable_units == 1 and plan.totals.gpus == 576
    budget = power_budget(plan)
    su = next(g for g in budget.sus if g.name == "SU 1")
    # 8 racks of ~120 kW (DGX GB rack guide) up to the RA's 1.2 MW TDP per SU (racks and SU networking)
    assert 8 * 120 <= su.load.max_w / 1000 <= 1200


def test_the_in_rack_switches_carry_the_rack_s_out_of_band_ports(gb200_1su):
    _loaded, plan = gb200_1su
    rack = next(r for r in plan.racks.values() if r.rack_system)
    in_rack = {n for n in rack.devices if plan.devices[n].role == "switch"}
    managed = {n for n in rack.devices if n not in in_rack}
    for link in links_on(plan, "oob"):
        if link.a_device in managed:
            assert link.b_device in in_rack
    ports = {(link.a_device, link.a_port) for link in links_on(plan, "oob") if link.a_device in managed}
    assert len(ports) == 18 + 9 * 3 + 8  # tray BMCs, switch-tray BMC + eth0 + eth1, shelf controllers


def test_shelves_replace_pdus_with_one_facility_circuit_each(gb200_1su):
    from gpucluster.analyse.budget import power_budget

    _loaded, plan = gb200_1su
    budget = power_budget(plan)
    rack = next(r for r in budget.racks if plan.racks[r.name].rack_system)
    assert (rack.circuits.feeds, rack.circuits.circuits_per_feed) == (("A", "B"), 4)
    assert rack.circuits.capacity_w == 132_000  # 4 x 33 kW on one feed (N+N)
    shelf_kinds = [k for k in budget.circuit_kinds if "power shelf" in k.kind]
    assert sum(k.circuits for k in shelf_kinds) == 8 * 8


def test_liquid_cooled_racks_get_coolant_flow_and_n_plus_1_cdus(gb200_1su):
    from gpucluster.analyse.budget import power_budget, water_flow_l_per_min

    _loaded, plan = gb200_1su
    budget = power_budget(plan)
    assert len(budget.coolant) == 8
    loop = budget.coolant[0]
    rack = next(r for r in budget.racks if r.name == loop.rack)
    # OCP MGX: 130 L/min for a 120 kW rack, per kW of the rack's power (not of its 85 % liquid share)
    assert loop.flow_l_per_min == pytest.approx(rack.load.max_w / 1000 * 1.083)
    assert 125 <= loop.flow_l_per_min <= 135
    [group] = budget.cdus
    assert group.racks == 8 and group.units == group.needed + 1 and group.capacity_w >= group.liquid_w
    assert water_flow_l_per_min(100_000, 10) == pytest.approx(144.1, abs=0.1)  # 100 kW / (4.18 x 10) / 0.996 x 60


def test_the_gb300_flow_follows_the_published_supply_temperature_table(tmp_path):
    from gpucluster.analyse.budget import power_budget

    path = _nvl72(tmp_path, system="gb300-nvl72", gpus=72, site=", cooling_capacity_kw: 150, coolant_supply_c: 37.5")
    plan = plan_design(load_design(path))
    [loop] = power_budget(plan).coolant
    # one flow: Lenovo LP2357 Table 27 between its 35 and 40 °C points, with the rise it gives for the liquid heat
    assert loop.flow_l_per_min == pytest.approx((89 + 119) / 2) and loop.supply_c == 37.5
    assert loop.rise_k == pytest.approx(loop.liquid_w / 1000 / (4.18 * loop.flow_l_per_min / 60 * 0.996))


def test_an_air_cooled_site_cannot_take_an_nvl72_rack(tmp_path):
    path = write_design(
        tmp_path,
        "name: nvl\nsite: {cooling: air}\ncompute: {server: gb200-nvl72, gpus: 72}\n"
        "storage_network: {technology: ethernet, switch: sn5600}\nparallel_filesystem: {kind: vast}\n",
    )
    plan = plan_design(load_design(path))
    errors = [f for f in plan.findings if f.severity == "error" and f.rule.endswith("rack-system-power-and-cooling")]
    assert errors and "air-cooled site cannot take it" in errors[0].message


def test_a_rack_over_its_shelves_capacity_is_an_error(tmp_path):
    (tmp_path / "small.yaml").write_text(
        """
parts:
  - kind: power_shelf
    id: small-shelf
    vendor: Example
    model: 11 kW shelf
    u_height: 1
    power_max_w: 0
    power_typical_w: 0
    psus: {count: 2, rating_w: 5500, redundancy: N+N, inlet: hard-wired}
    output: DC busbar
    sources: {u_height: "https://example.com", power_max_w: "https://example.com", power_typical_w: "https://example.com",
              psus: "https://example.com", output: "https://example.com"}
""",
        encoding="utf-8",
    )
    system = load_catalog().get("gb200-nvl72", RackSystem).model_dump(exclude_unset=True)
    system.update(id="gb200-small-shelves", power_shelf="small-shelf")
    system["sources"] = {field: "https://example.com/sheet" for field in system["sources"]}
    import yaml

    (tmp_path / "system.yaml").write_text(yaml.safe_dump({"parts": [{"kind": "rack_system", **system}]}))
    path = _nvl72(tmp_path, "catalog: [small.yaml, system.yaml]\n", system="gb200-small-shelves", gpus=72)
    plan = plan_design(load_design(path))
    errors = [f.message for f in plan.findings if f.severity == "error"]
    assert any("more than its 8 x 11 kW shelves deliver with N+N" in m for m in errors), errors


@pytest.mark.parametrize(
    ("compute", "message"),
    [
        ("{server: gb200-nvl72, gpus: 100}", "100 GPUs (25 trays) is not a whole number of DGX GB200 NVL72 racks"),
        ("{server: gb200-nvl72, servers: 36, spare_servers: 2}", "2 spare trays is not a whole number"),
        ("{server: gb200-compute-tray, servers: 18}", "name the rack-scale system (gb200-nvl72)"),
    ],
)
def test_a_rack_scale_system_is_sized_in_whole_racks(tmp_path, compute, message):
    from gpucluster import DesignError

    path = write_design(tmp_path, f"name: nvl\ncompute: {compute}\n")
    with pytest.raises(DesignError) as caught:
        plan_design(load_design(path))
    assert message in str(caught.value)


def test_slurm_gets_one_block_per_nvl72_rack_and_jobs_a_segment_of_16(gb200_1su):
    import hostlist
    import yaml

    from gpucluster.artifacts.nccl import nccl_files
    from gpucluster.artifacts.slurm import slurm_files

    _loaded, plan = gb200_1su
    files = slurm_files(plan)
    [nvlink] = [t for t in yaml.safe_load(files["topology.yaml"]) if "block" in t]
    blocks = nvlink["block"]["blocks"]
    assert len(blocks) == 8 and nvlink["block"]["block_sizes"][0] == 18
    for block in blocks:
        trays = hostlist.expand_hostlist(block["nodes"])
        assert len(trays) == 18 and len({plan.devices[n].rack for n in trays}) == 1  # one block = one rack
    assert "SwitchType=switch/nvidia_imex" in files["slurm.conf"]
    launch = nccl_files(plan)
    assert "#SBATCH --segment=16" in launch["launch/train.sbatch"]
    assert "NCCL_MNNVL_ENABLE=2" in launch["nccl/nccl.env"] and "NCCL_NVLS_ENABLE=2" in launch["nccl/nccl.env"]


def test_a_kubernetes_nvl72_cluster_gets_a_compute_domain_the_crd_accepts(tmp_path):
    import jsonschema
    import yaml

    from gpucluster.artifacts.nccl import nccl_files

    path = _nvl72(tmp_path, "scheduler: {kind: kubernetes}\n", gpus=144)
    plan = plan_design(load_design(path))
    files = nccl_files(plan)
    [domain] = list(yaml.safe_load_all(files["launch/compute-domain.yaml"]))
    assert domain["kind"] == "ComputeDomain"
    crd = yaml.safe_load(
        (UPSTREAM / "dra-driver-gpu" / "dra-driver-gpu-v25.12.0.resource.nvidia.com_computedomains.yaml").read_text()
    )
    [version] = [v for v in crd["spec"]["versions"] if f"{crd['spec']['group']}/{v['name']}" == domain["apiVersion"]]
    schema = version["schema"]["openAPIV3Schema"]
    jsonschema.validate(domain, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**domain, "spec": {"numNodes": 0}}, schema)  # the channel is required
    template = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
    assert f"resourceClaimTemplateName: {template}" in files["launch/compute-domain.yaml"]


def test_size_counts_whole_nvl72_racks_and_writes_a_design_that_plans(tmp_path):
    from click.testing import CliRunner

    from gpucluster.cli import main

    out = tmp_path / "sized.yaml"
    result = CliRunner().invoke(
        main,
        [
            "size",
            "--server",
            "gb200-nvl72",
            "--parameters-b",
            "70",
            "--tokens-b",
            "2000",
            "--days",
            "30",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "x gb200-nvl72 racks" in result.output
    plan = plan_design(load_design(out))
    racks = [rack for rack in plan.racks.values() if rack.rack_system == "gb200-nvl72"]
    assert racks and plan.totals.gpus == 72 * len(racks)
    assert not [f for f in plan.findings if f.severity == "error"]


def test_burn_in_checks_imex_and_an_all_reduce_across_each_nvl72_domain_before_the_fabric(gb200_1su):

    _loaded, plan = gb200_1su
    tests = plan.burn_in
    order = list(dict.fromkeys(t.test for t in tests))
    assert order.index("imex") < order.index("nccl-nvlink-domain") < order.index("ib-write-bw")
    assert [t.stage for t in tests] == sorted(t.stage for t in tests)
    assert sorted({t.stage for t in tests}) == list(range(len(order)))  # stages 0 (cabling), 1, 2 ...
    domain = [t for t in tests if t.test == "nccl-nvlink-domain"]
    in_server = next(t for t in tests if t.test == "nccl-in-server")
    assert len(domain) == 8 and all(len(t.nodes) == 18 and len(t.racks) == 1 for t in domain)
    assert all(t.threshold == in_server.threshold for t in domain)
    imex = [t for t in tests if t.test == "imex"]
    assert [t.threshold for t in imex] == [18] * 8


def test_a_failed_tray_degrades_its_domain_and_spare_racks_cover_racks_short_of_their_segment():
    from gpucluster.training.reliability import domain_spares

    # 18 trays, segment 16: a rack survives two trays in repair; it falls short with the Poisson tail P(X > 2)
    spares = domain_spares(
        racks=128, trays_per_rack=18, segment=16, failures_per_tray_year=2.0, repair_hours=72, confidence=0.95
    )
    mean = 18 * 2.0 * 72 / (365.25 * 24)
    import math

    tail = 1 - math.exp(-mean) * (1 + mean + mean**2 / 2)
    assert spares.in_rack_spares == 2 and spares.p_rack_short == pytest.approx(tail)
    assert spares.spare_racks_needed >= 1  # 128 racks x P(short) ~ 0.2 racks short at once
    fewer = domain_spares(128, 18, 18, 2.0, 72, 0.95)  # no tray kept spare: any failure leaves the rack short
    assert fewer.p_rack_short > spares.p_rack_short and fewer.spare_racks_needed > spares.spare_racks_needed


def test_the_rack_scale_plan_reports_in_rack_spare_trays_and_spare_racks(gb200_1su):
    _loaded, plan = gb200_1su
    domains = plan.checkpoint["domain_spares"]
    assert (domains["racks"], domains["segment"], domains["in_rack_spares"]) == (8, 16, 2)
    spares = next(f for f in plan.findings if f.rule.endswith("spare-servers"))
    assert spares.severity == "ok" and "16 in-rack spare trays" in spares.message


def test_the_pulumi_tree_has_a_rack_system_per_nvlink_domain_with_its_trays(gb200_1su):
    from gpucluster.components import Cluster
    from gpucluster.components.offline import run_offline

    _loaded, plan = gb200_1su
    run = run_offline(lambda: Cluster(plan.name, plan, "device"))
    systems = run.of_type("gpu-cluster:compute:RackSystem")
    assert len(systems) == 8
    first = systems[0]
    assert first.inputs["compute_trays"] == 18 and first.inputs["gpus"] == 72
    assert first.inputs["nvlink_links"] == 1296 and first.inputs["power_shelves"] == 8
    trays = [r for r in run.of_type("gpu-cluster:compute:GpuServer") if r.parent == first.urn]
    assert len(trays) == 18
    su = run.of_type("gpu-cluster:compute:ScalableUnit")[0]
    assert all(s.parent == su.urn for s in systems)


def test_monitoring_lists_each_rack_s_switch_tray_and_shelf_management_ports(gb200_1su):
    from gpucluster.artifacts.monitoring.targets import rack_system_bmcs

    _loaded, plan = gb200_1su
    racks = rack_system_bmcs(plan)
    assert len(racks) == 8
    first = racks[0]
    assert len(first["nvlink_switch_trays"]) == 9 and len(first["power_shelves"]) == 8
    in_rack = {n for n in plan.racks[first["rack"]].devices if plan.devices[n].role == "switch"}
    ports = [p for tray in first["nvlink_switch_trays"] for p in tray["ports"].values()]
    assert len(ports) == 27 and all(p.split(":")[0] in in_rack for p in ports)


@pytest.mark.external
@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (.ci/install-tools)")
def test_a_coolant_leak_bcm_reports_fires_an_alert_promtool_checks_and_tests(gb200_1su, tmp_path):
    import subprocess

    import yaml
    from conftest import planned

    from gpucluster.artifacts import monitoring
    from gpucluster.artifacts.monitoring.alert_rules import alert_rules

    loaded, plan = gb200_1su
    monitoring.write(plan, loaded, tmp_path)
    folder = tmp_path / "monitoring"

    def promtool(*args: str) -> None:
        result = subprocess.run(["promtool", *args], cwd=folder, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr

    promtool("check", "config", "prometheus.yml")
    promtool("check", "rules", "rules/gpu-alerts.yml")
    promtool("test", "rules", "tests/gpu-alerts.test.yml")
    config = yaml.safe_load((folder / "prometheus.yml").read_text())
    [bcm] = [job for job in config["scrape_configs"] if job["job_name"] == "bcm"]
    assert (bcm["scheme"], bcm["metrics_path"], bcm["static_configs"][0]["targets"]) == (
        "https",
        "/exporter",
        ["head-01:8081"],
    )
    rules = yaml.safe_load((folder / "rules/gpu-alerts.yml").read_text())["groups"][0]["rules"]
    [leak] = [r for r in rules if r["alert"] == "CoolantLeakDetected"]
    assert leak["expr"] == "deviceswithleaks > 0" and leak["labels"]["severity"] == "critical"
    tests = yaml.safe_load((folder / "tests/gpu-alerts.test.yml").read_text())["tests"]
    fired = [t for test in tests for t in test.get("alert_rule_test", []) if t["alertname"] == "CoolantLeakDetected"]
    assert any(t["exp_alerts"] for t in fired) and any(not t["exp_alerts"] for t in fired)
    # no power-shelf alert: no exporter's metric names for the shelves were found; DGX designs get no leak job
    assert not [r for r in rules if "shelf" in r["alert"].lower()]
    assert "CoolantLeakDetected" not in {rule.name for rule in alert_rules(planned("superpod-h100-1su")[1])}


def test_slurm_26_05_loads_the_nvl72_blocks_one_per_rack(gb200_1su, current_slurm, load_slurm):
    import hostlist

    from gpucluster.artifacts.slurm import slurm_files

    _loaded, plan = gb200_1su
    loaded = load_slurm(current_slurm, slurm_files(plan, version="26.05"))
    assert not loaded.problems, loaded.problems
    blocks = [r for r in loaded.topologies["nvlink"] if "BlockName" in r]
    assert len(blocks) == len([r for r in plan.racks.values() if r.rack_system]) == 8
    for block in blocks:
        trays = hostlist.expand_hostlist(block["Nodes"])
        assert len(trays) == 18 and len({plan.devices[n].rack for n in trays}) == 1
        assert {plan.devices[n].nvlink_domain for n in trays} == {block["BlockName"]}


def test_the_nvlink_backplane_is_counted_and_analysed_but_never_cabled(gb200_1su):
    _loaded, plan = gb200_1su
    links = links_on(plan, "nvlink")
    assert len(links) == 8 * 1296  # 72 GPUs x 18 links per rack
    per_gpu: dict[tuple[str, str], set[str]] = {}
    for link in links:
        gpu = link.a_port.split("-")[0]
        chip = f"{link.b_device}/{link.b_port.split('-')[0]}"
        per_gpu.setdefault((link.a_device, gpu), set()).add(chip)
        assert plan.devices[link.a_device].rack == plan.devices[link.b_device].rack
    assert len(per_gpu) == 576 and all(len(chips) == 18 for chips in per_gpu.values())  # one link to every chip
    cabled = {i for cable in plan.cables for i in cable.links}
    assert not any(plan.links[i].network == "nvlink" for i in cabled)
    assert plan.totals.links["nvlink"] == {"host-leaf": 8 * 1296}


def test_a_rack_scale_job_runs_on_16_of_each_rack_s_18_trays_and_idle_trays_do_not_stop_it(gb200_1su):
    """The job takes a segment of 16 trays per rack (--segment=16, Kueue slices of 16): 8 racks x 64 GPUs; the two
    idle trays of each rack are in-rack spares whose failures do not stop the job."""
    from gpucluster.training import analyse_checkpoints

    _loaded, plan = gb200_1su
    a = analyse_checkpoints(plan)
    assert (a.gpus, a.servers) == (8 * 16 * 4, 8 * 16)
    units = {k.kind: k.units for k in a.kinds}
    assert units["gpu"] == 512 and units["server"] == 128
    assert a.domains is not None and a.domains.in_rack_spares == 2


def test_a_failed_tray_restarts_on_a_spare_tray_else_a_spare_rack_else_waits_for_its_repair():
    """A tray failure finds its rack with no spare tray free with P(Poisson(17 x rate x repair) >= 2) (the other
    trays in repair, as a failure sees them); then a spare rack takes the segment unless every spare rack already
    stands in for a rack; only then does the job wait, repair / 3 on average for the first of the rack's trays."""
    import math

    from gpucluster.training.reliability import domain_spares, poisson_tail, tray_failover

    rate, repair = 2.0, 72.0
    others = 17 * rate * repair / (365.25 * 24)
    no_spare_rack = domain_spares(128, 18, 16, rate, repair, 0.95, spare_racks_have=0)
    f = tray_failover(no_spare_rack, 4, rate, repair, tray_share=0.8)
    assert f.p_no_spare_tray == pytest.approx(1 - math.exp(-others) * (1 + others))
    assert f.p_no_spare_rack == 1.0 and f.wait_s == pytest.approx(repair * 3600 / 3)
    assert f.p_wait == pytest.approx(0.8 * f.p_no_spare_tray)
    with_racks = tray_failover(domain_spares(128, 18, 16, rate, repair, 0.95, spare_racks_have=2), 4, rate, repair, 0.8)
    short = 127 * with_racks_p_short(rate, repair)
    assert with_racks.p_no_spare_rack == pytest.approx(poisson_tail(short, 2))
    assert with_racks.p_wait < f.p_wait / 10  # two spare racks take almost every short rack's segment
    whole = tray_failover(domain_spares(128, 18, 18, rate, repair, 0.95), 4, rate, repair, 0.8)  # no spare trays
    assert whole.p_no_spare_tray == 1.0 and whole.wait_s == pytest.approx(repair * 3600)


def with_racks_p_short(rate: float, repair: float) -> float:
    """P(a rack has more than 2 of its 18 trays in repair)."""
    import math

    mean = 18 * rate * repair / (365.25 * 24)
    return 1 - math.exp(-mean) * (1 + mean + mean**2 / 2)


def test_the_simulator_draws_the_waits_the_failover_model_gives():
    """Each failure leaves the job waiting with the model's probability; the mean wait per run is failures x p x
    wait (within the simulation's 95 % interval), and a model with no waits draws exactly what it drew before."""
    import numpy as np

    from gpucluster.training.simulate import JobModel, simulate

    base = dict(interval_s=3600.0, stall_s=60.0, restart_s=600.0, failures_per_hour={"gpu": 0.05})
    runs = simulate(JobModel(**base, wait_probability=0.2, wait_s=7200.0), 2000, horizon_s=30 * 86400, seed=7)
    assert runs.waits is not None and runs.waiting_s is not None
    expected = runs.failures * 0.2 * 7200.0
    diff = runs.waiting_s - expected
    assert abs(diff.mean()) < 3 * diff.std(ddof=1) / np.sqrt(diff.size)
    assert runs.waits.sum() == pytest.approx(0.2 * runs.failures.sum(), rel=0.1)
    plain = simulate(JobModel(**base), 200, horizon_s=30 * 86400, seed=7)
    again = simulate(JobModel(**base, wait_probability=0.0, wait_s=7200.0), 200, horizon_s=30 * 86400, seed=7)
    assert plain.waits is None and np.array_equal(plain.wall_s, again.wall_s)
    assert np.array_equal(plain.work_s, again.work_s)
    with pytest.raises(ValueError):
        JobModel(**base, wait_probability=1.5)


def test_the_rack_scale_goodput_counts_the_waits_and_simulate_says_how_the_job_goes_on(gb200_1su):
    from click.testing import CliRunner

    from gpucluster.cli import main
    from gpucluster.training import analyse_checkpoints
    from gpucluster.training import reliability as rel

    _loaded, plan = gb200_1su
    a = analyse_checkpoints(plan)
    assert a.failover is not None and a.failover.mean_wait_per_failure_s > 0
    assert a.recovery_s == pytest.approx(a.restart_s + a.failover.mean_wait_per_failure_s)
    assert a.goodput < rel.daly_efficiency(a.interval_s, a.stall_s, a.restart_s, a.mtbf_s)
    result = CliRunner().invoke(main, ["simulate", str(DESIGNS / "gb200-nvl72-1su.yaml"), "--runs", "200"])
    assert result.exit_code == 0, result.output
    assert "the tray's 4 GPUs leave its NVLink domain" in result.output
    assert "on one of the rack's 2 spare trays" in result.output and "waits for a tray repair" in result.output


def _section_text(html: str, section: str) -> str:
    """The text of one report section, tags and runs of white space gone."""
    import re
    from html import unescape

    match = re.search(rf'<section class="major" id="{section}">(.*?)</section>', html, flags=re.S)
    assert match, f"no section {section}"
    inline = re.sub(r"</?(code|b|i|a)\b[^>]*>", "", match.group(1))
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", inline)))


def test_the_report_shows_each_nvlink_domain_its_shelves_cooling_blocks_and_the_largest_job(gb200_1su, tmp_path):
    """The report's rack-scale section: 8 racks, 18 trays and 72 GPUs per domain, 1,296 backplane links, the
    shelves' 132 kW usable of 264 kW (N+N) against the rack's load, 85 % to liquid with the coolant flow and the
    N+1 CDUs, one Slurm block per rack, and the largest job: 72 GPUs in a domain, 64 with --segment=16."""
    from gpucluster.analyse.budget import power_budget
    from gpucluster.artifacts.report import report_html

    _loaded, plan = gb200_1su
    text = _section_text(report_html(plan, tmp_path), "rack-scale")
    budget = power_budget(plan)
    assert "8 DGX GB200 NVL72 racks, each one NVLink domain on copper backplanes" in text
    assert "Compute trays 18 4 GPUs each" in text and "GPUs 72 in one NVLink domain" in text
    assert "NVLink switch trays 9 x 2 chips" in text and "1,296 backplane links" in text
    assert "Largest job in one domain 72 GPUs" in text and "64 GPUs on 16 trays with 2 spare (--segment=16)" in text
    assert "512 GPUs in whole segments over the 8 production racks" in text
    assert "132 kW usable of 264 kW nameplate: 8 x 33 kW (6 x 5.5 kW PSUs), N+N" in text
    worst = max(r.load.max_w for r in budget.racks if plan.racks[r.name].rack_system)
    assert f"Rack load {worst / 1000:,.1f} kW" in text and "within the shelves' redundant 132 kW" in text
    assert "Cooling 85% of the heat to liquid" in text
    flow = max(c.flow_l_per_min for c in budget.coolant)
    assert f"Coolant flow {flow:,.0f} L/min per rack" in text
    [group] = budget.cdus
    assert f"{group.units} ({group.needed} + 1)" in text
    blocks = [d for d in ("nvl001", "nvl008") if d in text]
    assert blocks == ["nvl001", "nvl008"] and "BlockSizes 18, 36, 72, 144" in text
    assert "--segment=16" in text and "switch/nvidia_imex" in text
    assert "the tray's 4 GPUs leave its NVLink domain" in text and "2 spare trays" in text


def test_the_report_names_kueue_s_clique_level_for_kubernetes_trays_and_no_section_for_hgx(tmp_path):
    from conftest import planned

    from gpucluster.artifacts.report import report_html

    _loaded, plan = planned("gb300-nvl72-4su")
    text = _section_text(report_html(plan, tmp_path), "rack-scale")
    assert "nvidia.com/gpu.clique" in text and "PodSet slices of 16 trays" in text
    from gpucluster.analyse.scheduling import nvlink_domains, scheduler_split

    slurm_racks = len(nvlink_domains(plan, scheduler_split(plan).slurm))
    assert slurm_racks == 28 and f"… and {slurm_racks - 12} more blocks" in text  # Kubernetes runs 4 racks
    _loaded, hgx = planned("lab-4-servers")
    assert 'id="rack-scale"' not in report_html(hgx, tmp_path)


def test_the_bom_orders_an_nvl72_rack_as_one_system_line_with_what_ships_in_it_included(gb200_1su):
    """GB200 UG: the rack ships with its trays, switch trays, power shelves, busbar and manifolds; ERA NVL72: its
    two in-rack SN2201 are DC-fed from the busbar (not the AC SKU). So one order line, the contents marked
    included, no rails for them, and the loaded rack's 1,360 kg (STH) counted once."""
    from gpucluster.analyse.bom import build_bom

    _loaded, plan = gb200_1su
    bom = build_bom(plan)
    [system] = [b for b in bom.lines if b.kind == "rack-system"]
    assert system.quantity == 8 and system.weight_kg == 1360 and not system.included_in
    included = {(b.kind, b.item): b for b in bom.lines if b.included_in == "gb200-nvl72" and b.kind != "coolant-part"}
    assert {k: b.quantity for k, b in included.items()} == {
        ("compute-tray", "gb200-compute-tray"): 8 * 18,
        ("nvlink-switch-tray", "nvlink5-switch-tray"): 8 * 9,
        ("power-shelf", "nvl72-power-shelf-33kw"): 8 * 8,
        ("switch", "sn2201"): 8 * 2,
        ("rack", "nvidia-mgx-rack"): 8,
    }
    assert all(b.weight_kg is None and not b.part_number for b in included.values())
    assert all("not ordered separately" in b.notes for b in included.values())
    # the SN2201 ordered on their own are the out-of-band leaves outside the NVL72 racks, with their rails: the
    # network racks' and the control plane's (two in its racks: 48 ports do not hold all its servers' and PDUs')
    outside = sum(b.quantity for b in bom.lines if b.item == "sn2201" and not b.included_in)
    racked_outside = sum(1 for d in plan.devices.values() if d.part == "sn2201" and not plan.racks[d.rack].rack_system)
    assert outside == racked_outside == 3
    rails = {b.item: b.quantity for b in bom.lines if b.kind == "rail-kit"}
    assert "nvl72-power-shelf-33kw-rails" not in rails and rails["sn2201-rails"] == outside
    # the loaded racks weigh once: 8 x 1,360 kg, not again as 144 trays x 32 kg
    assert bom.total("weight_kg", "compute") == 8 * 1360
    assert not [f for f in plan.findings if "nvlink5-switch-tray" in f.message or "power-shelf" in f.message]


def test_the_coolant_flow_is_one_vendor_figure_at_the_design_s_supply_temperature(gb200_1su, tmp_path):
    """GB200: OCP MGX's 130 L/min for a 120 kW rack, per kW of the whole rack (not the 85 % liquid share), at the
    30 °C supply the design states, with the rise that flow gives; GB300 at 25 °C: Lenovo LP2357 Table 27's
    59 L/min and no second figure beside it."""
    from gpucluster.analyse.budget import power_budget
    from gpucluster.artifacts.power import _context
    from gpucluster.formats.templating import render

    loaded, plan = gb200_1su
    assert loaded.design.site.coolant_supply_c == 30
    budget = power_budget(plan)
    for loop in budget.coolant:
        rack = next(r for r in budget.racks if r.name == loop.rack)
        assert loop.flow_l_per_min == pytest.approx(rack.load.max_w / 1000 * 130 / 120, rel=1e-3)
        assert loop.supply_c == 30 and 8 < loop.rise_k < 14
    gb300 = plan_design(load_design(_nvl72(tmp_path, system="gb300-nvl72", gpus=72, site=", coolant_supply_c: 25")))
    [loop] = power_budget(gb300).coolant
    assert loop.flow_l_per_min == 59 and loop.basis == "vendor's flow at 25 °C supply (catalog)"
    text = render("power-cooling.md.j2", **_context(power_budget(gb300)))
    row = next(line for line in text.splitlines() if line.startswith(f"| {loop.rack} | gb300-nvl72 |"))
    assert "| 59 | 25 |" in row and "149" not in row


def test_a_liquid_site_counts_only_liquid_heat_against_its_capacity_and_the_air_side_apart(tmp_path):
    """A GB300 NVL72 rack draws up to ~144 kW, 90 % to liquid (Lenovo): 129 kW of the 140 kW liquid capacity,
    its ~14 kW to the room air. The rule and the power table give that one verdict (no "over by 3.7 kW"), and
    an air-cooled network rack on the liquid site is room-air heat, not a share of the liquid capacity."""
    from gpucluster.analyse.budget import power_budget

    plan = plan_design(load_design(_nvl72(tmp_path, system="gb300-nvl72", gpus=72)))
    budget = power_budget(plan)
    nvl = next(r for r in budget.racks if plan.racks[r.name].rack_system)
    assert nvl.load.max_w > 140_000 and nvl.load.liquid_w < 140_000
    assert nvl.cooling_use == (
        f"liquid: {nvl.load.liquid_w / 1000:.1f} of 140 kW; room air {nvl.load.air_w / 1000:.1f} kW (air)"
    )
    assert not any("over by" in r.cooling_use for r in budget.racks)
    rules = ("rule:rack-power-and-cooling", "rule:rack-system-power-and-cooling")
    cooling = [f for f in plan.findings if f.rule in rules]
    assert not [f for f in cooling if "liquid" in f.message and f.severity != "ok"]
    network = [r for r in budget.racks if not plan.racks[r.name].rack_system]
    assert network and all(r.cooling_use.startswith("room air ") for r in network)


def test_the_floor_plan_draws_each_su_s_n_plus_1_cdus_in_its_row(gb200_1su):
    from gpucluster.analyse.budget import power_budget
    from gpucluster.artifacts.floor_plan import floor_plan

    _loaded, plan = gb200_1su
    [group] = power_budget(plan).cdus
    floor = floor_plan(plan)
    cdus = [r for r in floor.racks if r.name.startswith("CDU")]
    assert len(cdus) == group.units == group.needed + 1 == 2
    racks = [r for r in floor.racks if r.name in plan.racks]
    for cdu in cdus:  # in the row, past its racks, overlapping none
        assert cdu.y == racks[0].y
        assert all(cdu.x >= r.x + r.width or cdu.x + cdu.width <= r.x for r in racks)
    assert "CDU1: coolant distribution unit hpe-inrow-cdu-1300kw for SU 1 (1+1)" in floor.svg()


def test_the_report_names_pdus_only_for_racks_without_shelves_and_shows_the_cdus(gb200_1su, tmp_path):
    """An NVL72 rack's power shelves feed its busbar (BCM power-shelf manual): the report's PDU row names the
    network and management racks' PDU, not a compute-rack PDU that no rack holds; the floor plan's caption counts
    the racks and the N+1 in-row CDUs apart."""
    from gpucluster.artifacts.report import report_html

    _loaded, plan = gb200_1su
    html = report_html(plan, tmp_path)
    power = _section_text(html, "power")
    pdus = sorted({plan.devices[n].part for r in plan.racks.values() for n in r.pdus})
    assert pdus == ["raritan-px3-5747v-v2"]
    assert "raritan-px3-5747v-v2 in the racks without power shelves (the rack-scale systems have none)" in power
    assert plan.settings.pdu not in power
    floor = _section_text(html, "floor")
    assert f"{len(plan.racks)} racks at their floor coordinates, and 2 in-row coolant distribution units" in floor


@pytest.mark.parametrize(
    ("scheduler", "expected"),
    [
        ("slurm", {"head": 2, "k8s-admin": 3, "slogin": 2, "nmx-m": 3}),
        ("kubernetes", {"head": 2, "k8s-admin": 3, "k8s-user": 3, "nmx-m": 3}),
        ("both", {"head": 2, "k8s-admin": 3, "k8s-user": 3, "slogin": 2, "nmx-m": 3}),
    ],
)
def test_an_nvl72_design_gets_the_mission_control_plane_the_ra_lists(tmp_path, scheduler, expected):
    """DGX SuperPOD RA management servers: two BCM heads in HA, three Kubernetes admin nodes, three Kubernetes user
    nodes (Run:ai) and two Slurm login nodes (Mission Control's GB200 host names HEAD, K8S-ADMIN, K8U, SLOGIN), and
    the NMX Manager's cluster of at least three nodes (NMX-M documentation; Mission Control 2.0 lists NMX-M nodes):
    each racked, on the in-band and out-of-band networks, in the power budget and on the BOM."""
    from collections import Counter

    from gpucluster.analyse.bom import build_bom
    from gpucluster.plan.power.draw import device_powers

    extra = f"scheduler: {{kind: {scheduler}{', kubernetes_servers: 9' if scheduler == 'both' else ''}}}\n"
    path = _nvl72(tmp_path, extra, gpus=72)
    plan = plan_design(load_design(path))
    servers = [d for d in plan.devices.values() if d.role == "management-server"]
    assert Counter(d.name.rsplit("-", 1)[0] for d in servers) == expected
    cabled = {(link.a_device, link.network) for link in plan.links} | {
        (link.b_device, link.network) for link in plan.links
    }
    powers = device_powers(plan)
    # the GB200 RA's one "Storage and In-band Ethernet Fabric": the control plane's in-band ports are on it
    inband = (
        "storage"
        if plan.catalog_part(plan.settings.rack_system, RackSystem).storage_inband_fabric == "combined"
        else "inband"
    )
    for server in servers:
        assert server.rack and (server.name, inband) in cabled and (server.name, "oob") in cabled
        assert powers[server.name].max_w > 0
    [line] = [b for b in build_bom(plan).lines if b.kind == "management-server"]
    assert line.quantity == sum(expected.values()) and "Base Command Manager head node (HA pair) 2" in line.notes
    assert "NMX Manager node (NVLink fabric management) 3" in line.notes  # NMX-M: a cluster of at least 3
    assert plan.devices["head-01"].role == "management-server"  # the Slurm controllers stay on the BCM pair


def test_a_design_s_own_management_server_count_overrides_the_control_plane(tmp_path):
    path = _nvl72(tmp_path, "management: {management_servers: 3}\n", gpus=72)
    plan = plan_design(load_design(path))
    assert sorted(d.name for d in plan.devices.values() if d.role == "management-server") == [
        "head-01",
        "head-02",
        "head-03",
    ]


def test_the_floor_plan_judges_an_nvl72_rack_by_its_shelves_as_the_rules_do(gb200_1su, tmp_path):
    """An NVL72 rack's power is its shelves' (132 kW with N+N), not the 45 kW budget of racks on PDUs: the floor
    plan's bar and red outline give rule rack-system-power-and-cooling's verdict (a GB300 rack's 143.7 kW peak
    over 132 kW is its warning, not an error, so no red outline)."""
    from gpucluster.artifacts.floor_plan import floor_plan

    for plan in (gb200_1su[1], plan_design(load_design(_nvl72(tmp_path, system="gb300-nvl72", gpus=72)))):
        floor = {r.name: r for r in floor_plan(plan).racks}
        errors = [f for f in plan.findings if f.rule == "rule:rack-system-power-and-cooling" and f.severity == "error"]
        assert not errors
        for rack in plan.racks.values():
            if rack.rack_system:
                drawn = floor[rack.name]
                assert not drawn.over_budget
                assert drawn.bar_height == round(drawn.depth * min(1.0, rack.power_max_w / 132_000), 1)
