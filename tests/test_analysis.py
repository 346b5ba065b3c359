"""The graph analyses: bisection bandwidth (checked against networkx maximum flow), hops, failures."""

from __future__ import annotations

import networkx as nx
import pytest
from conftest import write_design

from gpucluster import load_design, plan_design
from gpucluster.plan.analysis import graphs
from gpucluster.plan.model import Plan


def _max_flow_between_leaf_halves(plan: Plan) -> float:
    """Maximum flow from the GPU ports on the first half of the compute leaves to those on the second half,
    on a port-level graph (hosts do not forward: each GPU port is its own endpoint)."""
    leaves = sorted(d.name for d in plan.switches("compute", 1))
    first = set(leaves[: len(leaves) // 2])
    graph = nx.DiGraph()
    for link in plan.links:
        if link.network != "compute":
            continue
        if link.tier == 0:
            port = f"{link.a_device}:{link.a_port}"
            side = "source" if link.b_device in first else "sink"
            edges = [(side, port), (port, link.b_device)] if side == "source" else [(link.b_device, port), (port, side)]
            for u, v in edges:
                graph.add_edge(
                    u, v, capacity=link.speed_gbps if "source" not in (u, v) and "sink" not in (u, v) else 1e12
                )
        else:
            for u, v in ((link.a_device, link.b_device), (link.b_device, link.a_device)):
                capacity = graph.get_edge_data(u, v, {"capacity": 0})["capacity"] + link.speed_gbps
                graph.add_edge(u, v, capacity=capacity)
    return nx.maximum_flow_value(graph, "source", "sink")


@pytest.mark.parametrize(
    ("servers", "oversubscription"),
    [(32, "1:1"), (32, "2:1"), (128, "1:1"), (128, "4:3"), (512, "1:1")],
)
def test_bisection_bandwidth_equals_the_maximum_flow_between_leaf_halves(tmp_path, servers, oversubscription):
    path = write_design(
        tmp_path,
        f"name: x\ncompute: {{server: dgx-h100, servers: {servers}, spare_servers: 0}}\n"
        f"compute_fabric: {{fabric_manager: null, oversubscription: '{oversubscription}'}}\n",
    )
    plan = plan_design(load_design(path))
    bisection = plan.analysis["compute"]["bisection_bandwidth_gbps"]
    assert bisection == pytest.approx(_max_flow_between_leaf_halves(plan))


def test_oversubscribed_leaves_halve_the_bisection(tmp_path):
    def bisection(ratio: str) -> float:
        path = write_design(
            tmp_path,
            f"name: x\ncompute: {{servers: 64, spare_servers: 0}}\n"
            f"compute_fabric: {{fabric_manager: null, oversubscription: '{ratio}'}}\n",
        )
        return plan_design(load_design(path)).analysis["compute"]["bisection_bandwidth_gbps"]

    assert bisection("2:1") == bisection("1:1") / 2 == 64 * 8 * 400 / 4


def test_switch_hops_grow_with_the_tiers(h100_1su):
    _loaded, plan = h100_1su
    hops = plan.analysis["compute"]["hops"]
    assert hops["max_switch_hops"] == 3  # leaf, spine, leaf
    assert set(hops["from_first_leaf"]) == {"1", "3"}


def test_one_leaf_failure_cuts_off_its_rail_of_one_su_and_leaves_the_rest_connected(h100_1su):
    _loaded, plan = h100_1su
    leaf = plan.analysis["compute"]["single_switch_failure"]["leaf"]
    assert leaf["host_ports_cut_off"] in (31, 33)  # one rail of the SU (plus the UFM pair's split port on 2 rails)
    assert leaf["still_connected"]
    spine = plan.analysis["compute"]["single_switch_failure"]["spine"]
    assert spine["host_ports_cut_off"] == 0 and spine["still_connected"]
    assert spine["tier_bandwidth_lost_fraction"] == pytest.approx(1 / 4)


def test_every_network_is_its_own_graph_with_the_plan_links(h200_4su):
    _loaded, plan = h200_4su
    for network, graph in graphs(plan).items():
        links = [link for link in plan.links if link.network == network]
        assert sum(count for _u, _v, count in graph.edges(data="links")) == len(links)
        assert graph.graph["network"] == network


def test_a_switch_of_another_network_is_a_managed_host_on_the_out_of_band_graph(h100_1su):
    _loaded, plan = h100_1su
    oob = graphs(plan)["oob"]
    assert oob.nodes["compute-leaf-su01-r1"]["role"] == "managed-switch"
    assert plan.analysis["oob"]["single_switch_failure"]["leaf"]["switch"].startswith("oob-leaf")
