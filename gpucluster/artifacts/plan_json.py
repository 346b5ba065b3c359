"""plan.json: the whole plan, machine-readable. It is the contract later tools read (see README,
"Reading plan.json"). Records of long lists stand one per line, so the file diffs and greps well.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from gpucluster.design.load import LoadedDesign
from gpucluster.plan.model import AnalysedPlan, Cable, Device, Link, RackPlan, Tier
from gpucluster.plan.queries import queries
from gpucluster.runtime.progress import track

SCHEMA_VERSION = 1
_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def write(plan: AnalysedPlan, loaded: LoadedDesign, folder: Path) -> None:
    with open(folder / "plan.json", "wb") as out:
        out.writelines(plan_chunks(plan, loaded))


def plan_document(plan: AnalysedPlan, loaded: LoadedDesign) -> dict[str, Any]:
    """The plan.json content as one Python object (for tests and small designs)."""
    document: dict[str, Any] = orjson.loads(b"".join(plan_chunks(plan, loaded)))  # JSON: typed Any
    return document


def plan_chunks(plan: AnalysedPlan, loaded: LoadedDesign) -> Iterator[bytes]:
    """plan.json's head (the design, settings, totals, tiers, analyses, rule facts and findings), then the records
    of the physical plan (racks, devices, links, cables), streamed."""
    design = loaded.design
    head = {
        "schema_version": SCHEMA_VERSION,
        "design": {"name": design.name, "description": design.description, "source": design.model_dump(mode="json")},
        "settings": plan.settings_json(),
        "totals": plan.totals.as_json(),
        "tiers": [_tier(t) for t in plan.tiers],
        "analysis": plan.analysis,
        "facts": plan.facts,
        "findings": [
            {"rule": f.rule, "severity": f.severity, "message": f.message, "subject": f.subject} for f in plan.findings
        ],
    }
    yield b"{\n"
    for key, value in head.items():
        yield b'"' + key.encode() + b'": ' + orjson.dumps(value, option=_OPTIONS | orjson.OPT_INDENT_2) + b",\n"
    yield from _records("racks", (_rack(r) for r in track(plan.racks.values(), len(plan.racks), "racks")))
    yield b",\n"
    yield from _records("devices", (_device(d) for d in track(plan.devices.values(), len(plan.devices), "devices")))
    yield b",\n"
    positions, cables = queries(plan).link_cables, plan.cables  # link -> its cable's position (-1: none)
    links = track(enumerate(plan.links), len(plan.links), "links")
    yield from _records(
        "links", (_link(i, link, cables[positions[i]].id if positions[i] >= 0 else None) for i, link in links)
    )
    yield b",\n"
    yield from _records("cables", (_cable(c) for c in track(plan.cables, len(plan.cables), "cables")))
    yield b"\n}\n"


def _records(key: str, records: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    yield b'"' + key.encode() + b'": ['
    first = True
    for record in records:
        yield (b"\n  " if first else b",\n  ") + orjson.dumps(record, option=_OPTIONS)
        first = False
    yield b"\n]" if not first else b"]"


def _tier(t: Tier) -> dict[str, Any]:
    return {
        "network": t.network,
        "tier": t.tier,
        "name": t.name,
        "switch_part": t.switch_part,
        "switches": t.switches,
        "down_links": t.down_links,
        "up_links": t.up_links,
        "down_gbps": t.down_gbps,
        "up_gbps": t.up_gbps,
        "oversubscription": round(t.oversubscription, 4) if t.up_gbps else None,
    }


def _rack(r: RackPlan) -> dict[str, Any]:
    return {
        "name": r.name,
        "part": r.part,
        "row": r.row,
        "position": r.position,
        "x_mm": r.x_mm,
        "y_mm": r.y_mm,
        "purpose": r.purpose,
        "su": r.su,
        "height_u": r.height_u,
        "devices": r.devices,
        "pdus": r.pdus,
        "power_max_w": round(r.power_max_w, 1),
        "power_typical_w": round(r.power_typical_w, 1),
    }


def _device(d: Device) -> dict[str, Any]:
    record = {
        "name": d.name,
        "part": d.part,
        "role": d.role,
        "rack": d.rack,
        "u_position": d.u_position,
        "u_height": d.u_height,
    }
    for key in ("su", "network", "tier", "rail", "pod", "nvlink_domain"):
        value = getattr(d, key)
        if value is not None:
            record[key] = value
    if d.spare:
        record["spare"] = True
    return record


def _link(index: int, link: Link, cable: str | None) -> dict[str, Any]:
    b_end: dict[str, str | int] = {"device": link.b_device, "port": link.b_port}
    record: dict[str, Any] = {
        "id": index,
        "cable": cable,
        "network": link.network,
        "tier": link.tier,
        "a": {"device": link.a_device, "port": link.a_port},
        "b": b_end,
        "speed_gbps": link.speed_gbps,
        "purpose": link.purpose,
    }
    if link.rail is not None:
        record["rail"] = link.rail
    if link.b_half:  # the b end is that half of a switch port split in two (a 1:2 splitter fibre)
        b_end["half"] = link.b_half
    return record


def _cable(c: Cable) -> dict[str, Any]:
    return {
        "id": c.id,
        "network": c.network,
        "links": list(c.links),
        "media": c.media,
        "part": c.cable_part,
        "part_number": c.part_number,
        "length_m": c.length_m,
        "run_length_m": c.run_length_m,
        "a_transceiver": c.a_transceiver,
        "b_transceiver": c.b_transceiver,
    }
