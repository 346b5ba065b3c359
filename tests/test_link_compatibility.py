"""Issue 31 item 3: both ends of every link speak one generation; a link that cannot come up is an error with its
fix (the NDR UFM appliance's ConnectX-7 on a Q3400-RA's XDR port was only a warning)."""

from __future__ import annotations

import pytest
from conftest import planned, write_design

from gpucluster import load_design, plan_design
from gpucluster.plan.model import RULE_PREFIX
from gpucluster.plan.queries import links_on

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
    links = [k for k in links_on(plan, "compute") if k.a_device in {d.name for d in managers}]
    assert len(links) == 4 and {k.speed_gbps for k in links} == {800}


@pytest.mark.parametrize("design", ["gb200-nvl72-1su", "gb300-nvl72-4su", "b300-xdr-1su", "b200-roce-2su"])
def test_every_example_links_ends_of_one_generation(design):
    _loaded, plan = planned(design)
    assert plan.facts["incompatible_links"] == []
    assert [f.severity for f in plan.findings if f.rule == RULE] == ["ok"]


# ----------------------------------------------------------------------------------------------- power feeds


def test_one_feed_loss_stopping_every_switch_of_a_fabric_is_an_error():
    """Issue 31 item 3: every Q3400 of a fabric stopped by one feed loss was only a warning per model."""
    import dataclasses

    from gpucluster.analyse import rules
    from gpucluster.plan.power.cords import feed_loss

    _loaded, built = planned("b300-xdr-1su")
    q3400 = built.catalog_parts["q3400-ra"]
    understated = q3400.model_copy(update={"psus": q3400.psus.model_copy(update={"rating_w": 875})})
    plan = dataclasses.replace(built, catalog_parts={**built.catalog_parts, "q3400-ra": understated})
    found = rules.fabric_feed_loss(plan, feed_loss(plan, plan.design.site.power_feed))
    assert found == [{"network": "compute", "part": "q3400-ra", "switches": 12}]
    findings = rules.check_rules({**built.facts, "fabric_feed_loss": found})
    (error,) = [f for f in findings if f.rule == "rack-power-distribution" and f.severity == "error"]
    assert "every compute switch (12 x q3400-ra)" in error.message and "site.power_feed.redundancy" in error.message


@pytest.mark.parametrize("design", ["gb300-nvl72-4su", "b300-xdr-1su"])
def test_the_xdr_examples_keep_every_q3400_running_on_one_feed(design):
    """The Q3400's eight C20-fed PSUs (over 2,000 W each, derived from the inlet) split N+N: the ones left after a
    feed loss carry its 7 kW maximum, so no feed loss stops the fabric."""
    _loaded, plan = planned(design)
    assert plan.facts["fabric_feed_loss"] == []
    assert not [f for f in plan.facts["feed_loss"] if f["part"] == "q3400-ra"]
    psus = plan.catalog_parts["q3400-ra"].psus
    assert (psus.count, psus.redundancy) == (8, "N+N") and psus.count // 2 * psus.rating_w >= 7000
