"""NetBox bulk-import CSVs, so the plan can be loaded into a DCIM: ``netbox/`` holds one file per
object type, numbered in the order they must be imported (each refers to objects of the ones
before it by name).

Columns are the fields of NetBox's import forms (netbox-community/netbox
``netbox/dcim/forms/bulk_import.py``: SiteImportForm, ManufacturerImportForm, DeviceRoleImportForm,
DeviceTypeImportForm, RackImportForm, DeviceImportForm, InterfaceImportForm, CableImportForm);
choice values are NetBox's slugs (``netbox/dcim/choices.py``). Device types imported from CSV have
no component templates, so ``07-interfaces.csv`` creates every cabled port before the cables. A
NetBox cable imported from CSV has one termination per side, so a twin-port or splitter cable is
imported as one NetBox cable per link, all carrying the schedule's cable ID as their label.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from gpucluster.catalog.ports import port_details
from gpucluster.design.load import LoadedDesign
from gpucluster.plan.model import Plan

FOLDER = "netbox"

# NetBox CableTypeChoices slug per plan media (the catalog's multimode is OM4, its single-mode OS2).
CABLE_TYPE = {
    "dac": "dac-passive",
    "acc": "dac-active",
    "aoc": "aoc",
    "mmf": "mmf-om4",
    "smf": "smf-os2",
    "cat6": "cat6",
}
# NetBox InterfaceTypeChoices slug per (cage type, port speed class); "osfp-rhs" is the flat-top
# (riding heat sink) OSFP of host adapters, which NetBox names separately.
_INTERFACE_TYPE = {
    ("osfp", 800): "800gbase-x-osfp",
    ("osfp", 400): "400gbase-x-osfp",
    ("qsfp112", 400): "400gbase-x-qsfp112",
    ("qsfp56", 200): "200gbase-x-qsfp56",
    ("qsfp28", 100): "100gbase-x-qsfp28",
    ("sfp28", 25): "25gbase-x-sfp28",
    ("rj45", 1): "1000base-t",
}
# NetBox DeviceAirflowChoices has no "liquid"; a liquid-cooled part's air path is left unset.
_AIRFLOW = {"front-to-rear", "rear-to-front", "passive"}
_ROLE_COLOR = {
    "gpu-server": "4caf50",
    "switch": "2196f3",
    "fabric-manager": "9c27b0",
    "management-server": "607d8b",
    "storage": "ff9800",
    "object-storage": "ffc107",
    "pdu": "795548",
}
_DEVICE_TYPE_COLUMNS = [
    *("manufacturer", "model", "slug", "part_number", "u_height", "is_full_depth"),
    *("airflow", "weight", "weight_unit", "description"),
]
_CABLE_COLUMNS = [
    *("side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name"),
    *("type", "status", "label", "length", "length_unit", "description"),
]
_RACK_WIDTH_IN = 19  # EIA-310 19-inch equipment racks (NetBox RackWidthChoices)


def write(plan: Plan, loaded: LoadedDesign, folder: Path) -> None:
    out = folder / FOLDER
    out.mkdir(parents=True, exist_ok=True)
    site = plan.design.site.name  # type: ignore[attr-defined]
    parts = plan.catalog_parts
    used_parts = sorted({d.part for d in plan.devices.values()})
    _csv(out / "01-sites.csv", ["name", "slug", "status", "description"], [[site, _slug(site), "planned", plan.name]])
    manufacturers = sorted({parts[p].vendor for p in used_parts})  # type: ignore[attr-defined]
    _csv(out / "02-manufacturers.csv", ["name", "slug"], [[m, _slug(m)] for m in manufacturers])
    roles = sorted({d.role for d in plan.devices.values()})
    _csv(out / "03-device-roles.csv", ["name", "slug", "color"], [[r, r, _ROLE_COLOR.get(r, "9e9e9e")] for r in roles])
    device_types = []
    for part_id in used_parts:
        part = parts[part_id]
        airflow = getattr(part, "airflow", "")
        device_types.append(
            [
                part.vendor,  # type: ignore[attr-defined]
                part.model,  # type: ignore[attr-defined]
                _slug(part_id),
                getattr(part, "part_number", None) or "",
                _number(getattr(part, "u_height", 0)),
                "true" if getattr(part, "u_height", 0) else "false",
                airflow if airflow in _AIRFLOW else "",
                _number(getattr(part, "weight_kg", None) or ""),
                "kg" if getattr(part, "weight_kg", None) else "",
                part_id,
            ]
        )
    _csv(
        out / "04-device-types.csv",
        [
            "manufacturer",
            "model",
            "slug",
            "part_number",
            "u_height",
            "is_full_depth",
            "airflow",
            "weight",
            "weight_unit",
            "description",
        ],
        device_types,
    )
    _csv(
        out / "05-racks.csv",
        ["site", "name", "status", "width", "u_height", "description"],
        [
            [site, r.name, "planned", _RACK_WIDTH_IN, r.height_u, f"{r.purpose}" + (f", SU {r.su}" if r.su else "")]
            for r in plan.racks.values()
        ],
    )
    devices = []
    for d in plan.devices.values():
        part = parts[d.part]
        mounted = bool(d.u_position)
        devices.append(
            [
                d.name,
                d.role,
                part.vendor,  # type: ignore[attr-defined]
                part.model,  # type: ignore[attr-defined]
                "planned",
                site,
                d.rack,
                d.u_position if mounted else "",
                "front" if mounted else "",
            ]
        )
    _csv(
        out / "06-devices.csv",
        ["name", "role", "manufacturer", "device_type", "status", "site", "rack", "position", "face"],
        devices,
    )
    _csv(out / "07-interfaces.csv", ["device", "name", "type", "speed", "mgmt_only"], _interfaces(plan))
    _csv(
        out / "08-cables.csv",
        [
            "side_a_device",
            "side_a_type",
            "side_a_name",
            "side_b_device",
            "side_b_type",
            "side_b_name",
            "type",
            "status",
            "label",
            "length",
            "length_unit",
            "description",
        ],
        _cables(plan),
    )


def _interfaces(plan: Plan) -> list[list[object]]:
    """Every cabled port, with its NetBox type from its cage and speed (in the devices' port order)."""
    kinds: dict[str, dict[str, tuple[str, float, bool]]] = {}
    for part_id in {d.part for d in plan.devices.values()}:
        part = plan.catalog_parts[part_id]
        table: dict[str, tuple[str, float, bool]] = {}
        for group in getattr(part, "ports", []):
            for detail in port_details(part, group.role):
                if detail.name not in table:
                    table[detail.name] = (group.cage_type, group.speed_gbps, group.role in ("bmc", "mgmt"))
        kinds[part_id] = table
    rows = []
    seen: set[tuple[str, str]] = set()
    for link in plan.links:
        for device, port in ((link.a_device, link.a_port), (link.b_device, link.b_port)):
            if (device, port) in seen:
                continue
            seen.add((device, port))
            cage, speed, mgmt = kinds[plan.devices[device].part].get(port, ("rj45", 1.0, True))
            rows.append(
                [device, port, _interface_type(cage, speed), int(speed * 1_000_000), "true" if mgmt else "false"]
            )
    return rows


def _interface_type(cage: str, speed_gbps: float) -> str:
    """The NetBox slug for the cage at the fastest class not above the port's speed (a 200G port in an
    OSFP cage is still an OSFP interface: then the cage's slowest class)."""
    classes = sorted((speed, slug) for (kind, speed), slug in _INTERFACE_TYPE.items() if kind == cage)
    if not classes:
        return "other"
    fitting = [slug for speed, slug in classes if speed <= speed_gbps]
    return fitting[-1] if fitting else classes[0][1]


def _cables(plan: Plan) -> list[list[object]]:
    rows = []
    for cable in plan.cables:
        for leg, index in enumerate(cable.links, 1):
            link = plan.links[index]
            note = f"{cable.cable_part}" + (f", link {leg} of {len(cable.links)}" if len(cable.links) > 1 else "")
            rows.append(
                [
                    link.a_device,
                    "dcim.interface",
                    link.a_port,
                    link.b_device,
                    "dcim.interface",
                    link.b_port,
                    CABLE_TYPE.get(cable.media, ""),
                    "planned",
                    cable.id,
                    _number(cable.length_m),
                    "m",
                    note,
                ]
            )
    return rows


def _csv(path: Path, header: list[str], rows: list[list[object]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def _slug(text: str) -> str:
    """NetBox slugs: lowercase letters, digits, hyphens and underscores."""
    return re.sub(r"[^a-z0-9_]+", "-", text.lower()).strip("-")


def _number(value: object) -> object:
    """Whole numbers without a trailing .0 (NetBox reads either; the files read better)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value
