"""The root component: one GPU training cluster, planned from a design, as a tree `pulumi preview` shows."""

from __future__ import annotations

from typing import Literal, get_args

import pulumi

from gpucluster.analyse.scheduling import scheduler_split
from gpucluster.catalog.schema import GpuServer, RackSystem, StorageBlock
from gpucluster.design.load import design_from_model
from gpucluster.design.schema import Design
from gpucluster.design.schema import ParallelFilesystem as ParallelFilesystemSpec
from gpucluster.pipeline import plan_design
from gpucluster.plan.model import AnalysedPlan

from ._device import DeviceLinks, index_links
from .compute import ScalableUnit
from .network import ComputeFabric, ManagementNetwork, StorageNetwork
from .outputs import stack_outputs
from .scheduler import Scheduler
from .site import Site
from .storage import ObjectStorage, ParallelFilesystem

CLUSTER_TYPE = "gpu-cluster:index:Cluster"
FACTS_PROP = "facts"  # the root's property the policy pack reads the design-rule facts from

Granularity = Literal["auto", "device", "rack"]
GRANULARITIES: tuple[str, ...] = get_args(Granularity)

# Above this many GPU servers, "auto" drops the per-server and per-switch resources (each scalable
# unit still lists its servers, each rack its devices, each switch tier its switches). Counted under
# mocks (docs/pulumi.md, "Granularity"): per device, the 1,016-GPU example is 280 resources, 4,096
# GPUs 1,194 and 16,384 GPUs 4,946; per rack, 16,384 GPUs is 760. A few hundred rows is what a review reads.
DEVICE_GRANULARITY_MAX_SERVERS = 256


def per_device(plan: AnalysedPlan, granularity: Granularity) -> bool:
    """Whether the tree has one resource per GPU server and per switch."""
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity {granularity!r} is not one of {', '.join(GRANULARITIES)}")
    if granularity == "auto":
        return int(plan.totals.servers) <= DEVICE_GRANULARITY_MAX_SERVERS
    return granularity == "device"


class Cluster(pulumi.ComponentResource):
    """A GPU training cluster, from a design (planned here) or a plan already made from one. Its properties carry
    the design-rule facts the policy pack checks; its children are named ``<name>-<part>``."""

    def __init__(
        self,
        name: str,
        design: Design | AnalysedPlan,
        granularity: Granularity = "auto",
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        if isinstance(design, AnalysedPlan):
            plan = design
        elif isinstance(design, Design):
            plan = plan_design(design_from_model(design))
        else:
            raise TypeError(f"Cluster needs a Design or an AnalysedPlan, not {type(design).__name__}")
        self.plan = plan
        self.per_device = per_device(plan, granularity)
        spec: Design = plan.design
        props = {
            "design_name": plan.name,
            "description": spec.description,
            "granularity": "device" if self.per_device else "rack",
            "design": spec.model_dump(mode="json"),
            "settings": plan.settings_json(),
            FACTS_PROP: plan.facts,
            "findings": [
                {"rule": f.rule, "severity": f.severity, "message": f.message, "subject": f.subject}
                for f in plan.findings
                if f.severity != "ok"
            ],
        }
        super().__init__(CLUSTER_TYPE, name, props, opts)
        self._build(f"{name}-")
        self.outputs = stack_outputs(plan)
        self.register_outputs(self.outputs)

    def _build(self, prefix: str) -> None:
        plan = self.plan
        spec: Design = plan.design
        links = index_links(plan)
        child = pulumi.ResourceOptions(parent=self)
        detail = self.per_device

        self.site = Site(f"{prefix}site", spec.site, list(plan.racks.values()), plan.settings.pdu, prefix, child)

        servers_by_su: dict[int, list] = {}
        for server in plan.gpu_nodes():
            servers_by_su.setdefault(server.su or 1, []).append(server)
        server_part = plan.catalog_part(plan.settings.server, GpuServer)
        racks_by_su: dict[int | None, list[str]] = {}
        for rack in plan.racks.values():
            racks_by_su.setdefault(rack.su, []).append(rack.name)
        leaves_by_su: dict[int | None, dict[str, list[str]]] = {}
        for device in plan.devices.values():
            if device.role == "switch" and device.tier == 1 and device.network:
                leaves_by_su.setdefault(device.su, {}).setdefault(device.network, []).append(device.name)
        system = plan.settings.rack_system
        system_part = plan.catalog_part(system, RackSystem) if system else None
        self.scalable_units = []
        for su, servers in sorted(servers_by_su.items()):
            racks = sorted(racks_by_su.get(su, []))
            leaves = leaves_by_su.get(su, {})
            power_max_kw = round(sum(plan.racks[r].power_max_w for r in racks) / 1000, 3)
            self.scalable_units.append(
                ScalableUnit(
                    f"{prefix}su{su:02d}",
                    su,
                    servers,
                    server_part,
                    racks,
                    leaves,
                    power_max_kw,
                    links,
                    detail,
                    prefix,
                    child,
                    system_part,
                )
            )

        self.compute_fabric = ComputeFabric(f"{prefix}compute-fabric", plan, links, detail, prefix, child)
        self.storage_network = StorageNetwork(f"{prefix}storage-network", plan, links, detail, prefix, child)
        self.inband_network = ManagementNetwork(f"{prefix}inband-network", plan, links, detail, prefix, child, "inband")
        self.oob_network = ManagementNetwork(f"{prefix}oob-network", plan, links, detail, prefix, child, "oob")

        self.filesystems = _filesystems(plan, [spec.parallel_filesystem, *spec.filesystems], links, prefix, child)
        self.parallel_filesystem = self.filesystems[0]
        settings = plan.settings
        self.object_storage: ObjectStorage | None = None
        if spec.object_storage is not None:
            shared = bool(settings.object_storage_shared)
            block = settings.parallel_filesystem_block if shared else settings.object_storage_block
            self.object_storage = ObjectStorage(
                f"{prefix}object-storage",
                spec.object_storage,
                plan.catalog_part(str(block), StorageBlock),
                plan.devices_with("storage" if shared else "object-storage"),
                links,
                prefix,
                child,
                shared=shared,
            )
        self.scheduler = Scheduler(
            f"{prefix}scheduler",
            spec.scheduler,
            scheduler_split(plan),
            plan.devices_with("management-server"),
            plan.catalog_parts,
            links,
            prefix,
            child,
        )


def _filesystems(
    plan: AnalysedPlan,
    specs: list[ParallelFilesystemSpec],
    links: dict[str, DeviceLinks],
    prefix: str,
    child: pulumi.ResourceOptions,
) -> list[ParallelFilesystem]:
    """Every filesystem the GPU nodes mount, the parallel filesystem first (the design's `filesystems` after it): a
    new one with its blocks, the site's existing one with the links it is reached over."""
    settings = plan.settings
    if settings.filesystems is None:  # the parallel filesystem alone, new
        figures: tuple[float | None, float | None, float | None] = (
            settings.parallel_filesystem_capacity_tb,
            settings.parallel_filesystem_read_gbytes_per_s,
            settings.parallel_filesystem_write_gbytes_per_s,
        )
        part: StorageBlock | None = plan.catalog_part(settings.parallel_filesystem_block, StorageBlock)
        blocks = plan.devices_with("storage")
        return [
            ParallelFilesystem(f"{prefix}parallel-filesystem", specs[0], part, blocks, figures, links, prefix, child)
        ]
    result = []
    for index, (spec, record) in enumerate(zip(specs, settings.filesystems, strict=True)):
        name = f"{prefix}parallel-filesystem" if index == 0 else f"{prefix}filesystem-{record['name']}"
        part = plan.catalog_part(record["block"], StorageBlock) if record["block"] else None
        stem = f"{record['device_prefix']}-"
        blocks = [d for d in plan.devices_with("storage") if d.name.startswith(stem)]
        figures = (record["capacity_tb"], record["read_gbytes_per_s"], record["write_gbytes_per_s"])
        result.append(
            ParallelFilesystem(
                name,
                spec,
                part,
                blocks,
                figures,
                links,
                prefix,
                child,
                stated_links=record["links"],
                mount=record["mount"],
            )
        )
    return result
