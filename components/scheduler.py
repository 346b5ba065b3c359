"""The scheduler (Slurm, Kubernetes or both) and the head nodes that run its controllers."""

from __future__ import annotations

from collections.abc import Mapping

import pulumi

from gpucluster.analyse.scheduling import SchedulerSplit
from gpucluster.catalog.schema import Appliance
from gpucluster.design.schema import Scheduler as SchedulerSpec
from gpucluster.plan.model import Device

from ._device import DeviceLinks, device_props

SCHEDULER_TYPE = "gpu-cluster:scheduler:Scheduler"
HEAD_NODE_TYPE = "gpu-cluster:scheduler:HeadNode"


class HeadNode(pulumi.ComponentResource):
    """A management server: cluster manager and scheduler controllers."""

    def __init__(
        self,
        name: str,
        node: Device,
        part: Appliance,
        links: DeviceLinks,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {"hostname": node.name, **device_props(node, part, links)}
        super().__init__(HEAD_NODE_TYPE, name, props, opts)
        self.register_outputs({"power_max_kw": props["power_max_kw"]})


class Scheduler(pulumi.ComponentResource):
    """Which scheduler places jobs on which GPU servers (the split the Slurm and Kubernetes configs use),
    and on which head nodes it runs."""

    def __init__(
        self,
        name: str,
        spec: SchedulerSpec,
        split: SchedulerSplit,
        head_nodes: list[Device],
        parts: Mapping[str, object],
        links: dict[str, DeviceLinks],
        prefix: str = "",
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        gpu_servers = len(split.slurm) + len(split.kubernetes)
        props: dict[str, object] = {"kind": spec.kind, "gpu_servers": gpu_servers}
        if spec.kind in ("slurm", "both"):
            props["slurm"] = {
                "version": spec.slurm.version,
                "cluster_name": spec.slurm.cluster_name,
                "servers": len(split.slurm),
            }
        if spec.kind in ("kubernetes", "both"):
            props["kubernetes"] = {
                "servers": len(split.kubernetes),
                "topology_labels": spec.kubernetes.topology_labels,
                "kueue_api": spec.kubernetes.kueue_api,
                "training_job": spec.kubernetes.training_job,
            }
        props["head_nodes"] = [n.name for n in head_nodes]
        super().__init__(SCHEDULER_TYPE, name, props, opts)
        child = pulumi.ResourceOptions(parent=self)
        for node in head_nodes:
            part = parts[node.part]
            if not isinstance(part, Appliance):
                raise TypeError(f"head node {node.name} is a {type(part).__name__}, not an appliance")
            HeadNode(prefix + node.name, node, part, links[node.name], child)
        self.register_outputs({"gpu_servers": gpu_servers, "head_nodes": len(head_nodes)})
