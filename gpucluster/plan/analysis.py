"""Graph analyses with networkx: reachability, oversubscription, bisection bandwidth, hop counts,
and what one switch failure cuts off.

Hosts do not forward traffic, so "GPU a reaches GPU b over the fabric" means the leaves that
carry their ports are connected through switches alone: analyses run on the switch subgraph.
"""

from __future__ import annotations

from collections import Counter

import networkx as nx

from gpucluster.plan import registry
from gpucluster.plan.memo import per_plan
from gpucluster.plan.model import (
    Hops,
    LeafFailure,
    NetworkAnalysis,
    PhysicalPlan,
    Plan,
    PlaneAnalysis,
    PlaneFailure,
    Reachability,
    ServiceLoss,
    SwitchFailure,
    Tier,
    TierSummary,
)
from gpucluster.plan.queries import queries


@per_plan
def graphs(plan: Plan) -> dict[str, nx.Graph[str]]:
    """One graph per network: devices as nodes, parallel links merged into one edge with a count. Made once per
    complete plan (memo.per_plan): the analyses, drawings and the schedulers' view read the same graphs."""
    merged: dict[str, dict[tuple[str, str], list[float]]] = {network: {} for network in plan.networks()}
    # a switch that forwards another network's traffic (the in-band top tier taking the out-of-band uplinks, as the
    # RA cables them) is the upper end of that network's switch-to-switch links: a switch of it too
    carriers: dict[str, set[str]] = {network: set() for network in merged}
    for link in plan.links:
        # one edge per pair of devices, whichever end a link names first (an in-band core's management port on an
        # out-of-band switch that uplinks into it is two links between the same pair), at the higher link tier
        a, b, tier = link.a_device, link.b_device, link.tier
        edges = merged[link.network]
        key = (a, b) if a < b else (b, a)
        edge = edges.get(key)
        if edge is None:
            edges[key] = [1, link.speed_gbps, tier]
        else:
            edge[0] += 1
            edge[1] += link.speed_gbps
            if tier > edge[2]:
                edge[2] = tier
        if tier >= 1:
            carriers[link.network].add(b)
    built = {}
    for network, edges in merged.items():
        graph: nx.Graph[str] = nx.Graph(network=network)
        graph.add_edges_from(
            (a, b, {"links": n, "bandwidth_gbps": bandwidth, "tier": tier})
            for (a, b), (n, bandwidth, tier) in edges.items()
        )
        for node, data in graph.nodes(data=True):
            device = plan.devices[node]
            # a switch of another network appears here only by its management port: a managed host
            foreign = device.network != network and node not in carriers[network]
            data["role"] = "managed-switch" if device.role == "switch" and foreign else device.role
            data["tier"] = device.tier
            data["plane"] = device.plane if not foreign else None
        built[network] = graph
    return built


def _switch_graph(graph: nx.Graph[str]) -> nx.Graph[str]:
    """The network's switches and the links between them, as a graph of their own rather than a subgraph view: the
    analyses walk it many times, and a view filters every neighbour on every walk (most of the analyses' time at
    131,072 GPUs). Its edges carry no data (none of the analyses read any)."""
    nodes = [n for n, data in graph.nodes(data=True) if data.get("role") == "switch"]
    is_switch = set(nodes)
    switches: nx.Graph[str] = nx.Graph(network=graph.graph["network"])
    switches.add_nodes_from((n, graph.nodes[n]) for n in nodes)
    adjacency = graph.adj
    switches.add_edges_from((a, b) for a in nodes for b in adjacency[a] if b in is_switch and a < b)
    return switches


def analyse(plan: PhysicalPlan) -> dict[str, NetworkAnalysis]:
    """Per network: reachability, tiers, bisection, hops, and the effect of one switch failure per tier.
    A multi-plane fabric is analysed plane by plane (each plane must connect every host port on it) and
    gains what losing a whole plane costs."""
    results: dict[str, NetworkAnalysis] = {}
    for network in plan.networks():
        graph = graphs(plan)[network]
        tiers = [t for t in plan.tiers if t.network == network]
        if graph.number_of_nodes() == 0:
            continue
        if network == "nvlink":
            results[network] = _nvlink_domains(plan, graph)
            continue
        switches = _switch_graph(graph)
        host_leaves = _host_leaves(plan, graph)
        planes: list[int] = sorted({p for p in nx.get_node_attributes(switches, "plane").values() if p is not None})
        if not planes:
            reach = _reachability(switches, host_leaves)
            results[network] = {
                "all_hosts_reach_each_other": reach["all_hosts_reach_each_other"],
                "switch_components": reach["switch_components"],
                "tiers": [_tier_summary(t) for t in tiers],
                "bisection_bandwidth_gbps": bisection_bandwidth_gbps(tiers),
                "hops": _hops(switches, host_leaves) if reach["all_hosts_reach_each_other"] else {},
                "single_switch_failure": _failures(plan, graph, switches, host_leaves, tiers),
                "worst_leaf_failure": worst_leaf_failure(plan, network),
            }
            continue
        per_plane: dict[str, PlaneAnalysis] = {}
        for plane in planes:
            members = [n for n, data in switches.nodes(data=True) if data.get("plane") == plane]
            plane_switches = switches.subgraph(members)
            plane_leaves = {leaf: n for leaf, n in host_leaves.items() if leaf in plane_switches}
            reach = _reachability(plane_switches, plane_leaves)
            per_plane[str(plane)] = {
                **reach,
                "host_ports": sum(plane_leaves.values()),
                "hops": _hops(plane_switches, plane_leaves) if reach["all_hosts_reach_each_other"] else {},
            }
        first = per_plane[str(planes[0])]
        results[network] = {
            "all_hosts_reach_each_other": all(p["all_hosts_reach_each_other"] for p in per_plane.values()),
            "switch_components": sum(p["switch_components"] for p in per_plane.values()),
            "tiers": [_tier_summary(t) for t in tiers],
            "bisection_bandwidth_gbps": bisection_bandwidth_gbps(tiers),
            "hops": first["hops"],
            "single_switch_failure": _failures(plan, graph, switches, host_leaves, tiers),
            "worst_leaf_failure": worst_leaf_failure(plan, network),
            "planes": per_plane,
            "plane_failure": _plane_failure(plan, graph, planes),
        }
    return results


def _nvlink_domains(plan: Plan, graph: nx.Graph[str]) -> NetworkAnalysis:
    """The NVLink backplanes: within each domain (a rack-scale system's rack) every GPU server reaches every other
    through the domain's switch trays alone, one switch hop apart; domains are separate by design (between them
    traffic runs on the compute fabric)."""
    members: dict[str, list[str]] = {}
    for node in graph.nodes:
        members.setdefault(str(plan.devices[node].nvlink_domain), []).append(node)
    whole = all(nx.is_connected(graph.subgraph(nodes)) for nodes in members.values())
    links = sum(data["links"] for _a, _b, data in graph.edges(data=True))
    return {
        "all_hosts_reach_each_other": whole,
        "scope": "within each NVLink domain",
        "domains": len(members),
        "switch_components": nx.number_connected_components(graph),
        "links": links,
        "tiers": [],
        "bisection_bandwidth_gbps": 0.0,
        "hops": {"max_switch_hops": 1} if whole else {},
        "single_switch_failure": {},
    }


def _plane_failure(plan: Plan, graph: nx.Graph[str], planes: list[int]) -> PlaneFailure:
    """What losing one whole plane (its switches, optics or cables) costs: every GPU keeps its ports on
    the other planes, so no host is cut off and jobs run on the remaining share of the bandwidth (the
    B300 RA: "continue to operate on 1/2 of the original bandwidth" with two planes)."""
    lost = planes[0]
    hosts = {n for n, role in graph.nodes(data="role") if registry.is_gpu_node(str(role))}
    ports = queries(plan).links(graph.graph["network"], 0)
    on_lost = [link for link in ports if link.plane == lost]
    keeping = {link.a_device for link in ports if link.plane != lost}
    return {
        "plane": lost,
        "host_ports_lost": len(on_lost),
        "hosts_cut_off": len(hosts - keeping),
        "bandwidth_kept_fraction": round(1 - len(on_lost) / len(ports), 6) if ports else 0.0,
    }


def _host_leaves(plan: Plan, graph: nx.Graph[str]) -> dict[str, int]:
    """Leaf switch -> host ports it carries."""
    return dict(queries(plan).host_ports_by_leaf.get(graph.graph["network"], {}))


def _reachability(switches: nx.Graph[str], host_leaves: dict[str, int]) -> Reachability:
    components = list(nx.connected_components(switches))
    with_hosts = [c for c in components if any(leaf in c for leaf in host_leaves)]
    return {
        "all_hosts_reach_each_other": len(with_hosts) <= 1,
        "switch_components": len(components),
    }


def _tier_summary(tier: Tier) -> TierSummary:
    return {
        "tier": tier.tier,
        "name": tier.name,
        "switch_part": tier.switch_part,
        "switches": tier.switches,
        "down_links": tier.down_links,
        "up_links": tier.up_links,
        "down_gbps": tier.down_gbps,
        "up_gbps": tier.up_gbps,
        "oversubscription": round(tier.oversubscription, 4) if tier.up_gbps else None,
    }


def bisection_bandwidth_gbps(tiers: list[Tier]) -> float:
    """Bandwidth across a cut that splits the hosts in half: the narrowest tier's half capacity.

    In a fat tree every tier boundary carries the cut's traffic, so the cut is limited by the
    host injection bandwidth or by the smallest up-bandwidth of any tier, halved. The tests check
    this against networkx's maximum flow on small fabrics.
    """
    if not tiers:
        return 0.0
    capacities = [tiers[0].down_gbps] + [t.up_gbps for t in tiers if t.up_gbps]
    return min(capacities) / 2


def _hops(switches: nx.Graph[str], host_leaves: dict[str, int]) -> Hops:
    """Switches a packet crosses between two host ports: from the first leaf, and from the last."""
    leaves = sorted(host_leaves)
    if not leaves:
        return {}
    histogram: Counter[int] = Counter()
    maximum = 0
    for index, source in enumerate((leaves[0], leaves[-1])):
        distances = nx.single_source_shortest_path_length(switches, source)
        for leaf, ports in host_leaves.items():
            hops = distances[leaf] + 1
            maximum = max(maximum, hops)
            if index == 0:
                histogram[hops] += ports
    return {
        "max_switch_hops": maximum,
        "from_first_leaf": {str(h): n for h, n in sorted(histogram.items())},
    }


def _failures(
    plan: Plan, graph: nx.Graph[str], switches: nx.Graph[str], host_leaves: dict[str, int], tiers: list[Tier]
) -> dict[str, SwitchFailure]:
    """For the first switch of each tier: host ports cut off, hosts that lose a port, and whether
    the remaining fabric still connects every remaining host port."""
    results: dict[str, SwitchFailure] = {}
    for tier in tiers:
        members = sorted(n for n, data in switches.nodes(data=True) if data.get("tier") == tier.tier)
        if not members:
            continue
        failed = members[0]
        hosts = sorted(n for n in graph.neighbors(failed) if graph.nodes[n]["role"] != "switch")
        up_share = (1 / tier.switches) if tier.switches else 0.0
        cut_off = _hosts_cut_off(plan, graph.graph["network"], failed)
        results[tier.name] = {
            "switch": failed,
            "host_ports_cut_off": host_leaves.get(failed, 0),
            "hosts_losing_a_port": len(hosts),
            "hosts_cut_off": len(cut_off),
            **_service_loss(plan, graph.graph["network"], cut_off),
            "still_connected": _still_connected(switches, failed, host_leaves),
            "tier_bandwidth_lost_fraction": round(up_share, 6),
        }
    return results


def _still_connected(switches: nx.Graph[str], failed: str, host_leaves: dict[str, int]) -> bool:
    """Whether the host leaves of the failed switch's plane (a multi-plane fabric's failure stays in its plane)
    other than itself still reach each other once it is gone: one walk from one of them that never enters it, where
    the components of a subgraph without it would copy or filter the whole fabric once per tier."""
    plane = switches.nodes[failed].get("plane")
    planes: dict[str, int | None] = {n: data.get("plane") for n, data in switches.nodes(data=True)}
    leaves = [leaf for leaf in host_leaves if leaf != failed and leaf in planes and planes[leaf] == plane]
    if not leaves:
        return True
    seen = {leaves[0], failed}
    to_visit = [leaves[0]]
    adjacency = switches.adj
    while to_visit:
        for neighbour in adjacency[to_visit.pop()]:
            if neighbour not in seen and planes[neighbour] == plane:
                seen.add(neighbour)
                to_visit.append(neighbour)
    return all(leaf in seen for leaf in leaves)


def _leaves_of_hosts(plan: Plan, network: str) -> dict[str, set[str]]:
    """Host -> the leaves its ports on this network land on (plan queries: built once per network)."""
    return queries(plan).host_leaves(network)


def _hosts_cut_off(plan: Plan, network: str, failed: str) -> list[str]:
    """Hosts every one of whose ports on this network lands on the failed switch."""
    return sorted(host for host, leaves in _leaves_of_hosts(plan, network).items() if leaves == {failed})


def _service_loss(plan: Plan, network: str, cut_off: list[str]) -> ServiceLoss:
    """What the cut-off hosts cost beyond themselves: GPU servers without the network, and the storage
    services whose appliances are unreachable (a failure of the service, not a share of its bandwidth)."""
    roles = Counter(plan.devices[host].role for host in cut_off)
    lost = sorted({registry.role(name).service for name in roles if registry.role(name).service})
    return {
        "servers_cut_off": sum(n for name, n in roles.items() if registry.is_gpu_node(name)),
        "storage_blocks_cut_off": roles.get("storage", 0) + roles.get("object-storage", 0),
        "services_lost": lost,
    }


def worst_leaf_failure(plan: Plan, network: str) -> LeafFailure:
    """The single leaf whose failure costs most, over every leaf of the network (not a sample): the
    servers it cuts off and the storage services it stops."""
    host_leaves = _leaves_of_hosts(plan, network)
    sole: dict[str, list[str]] = {}
    for host, reached in host_leaves.items():
        if len(reached) == 1:
            sole.setdefault(next(iter(reached)), []).append(host)
    leaves = sorted({leaf for found in host_leaves.values() for leaf in found})
    if not leaves:
        return {}
    worst = max(
        leaves,
        key=lambda leaf: (
            bool(_service_loss(plan, network, sole.get(leaf, []))["services_lost"]),
            len(sole.get(leaf, [])),
            leaf == leaves[0],
        ),
    )
    return {
        "switch": worst,
        "hosts_cut_off": len(sole.get(worst, [])),
        **_service_loss(plan, network, sorted(sole.get(worst, []))),
    }
