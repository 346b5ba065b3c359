"""What the device components show of one device: its place, power and links (the links indexed in one
pass over the plan's)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from gpucluster.catalog.schema import RackMounted
from gpucluster.plan.model import Device, Link, Plan


@dataclass(slots=True)
class DeviceLinks:
    """What one device is cabled to: peers per network, and its switch-port counts and bandwidth. For a switch,
    links of its own network whose lower end (a) it is are uplinks, those whose upper end (b) it is are downlinks;
    any other link (its management port) is neither."""

    peers: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    bandwidth_gbps: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    down_links: int = 0
    up_links: int = 0
    down_gbps: float = 0.0
    up_gbps: float = 0.0

    def peers_by_network(self) -> dict[str, list[str]]:
        return {network: sorted(names) for network, names in sorted(self.peers.items())}


def index_links(plan: Plan) -> dict[str, DeviceLinks]:
    """Device name -> its link figures (devices without links are absent)."""
    index: dict[str, DeviceLinks] = defaultdict(DeviceLinks)
    network_of = {name: device.network for name, device in plan.devices.items() if device.role == "switch"}
    for link in plan.links:
        _add(index[link.a_device], link, link.b_device, up=network_of.get(link.a_device) == link.network)
        _add(index[link.b_device], link, link.a_device, down=network_of.get(link.b_device) == link.network)
    return index


def _add(entry: DeviceLinks, link: Link, peer: str, up: bool = False, down: bool = False) -> None:
    entry.peers[link.network].add(peer)
    entry.bandwidth_gbps[link.network] += link.speed_gbps
    if up:
        entry.up_links += 1
        entry.up_gbps += link.speed_gbps
    elif down:
        entry.down_links += 1
        entry.down_gbps += link.speed_gbps


def device_props(device: Device, part: RackMounted, links: DeviceLinks) -> dict[str, object]:
    """The properties every device component has: model, rack and U, maximum power, connections."""
    return {
        "model": device.part,
        "rack": device.rack,
        "u_position": device.u_position,
        "power_max_kw": round(float(part.power_max_w) / 1000, 3),
        "connected_to": links.peers_by_network(),
    }
