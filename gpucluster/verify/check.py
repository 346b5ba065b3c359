"""Run the bring-up check for a set of discovery files: which network each file is of, and its findings."""

from __future__ import annotations

from pathlib import Path

from gpucluster.errors import DesignError, Problem
from gpucluster.plan.model import PhysicalPlan, Plan
from gpucluster.verify.compare import Names, NetworkResult, compare
from gpucluster.verify.discovery import Discovery
from gpucluster.verify.expected import PlannedLink, ethernet_networks, infiniband_networks, planned_links
from gpucluster.verify.ibnetdiscover import parse_ibnetdiscover
from gpucluster.verify.lldp import lldp_files, parse_lldp


def verify(plan: PhysicalPlan, ibnetdiscover: list[Path], lldp: list[Path]) -> list[NetworkResult]:
    """The result of every network that discovery output was given for. Bad input (an unreadable or
    malformed file, a file whose fabric names nothing in the plan) raises DesignError with its location."""
    results: list[NetworkResult] = []
    if ibnetdiscover:
        planned = {network: list(planned_links(plan, network)) for network in infiniband_networks(plan)}
        names = Names(plan, planned)
        for path in ibnetdiscover:
            found = parse_ibnetdiscover(path)
            network = _fabric_of(found, planned, names)
            results.append(compare(plan, network, planned[network], names, found))
    if lldp:
        planned = {network: list(planned_links(plan, network)) for network in ethernet_networks(plan)}
        names = Names(plan, planned)
        by_network: dict[str, Discovery] = {}
        for path in lldp_files(lldp):
            switch = path.stem
            device = plan.devices.get(switch)
            if device is None or device.role != "switch" or device.network not in planned:
                message = (
                    f"name each LLDP file after the Ethernet switch it was collected on (<switch>.json); "
                    f"{switch!r} is not one of the plan's {sum(len(v) for v in _switches(plan, planned))} "
                    f"Ethernet switches (e.g. {', '.join(_examples(plan, planned))})"
                )
                raise DesignError([Problem(str(path), 0, 0, "", message)])
            found = by_network.setdefault(device.network, Discovery("lldp", ""))
            found.reporters.add(switch)
            found.nodes.add(switch)
            for link in parse_lldp(path, switch):
                found.links.append(link)
                found.nodes.add(link.b[0])
        for network in planned:
            if network in by_network:
                found = by_network[network]
                found.source = f"LLDP of {len(found.reporters)} switch(es)"
                results.append(compare(plan, network, planned[network], names, found))
    return results


def _fabric_of(found: Discovery, planned: dict[str, list[PlannedLink]], names: Names) -> str:
    """The InfiniBand network a discovery file is of: the one whose devices it names most."""
    votes = dict.fromkeys(planned, 0)
    nodes_of = {network: {end.node for p in links for end in (p.a, p.b)} for network, links in planned.items()}
    for node in found.nodes:
        name = names.node(node)
        for network, nodes in nodes_of.items():
            if name in nodes:
                votes[network] += 1
    best = max(votes, key=lambda n: votes[n], default=None)
    if best is None or votes[best] == 0:
        message = (
            f"none of its {len(found.nodes):,} node descriptions names a device of the plan's InfiniBand "
            f"networks ({', '.join(planned) or 'none'}): set each HCA's and switch's node description as "
            "verify/node-descriptions.csv lists them, or check that this is the design's fabric"
        )
        raise DesignError([Problem(found.source, 0, 0, "", message)])
    return best


def _switches(plan: Plan, planned: dict[str, list[PlannedLink]]) -> list[list[str]]:
    return [[d.name for d in plan.switches(network)] for network in planned]


def _examples(plan: Plan, planned: dict[str, list[PlannedLink]]) -> list[str]:
    return [names[0] for names in _switches(plan, planned) if names][:4]
