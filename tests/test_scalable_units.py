"""Partial scalable units as the DGX SuperPOD RA builds them: the last SU may hold fewer servers and still gets its
own rail leaves; the fabric managers take a server slot of SU 1 (the RA: "a DGX system must be removed to
accommodate for UFM connectivity") or, with ``compute_fabric.fabric_manager_ports: own-leaf``, a leaf of their own
outside the SUs, racked with the management servers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from conftest import write_design

from gpucluster import load_design, plan_design
from gpucluster.analyse.deviations import deviations
from gpucluster.plan.model import Plan
from gpucluster.plan.queries import links_on


def _plan(tmp_path: Path, servers: int, fabric: str = "") -> Plan:
    fields = f"fabric_manager_ports: {fabric}" if fabric else ""
    path = write_design(
        tmp_path,
        f"name: p{servers}\ncompute: {{server: dgx-h100, servers: {servers}, spare_servers: 0}}\n"
        f"compute_fabric: {{{fields}}}\n",
    )
    return plan_design(load_design(path))


def _servers_per_su(plan: Plan) -> dict[int, int]:
    return dict(sorted(Counter(d.su for d in plan.gpu_nodes()).items()))


def _hosts_per_leaf(plan: Plan) -> dict[str, int]:
    down = Counter(link.b_device for link in links_on(plan, "compute") if link.tier == 0)
    return {leaf.name: down[leaf.name] for leaf in plan.switches("compute", 1)}


def test_1000_gpus_as_the_ra_builds_them_end_in_a_partial_fourth_su_with_its_own_rail_leaves(tmp_path):
    """125 DGX H100 and the UFM slot: SU 1 holds 31 (the UFM takes the 32nd slot), SUs 2-3 32 each, SU 4 the last 30
    on 8 rail leaves of its own; 32 leaves and 16 spines, every leaf keeping 32 uplinks (as the RA's 127-node
    4-SU fabric keeps 1,024 leaf-spine cables)."""
    plan = _plan(tmp_path, 125)
    assert _servers_per_su(plan) == {1: 31, 2: 32, 3: 32, 4: 30}
    assert plan.totals.switches["compute"] == {"leaf": 32, "spine": 16}
    su4 = [leaf for leaf in plan.switches("compute", 1) if leaf.su == 4]
    assert len(su4) == 8 and {_hosts_per_leaf(plan)[leaf.name] for leaf in su4} == {30}
    assert plan.totals.links["compute"] == {"host-leaf": 125 * 8 + 4, "leaf-spine": 1024}  # + 2 UFM x 2 ports
    ufm_leaves = {link.b_device for link in links_on(plan, "compute") if link.a_device.startswith("ufm-")}
    assert {plan.devices[leaf].su for leaf in ufm_leaves} == {1}


def test_fabric_managers_on_their_own_leaf_leave_every_su_its_32_servers(tmp_path):
    """1,000 GPUs with the UFM pair outside the SUs: 3 full SUs of 32 and a partial SU of 29 with its own 8 rail
    leaves, the fabric managers on a leaf of no SU with two uplinks, racked with the management servers. Four SUs'
    rail leaves fill 16 QM9700 spines, so the managers' uplinks need a wider spine tier: the plan says so and names
    the RA's server slot instead."""
    plan = _plan(tmp_path, 125, "own-leaf")
    assert _servers_per_su(plan) == {1: 32, 2: 32, 3: 32, 4: 29}
    leaves = plan.switches("compute", 1)
    (fm_leaf,) = [leaf for leaf in leaves if leaf.name == "compute-leaf-fm"]
    assert fm_leaf.su is None and fm_leaf.rail is None
    assert _hosts_per_leaf(plan)["compute-leaf-fm"] == 4  # 2 UFM x 2 NDR200 ports, on two split ports
    assert sum(1 for link in links_on(plan, "compute") if link.a_device == fm_leaf.name and link.tier == 1) == 2
    su4 = [leaf for leaf in leaves if leaf.su == 4]
    assert len(su4) == 8 and {_hosts_per_leaf(plan)[leaf.name] for leaf in su4} == {29}
    assert plan.totals.switches["compute"] == {"leaf": 33, "spine": 32}
    (warning,) = [f for f in plan.findings if "own leaf needs" in f.message]
    assert "16 more top-tier qm9700 switches" in warning.message and "fabric_manager_ports: su-slot" in warning.message
    assert plan.analysis["compute"]["all_hosts_reach_each_other"]
    ufm_racks = {plan.devices[name].rack for name in ("ufm-01", "ufm-02")}
    head_racks = {d.rack for d in plan.devices_with("management-server")}
    assert ufm_racks <= head_racks
    assert plan.settings.fabric_manager_ports == "own-leaf"
    assert "UFM placement" in [d.subject for d in deviations(plan)]


def test_fabric_managers_on_their_own_leaf_cost_one_leaf_where_the_spines_have_free_ports(tmp_path):
    """Three full SUs (96 DGX H100): 24 rail leaves use 48 of each of 16 spines' 64 ports, so the managers' leaf and
    its two uplinks fit: 25 leaves and the RA's 16 spines, every SU whole, no warning."""
    plan = _plan(tmp_path, 96, "own-leaf")
    assert _servers_per_su(plan) == {1: 32, 2: 32, 3: 32}
    assert plan.totals.switches["compute"] == {"leaf": 25, "spine": 16}
    assert not [f for f in plan.findings if "own leaf needs" in f.message]
    assert plan.analysis["compute"]["all_hosts_reach_each_other"]
    spine_ports = Counter(link.b_device for link in links_on(plan, "compute") if link.tier == 1)
    assert max(spine_ports.values()) <= 64


def test_a_partial_unit_warning_offers_the_managers_own_leaf(tmp_path):
    """64 DGX H100 with the UFM slot spill into a third SU of one server: the warning names own-leaf among the fixes."""
    plan = _plan(tmp_path, 64)
    (warning,) = [f for f in plan.findings if f.rule == "planning" and "scalable unit 3" in f.message]
    assert "compute_fabric.fabric_manager_ports: own-leaf" in warning.message
    fixed = _plan(tmp_path, 64, "own-leaf")
    assert fixed.totals.scalable_units == 2
    assert not [f for f in fixed.findings if "scalable unit" in f.message]
