"""The four networks as components: the compute fabric, the storage network and the two management
networks, each with its switch tiers and (in a per-device tree) its switches."""

from __future__ import annotations

import pulumi

from gpucluster.catalog.schema import Appliance
from gpucluster.catalog.schema import Switch as SwitchPart
from gpucluster.plan.model import AnalysedPlan, Device, NetworkName, Plan, Tier

from ._device import DeviceLinks, device_props

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
            **device_props(switch, part, links),
            "network": switch.network,
            "tier": switch.tier,
            "scalable_unit": switch.su,
            "rail": switch.rail,
            "pod": switch.pod,
            "down_links": links.down_links,
            "up_links": links.up_links,
            "down_gbps": links.down_gbps,
            "up_gbps": links.up_gbps,
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
    """A fabric-manager appliance (UFM) on the compute fabric or an InfiniBand storage fabric."""

    def __init__(
        self,
        name: str,
        appliance: Device,
        part: Appliance,
        links: DeviceLinks,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {"appliance": appliance.name, **device_props(appliance, part, links)}
        super().__init__(FABRIC_MANAGER_TYPE, name, props, opts)
        self.register_outputs({"compute_bandwidth_gbps": links.bandwidth_gbps.get("compute", 0.0)})


def _network_props(plan: AnalysedPlan, network: NetworkName) -> dict[str, object]:
    """What every network shows: technology, tiers, switches, links and the analyses' headline figures."""
    analysis = plan.analysis_of(network)
    return {
        "network": network,
        "technology": plan.settings.technology(network),
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
        "switches": plan.totals.switches[network],
        "links": plan.totals.links[network],
        "bisection_bandwidth_gbps": analysis.get("bisection_bandwidth_gbps"),
        "max_switch_hops": analysis.get("hops", {}).get("max_switch_hops"),
        "all_hosts_reach_each_other": analysis.get("all_hosts_reach_each_other"),
    }


class _SwitchedNetwork(pulumi.ComponentResource):
    """A network of switch tiers (one child each); subclasses name its type and network and add the
    properties and children particular to it."""

    TYPE = ""
    NETWORK: NetworkName | None = None

    def __init__(
        self,
        name: str,
        plan: AnalysedPlan,
        links: dict[str, DeviceLinks],
        per_device: bool,
        prefix: str = "",
        opts: pulumi.ResourceOptions | None = None,
        network: NetworkName | None = None,
    ) -> None:
        network = network or self.NETWORK
        if network is None:
            raise ValueError(f"{type(self).__name__} needs the network it is (inband or oob)")
        super().__init__(self.TYPE, name, {**_network_props(plan, network), **self._props(plan)}, opts)
        child = pulumi.ResourceOptions(parent=self)
        for tier in plan.tiers:
            if tier.network == network:
                part = plan.catalog_part(tier.switch_part, SwitchPart)
                switches = plan.switches(network, tier.tier)
                SwitchTier(f"{prefix}{network}-{tier.name}", tier, switches, part, links, per_device, prefix, child)
        for manager in self._fabric_managers(plan):
            appliance = plan.part_as(manager.name, Appliance)
            FabricManager(prefix + manager.name, manager, appliance, links[manager.name], child)
        self.register_outputs(
            {
                "switches": sum(plan.totals.switches[network].values()),
                "links": sum(plan.totals.links[network].values()),
                "bisection_bandwidth_gbps": plan.analysis_of(network).get("bisection_bandwidth_gbps"),
            }
        )

    def _props(self, plan: Plan) -> dict[str, object]:
        return {}

    def _fabric_managers(self, plan: Plan) -> list[Device]:
        """The fabric-manager appliances of this network, its children besides the switch tiers."""
        return []


class ComputeFabric(_SwitchedNetwork):
    """The GPU-to-GPU fabric: one port per GPU on its rail's leaf, a rail-optimized fat tree, and its
    fabric managers."""

    TYPE = COMPUTE_FABRIC_TYPE
    NETWORK = "compute"

    def _props(self, plan: Plan) -> dict[str, object]:
        return {
            "topology": plan.design.compute_fabric.topology,
            "rails": plan.settings.rails,
            "oversubscription": plan.settings.compute_oversubscription,
            "fabric_manager_model": plan.settings.fabric_manager,
            "fabric_managers": [m.name for m in self._fabric_managers(plan)],
        }

    def _fabric_managers(self, plan: Plan) -> list[Device]:
        return [m for m in plan.devices_with("fabric-manager") if m.network != "storage"]


class StorageNetwork(_SwitchedNetwork):
    """The network between the servers and the parallel filesystem, separate from the compute fabric."""

    TYPE = STORAGE_NETWORK_TYPE
    NETWORK = "storage"

    def _props(self, plan: Plan) -> dict[str, object]:
        spec = plan.design.storage_network
        return {
            "server_oversubscription": round(spec.server_oversubscription, 4),
            "storage_oversubscription": round(spec.storage_oversubscription, 4),
            "fabric_managers": [m.name for m in self._fabric_managers(plan)],
        }

    def _fabric_managers(self, plan: Plan) -> list[Device]:
        return [m for m in plan.devices_with("fabric-manager") if m.network == "storage"]


class ManagementNetwork(_SwitchedNetwork):
    """In-band (Ethernet to every server and appliance) or out-of-band (BMCs, management ports, PDUs):
    give `network`."""

    TYPE = MANAGEMENT_NETWORK_TYPE
