"""The four networks as components: the compute fabric, the storage network and the two management
networks, each with its switch tiers and (in a per-device tree) its switches."""

from __future__ import annotations

import pulumi

from gpucluster.catalog.schema import Appliance
from gpucluster.catalog.schema import Switch as SwitchPart
from gpucluster.plan.model import Device, NetworkName, Plan, Tier

from ._links import DeviceLinks

COMPUTE_FABRIC_TYPE = "gpu-cluster:network:ComputeFabric"
STORAGE_NETWORK_TYPE = "gpu-cluster:network:StorageNetwork"
MANAGEMENT_NETWORK_TYPE = "gpu-cluster:network:ManagementNetwork"
SWITCH_TIER_TYPE = "gpu-cluster:network:SwitchTier"
SWITCH_TYPE = "gpu-cluster:network:Switch"
FABRIC_MANAGER_TYPE = "gpu-cluster:network:FabricManager"


class Switch(pulumi.ComponentResource):
    """One switch: model, place, and its downlinks and uplinks on its own network."""

    def __init__(
        self,
        name: str,
        switch: Device,
        part: SwitchPart,
        links: DeviceLinks,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "switch": switch.name,
            "model": part.id,
            "network": switch.network,
            "tier": switch.tier,
            "rack": switch.rack,
            "u_position": switch.u_position,
            "scalable_unit": switch.su,
            "rail": switch.rail,
            "pod": switch.pod,
            "down_links": links.down_links,
            "up_links": links.up_links,
            "down_gbps": links.down_gbps,
            "up_gbps": links.up_gbps,
            "power_max_kw": round(part.power_max_w / 1000, 3),
            "connected_to": links.peers_by_network(),
        }
        super().__init__(SWITCH_TYPE, name, props, opts)
        self.register_outputs(
            {"ports_used": links.down_links + links.up_links, "down_gbps": links.down_gbps, "up_gbps": links.up_gbps}
        )


class SwitchTier(pulumi.ComponentResource):
    """One tier of one network (leaf, spine, core ...): how many switches and the bandwidth down and up."""

    def __init__(
        self,
        name: str,
        tier: Tier,
        switches: list[Device],
        part: SwitchPart,
        links: dict[str, DeviceLinks],
        per_device: bool,
        prefix: str = "",
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        oversubscription = round(tier.oversubscription, 4)
        props = {
            "network": tier.network,
            "tier": tier.tier,
            "tier_name": tier.name,
            "switch_model": tier.switch_part,
            "switches": tier.switches,
            "down_links": tier.down_links,
            "up_links": tier.up_links,
            "down_gbps": tier.down_gbps,
            "up_gbps": tier.up_gbps,
            "oversubscription": oversubscription,
            "racks": sorted({s.rack for s in switches}),
        }
        if not per_device:
            props["switch_names"] = [s.name for s in switches]
        super().__init__(SWITCH_TIER_TYPE, name, props, opts)
        if per_device:
            child = pulumi.ResourceOptions(parent=self)
            for switch in switches:
                Switch(prefix + switch.name, switch, part, links[switch.name], child)
        self.register_outputs(
            {
                "switches": tier.switches,
                "down_gbps": tier.down_gbps,
                "up_gbps": tier.up_gbps,
                "oversubscription": oversubscription,
            }
        )


class FabricManager(pulumi.ComponentResource):
    """A fabric-manager appliance (UFM) on the compute fabric."""

    def __init__(
        self,
        name: str,
        appliance: Device,
        part: Appliance,
        links: DeviceLinks,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "appliance": appliance.name,
            "model": part.id,
            "rack": appliance.rack,
            "u_position": appliance.u_position,
            "power_max_kw": round(part.power_max_w / 1000, 3),
            "connected_to": links.peers_by_network(),
        }
        super().__init__(FABRIC_MANAGER_TYPE, name, props, opts)
        self.register_outputs({"compute_bandwidth_gbps": links.bandwidth_gbps.get("compute", 0.0)})


def _network_props(plan: Plan, network: NetworkName) -> dict[str, object]:
    """What every network shows: technology, tiers, switches, links and the analyses' headline figures."""
    analysis = plan.analysis.get(network, {})
    return {
        "network": network,
        "technology": plan.settings.get(f"{network}_technology"),
        "tiers": [
            {
                "tier": t.tier,
                "name": t.name,
                "switch_model": t.switch_part,
                "switches": t.switches,
                "oversubscription": round(t.oversubscription, 4),
            }
            for t in plan.tiers
            if t.network == network
        ],
        "switches": plan.totals["switches"][network],  # type: ignore[index]
        "links": plan.totals["links"][network],  # type: ignore[index]
        "bisection_bandwidth_gbps": analysis.get("bisection_bandwidth_gbps"),
        "max_switch_hops": analysis.get("hops", {}).get("max_switch_hops"),
        "all_hosts_reach_each_other": analysis.get("all_hosts_reach_each_other"),
    }


class _SwitchedNetwork(pulumi.ComponentResource):
    """A network of switch tiers; subclasses name its type and add what is particular to it."""

    TYPE = ""

    def __init__(
        self,
        name: str,
        plan: Plan,
        network: NetworkName,
        props: dict[str, object],
        links: dict[str, DeviceLinks],
        per_device: bool,
        prefix: str,
        opts: pulumi.ResourceOptions | None,
    ) -> None:
        super().__init__(self.TYPE, name, {**_network_props(plan, network), **props}, opts)
        child = pulumi.ResourceOptions(parent=self)
        for tier in plan.tiers:
            if tier.network != network:
                continue
            SwitchTier(
                f"{prefix}{network}-{tier.name}",
                tier,
                plan.switches(network, tier.tier),
                plan.catalog_parts[tier.switch_part],  # type: ignore[arg-type]
                links,
                per_device,
                prefix,
                child,
            )
        self._figures = {
            "switches": sum(plan.totals["switches"][network].values()),  # type: ignore[index]
            "links": sum(plan.totals["links"][network].values()),  # type: ignore[index]
            "bisection_bandwidth_gbps": plan.analysis.get(network, {}).get("bisection_bandwidth_gbps"),
        }

    def _finish(self) -> None:
        self.register_outputs(self._figures)


class ComputeFabric(_SwitchedNetwork):
    """The GPU-to-GPU fabric: one port per GPU on its rail's leaf, a rail-optimized fat tree."""

    TYPE = COMPUTE_FABRIC_TYPE

    def __init__(
        self,
        name: str,
        plan: Plan,
        links: dict[str, DeviceLinks],
        per_device: bool,
        prefix: str = "",
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        managers = plan.devices_with("fabric-manager")
        props = {
            "topology": plan.design.compute_fabric.topology,  # type: ignore[attr-defined]
            "rails": plan.settings["rails"],
            "oversubscription": plan.settings["compute_oversubscription"],
            "fabric_manager_model": plan.settings["fabric_manager"],
            "fabric_managers": [m.name for m in managers],
        }
        super().__init__(name, plan, "compute", props, links, per_device, prefix, opts)
        child = pulumi.ResourceOptions(parent=self)
        for manager in managers:
            FabricManager(prefix + manager.name, manager, plan.part(manager.name), links[manager.name], child)  # type: ignore[arg-type]
        self._finish()


class StorageNetwork(_SwitchedNetwork):
    """The network between the servers and the parallel filesystem, separate from the compute fabric."""

    TYPE = STORAGE_NETWORK_TYPE

    def __init__(
        self,
        name: str,
        plan: Plan,
        links: dict[str, DeviceLinks],
        per_device: bool,
        prefix: str = "",
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        spec = plan.design.storage_network  # type: ignore[attr-defined]
        props = {
            "server_oversubscription": round(spec.server_oversubscription, 4),
            "storage_oversubscription": round(spec.storage_oversubscription, 4),
        }
        super().__init__(name, plan, "storage", props, links, per_device, prefix, opts)
        self._finish()


class ManagementNetwork(_SwitchedNetwork):
    """In-band (Ethernet to every server and appliance) or out-of-band (BMCs, management ports, PDUs)."""

    TYPE = MANAGEMENT_NETWORK_TYPE

    def __init__(
        self,
        name: str,
        plan: Plan,
        network: NetworkName,
        links: dict[str, DeviceLinks],
        per_device: bool,
        prefix: str = "",
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(name, plan, network, {}, links, per_device, prefix, opts)
        self._finish()
