"""What `gpucluster catalog [KIND]` prints: each part with the figures an architect picks it by, and where
those figures come from (the catalog's own citations), so the catalog can be browsed without its YAML."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpucluster.catalog.load import Catalog, source_tag
from gpucluster.catalog.schema import (
    AnyPart,
    Appliance,
    Cable,
    Cdu,
    CoolantPart,
    GpuServer,
    Nic,
    NvlinkSwitchTray,
    Pdu,
    PowerShelf,
    Rack,
    RackMounted,
    RackSystem,
    StorageBlock,
    Switch,
    Transceiver,
)


def _ports(part: object, role: str | None = None) -> str:
    groups = [g for g in getattr(part, "ports", []) if role is None or g.role == role]
    return " + ".join(f"{g.port_count} x {g.speed_gbps:g}G {g.cage_type}" for g in groups) or "-"


def _rack_figures(part: RackMounted) -> list[tuple[str, str]]:
    weight = getattr(part, "weight_kg", None)
    return [
        ("u_height", f"{part.u_height:g}U"),
        ("power_max_w", f"{part.power_max_w / 1000:,.2f} kW max"),
        ("weight_kg", f"{weight:g} kg" if weight else "weight not given"),
    ]


def _server(p: GpuServer) -> list[tuple[str, str]]:
    return [
        ("gpu", f"{p.gpu.count} x {p.gpu.model}"),
        ("gpu.bf16_dense_tflops", f"{p.gpu.bf16_dense_tflops:,.1f} TFLOPS BF16 dense per GPU"),
        ("ports", f"compute {_ports(p, 'compute')}; storage {_ports(p, 'storage')}"),
        *_rack_figures(p),
    ]


def _switch(p: Switch) -> list[tuple[str, str]]:
    return [
        ("technology", p.technology),
        ("ports", _ports(p, "fabric") if p.port_groups("fabric") else _ports(p)),
        ("subnet_manager", "on-board subnet manager" if p.subnet_manager else "no subnet manager"),
        *_rack_figures(p),
    ]


def _appliance(p: Appliance) -> list[tuple[str, str]]:
    return [("role", p.role), ("ports", _ports(p)), *_rack_figures(p)]


def _storage(p: StorageBlock) -> list[tuple[str, str]]:
    return [
        ("tier", f"{p.tier} ({', '.join(p.filesystems)})"),
        ("capacity_tb", f"{p.capacity_tb:,.0f} TB usable"),
        ("read_gbytes_per_s", f"{p.read_gbytes_per_s:g} GB/s read"),
        ("write_gbytes_per_s", f"{p.write_gbytes_per_s:g} GB/s write"),
        ("ports", _ports(p, "storage")),
        *_rack_figures(p),
    ]


def _nic(p: Nic) -> list[tuple[str, str]]:
    return [("ports", _ports(p)), ("power_max_w", f"{p.power_max_w:g} W max")]


def _transceiver(p: Transceiver) -> list[tuple[str, str]]:
    return [
        ("cage_type", f"{p.cage_type}, {p.ports} x {p.speed_gbps:g}G"),
        ("media", f"{p.media}, {p.reach_m:g} m"),
        ("power_max_w", f"{p.power_max_w:g} W max"),
    ]


def _cable(p: Cable) -> list[tuple[str, str]]:
    lengths = f"{min(p.lengths_m):g}-{max(p.lengths_m):g} m" if len(p.lengths_m) > 1 else f"{p.lengths_m[0]:g} m"
    return [
        ("media", f"{p.media}, {p.links} x {p.speed_gbps:g}G, {p.end_a} to {p.end_b}"),
        ("reach_m", f"reach {p.reach_m:g} m"),
        ("lengths_m", lengths),
    ]


def _rack(p: Rack) -> list[tuple[str, str]]:
    return [
        ("u_height", f"{p.u_height}U, {p.width_mm:g} x {p.depth_mm:g} mm"),
        ("max_load_kg", f"{p.max_load_kg:g} kg load" if p.max_load_kg else "load not given"),
    ]


def _pdu(p: Pdu) -> list[tuple[str, str]]:
    outlets = ", ".join(f"{n} x {kind}" for kind, n in p.outlets.items())
    return [("voltage_v", f"{p.voltage_v:g} V {p.phases}-phase {p.current_a:g} A"), ("outlets", outlets)]


def _rack_system(p: RackSystem) -> list[tuple[str, str]]:
    return [
        ("compute_trays", f"{p.compute_trays} compute trays ({p.compute_tray})"),
        ("nvlink_switch_trays", f"{p.nvlink_switch_trays} NVLink switch trays"),
        ("power_shelves", f"{p.power_shelves} power shelves, {p.power_shelf_redundancy}"),
        ("published_power_w", f"{p.published_power_w / 1000:,.0f} kW per rack"),
        ("liquid_fraction", f"{p.liquid_fraction:.0%} of its heat to liquid"),
    ]


def _nvlink_switch_tray(p: NvlinkSwitchTray) -> list[tuple[str, str]]:
    return [
        ("switch_chips", f"{p.switch_chips} NVLink switch chips"),
        ("nvlink_ports_per_chip", f"{p.nvlink_ports_per_chip} ports per chip"),
        *_rack_figures(p),
    ]


def _power_shelf(p: PowerShelf) -> list[tuple[str, str]]:
    return [
        ("psus", f"{p.psus.count} x {p.psus.rating_w / 1000:g} kW PSUs = {p.rating_w / 1000:g} kW"),
        ("output", p.output),
        ("u_height", f"{p.u_height:g}U"),
    ]


def _cdu(p: Cdu) -> list[tuple[str, str]]:
    return [
        ("placement", p.placement),
        ("capacity_kw", f"{p.capacity_kw:,.0f} kW"),
        ("max_racks", f"up to {p.max_racks} racks" if p.max_racks else "racks not limited"),
        ("pump_redundancy", f"pumps {p.pump_redundancy}"),
    ]


def _coolant_part(p: CoolantPart) -> list[tuple[str, str]]:
    return [("item", p.item)]


@dataclass(frozen=True)
class PartKind:
    name: str  # as the command takes it
    kind: type
    figures: Callable[..., list[tuple[str, str]]]


PART_KINDS = (
    PartKind("gpu-server", GpuServer, _server),
    PartKind("switch", Switch, _switch),
    PartKind("appliance", Appliance, _appliance),
    PartKind("storage", StorageBlock, _storage),
    PartKind("nic", Nic, _nic),
    PartKind("transceiver", Transceiver, _transceiver),
    PartKind("cable", Cable, _cable),
    PartKind("rack", Rack, _rack),
    PartKind("pdu", Pdu, _pdu),
    PartKind("rack-system", RackSystem, _rack_system),
    PartKind("nvlink-switch-tray", NvlinkSwitchTray, _nvlink_switch_tray),
    PartKind("power-shelf", PowerShelf, _power_shelf),
    PartKind("cdu", Cdu, _cdu),
    PartKind("coolant-part", CoolantPart, _coolant_part),
)


def catalog_lines(catalog: Catalog, kind: str | None = None, *, citations: bool = False) -> list[str]:
    """Parts of one kind (or all), grouped by kind: id, vendor and model, key figures, and their sources
    (the source tags, or with ``citations`` each figure's resolved citation)."""
    lines: list[str] = []
    for part_kind in PART_KINDS:
        if kind is not None and part_kind.name != kind:
            continue
        parts: list[AnyPart] = catalog.of_kind(part_kind.kind)
        if not parts:
            continue
        lines.append(f"{part_kind.name} ({len(parts)})")
        for part in parts:
            figures = part_kind.figures(part)
            lines.append(f"  {part.id}: {part.vendor} {part.model}")
            lines.append("      " + "; ".join(text for _field, text in figures))
            sources = []
            for field_name, _text in figures:
                cited = catalog.citation(part.id, field_name) if citations else source_tag(part, field_name)
                if cited and cited not in sources:
                    sources.append(cited)
            if citations:
                lines += [f"      source: {s}" for s in sources]
            else:
                lines.append("      sources: " + (" | ".join(sources) if sources else "none cited"))
    return lines
