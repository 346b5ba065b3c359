"""The storage tiers: the parallel filesystem training reads from and checkpoints to, and object storage."""

from __future__ import annotations

import pulumi

from gpucluster.catalog.schema import StorageBlock as StorageBlockPart
from gpucluster.design.schema import ObjectStorage as ObjectStorageSpec
from gpucluster.design.schema import ParallelFilesystem as ParallelFilesystemSpec
from gpucluster.plan.model import Device, ExistingLinksRecord

from ._device import DeviceLinks, device_props

PARALLEL_FILESYSTEM_TYPE = "gpu-cluster:storage:ParallelFilesystem"
OBJECT_STORAGE_TYPE = "gpu-cluster:storage:ObjectStorage"
STORAGE_BLOCK_TYPE = "gpu-cluster:storage:StorageBlock"


class StorageBlock(pulumi.ComponentResource):
    """One storage building block (appliance): capacity, throughput, place and connections."""

    def __init__(
        self,
        name: str,
        block: Device,
        part: StorageBlockPart,
        links: DeviceLinks,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "appliance": block.name,
            **device_props(block, part, links),
            "tier": part.tier,
            "capacity_tb": part.capacity_tb,
            "read_gbytes_per_s": part.read_gbytes_per_s,
            "write_gbytes_per_s": part.write_gbytes_per_s,
        }
        super().__init__(STORAGE_BLOCK_TYPE, name, props, opts)
        self.register_outputs({"capacity_tb": part.capacity_tb, "read_gbytes_per_s": part.read_gbytes_per_s})


def _blocks(
    parent: pulumi.ComponentResource,
    blocks: list[Device],
    part: StorageBlockPart,
    links: dict[str, DeviceLinks],
    prefix: str,
) -> None:
    child = pulumi.ResourceOptions(parent=parent)
    for block in blocks:
        StorageBlock(prefix + block.name, block, part, links[block.name], child)


class ParallelFilesystem(pulumi.ComponentResource):
    """A filesystem the GPU nodes mount: its kind, figures and, when new, its building blocks; the site's existing
    one (`part` None) is reached over its stated links, and nothing of it is bought."""

    def __init__(
        self,
        name: str,
        spec: ParallelFilesystemSpec,
        part: StorageBlockPart | None,
        blocks: list[Device],
        figures_asked: tuple[float | None, float | None, float | None],
        links: dict[str, DeviceLinks],
        prefix: str = "",
        opts: pulumi.ResourceOptions | None = None,
        stated_links: ExistingLinksRecord | None = None,
        mount: str = "",
    ) -> None:
        capacity_tb, read_gbytes_per_s, write_gbytes_per_s = figures_asked
        figures = {
            "capacity_tb": _rounded(capacity_tb),
            "read_gbytes_per_s": _rounded(read_gbytes_per_s),
            "write_gbytes_per_s": _rounded(write_gbytes_per_s),
        }
        props: dict[str, object] = {"kind": spec.kind, "performance_level": spec.performance_level}
        if part is None:
            props |= {"existing": True, "mount": mount, **figures, "links": dict(stated_links or {})}
        else:
            props |= {
                "block_model": part.id,
                "blocks": len(blocks),
                **figures,
                "block_read_gbytes_per_s": round(len(blocks) * part.read_gbytes_per_s, 3),
                "block_write_gbytes_per_s": round(len(blocks) * part.write_gbytes_per_s, 3),
            }
        super().__init__(PARALLEL_FILESYSTEM_TYPE, name, props, opts)
        if part is not None:
            _blocks(self, blocks, part, links, prefix)
        self.register_outputs(figures)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


class ObjectStorage(pulumi.ComponentResource):
    """The cheaper tier where raw data and finished models live, staged to the fast tier when needed."""

    def __init__(
        self,
        name: str,
        spec: ObjectStorageSpec,
        part: StorageBlockPart,
        blocks: list[Device],
        links: dict[str, DeviceLinks],
        prefix: str = "",
        opts: pulumi.ResourceOptions | None = None,
        shared: bool = False,
    ) -> None:
        # shared: S3 from the parallel filesystem's blocks (registered under it), its asked share of them
        figures = {
            "capacity_tb": round(spec.capacity_tb if shared else len(blocks) * part.capacity_tb, 3),
            "read_gbytes_per_s": round(len(blocks) * part.read_gbytes_per_s, 3),
        }
        props = {
            "block_model": part.id,
            "blocks": len(blocks),
            "shared_with_parallel_filesystem": shared,
            "capacity_tb_wanted": spec.capacity_tb,
            "throughput_gbytes_per_s_wanted": spec.throughput_gbytes_per_s,
            **figures,
        }
        super().__init__(OBJECT_STORAGE_TYPE, name, props, opts)
        if not shared:
            _blocks(self, blocks, part, links, prefix)
        self.register_outputs(figures)
