"""GPU servers and the scalable units they come in."""

from __future__ import annotations

import pulumi

from gpucluster.catalog.schema import GpuServer as GpuServerPart
from gpucluster.catalog.schema import RackSystem as RackSystemPart
from gpucluster.plan.model import Device

from ._device import DeviceLinks, device_props

SCALABLE_UNIT_TYPE = "gpu-cluster:compute:ScalableUnit"
GPU_SERVER_TYPE = "gpu-cluster:compute:GpuServer"
RACK_SYSTEM_TYPE = "gpu-cluster:compute:RackSystem"


class GpuServer(pulumi.ComponentResource):
    """One GPU server: its model, where it stands, and what it is cabled to on each network."""

    def __init__(
        self,
        name: str,
        server: Device,
        part: GpuServerPart,
        links: DeviceLinks,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        compute_gbps = links.bandwidth_gbps.get("compute", 0.0)
        props = {
            "hostname": server.name,
            **device_props(server, part, links),
            "gpu_model": part.gpu.model,
            "gpus": part.gpu.count,
            "scalable_unit": server.su,
            "spare": server.spare,
            "power_typical_kw": round(part.power_typical_w / 1000, 3),
            "compute_bandwidth_gbps": compute_gbps,
        }
        super().__init__(GPU_SERVER_TYPE, name, props, opts)
        self.register_outputs(
            {"gpus": part.gpu.count, "power_max_kw": props["power_max_kw"], "compute_bandwidth_gbps": compute_gbps}
        )


class RackSystem(pulumi.ComponentResource):
    """One rack-scale system (GB200/GB300 NVL72): one rack, one NVLink domain; its compute trays are children when
    the tree is per device (named `prefix` + hostname)."""

    def __init__(
        self,
        name: str,
        domain: str,
        trays: list[Device],
        system: RackSystemPart,
        tray: GpuServerPart,
        links: dict[str, DeviceLinks],
        per_device: bool,
        prefix: str = "",
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        gpus = len(trays) * tray.gpu.count
        props: dict[str, object] = {
            "nvlink_domain": domain,
            "system_model": system.id,
            "rack": trays[0].rack,
            "scalable_unit": trays[0].su,
            "compute_trays": len(trays),
            "gpus": gpus,
            "nvlink_switch_trays": system.nvlink_switch_trays,
            "nvlink_links": gpus * system.nvlink_links_per_gpu,
            "power_shelves": system.power_shelves,
            "power_shelf_redundancy": system.power_shelf_redundancy,
            "spare": all(t.spare for t in trays),
        }
        if not per_device:
            props["hostnames"] = [t.name for t in trays]
        super().__init__(RACK_SYSTEM_TYPE, name, props, opts)
        if per_device:
            child = pulumi.ResourceOptions(parent=self)
            for device in trays:
                GpuServer(prefix + device.name, device, tray, links[device.name], child)
        self.register_outputs({"gpus": gpus, "nvlink_links": props["nvlink_links"]})


class ScalableUnit(pulumi.ComponentResource):
    """One scalable unit: its servers (one child each when the tree is per device, named `prefix` +
    hostname), racks and leaves."""

    def __init__(
        self,
        name: str,
        su: int,
        servers: list[Device],
        part: GpuServerPart,
        racks: list[str],
        leaves: dict[str, list[str]],
        power_max_kw: float,
        links: dict[str, DeviceLinks],
        per_device: bool,
        prefix: str = "",
        opts: pulumi.ResourceOptions | None = None,
        system: RackSystemPart | None = None,
    ) -> None:
        gpus = len(servers) * part.gpu.count
        compute_gbps = sum(links[s.name].bandwidth_gbps.get("compute", 0.0) for s in servers)
        props = {
            "scalable_unit": su,
            "server_model": part.id,
            "servers": len(servers),
            "production_servers": sum(1 for s in servers if not s.spare),
            "spare_servers": sorted(s.name for s in servers if s.spare),
            "gpus": gpus,
            "racks": racks,
            "leaves": leaves,
            "power_max_kw": power_max_kw,
            "compute_bandwidth_gbps": compute_gbps,
        }
        if not per_device:
            props["hostnames"] = [s.name for s in servers]
        if system is not None:
            props["rack_systems"] = sorted({str(s.nvlink_domain) for s in servers})
        super().__init__(SCALABLE_UNIT_TYPE, name, props, opts)
        child = pulumi.ResourceOptions(parent=self)
        if system is not None:  # a rack-scale system per NVLink domain, its trays under it
            domains: dict[str, list[Device]] = {}
            for server in servers:
                domains.setdefault(str(server.nvlink_domain), []).append(server)
            for domain, trays in domains.items():
                RackSystem(prefix + domain, domain, trays, system, part, links, per_device, prefix, child)
        elif per_device:
            for server in servers:
                GpuServer(prefix + server.name, server, part, links[server.name], child)
        self.register_outputs(
            {
                "servers": len(servers),
                "gpus": gpus,
                "power_max_kw": power_max_kw,
                "compute_bandwidth_gbps": compute_gbps,
            }
        )
