"""One registry of device roles and one of networks (plan/registry.py), the plan queries built once
(plan/queries.py), backplane links and NVLink domains."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import planned

from gpucluster.analyse.scheduling import nvlink_domains
from gpucluster.analyse.totals import totals
from gpucluster.catalog.load import load_catalog
from gpucluster.design.schema import Cabling
from gpucluster.plan.cables import add_cables
from gpucluster.plan.model import Device, Link, PlanDraft, RackPlan
from gpucluster.plan.queries import queries
from gpucluster.plan.registry import NETWORK_INFO, ROLES, elevation_fill, tint


def test_every_role_and_network_of_a_plan_has_a_registry_entry():
    _, plan = planned("superpod-h100-1su")
    assert {d.role for d in plan.devices.values()} <= set(ROLES)
    assert {link.network for link in plan.links} <= set(NETWORK_INFO)
    assert plan.networks() == ["compute", "storage", "inband", "oob"]  # nvlink only where a plan has such links


def test_a_device_of_an_unknown_role_or_network_is_refused():
    plan = PlanDraft.scratch("roles")
    with pytest.raises(ValueError, match="unknown device role 'gpu'"):
        plan.add(Device("x", "dgx-h100", "gpu"))
    with pytest.raises(ValueError, match="unknown network 'nvswitch'"):
        plan.add(Device("y", "qm9700", "switch", network="nvswitch"))


def test_the_rack_scale_roles_and_the_nvlink_network_are_in_the_registry():
    for name in ("compute-tray", "nvlink-switch-tray", "power-shelf", "coolant-distribution-unit"):
        assert ROLES[name].label and ROLES[name].colour.startswith("#")
    assert ROLES["power-shelf"].plural == "power shelves"
    nvlink = NETWORK_INFO["nvlink"]
    assert not nvlink.cabled and not nvlink.every_design


def test_backplane_links_are_counted_but_get_no_cable():
    plan = PlanDraft.scratch("nvl")
    plan.racks["A01"] = RackPlan("A01", "legrand-nvidpd13", 0, 0, 0.0, 0.0, "compute", 48)
    plan.add(Device("tray-01", "gb200-tray", "compute-tray", rack="A01", nvlink_domain="A01-nvl1"))
    plan.add(Device("nvswitch-01", "nvlink-switch-tray", "nvlink-switch-tray", rack="A01"))
    plan.links += [Link("nvlink", 0, "tray-01", f"nvl{i}", "nvswitch-01", f"p{i}", 1800.0) for i in range(1, 5)]
    add_cables(plan, load_catalog(), Cabling())
    assert plan.cables == []
    assert plan.networks()[-1] == "nvlink"
    assert totals(plan).links["nvlink"] == {"host-leaf": 4}


def test_servers_sharing_an_nvlink_domain_are_one_domain_to_the_schedulers():
    plan = PlanDraft.scratch("domains")
    for i, domain in enumerate(["A01-nvl1", "A01-nvl1", "A02-nvl1", None], 1):
        plan.add(Device(f"gpu{i}", "dgx-h100", "gpu-server", nvlink_domain=domain))
    assert nvlink_domains(plan, ["gpu1", "gpu2", "gpu3", "gpu4"]) == [("gpu1", "gpu2"), ("gpu3",)]


def test_plan_queries_agree_with_the_links_they_index():
    _, plan = planned("superpod-h100-1su")
    found_in = queries(plan)
    rails: dict[str, dict[int, int]] = {}
    for i, link in enumerate(plan.links):
        if link.network == "compute" and link.tier == 0 and link.rail is not None:
            rails.setdefault(link.a_device, {})[link.rail] = i
    assert found_in.rail_links == rails
    for (network, tier), members in found_in.links_by_network_tier.items():
        assert all(plan.links[i].network == network and plan.links[i].tier == tier for i in members)
    assert sum(len(m) for m in found_in.links_by_network_tier.values()) == len(plan.links)
    server = next(iter(rails))
    assert set(found_in.server_leaves[server]["compute"]) == {plan.links[i].b_device for i in rails[server].values()}
    # one per physical plan: the analysed plan shares its physical plan's; a copy with other links has its own
    assert queries(plan) is found_in and queries(plan.made_from) is found_in
    assert queries(dataclasses.replace(plan, links=list(plan.links))) is not found_in


def test_plan_queries_give_each_network_its_links_in_plan_order():
    _, plan = planned("superpod-h100-1su")
    found_in = queries(plan)
    networks = list(dict.fromkeys(link.network for link in plan.links))
    assert found_in.networks() == networks
    for network in networks:
        assert found_in.links(network) == [link for link in plan.links if link.network == network]
        assert found_in.first_link(network) is next(link for link in plan.links if link.network == network)
        tier0 = [i for i, link in enumerate(plan.links) if link.network == network and link.tier == 0]
        assert list(found_in.link_indexes(network, 0)) == tier0
        leaves: dict[str, set[str]] = {}
        for i in tier0:
            leaves.setdefault(plan.links[i].a_device, set()).add(plan.links[i].b_device)
        assert found_in.host_leaves(network) == leaves and list(found_in.host_leaves(network)) == list(leaves)
    assert found_in.links("no-such-network") == [] and found_in.first_link("no-such-network") is None


def test_rack_elevations_fill_with_the_role_colour_tinted():
    assert elevation_fill("gpu-server") == tint(ROLES["gpu-server"].colour)
    assert tint("#000000", 0.5) == "#808080"
