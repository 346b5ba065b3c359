"""Sizing a cluster from a workload: the GPUs and whole servers that train it in its target days at an assumed
goodput (the training model, gpucluster/training/model.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpucluster.catalog.load import Catalog
from gpucluster.catalog.schema import GpuServer, RackSystem
from gpucluster.design.schema import Workload
from gpucluster.formats import yamlout
from gpucluster.training.model import (
    SIZING_GOODPUT,
    gpus_for_target,
    peak_tflops,
    time_to_train_days,
    training_flops,
)


@dataclass(frozen=True)
class Sizing:
    """GPUs and servers a workload needs on one server model."""

    server: GpuServer
    workload: Workload
    flops: float
    peak_tflops: float
    peak_source: str
    goodput: float
    gpus_needed: int
    servers: int
    system: RackSystem | None = None  # sized in whole racks of this rack-scale system; `server` is its tray

    @property
    def racks(self) -> int:
        return self.servers // self.system.compute_trays if self.system else 0

    def whole(self, servers: int) -> int:
        """Servers rounded up to whole racks of a rack-scale system (a rack is one NVLink domain, never split)."""
        if self.system is None:
            return servers
        return math.ceil(servers / self.system.compute_trays) * self.system.compute_trays

    @property
    def gpus(self) -> int:
        return self.servers * self.server.gpu.count

    @property
    def days_on_servers(self) -> float:
        """Wall days on the rounded-up servers, at the MFU and goodput assumed."""
        return time_to_train_days(self.workload, self.gpus, self.peak_tflops, self.goodput) or 0.0


def size(catalog: Catalog, server_id: str, workload: Workload, goodput: float = SIZING_GOODPUT) -> Sizing:
    """The GPUs and whole servers that train ``workload`` in its target days."""
    if not workload.training_tokens_b or not workload.target_days:
        raise ValueError("sizing needs training_tokens_b and target_days")
    named = catalog.parts.get(server_id)
    system = named if isinstance(named, RackSystem) else None
    server = catalog.get(system.compute_tray if system else server_id, GpuServer)
    peak, source = peak_tflops(server, workload.precision)
    flops = training_flops(workload) or 0.0
    gpus = gpus_for_target(workload, peak, goodput) or 0
    sizing = Sizing(server, workload, flops, peak, source, goodput, gpus, 0, system)
    return replace(sizing, servers=sizing.whole(math.ceil(gpus / server.gpu.count)))


def sizing_lines(s: Sizing) -> list[str]:
    w = s.workload
    return [
        f"workload: {w.model_parameters_b:g}B parameters x {w.training_tokens_b:g}B tokens = "
        f"{s.flops:.3g} FLOPs (6·N·D)",
        f"GPU: {s.server.gpu.model}, {s.peak_tflops:,.1f} TFLOPS dense {w.precision} ({s.peak_source})",
        f"at {w.mfu:.0%} MFU and {s.goodput:.0%} goodput (assumed before planning) in {w.target_days:g} days: "
        f"{s.gpus_needed:,} GPUs -> "
        + (
            f"{s.racks:,} x {s.system.id} racks ({s.servers:,} {s.server.id}s, {s.gpus:,} GPUs, "
            if s.system
            else f"{s.servers:,} x {s.server.id} ({s.gpus:,} GPUs, "
        )
        + f"{s.days_on_servers:.1f} days)",
    ]


def starter_design(
    s: Sizing,
    name: str,
    *,
    site: dict[str, object] | None = None,
    catalog: list[str] | None = None,
    spare_servers: int | None = None,
    notes: list[str] | None = None,
    kept: dict[str, dict[str, object]] | None = None,
) -> str:
    """A design file for the sizing: the servers and the workload, with a base design's site, catalog files and
    other sections as written (``kept``), so a sized design keeps the site's choices."""
    w = s.workload
    workload = w.model_dump(exclude_defaults=True)
    workload |= {"target_days": w.target_days, "precision": w.precision, "mfu": w.mfu}
    kept = dict(kept or {})
    compute: dict[str, object] = {"server": s.server.id, "servers": s.servers}
    if s.system:  # named whole; its spares are whole spare racks
        compute = {"server": s.system.id, "gpus": s.gpus}
    compute |= kept.pop("compute", {})
    if spare_servers is not None:
        compute["spare_servers"] = s.whole(spare_servers)
    document: dict[str, object] = {
        "name": name,
        "description": f"{w.model_parameters_b:g}B model, {w.training_tokens_b:g}B tokens in {w.target_days:g} days",
    }
    if catalog:
        document["catalog"] = catalog
    if s.system:
        # a rack-scale system needs direct liquid cooling; its trays' storage ports are Ethernet (BlueField-3),
        # so an Ethernet storage network and a filesystem whose blocks cable to it
        site = {"cooling": "liquid", **(site or {})}
    if site:
        document["site"] = site
    document["compute"] = compute
    if s.system:
        document |= {
            "storage_network": {"technology": "ethernet", "switch": "sn5600"},
            "parallel_filesystem": {"kind": "vast"},
        }
    for section, settings in kept.items():  # the base design's own choices win over the system's defaults
        written = document.get(section)
        document[section] = {**written, **settings} if isinstance(written, dict) else settings
    document["workload"] = workload
    lines = ["Starter design written by `gpucluster size`:", *sizing_lines(s), *(notes or [])]
    header = "".join(f"# {line}\n" for line in lines)
    return header + yamlout.dump(document, allow_unicode=True)
