"""Counts over the plan that every view quotes: servers, GPUs, switches and links per network and tier."""

from __future__ import annotations

from collections import Counter

from gpucluster.plan.fabric import TIER_NAMES
from gpucluster.plan.model import PhysicalPlan, Totals
from gpucluster.plan.queries import queries


def tier_name(tier: int) -> str:
    return TIER_NAMES[tier - 1]


def link_tier_name(tier: int) -> str:
    """Links are named by the tiers they join: host-leaf, leaf-spine, spine-core ..."""
    lower = "host" if tier == 0 else TIER_NAMES[tier - 1]
    return f"{lower}-{TIER_NAMES[tier]}"


def totals(plan: PhysicalPlan) -> Totals:
    servers = plan.gpu_nodes()
    gpus_per_server = plan.settings.gpus_per_server
    networks = plan.networks()
    switches: dict[str, Counter[str]] = {n: Counter() for n in networks}
    for device in plan.devices.values():
        if device.role == "switch" and device.network and device.tier:
            switches[device.network][tier_name(device.tier)] += 1
    links: dict[str, dict[str, int]] = {n: {} for n in networks}
    for (network, tier), members in queries(plan).links_by_network_tier.items():
        links[network][link_tier_name(tier)] = len(members)
    cables_by_media: Counter[str] = Counter(c.media for c in plan.cables)
    racks_by_purpose: Counter[str] = Counter(r.purpose for r in plan.racks.values())
    roles: Counter[str] = Counter(d.role for d in plan.devices.values())
    production = sum(1 for s in servers if not s.spare)
    return Totals(
        servers=len(servers),
        production_servers=production,
        spare_servers=len(servers) - production,
        gpus=len(servers) * gpus_per_server,
        production_gpus=production * gpus_per_server,
        scalable_units=len({s.su for s in servers}),
        switches={n: dict(sorted(v.items(), key=lambda kv: TIER_NAMES.index(kv[0]))) for n, v in switches.items()},
        switches_total=sum(sum(v.values()) for v in switches.values()),
        links={n: dict(sorted(v.items())) for n, v in links.items()},
        links_total=len(plan.links),
        cables=len(plan.cables),
        cables_by_media=dict(sorted(cables_by_media.items())),
        racks=len(plan.racks),
        racks_by_purpose=dict(sorted(racks_by_purpose.items())),
        devices_by_role=dict(sorted(roles.items())),
        it_power_max_kw=round(sum(r.power_max_w for r in plan.racks.values()) / 1000, 3),
        it_power_typical_kw=round(sum(r.power_typical_w for r in plan.racks.values()) / 1000, 3),
    )
