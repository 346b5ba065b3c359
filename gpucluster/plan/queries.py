"""Plan queries built once: the indexes views look links and devices up by, instead of each view looping over
``plan.links`` again. Each index is built on first use (a 131,072-GPU plan has millions of links, and most builds
need only some of them) and kept on the plan (``Plan.queries()``); a plan changed after that builds new ones with
``Plan.queries(refresh=True)``.
"""

from __future__ import annotations

from collections import defaultdict
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpucluster.plan.model import Plan


class PlanQueries:
    """Indexes over one plan's links and devices (link indexes point into ``plan.links``)."""

    def __init__(self, plan: Plan) -> None:
        self._plan = plan

    @cached_property
    def links_by_network_tier(self) -> dict[tuple[str, int], list[int]]:
        """(network, tier) -> its links, in plan order (tier 0 = host to leaf)."""
        index: dict[tuple[str, int], list[int]] = defaultdict(list)
        for i, link in enumerate(self._plan.links):
            index[(link.network, link.tier)].append(i)
        return dict(index)

    @cached_property
    def links_by_device(self) -> dict[str, list[int]]:
        """Device -> the links at either end of it, in plan order."""
        index: dict[str, list[int]] = defaultdict(list)
        for i, link in enumerate(self._plan.links):
            index[link.a_device].append(i)
            index[link.b_device].append(i)
        return dict(index)

    @cached_property
    def rail_links(self) -> dict[str, dict[int, int]]:
        """Server -> rail -> its compute host link on that rail."""
        links = self._plan.links
        by_server: dict[str, dict[int, int]] = {}
        for i in self.links_by_network_tier.get(("compute", 0), []):
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

    @cached_property
    def devices_by_rack(self) -> dict[str, list[str]]:
        """Rack -> the devices standing in it (zero-U ones too), in plan order."""
        index: dict[str, list[str]] = defaultdict(list)
        for device in self._plan.devices.values():
            if device.rack:
                index[device.rack].append(device.name)
        return dict(index)

    @cached_property
    def devices_by_su(self) -> dict[int, list[str]]:
        """Scalable unit -> its devices (GPU servers and SU leaves), in plan order."""
        index: dict[int, list[str]] = defaultdict(list)
        for device in self._plan.devices.values():
            if device.su is not None:
                index[device.su].append(device.name)
        return dict(index)
