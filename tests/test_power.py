"""The power-and-cooling budget: published figures, optics, circuits, feeds and cooling."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from functools import cache

import pytest
import yaml
from conftest import planned, write_design

from gpucluster import load_design, plan_design
from gpucluster.analyse.budget import airflow_cfm, btu_per_h, cfm_to_m3_per_h, power_budget, refrigeration_tons
from gpucluster.analyse.rules import RULES, check_rules
from gpucluster.catalog.load import load_catalog
from gpucluster.design.schema import PowerFeed
from gpucluster.errors import DesignError
from gpucluster.plan.power.circuits import circuit_kva, pdus_to_keep_psus, rack_circuits, usable_circuit_kw
from gpucluster.plan.power.cooling import cooling_needed
from gpucluster.plan.power.cords import power_cords
from gpucluster.plan.power.draw import device_power
from gpucluster.plan.racks import rack_inlets


@cache
def _budget(name: str):
    return power_budget(planned(name)[1])


def _plan_text(tmp_path, text: str):
    return plan_design(load_design(write_design(tmp_path, text)))


# ------------------------------------------------------------------------------------ published figures


def test_four_dgx_h100_in_a_rack_draw_40_8_kw(h100_1su):
    """H100 RA: a compute rack of four DGX H100 "exceeds 40 kW"; 4 x 10.2 kW = 40.8 kW."""
    _loaded, plan = h100_1su
    rack = next(r for r in _budget("superpod-h100-1su").racks if r.devices == 4 and r.purpose == "compute")
    powers = device_power(plan)
    servers = [powers[n] for n in plan.racks[rack.name].devices]
    assert sum(p.catalog_max_w for p in servers) == pytest.approx(40_800)
    # with the optics in its cages the rack is within 1 % of the published figure
    assert rack.load.max_w / 1000 == pytest.approx(40.8, rel=0.01)
    assert rack.load.max_w == pytest.approx(40_800 + rack.load.optics_max_w)


# A DGX B200 cluster as NVIDIA's DGX B200 data-center guidance provisions it (the b200-roce-2su example runs HGX B200
# with BlueField-3 SuperNICs, as Spectrum-X does, since the DGX B200 ships ConnectX-7 only).
DGX_B200_N = (
    "name: dgx-b200-n\nsite: {rack_power_budget_kw: 30, power_feed: {voltage_v: 400, phases: 3, breaker_a: 32, "
    "redundancy: N}}\ncompute: {server: dgx-b200, servers: 64, spare_servers: 2}\n"
    "compute_fabric: {technology: roce, switch: sn5600}\nstorage_network: {technology: ethernet, switch: sn5600}\n"
    "parallel_filesystem: {kind: weka}\n"
)


def test_one_dgx_b200_scalable_unit_draws_458_kw(tmp_path):
    """NVIDIA DGX B200 data-center best practices: one SU (32 DGX B200) = 458 kW."""
    su = power_budget(_plan_text(tmp_path, DGX_B200_N)).sus[0]
    assert su.servers == 32
    assert su.servers_catalog_max_w / 1000 == pytest.approx(458, abs=0.5)
    assert su.servers_max_w / 1000 == pytest.approx(458, rel=0.01)


def test_a_415_v_three_phase_60_a_circuit_carries_34_5_kw_at_80_percent():
    """415 V 3-phase 60 A: 43.1 kVA nameplate, 34.5 kW usable at 80 % (the Raritan PX3-5878's 34.5 kVA)."""
    assert circuit_kva(415, 3, 60) == pytest.approx(43.1, abs=0.05)
    assert usable_circuit_kw(PowerFeed()) == pytest.approx(34.5, abs=0.05)
    assert usable_circuit_kw(PowerFeed(voltage_v=380, breaker_a=32)) == pytest.approx(16.8, abs=0.05)
    assert usable_circuit_kw(PowerFeed(voltage_v=208, breaker_a=60)) == pytest.approx(17.3, abs=0.05)
    assert usable_circuit_kw(PowerFeed(voltage_v=230, phases=1, breaker_a=32)) == pytest.approx(5.888)


def test_heat_conversions_follow_the_cited_rules_of_thumb():
    assert btu_per_h(1000) == pytest.approx(3412, abs=0.5)
    assert refrigeration_tons(3517) == pytest.approx(1.0, abs=0.001)
    # ~157 CFM per kW at a 20 °F rise (insideHPC's formula: 154-158 CFM/kW)
    assert airflow_cfm(1000, 20 / 1.8) == pytest.approx(157.2, abs=0.1)
    assert cfm_to_m3_per_h(1) == pytest.approx(1.699, abs=0.001)


# ----------------------------------------------------------------------------------------------- optics


def test_a_twin_port_transceiver_is_counted_once_for_its_two_links(h100_1su):
    """A DGX H100 has 4 twin-port OSFP compute cages (one 17 W module each, two links each), 2 storage
    ports (9 W modules) and 2 in-band ports on 1:2 splitter legs (SN5600 leaves for the design's 200GbE object
    store: single-port modules in 200G mode, 5 W): 96 W of optics, not 8 x 17 W."""
    _loaded, plan = h100_1su
    server = device_power(plan)["gpu001"]
    compute_links = [link for link in plan.links if link.a_device == "gpu001" and link.network == "compute"]
    assert len(compute_links) == 8 and len({link.a_cage for link in compute_links}) == 4
    assert server.optics_max_w == pytest.approx(4 * 17 + 2 * 9 + 2 * 5)
    assert server.max_w == pytest.approx(10_200 + 96)


def test_a_switch_maximum_stated_with_optics_is_not_raised_by_them(h100_1su):
    """QM9700: 1.72 kW max with active cables, 0.747 kW typical with passive cables."""
    _loaded, plan = h100_1su
    powers = device_power(plan)
    leaf = next(d.name for d in plan.switches("compute", 1))
    power = powers[leaf]
    assert power.optics_in_catalog_max and power.optics_max_w > 0
    assert power.max_w == 1720
    assert power.typical_w == pytest.approx(min(747 + power.optics_typical_w, 1720))


def test_plan_totals_and_rack_loads_include_the_optics(h100_1su):
    _loaded, plan = h100_1su
    budget = _budget("superpod-h100-1su")
    assert plan.totals.it_power_max_kw == pytest.approx(budget.total.max_w / 1000, abs=0.001)
    assert budget.total.optics_max_w > 0
    for rack in budget.racks:
        assert plan.racks[rack.name].power_max_w == pytest.approx(rack.load.max_w)


def test_rows_and_scalable_units_add_up_to_the_site():
    budget = _budget("superpod-h200-4su")
    assert sum(r.load.max_w for r in budget.rows) == pytest.approx(budget.total.max_w)
    assert sum(r.load.typical_w for r in budget.rows) == pytest.approx(budget.total.typical_w)
    assert len(budget.sus) == 4
    assert sum(g.servers for g in budget.sus) == sum(1 for d in budget.devices if d.role == "gpu-server")


# --------------------------------------------------------------------------------------- energy and cost


def test_facility_power_energy_and_cost_follow_the_pue_and_price(tmp_path):
    plan = _plan_text(
        tmp_path,
        "name: x\nsite: {pue: 1.5, electricity_price_per_kwh: 0.12, currency: EUR}\ncompute: {servers: 4}\n",
    )
    budget = power_budget(plan)
    assert budget.facility_max_w == pytest.approx(budget.total.max_w * 1.5)
    assert budget.annual_energy_mwh == pytest.approx(budget.total.typical_w * 1.5 * 8760 / 1e6)
    assert budget.annual_cost == pytest.approx(budget.annual_energy_mwh * 1000 * 0.12)
    assert _budget("superpod-h100-1su").annual_cost is None


# ---------------------------------------------------------------------------------------------- circuits


def test_each_2n_rack_feed_alone_carries_the_rack(tmp_path):
    plan = _plan_text(
        tmp_path,
        "name: x\nsite: {power_feed: {redundancy: 2N}}\ncompute: {server: dgx-h100, servers: 31, spare_servers: 1}\n",
    )
    budget = power_budget(plan)
    for rack in budget.racks:
        circuits = rack.circuits
        assert circuits.feeds == ("A", "B")
        assert circuits.load_max_w <= circuits.capacity_w
        assert circuits.outlets_ok
    compute = next(r for r in budget.racks if r.devices == 4 and r.purpose == "compute")
    assert compute.circuits.circuits_per_feed == 2  # 41.1 kW needs two 34.5 kW circuits per feed
    assert compute.circuits.circuit_load_failover_w == pytest.approx(compute.load.max_w / 2)
    kinds = {(k.kind, k.feed): k.circuits for k in budget.circuit_kinds}
    total = sum(r.circuits.circuits_per_feed for r in budget.racks)
    assert kinds == {("415 V 3-phase 60 A", "A"): total, ("415 V 3-phase 60 A", "B"): total}


def test_ra_compute_racks_have_three_pdus_with_each_dgx_psus_split_2_2_2():
    """H100 RA Table 7: 96 PX3-5878I2R PDUs for 32 compute racks, i.e. three per rack; a DGX's six PSUs (4+2)
    spread 2-2-2, so losing any one PDU or feed leaves four (13.2 kW, above its 10.2 kW): no feed-loss finding."""
    _loaded, plan = planned("superpod-h200-4su")
    cords = power_cords(plan)
    by_device: dict[str, Counter[str]] = defaultdict(Counter)
    for cord in cords:
        by_device[cord.device][cord.pdu] += 1
    compute = [r for r in plan.racks.values() if r.purpose == "compute"]
    assert compute
    for rack in compute:
        assert [plan.part(p).id for p in rack.pdus] == ["raritan-px3-5878i2r-p1q2r1a15d5"] * 3, rack.name
        assert [p.rsplit("-", 1)[1] for p in rack.pdus] == ["a", "b", "c"]
        for server in rack.devices:
            assert sorted(by_device[server].values()) == [2, 2, 2], server
            assert set(by_device[server]) == set(rack.pdus)
    assert {c.feed for c in cords if plan.devices[c.device].role == "gpu-server"} == {"A", "B", "C"}
    assert not [f for f in plan.findings if f.rule.endswith("rack-power-distribution") and f.severity != "ok"]
    for rack in power_budget(plan).racks:
        assert rack.circuits.load_max_w <= rack.circuits.capacity_w, rack.name  # with one feed lost


def test_no_rack_has_more_circuits_than_its_load_and_outlets_need():
    """One circuit fewer would leave the rack without its redundancy or its cords without outlets: the 23.5 kW
    network rack that a 6 x C13 PDU forced onto six circuits now takes the non-compute PDU on two."""
    for name in ("superpod-h200-4su", "superpod-h100-1su", "b200-roce-2su", "h200-512-two-teams"):
        _loaded, plan = planned(name)
        feed = plan.design.site.power_feed
        for rack in plan.racks.values():
            if not rack.pdus:
                continue
            pdu = plan.part(rack.pdus[0])
            circuits = rack_circuits(plan, rack, feed)
            usable = circuits.circuit_usable_w
            fewer = circuits.circuits - (2 if feed.redundancy == "2N" else 1)
            carrying = {"2N": fewer // 2, "N+1": fewer - 1, "N": fewer}[feed.redundancy]
            inlets = rack_inlets(plan.catalog_parts, [plan.devices[d] for d in rack.devices])
            outlets_short = any(
                count > fewer * (pdu.outlets.get({"C20": "C19", "C14": "C13"}.get(inlet, inlet), 0))
                for inlet, count in inlets.items()
            )
            psus_short = feed.redundancy == "N+1" and fewer < min(
                max(pdus_to_keep_psus(plan.part(d)) for d in rack.devices), carrying + 2
            )
            assert carrying * usable < rack.power_max_w or outlets_short or psus_short, (name, rack.name)
        if name == "superpod-h200-4su":
            network = [r for r in plan.racks.values() if r.purpose == "network"]
            assert network and all(len(r.pdus) == 2 for r in network)
            assert {plan.part(r.pdus[0]).id for r in network} == {"raritan-px3-5747v-v2"}


def test_four_su_pdu_and_circuit_counts_follow_ra_table_7():
    """H100 RA Table 7 (4 SU, 127 DGX, 38 racks): 96 PX3-5878I2R-P1Q2R1A15D5 (3 per compute rack x 32) and
    12 PX3-5747V-V2 (2 per other rack x 6); one circuit per PDU. The plan has the same 32 compute racks and PDUs;
    its other racks (more than the RA's 6, see the report's deviations) take two PDUs each, as the RA's."""
    _loaded, plan = planned("superpod-h200-4su")
    pdus = Counter(plan.part(p).id for r in plan.racks.values() for p in r.pdus)
    compute = [r for r in plan.racks.values() if r.purpose == "compute"]
    other = [r for r in plan.racks.values() if r.purpose != "compute"]
    assert len(compute) == 32
    assert pdus["raritan-px3-5878i2r-p1q2r1a15d5"] == 96
    assert pdus["raritan-px3-5747v-v2"] == 2 * len(other)
    budget = power_budget(plan)
    circuits = sum(k.circuits for k in budget.circuit_kinds)
    assert circuits == sum(pdus.values()) == 96 + 2 * len(other)
    # 7 other racks where the RA has 6: the object-storage tier's 12 MinIO nodes fill the management rack, so the
    # storage appliances and their switches take a rack of their own (the RA 4-SU design without it has 6)
    assert len(other) == 7
    assert {k.feed: k.circuits for k in budget.circuit_kinds} == {"A": 39, "B": 39, "C": 32}


def test_a_dgx_b200_rack_on_n_feeds_gets_nvidias_two_380_v_32_a_circuits(tmp_path):
    """NVIDIA DGX B200 best practices: 2 DGX B200 per rack, N provisioning, 2 x 380 V 3-phase 32 A circuits,
    each at least 50 % of the rack's peak."""
    plan = _plan_text(
        tmp_path,
        "name: x\nsite:\n  rack_power_budget_kw: 30\n  pdu: apc-ap8886-400v-3ph-32a\n"
        "  power_feed: {voltage_v: 380, phases: 3, breaker_a: 32, redundancy: N}\n"
        "compute: {server: dgx-b200, servers: 4}\n",
    )
    budget = power_budget(plan)
    rack = next(r for r in budget.racks if r.purpose == "compute" and r.devices == 2)
    assert rack.circuits.feeds == ("A",) and rack.circuits.circuits == 2
    assert rack.circuits.circuit_usable_w >= 0.5 * rack.load.max_w
    assert {k.kind for k in budget.circuit_kinds} == {"380 V 3-phase 32 A"}
    assert not [f for f in plan.findings if f.subject == "dgx-b200"]  # no A/B feeds, so no feed-loss finding


def test_an_overloaded_rack_circuit_is_an_error():
    rack = {
        "name": "A01",
        "power_max_kw": 40.0,
        "circuits_per_feed": 1,
        "circuit_capacity_kw": 34.5,
        "outlets_ok": True,
    }
    facts = {"racks": [rack], "power_redundancy": "2N", "feed_loss": []}
    distribution = [r for r in RULES if r.name == "rack-power-distribution"]
    [finding] = check_rules(facts, distribution)
    assert finding.severity == "error" and "A01" in finding.message and "34.5 kW" in finding.message
    rack["power_max_kw"] = 30.0
    assert [f.severity for f in check_rules(facts, distribution)] == ["ok"]
    rack["outlets_ok"] = False
    assert [f.severity for f in check_rules(facts, distribution)] == ["error"]


def test_a_feed_loss_that_leaves_too_few_psus_is_flagged(tmp_path):
    """DGX H100: 6 x 3.3 kW PSUs, 4+2; on A/B feeds (2N) 3 remain = 9.9 kW < 10.2 kW max (> 8.2 kW typical): capped.
    DGX B200 (5+1): with 2N 3 remain, 9.9 kW of its 14.3 kW: a feed loss stops it; with the RA's N+1 three PDUs
    (2-2-2) 4 remain, 13.2 kW: capped; on N feeds there is no such finding."""
    (tmp_path / "h100").mkdir()
    h100_2n = _plan_text(
        tmp_path / "h100",
        "name: x\nsite: {power_feed: {redundancy: 2N}}\ncompute: {server: dgx-h100, servers: 8}\n",
    )
    [h100] = [f for f in h100_2n.findings if f.subject == "dgx-h100"]
    assert h100.severity == "advisory" and "9.9 kW" in h100.message and "3 + 3" in h100.message
    b200_2n = _plan_text(
        tmp_path,
        "name: x\nsite: {rack_power_budget_kw: 30, power_feed: {redundancy: 2N}}\n"
        "compute: {server: dgx-b200, servers: 8}\n",
    )
    [b200] = [f for f in b200_2n.findings if f.subject == "dgx-b200"]
    assert b200.severity == "warning" and "stops" in b200.message
    (tmp_path / "n1").mkdir()
    b200_n1 = _plan_text(
        tmp_path / "n1", "name: x\nsite: {rack_power_budget_kw: 30}\ncompute: {server: dgx-b200, servers: 8}\n"
    )
    [b200] = [f for f in b200_n1.findings if f.subject == "dgx-b200"]
    assert b200.severity == "advisory" and "2 + 2 + 2" in b200.message and "13.2 kW" in b200.message
    assert all(len(r.pdus) == 3 for r in b200_n1.racks.values() if r.purpose == "compute")  # B200 RA Fig 3.1
    (tmp_path / "n").mkdir()
    b200_n = _plan_text(tmp_path / "n", DGX_B200_N)  # N provisioning, as NVIDIA's DGX B200 guidance
    assert not [f for f in b200_n.findings if f.subject == "dgx-b200"]


# ----------------------------------------------------------------------------------------------- cooling


def test_the_cooling_each_rack_needs_follows_its_density():
    assert cooling_needed(25, 0) == "air"
    assert cooling_needed(41, 0) == "rear-door"
    assert cooling_needed(70, 0) == "liquid"
    assert cooling_needed(5, 30) == "liquid"
    by_purpose = {(r.purpose, r.devices): r.cooling_needed for r in _budget("superpod-h100-1su").racks}
    assert by_purpose[("compute", 4)] == "rear-door"


def test_racks_are_packed_within_the_sites_cooling(tmp_path):
    plan = _plan_text(tmp_path, "name: x\nsite: {cooling: air}\ncompute: {servers: 8}\n")
    assert plan.settings.servers_per_rack == 2  # 4 DGX H100 fit 45 kW, but air takes 30 kW: 2 divide the SU
    assert not [f for f in plan.findings if f.rule == "rule:rack-power-and-cooling" and f.severity != "ok"]


def test_a_rack_beyond_the_sites_air_cooling_is_warned(tmp_path):
    plan = _plan_text(tmp_path, "name: x\nsite: {cooling: air, servers_per_rack: 4}\ncompute: {servers: 8}\n")
    warned = {f.subject for f in plan.findings if f.rule == "rule:rack-power-and-cooling" and f.severity == "warning"}
    heavy = {r.name for r in power_budget(plan).racks if r.load.max_w > 30_000}
    assert heavy and warned == heavy
    assert all(
        any("30 kW per rack" in f.message for f in r.findings) for r in power_budget(plan).racks if r.name in heavy
    )


def _liquid_catalog(tmp_path) -> str:
    """A liquid-cooled variant of the DGX H100 for the test: 85 % of its heat to liquid."""
    part = load_catalog().parts["dgx-h100"].model_dump(mode="json", exclude_unset=True)
    part["id"] = "dgx-h100-dlc"
    part["cooling"] = {"method": "liquid", "liquid_fraction": 0.85}
    part["sources"] = {
        key: "derived: test fixture, a copy of the packaged dgx-h100"
        for key in [*part["sources"], "cooling", "cooling.method", "cooling.liquid_fraction"]
    }
    (tmp_path / "dlc.yaml").write_text(yaml.safe_dump({"parts": [part]}), encoding="utf-8")
    return "dlc.yaml"


@pytest.mark.parametrize("cooling", ["rear-door", "liquid"])
def test_liquid_cooled_servers_split_their_heat_and_need_a_liquid_loop(tmp_path, cooling):
    catalog = _liquid_catalog(tmp_path)
    plan = _plan_text(
        tmp_path,
        f"name: x\ncatalog: [{catalog}]\nsite: {{cooling: {cooling}}}\ncompute: {{server: dgx-h100-dlc, servers: 4}}\n",
    )
    budget = power_budget(plan)
    rack = next(r for r in budget.racks if r.purpose == "compute")
    servers = [d for d in budget.devices if d.rack == rack.name and d.role == "gpu-server"]
    assert rack.load.liquid_w == pytest.approx(len(servers) * 10_200 * 0.85)
    assert rack.load.air_w == pytest.approx(rack.load.max_w - rack.load.liquid_w)
    assert rack.cooling_needed == "liquid"
    loop = [f for f in plan.findings if "coolant loop" in f.message]
    assert bool(loop) == (cooling != "liquid")


# ------------------------------------------------------------------------------------------- user input


def test_a_bad_air_temperature_rise_is_reported_where_it_stands(tmp_path):
    path = write_design(tmp_path, "name: x\nsite:\n  air_temperature_rise_k: 0\ncompute: {servers: 4}\n")
    with pytest.raises(DesignError) as error:
        load_design(path)
    [problem] = [str(p) for p in error.value.problems]
    assert "design.yaml:3:" in problem and "site.air_temperature_rise_k" in problem


def test_airflow_follows_the_designs_temperature_rise(tmp_path):
    warm = power_budget(_plan_text(tmp_path, "name: x\nsite: {air_temperature_rise_k: 20}\ncompute: {servers: 4}\n"))
    default = power_budget(_plan_text(tmp_path, "name: x\ncompute: {servers: 4}\n"))
    assert default.rise_k == 11.1
    ratio = airflow_cfm(default.total.max_w, default.rise_k) / airflow_cfm(warm.total.max_w, warm.rise_k)
    assert math.isclose(ratio, 20 / 11.1)


def test_each_feed_is_sized_for_the_load_it_takes_when_another_feed_is_lost():
    """N+1: a rack's maximum is shared by its PDUs less one (41 kW over 2 of 3 = 20.6 kW on each feed it keeps);
    the feeds together carry each rack's maximum times P / (P - 1)."""
    budget = _budget("superpod-h200-4su")
    loads = budget.feed_loads_w
    assert set(loads) == {"A", "B", "C"}
    expected = sum(r.load.max_w * r.circuits.circuits / (r.circuits.circuits - 1) for r in budget.racks)
    assert sum(loads.values()) == pytest.approx(expected)
    assert loads["A"] > loads["C"] > budget.total.max_w / 3  # every rack has an A and a B PDU, compute racks a C
