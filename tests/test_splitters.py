"""200G on 400G twin-port cages: a host port running at half a switch port's speed or less never takes a whole 400G
port on a straight fibre (which runs at 400G). It takes one half of a switch port split in two, cabled with one 1:2
splitter fibre (NVIDIA MFP7E20: a twin-port module in the switch cage, a single-port 400G module in 200G mode at
each host), or, for a QSFP56 host, a whole port on the RA's 2 x 200G active optical splitter (MFA7U10)."""

from __future__ import annotations

import pytest
from conftest import EXAMPLES, planned, write_design

from gpucluster import load_design, plan_design
from gpucluster.analyse.deviations import deviations
from gpucluster.catalog.ports import device_ports
from gpucluster.catalog.schema import Cable, Transceiver
from gpucluster.plan.model import Plan


def _slow_links_on_twin_cages(plan: Plan) -> list[int]:
    """Indexes of the links whose switch end is a 400G port of a twin-port cage (or its half) and that run at half
    that speed or less."""
    found = []
    for index, link in enumerate(plan.links):
        switch = plan.devices[link.b_device]
        if switch.role != "switch" or link.tier != 0:
            continue
        pool = device_ports(plan.catalog_parts[switch.part]).get("fabric")
        if pool is None or pool.speed_gbps != 400 or pool.cages.count(pool.cages[0]) != 2:
            continue
        on_pool = link.b_port in pool.names or any(link.b_port in pair for pair in pool.halves)
        if on_pool and link.speed_gbps * 2 <= pool.speed_gbps:
            found.append(index)
    return found


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_200g_link_on_a_400g_twin_port_cage_uses_a_splitter(name: str) -> None:
    _loaded, plan = planned(name)
    cable_of = {i: cable for cable in plan.cables for i in cable.links}
    for index in _slow_links_on_twin_cages(plan):
        link, cable = plan.links[index], cable_of[index]
        part = plan.catalog_parts[cable.cable_part]
        assert isinstance(part, Cable) and part.split == 2, (link, cable.cable_part)
        if part.media in ("mmf", "smf"):  # a splitter fibre into a split port, with the modules NVIDIA pairs with it
            assert part.splits_port and link.b_half in (1, 2), (link, cable.cable_part)
            modules = (cable.a_transceiver, cable.b_transceiver)  # a one-leg cable keeps its link's ends: host first
            switch_module, host_module = (
                plan.catalog_parts[t] for t in (modules if len(cable.links) == 2 else modules[::-1])
            )
            assert isinstance(switch_module, Transceiver) and isinstance(host_module, Transceiver)
            assert (switch_module.ports, switch_module.end, host_module.ports) == (2, "switch", 1)
            assert host_module.speed_gbps == 400  # a single-port 400G module runs 200G on a splitter leg
            assert all(plan.links[i].b_device == link.b_device for i in cable.links)  # one switch port's halves
        else:  # the RA's 2 x 200G AOC for QSFP56 hosts: a whole port each
            host = plan.catalog_parts[plan.devices[link.a_device].part]
            cages = {g.cage_type for g in host.ports for port, _cage in g.port_names() if port == link.a_port}
            assert not link.b_half and cages == {"qsfp56"}, (link, cable.cable_part)


def test_the_halves_of_one_split_port_share_one_splitter_and_no_port_is_used_twice() -> None:
    _loaded, plan = planned("b200-roce-2su")  # 200G BlueField-3 in-band ports on SN5600 leaves
    halves = [link for link in plan.links if link.b_half]
    assert len(halves) > 100
    used = [(link.b_device, link.b_port) for link in plan.links]
    assert len(used) == len(set(used))
    for cable in plan.cables:
        links = [plan.links[i] for i in cable.links]
        if any(link.b_half for link in links):
            assert cable.cable_part == "mfp7e20-mmf-split-200g" and len(links) <= 2
            assert sorted(link.b_half for link in links) in ([1], [1, 2])


def test_the_default_design_runs_every_host_port_at_its_speed() -> None:
    """The MinIO staging tier's 200GbE ports take SN5600 in-band ports split by splitter fibres, where SN4600C
    leaves ran them at 100G (the rule host-ports-at-full-speed warned)."""
    _loaded, plan = planned("superpod-h200-4su")
    assert plan.settings.inband_switch == "sn5600"
    assert not [f for f in plan.findings if f.rule == "rule:host-ports-at-full-speed" and f.severity != "ok"]
    objects = [link for link in plan.links if plan.devices[link.a_device].role == "object-storage"]
    assert objects and all(link.speed_gbps == 200 and link.b_half for link in objects)


def test_200g_hosts_on_whole_xdr_ports_are_a_warning_and_a_deviation_not_a_silent_straight_fibre(tmp_path) -> None:
    """No NVIDIA document was found for a 200G host (the NDR UFM's NDR200 ports) on an 800G XDR port: the plan's
    straight fibre there is unconfirmed, and the rule and the report's deviations say so instead of planning it
    silently (and link-ends-compatible refuses its XDR module: tests/test_link_compatibility.py)."""
    path = write_design(
        tmp_path,
        "name: xdr\nsite: {rack_power_budget_kw: 85, cooling_capacity_kw: 85}\n"
        "compute: {server: dgx-b300, servers: 71, spare_servers: 0}\n"
        "compute_fabric: {switch: q3400-ra, scalable_unit_servers: 72, fabric_manager: ufm-enterprise-ndr}\n",
    )
    plan = plan_design(load_design(path))
    (record,) = plan.facts["unsplit_half_speed_links"]
    assert (record["link_gbps"], record["port_gbps"], record["links"]) == (200, 800, 4)
    assert record["host_part"].startswith("ufm") and record["cable_part"] == "mfp7e30-smf-xdr"
    (warning,) = [f for f in plan.findings if f.rule == "rule:host-ports-at-full-speed" and "whole 800G" in f.message]
    assert warning.severity == "warning" and "confirm it with NVIDIA" in warning.message
    assert any(d.subject.startswith("200G hosts on 800G") for d in deviations(plan))


@pytest.mark.parametrize("name", ["b300-xdr-1su", "gb300-nvl72-4su"])
def test_the_xdr_examples_ufm_takes_whole_xdr_ports_at_their_speed(name: str) -> None:
    _loaded, plan = planned(name)
    assert plan.facts["unsplit_half_speed_links"] == []
    assert not [f for f in plan.findings if f.rule == "rule:host-ports-at-full-speed" and f.severity != "ok"]


def test_no_half_speed_host_takes_a_whole_port_on_a_switch_whose_ports_split() -> None:
    _loaded, plan = planned("superpod-h200-4su")
    assert plan.facts["unsplit_half_speed_links"] == []
