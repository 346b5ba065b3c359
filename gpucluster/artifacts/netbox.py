"""NetBox 4.6 import files (``netbox/``, docs/artifacts.md): ``shared/``, imported once per NetBox (manufacturers,
roles, the packaged catalog's device types, alike for every design), then this cluster's numbered files in import
order, one site per cluster so several clusters share one NetBox.

Columns are the fields of NetBox's import forms and choices NetBox's choice sets (netbox-community/netbox v4.6.8
``netbox/dcim/forms/bulk_import.py``, ``object_import.py``, ``netbox/dcim/choices.py``). Its CSV cable import takes
one termination per side, so a twin-port cable or a 1:2 splitter becomes a NetBox cable per link (``C0042/1``).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache
from itertools import chain, islice
from pathlib import Path
from typing import Any

from gpucluster.catalog.load import load_catalog
from gpucluster.catalog.ports import port_details
from gpucluster.catalog.schema import AnyPart, Pdu, RackMounted
from gpucluster.design.load import LoadedDesign
from gpucluster.formats import yamlout
from gpucluster.formats.tables import GuardedCsvWriter, csv_safe
from gpucluster.plan.labels import link_label
from gpucluster.plan.model import PhysicalPlan, Plan
from gpucluster.plan.oob import PDU_NETWORK_PORT
from gpucluster.plan.power.cords import pdu_outlet_names, power_cords, rack_feeds
from gpucluster.plan.registry import ROLES
from gpucluster.runtime.collector import cycle_collector_paused
from gpucluster.runtime.progress import track

FOLDER = "netbox"
SHARED = "shared"
# Rows per import file. NetBox imports a CSV in one web request, which its default gunicorn worker timeout (120 s,
# netbox docs "Installation: gunicorn") ends; cables (path tracing) and devices (their templates' components) are
# the slowest rows. Assumed, not measured here (no NetBox on these machines): 500 rows keep a file well under a
# minute at the tens of rows per second a cable import runs at.
ROWS_PER_FILE = 500

# NetBox CableTypeChoices slug per plan media (the catalog's multimode is OM4, its single-mode OS2).
CABLE_TYPE = {
    "dac": "dac-passive",
    "acc": "dac-active",
    "aoc": "aoc",
    "mmf": "mmf-om4",
    "smf": "smf-os2",
    "cat6": "cat6",
}
# NetBox InterfaceTypeChoices: InfiniBand ports by generation (NetBox types them apart from Ethernet); Ethernet
# by (cage, speed the port runs at): a QSFP112 cage run at 100G holds a QSFP28 module, at 200G a QSFP56 one.
_INFINIBAND_TYPE = {"infiniband-ndr": "infiniband-ndr", "infiniband-xdr": "infiniband-xdr"}
_ETHERNET_TYPE = {
    ("osfp", 800): "800gbase-x-osfp",
    ("osfp", 400): "400gbase-x-osfp",
    ("qsfp112", 400): "400gbase-x-qsfp112",
    ("qsfp112", 200): "200gbase-x-qsfp56",
    ("qsfp112", 100): "100gbase-x-qsfp28",
    ("qsfp56", 200): "200gbase-x-qsfp56",
    ("qsfp28", 100): "100gbase-x-qsfp28",
    ("sfp28", 25): "25gbase-x-sfp28",
    ("rj45", 1): "1000base-t",
}
# Host adapters (ConnectX, BlueField) have flat-top OSFP cages for riding heat sinks; NetBox names that form
# factor "-rhs" where it has one (400G).
_HOST_OSFP_RHS = {"400gbase-x-osfp": "400gbase-x-osfp-rhs"}
_DEVICE_KINDS = ("gpu_server", "switch", "appliance", "storage_block", "pdu")
# NetBox DeviceAirflowChoices has no "liquid"; a liquid-cooled part's air path is left unset.
_AIRFLOW = {"front-to-rear", "rear-to-front", "passive"}
_RACK_WIDTH_IN = 19  # EIA-310 19-inch equipment racks (NetBox RackWidthChoices)
PDU_INPUT = "input"  # a PDU's power port (its inlet cord to the feed)
_CABLE_COLUMNS = [
    *("side_a_site", "side_a_device", "side_a_power_panel", "side_a_type", "side_a_name"),
    *("side_b_site", "side_b_device", "side_b_power_panel", "side_b_type", "side_b_name"),
    *("type", "status", "label", "length", "length_unit", "description"),
]

# The power cables' columns whose text comes from a catalog (outlet names) and so may look like a formula: only these
# are guarded in a file of a row per power cord; the others are names the planner makes and NetBox's own words. The
# network cables' rows (one per link, 760,000 at 131,072 GPUs) come guarded where they are made (_network_cables).
_POWER_CABLE_CATALOG_TEXT = tuple(_CABLE_COLUMNS.index(name) for name in ("side_a_name", "side_b_name"))
# The devices' columns whose text comes from a catalog (vendor, model) or the design (the site); the others are names
# the planner makes, the role registry's and NetBox's words and numbers.
_DEVICE_CATALOG_TEXT = (2, 3, 5)


@cycle_collector_paused()  # very many records, no cycles (gpucluster.runtime.collector)
def write(plan: PhysicalPlan, loaded: LoadedDesign, folder: Path) -> None:
    out = folder / FOLDER
    (out / SHARED).mkdir(parents=True, exist_ok=True)

    def save(name: str, text: str) -> None:
        (out / name).write_text(text, encoding="utf-8")

    emit_netbox_files(plan, save)


def _device_role(name: str) -> list[str]:
    """A DeviceRoleImportForm row (colour: six hex digits, no '#')."""
    entry = ROLES[name]
    return [entry.netbox_role, entry.netbox_role, entry.colour.removeprefix("#").lower()]


def netbox_files(plan: Plan) -> dict[str, str]:
    files: dict[str, str] = {}
    emit_netbox_files(plan, files.__setitem__)
    return files


def emit_netbox_files(plan: Plan, emit: Callable[[str, str], None]) -> None:
    """Hand each file (name under netbox/, text) to ``emit`` in import order, the large tables a part at a time."""
    packaged = _packaged_device_parts()
    used = sorted({d.part for d in plan.devices.values()})
    own = [p for p in used if p not in packaged or packaged[p] != _device_type(plan.catalog_parts[p])]
    files = {
        f"{SHARED}/01-manufacturers.csv": _manufacturers_csv(sorted({t["manufacturer"] for t in packaged.values()})),
        f"{SHARED}/02-device-roles.csv": _csv(
            ["name", "slug", "color"], [_device_role(entry.name) for entry in ROLES.values()]
        ),
        f"{SHARED}/03-device-types.yaml": _device_types_yaml(packaged[p] for p in sorted(packaged)),
    }
    if own:
        types = [_device_type(plan.catalog_parts[p]) for p in own]
        new_makers = sorted({t["manufacturer"] for t in types} - {t["manufacturer"] for t in packaged.values()})
        if new_makers:
            files["00-manufacturers.csv"] = _manufacturers_csv(new_makers)
        files["00-device-types.yaml"] = _device_types_yaml(types)
    site = cluster_site(plan)
    files["01-sites.csv"] = _csv(
        ["name", "slug", "status", "facility", "description"],
        [[site, _slug(site), "planned", plan.design.site.name, f"GPU cluster {plan.name}"]],
    )
    files["02-racks.csv"] = _csv(
        ["site", "name", "status", "width", "u_height", "description"],
        [
            [site, r.name, "planned", _RACK_WIDTH_IN, r.height_u, r.purpose + (f", SU {r.su}" if r.su else "")]
            for r in plan.racks.values()
        ],
    )
    panels, feeds = _power_panels_and_feeds(plan, site)
    files["03-power-panels.csv"] = _csv(["site", "name", "description"], panels)
    files["04-power-feeds.csv"] = _csv(
        [
            *("site", "power_panel", "rack", "name", "status", "type", "supply", "phase"),
            *("voltage", "amperage", "max_utilization", "description"),
        ],
        feeds,
    )
    for name, text in files.items():
        emit(name, text)
    _split(
        emit,
        "05-devices",
        ["name", "role", "manufacturer", "device_type", "status", "site", "rack", "position", "face"],
        _devices(plan, site),
        _DEVICE_CATALOG_TEXT,
    )
    _split(emit, "06-cables", _CABLE_COLUMNS, _network_cables(plan, site), ())  # guarded as they are made
    _split(emit, "07-power-cables", _CABLE_COLUMNS, _power_cables(plan, site), _POWER_CABLE_CATALOG_TEXT)


def cluster_site(plan: Plan) -> str:
    """One site per cluster keeps two clusters' names apart (import forms find a device by name within its site)."""
    return f"{plan.design.site.name} {plan.name}"


# ------------------------------------------------------------------------------------------------- device types


# A NetBox device type: the document of NetBox's device-type YAML import, component templates as lists
DeviceType = dict[str, Any]


@cache
def _packaged_device_parts() -> dict[str, DeviceType]:
    """Device types of every rack-mounted part of the packaged catalog (the shared set)."""
    catalog = load_catalog()
    return {
        pid: _device_type(part) for pid, part in catalog.parts.items() if getattr(part, "kind", None) in _DEVICE_KINDS
    }


def interface_type(technology: str | None, cage: str, speed_gbps: float, host: bool) -> str:
    """InfiniBand by generation; Ethernet by cage and the class at or below its speed, flat-top OSFP on hosts."""
    if technology in _INFINIBAND_TYPE:
        return _INFINIBAND_TYPE[technology]
    classes = sorted((speed, slug) for (kind, speed), slug in _ETHERNET_TYPE.items() if kind == cage)
    fitting = [slug for speed, slug in classes if speed <= speed_gbps]
    slug = fitting[-1] if fitting else classes[0][1] if classes else "other"
    return _HOST_OSFP_RHS.get(slug, slug) if host else slug


def _device_type(part: AnyPart) -> DeviceType:
    u_height = float(getattr(part, "u_height", 0))
    airflow = getattr(part, "airflow", "")
    weight_kg = getattr(part, "weight_kg", None)
    document: DeviceType = {
        "manufacturer": part.vendor,
        "model": part.model,
        "slug": _slug(part.id),
        "part_number": getattr(part, "part_number", None) or "",
        "u_height": _number(u_height),
        "is_full_depth": u_height > 0,
        **({"airflow": airflow} if airflow in _AIRFLOW else {}),
        **({"weight": _number(weight_kg), "weight_unit": "kg"} if weight_kg else {}),
    }
    interfaces = _interfaces(part)
    power_ports: list[dict[str, object]] = []
    outlets: list[dict[str, object]] = []
    psus = getattr(part, "psus", None)
    if psus and isinstance(part, RackMounted):
        for n in range(1, psus.count + 1):  # each PSU's share of the device's draw (derived: total / PSUs)
            port: dict[str, object] = {"name": f"PSU{n}", "type": f"iec-60320-{psus.inlet.lower()}"}
            if maximum_draw := round(part.power_max_w / psus.count):
                port |= {"maximum_draw": maximum_draw, "allocated_draw": round(part.power_typical_w / psus.count)}
                port["description"] = "derived: the device's maximum and typical draw over its PSUs"
            power_ports.append(port)
    if isinstance(part, Pdu):
        interfaces.append({"name": PDU_NETWORK_PORT, "type": "1000base-t", "mgmt_only": True})
        power_ports.append({"name": PDU_INPUT})  # the catalog does not name the input plug
        for name, outlet in pdu_outlet_names(part):  # which phase each outlet is on: not in the catalog, left unset
            outlets.append({"name": name, "type": f"iec-60320-{outlet.lower()}", "power_port": PDU_INPUT})
    for key, templates in (("interfaces", interfaces), ("power-ports", power_ports), ("power-outlets", outlets)):
        if templates:
            document[key] = templates
    return document


def _interfaces(part: AnyPart) -> list[dict[str, object]]:
    """Each port once; a switch port split in two by a 1:2 splitter fibre has its halves as interfaces too (NetBox
    has no breakout modes; where a half reuses a whole port's name, as Cumulus's swp1s0-s1, one serves both)."""
    interfaces: list[dict[str, object]] = []
    seen: set[str] = set()
    for group in getattr(part, "ports", []):
        for detail in port_details(part, group.role):
            if detail.name not in seen:
                seen.add(detail.name)
                slug = interface_type(group.technology, group.cage_type, group.speed_gbps, host=part.kind != "switch")
                mgmt = {"mgmt_only": True} if group.role in ("bmc", "mgmt") else {}
                interfaces.append({"name": detail.name, "type": slug, **mgmt})
    for group in getattr(part, "ports", []):
        slug = interface_type(group.technology, group.cage_type, group.speed_gbps / 2, host=False)
        for pair in group.split_port_names():
            for half in pair:
                if half not in seen:
                    seen.add(half)
                    interfaces.append({"name": half, "type": slug})
    return interfaces


def _device_types_yaml(types: Iterable[DeviceType]) -> str:
    return yamlout.dump_all(list(types), explicit_start=True, allow_unicode=True, width=120)


def _manufacturers_csv(names: list[str]) -> str:
    return _csv(["name", "slug"], [[m, _slug(m)] for m in names])


# ------------------------------------------------------------------------------------------------- the cluster


def _power_panels_and_feeds(plan: Plan, site: str) -> tuple[Sequence[Sequence[object]], Sequence[Sequence[object]]]:
    """A power panel per feed of the site and a power feed per PDU (its circuit; the continuous-load fraction as
    maximum utilisation)."""
    supply = plan.design.site.power_feed
    feeds_used: set[str] = set()
    rows: list[list[object]] = []
    for rack in plan.racks.values():
        for feed, pdus in rack_feeds(plan, rack).items():
            feeds_used.add(feed)
            for name in pdus:
                pdu = plan.part_as(name, Pdu)
                rows.append(
                    [
                        site,
                        _panel(feed),
                        rack.name,
                        name,
                        "planned",
                        "primary" if feed == "A" else "redundant",
                        "ac",
                        "three-phase" if pdu.phases == 3 else "single-phase",
                        _number(supply.voltage_v),
                        _number(min(supply.breaker_a, pdu.current_a)),
                        round(supply.continuous_load_fraction * 100),
                        f"feed {feed} circuit of {name}",
                    ]
                )
    panels: list[list[object]] = [[site, _panel(feed), f"feed {feed} of {plan.name}"] for feed in sorted(feeds_used)]
    return panels, rows


def _panel(feed: str) -> str:
    return f"Panel {feed}"


def _devices(plan: Plan, site: str) -> Iterator[list[object]]:
    for d in plan.devices.values():
        part = plan.catalog_parts[d.part]
        mounted = bool(d.u_position)
        position = (d.u_position, "front") if mounted else ("", "")
        yield [d.name, ROLES[d.role].netbox_role, part.vendor, part.model, "planned", site, d.rack, *position]


def _part_number(plan: Plan, part_id: str | None) -> str:
    if not part_id:
        return ""
    part = plan.catalog_parts.get(part_id)
    return getattr(part, "part_number", None) or part_id


def _network_cables(plan: Plan, site: str) -> Iterator[Sequence[object]]:
    """A row per link, described by the part numbers of the cable and its optics; the catalog's text guarded
    (csv_safe) once per distinct text: a few dozen make the 760,000 rows of a 131,072-GPU cluster."""
    descriptions: dict[tuple[str, str | None, str | None], str] = {}  # a few kinds of cable and optics
    guarded: dict[str, object] = {}
    lengths: dict[float, object] = {}
    links = plan.links

    def guard(text: str) -> object:
        found = guarded[text] = csv_safe(text)
        return found

    for cable in track(plan.cables, len(plan.cables), "cables"):
        kind = (cable.part_number or cable.cable_part, cable.a_transceiver, cable.b_transceiver)
        description = descriptions.get(kind)
        if description is None:
            optics = [_part_number(plan, t) for t in kind[1:] if t]
            description = descriptions[kind] = kind[0] + (f"; optics {' / '.join(optics)}" if optics else "")
        length = lengths.get(cable.length_m)
        if length is None:
            length = lengths[cable.length_m] = _number(cable.length_m)
        media = CABLE_TYPE.get(cable.media, "")
        several = len(cable.links)
        for leg, index in enumerate(cable.links, 1):
            link = links[index]
            if several > 1:
                text = csv_safe(f"{description}; link {leg} of {several} of cable {cable.id}")
            else:
                text = guarded.get(description) or guard(description)
            yield (
                site,
                link.a_device,
                "",
                "dcim.interface",
                guarded.get(link.a_port) or guard(link.a_port),
                site,
                link.b_device,
                "",
                "dcim.interface",
                guarded.get(link.b_port) or guard(link.b_port),
                media,
                "planned",
                link_label(cable.id, leg, several),
                length,
                "m",
                text,
            )


def _power_cables(plan: Plan, site: str) -> Iterator[list[object]]:
    """Each PSU's cord to its PDU outlet (plan.power.power_cords), then each PDU's input to its power feed."""
    for cord in power_cords(plan):
        yield [
            *(site, cord.device, "", "dcim.powerport", f"PSU{cord.psu}"),
            *(site, cord.pdu, "", "dcim.poweroutlet", cord.outlet),
            *("power", "planned", "", "", "", f"feed {cord.feed}"),
        ]
    for rack in plan.racks.values():
        for feed, pdus in rack_feeds(plan, rack).items():
            for name in pdus:
                yield [
                    *(site, name, "", "dcim.powerport", PDU_INPUT),
                    *(site, "", _panel(feed), "dcim.powerfeed", name),
                    *("power", "planned", "", "", "", f"feed {feed}"),
                ]


# ------------------------------------------------------------------------------------------------- helpers


def _split(
    emit: Callable[[str, str], None],
    stem: str,
    header: list[str],
    rows: Iterable[Sequence[object]],
    guarded: Sequence[int] | None = None,
) -> None:
    """One file, or numbered parts of at most ROWS_PER_FILE rows, a part at a time; `guarded`: the columns that may
    hold formula-like text (None: all)."""
    iterator = iter(rows)
    parts = iter(lambda: list(islice(iterator, ROWS_PER_FILE)), [])  # a part at a time, until one is empty
    first, second = next(parts, []), next(parts, None)
    if second is None:
        emit(f"{stem}.csv", _csv(header, first, guarded))
        return
    for number, part in enumerate(chain([first, second], parts), start=1):
        emit(f"{stem}-{number:02d}.csv", _csv(header, part, guarded))


def _csv(header: list[str], rows: Sequence[Sequence[object]], guarded: Sequence[int] | None = None) -> str:
    handle = io.StringIO()
    writer = GuardedCsvWriter(handle, guarded)
    writer.writerow(header)
    writer.writerows(rows)
    return handle.getvalue()


def _slug(text: str) -> str:
    """NetBox slugs: lowercase letters, digits, hyphens and underscores."""
    return re.sub(r"[^a-z0-9_]+", "-", text.lower()).strip("-")


def _number(value: object) -> object:
    """Whole numbers without a trailing .0 (NetBox reads either; people read this better)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value
