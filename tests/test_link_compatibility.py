"""Issue 31 item 3: both ends of every link speak one generation; a link that cannot come up is an error with its
fix (the NDR UFM appliance's ConnectX-7 on a Q3400-RA's XDR port was only a warning)."""

from __future__ import annotations

import pytest
from conftest import planned, write_design

from gpucluster import load_design, plan_design
from gpucluster.plan.model import RULE_PREFIX

RULE = RULE_PREFIX + "link-ends-compatible"
XDR_DESIGN = (
    "name: xdr\nsite: {rack_power_budget_kw: 85, cooling_capacity_kw: 85}\n"
    "compute: {server: dgx-b300, servers: 72, spare_servers: 0}\n"
    "compute_fabric: {switch: q3400-ra, scalable_unit_servers: 72, fabric_manager: %s}\n"
)


def test_an_ndr_ufm_on_an_xdr_fabric_is_an_error_naming_the_fix(tmp_path):
    plan = plan_design(load_design(write_design(tmp_path, XDR_DESIGN % "ufm-enterprise-ndr")))
    errors = [f for f in plan.findings if f.rule == RULE and f.severity == "error"]
    assert errors, [f.message for f in plan.findings if f.rule == RULE]
    message = errors[0].message
    assert "ufm-enterprise-ndr" in message and "infiniband-xdr" in message
    assert "compute_fabric.fabric_manager" in message
    facts = plan.facts["incompatible_links"]
    assert sum(g["links"] for g in facts if g["other"] == "mms4a20-xm800-host-xdr") == 4  # the pair's 4 ports


def test_the_xdr_ufm_appliance_links_to_a_q3400_at_xdr(tmp_path):
    plan = plan_design(load_design(write_design(tmp_path, XDR_DESIGN % "auto")))
    assert plan.facts["incompatible_links"] == []
    managers = [d for d in plan.devices_with("fabric-manager") if (d.network or "compute") == "compute"]
    assert {d.part for d in managers} == {"ufm-enterprise-xdr"}  # the NDR storage fabric keeps its NDR pair
    links = [k for k in plan.links_on("compute") if k.a_device in {d.name for d in managers}]
    assert len(links) == 4 and {k.speed_gbps for k in links} == {800}


@pytest.mark.parametrize("design", ["gb200-nvl72-1su", "gb300-nvl72-4su", "b300-xdr-1su", "b200-roce-2su"])
def test_every_example_links_ends_of_one_generation(design):
    _loaded, plan = planned(design)
    assert plan.facts["incompatible_links"] == []
    assert [f.severity for f in plan.findings if f.rule == RULE] == ["ok"]
