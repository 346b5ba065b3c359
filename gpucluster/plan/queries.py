"""Plan queries built once: the indexes views look links up by, instead of each looping over ``plan.links`` again.
Each is built on first use (a 131,072-GPU plan has millions of links; most builds need only some indexes) and kept
while the plan lives, as compact arrays of positions in ``plan.links`` (a list of ints costs 28 bytes a link more).
Only a complete plan is queried: plan/build.py never asks.
"""

from __future__ import annotations

from array import array
from functools import cached_property
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

from gpucluster.plan.memo import per_plan

if TYPE_CHECKING:
    from gpucluster.plan.model import Link, Plan


def _positions() -> array[int]:
    return array("q")


class PlanQueries:
    """Indexes over one plan's links and devices (link indexes are positions in ``plan.links``)."""

    def __init__(self, plan: Plan) -> None:
        self._plan = plan
        self._host_leaves: dict[str, dict[str, set[str]]] = {}

    @cached_property
    def links_by_network_tier(self) -> dict[tuple[str, int], array[int]]:
        """(network, tier) -> its links, in plan order (tier 0 = host to leaf); keys in the order their first
        link appears."""
        index: dict[tuple[str, int], array[int]] = {}
        for i, link in enumerate(self._plan.links):
            key = (link.network, link.tier)
            members = index.get(key)
            if members is None:
                members = index[key] = _positions()
            members.append(i)
        return index

    def networks(self) -> list[str]:
        """The networks that have links, in the order their first link appears in the plan."""
        first: dict[str, int] = {}
        for (network, _tier), members in self.links_by_network_tier.items():
            first[network] = min(first.get(network, members[0]), members[0])
        return sorted(first, key=first.__getitem__)

    @cached_property
    def links_by_network(self) -> dict[str, array[int]]:
        """Network -> its links of every tier, in plan order."""
        tiers: dict[str, list[array[int]]] = {}
        for (network, _tier), members in self.links_by_network_tier.items():
            tiers.setdefault(network, []).append(members)
        # the tiers' runs interleave in plan order; sorting the positions merges them (timsort finds the runs)
        return {
            network: runs[0] if len(runs) == 1 else array("q", sorted(chain.from_iterable(runs)))
            for network, runs in tiers.items()
        }

    def link_indexes(self, network: str, tier: int | None = None) -> array[int]:
        """Positions in ``plan.links`` of a network's links (of one tier, or all of them), in plan order."""
        if tier is not None:
            return self.links_by_network_tier.get((network, tier), _positions())
        return self.links_by_network.get(network, _positions())

    def links(self, network: str, tier: int | None = None) -> list[Link]:
        """A network's links (of one tier, or all of them), in plan order."""
        links = self._plan.links
        return [links[i] for i in self.link_indexes(network, tier)]

    def first_link(self, network: str) -> Link | None:
        """A network's first link in plan order (what its technology is read from), or None."""
        firsts = [members[0] for (name, _tier), members in self.links_by_network_tier.items() if name == network]
        return self._plan.links[min(firsts)] if firsts else None

    def host_leaves(self, network: str) -> dict[str, set[str]]:
        """Host -> the leaves its ports on a network land on (every device with a tier-0 link: servers,
        appliances, and switches by their management ports on the out-of-band network), hosts in link order."""
        found = self._host_leaves.get(network)
        if found is None:
            found = self._host_leaves[network] = {}
            for link in self.links(network, 0):
                found.setdefault(link.a_device, set()).add(link.b_device)
        return found

    @cached_property
    def link_cables(self) -> array[int]:
        """Link -> the position in ``plan.cables`` of the cable that carries it (-1: a backplane link, no cable; a
        link two cables name: the later one). Worked out over arrays: 700,000 cables at 131,072 GPUs."""
        cables = self._plan.cables
        carried = list(map(attrgetter("links"), cables))
        per_cable = np.fromiter(map(len, carried), np.int64, len(cables))
        links = np.fromiter(chain.from_iterable(carried), np.int64, int(per_cable.sum()))
        index = np.full(len(self._plan.links), -1, np.int64)
        np.maximum.at(index, links, np.repeat(np.arange(len(cables), dtype=np.int64), per_cable))
        return array("q", index.tobytes())

    def cable_id(self, link_index: int) -> str | None:
        """The id of the cable carrying a link (None: a backplane link)."""
        position = self.link_cables[link_index]
        return self._plan.cables[position].id if position >= 0 else None

    @cached_property
    def rail_links(self) -> dict[str, dict[int, int]]:
        """Server -> rail -> its compute host link on that rail."""
        links = self._plan.links
        by_server: dict[str, dict[int, int]] = {}
        for i in self.link_indexes("compute", 0):
            link = links[i]
            if link.rail is not None:
                by_server.setdefault(link.a_device, {})[link.rail] = i
        return by_server

    @cached_property
    def host_ports_by_leaf(self) -> dict[str, dict[str, int]]:
        """Network -> leaf -> the host ports it carries (its tier-0 links)."""
        links = self._plan.links
        result: dict[str, dict[str, int]] = {}
        for (network, tier), members in self.links_by_network_tier.items():
            if tier == 0:
                counts = result.setdefault(network, {})
                for i in members:
                    leaf = links[i].b_device
                    counts[leaf] = counts.get(leaf, 0) + 1
        return result

    @cached_property
    def server_leaves(self) -> dict[str, dict[str, list[str]]]:
        """Host -> network -> the leaves its tier-0 links reach, in link order (a leaf once)."""
        links = self._plan.links
        result: dict[str, dict[str, list[str]]] = {}
        for (network, tier), members in self.links_by_network_tier.items():
            if tier == 0:
                for i in members:
                    link = links[i]
                    leaves = result.setdefault(link.a_device, {}).setdefault(network, [])
                    if link.b_device not in leaves:
                        leaves.append(link.b_device)
        return result


@per_plan
def queries(plan: Plan) -> PlanQueries:
    """The plan's link and device indexes, made once per complete plan: views look things up there."""
    return PlanQueries(plan)


def links_on(plan: Plan, network: str) -> list[Link]:
    """A network's links in plan order."""
    return queries(plan).links(network)
