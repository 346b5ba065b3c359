"""GPU servers and the scalable units they come in."""

from __future__ import annotations

import pulumi

from gpucluster.catalog.schema import GpuServer as GpuServerPart
from gpucluster.plan.model import Device

from ._device import DeviceLinks, device_props

SCALABLE_UNIT_TYPE = "gpu-cluster:compute:ScalableUnit"
GPU_SERVER_TYPE = "gpu-cluster:compute:GpuServer"


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
        super().__init__(SCALABLE_UNIT_TYPE, name, props, opts)
        if per_device:
            child = pulumi.ResourceOptions(parent=self)
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
