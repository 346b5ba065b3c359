"""Read lldpd's ``lldpcli show neighbors -f json`` (and ``-f json0``) output, one file per switch named
after the switch (``lldp/<switch>.json``): the local port, the neighbour's system name and port id, and
the speed the neighbour reports (its 802.3 MAU type), for every neighbour.

The shape is lldpd's JSON writer (src/client/json_writer.c): with ``json`` an array of one element is
replaced by that element and an object with a ``name`` is keyed by it, so one neighbour gives
``{"lldp": {"interface": {"swp1": {...}}}}`` and several give ``{"lldp": {"interface": [{"swp1": {...}},
{"swp2": {...}}]}}``; a chassis with a system name is ``{"chassis": {"gpu001": {"id": ...}}}``. ``json0``
keeps every array and every ``name`` (``lldpcli(8)``: "the structure of the JSON object is not affected by
the number of interfaces or the number of neighbors").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gpucluster.errors import DesignError, Problem
from gpucluster.inputs.jsonsource import parse_json
from gpucluster.verify.discovery import MAX_DISCOVERY_BYTES, FoundLink, read_text

# The neighbour's operational MAU type as lldpd names it (src/lib/atoms/port.c): "100GbaseCR4 - ...",
# "10GigBaseSR - ...", "1000BaseTFD - ..." (Mb/s), "2p5GbaseX", "5GigT".
_MAU_SPEED = re.compile(r"^(\d+)(?:p(\d+))?(G(?:ig)?)?(?:[Bb]ase|T\b)")
MAX_LLDP_FILES = 100_000
MAX_LLDP_BYTES = 16 * 1024 * 1024  # one switch's neighbours: a 128-port switch's details are well under 1 MB


def lldp_files(paths: list[Path]) -> list[Path]:
    """The JSON files named on the command line, a folder standing for every *.json file in it."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix == ".json" and p.is_file())
            if not found:
                raise DesignError([Problem(str(path), 0, 0, "", "no <switch>.json files in this folder")])
            files += found
        elif path.exists():
            files.append(path)
        else:
            raise DesignError([Problem(str(path), 0, 0, "", "no such file or folder")])
    if len(files) > MAX_LLDP_FILES:
        raise DesignError([Problem(str(paths[0]), 0, 0, "", f"{len(files):,} files: more than {MAX_LLDP_FILES:,}")])
    total = sum(file.stat().st_size for file in files if file.is_file())
    if total > MAX_DISCOVERY_BYTES:
        message = f"{total:,} bytes of LLDP files: more than {MAX_DISCOVERY_BYTES:,} in all, the most supported"
        raise DesignError([Problem(str(paths[0]), 0, 0, "", message)])
    return files


def _one(value: object) -> object:
    while isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value


def _text(value: object) -> str:
    """A leaf value in either variant: "x", ["x"], {"value": "x"} or [{"value": "x"}]."""
    value = _one(value)
    if isinstance(value, dict) and "value" in value:
        value = _one(value["value"])
    return value if isinstance(value, str) else ""


def _interfaces(document: object, fail: Callable[[str], DesignError]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(local interface, neighbour record) of every neighbour, whichever variant and count."""
    if not isinstance(document, dict) or "lldp" not in document:
        raise fail('expected an object with an "lldp" key (lldpcli show neighbors -f json)')
    lldp = _one(document["lldp"])
    if not lldp:
        return
    if not isinstance(lldp, dict):
        raise fail('"lldp" is neither an object nor a one-element array')
    interfaces = lldp.get("interface", [])
    if isinstance(interfaces, dict):
        interfaces = [interfaces]
    if not isinstance(interfaces, list):
        raise fail('"lldp.interface" is neither an object nor an array')
    for item in interfaces:
        if not isinstance(item, dict):
            raise fail('an "lldp.interface" entry is not an object')
        if isinstance(item.get("name"), str):  # json0: {"name": "swp1", "chassis": [...], "port": [...]}
            yield item["name"], item
            continue
        for local, record in item.items():  # json: {"swp1": {...}}
            if not isinstance(record, dict):
                raise fail(f'interface "{local}" is not an object')
            yield local, record


def _system_name(chassis: object) -> str:
    chassis = _one(chassis)
    if not isinstance(chassis, dict):
        return ""
    if "id" in chassis or "name" in chassis:  # json0, or json with a chassis that sends no name
        name = _text(chassis.get("name"))
        if name:
            return name
        identifier = _one(chassis.get("id"))
        return _text(identifier.get("value")) if isinstance(identifier, dict) else ""
    if len(chassis) == 1:  # json: {"<system name>": {...}}
        return str(next(iter(chassis)))  # a JSON object's keys are text
    return ""


def _port_id(port: object) -> tuple[str, float]:
    """(port id as the plan names ports, speed in Gb/s or 0): an interface name is taken as it is; a MAC
    address port id falls back to the port description, which Linux hosts fill with the interface name."""
    port = _one(port)
    if not isinstance(port, dict):
        return "", 0.0
    identifier = _one(port.get("id"))
    kind = _text(identifier.get("type")) if isinstance(identifier, dict) else ""
    value = _text(identifier.get("value")) if isinstance(identifier, dict) else _text(identifier)
    description = _text(port.get("descr"))
    name = value if kind in ("ifname", "local", "ifalias") or not description else description
    speed = 0.0
    negotiation = _one(port.get("auto-negotiation"))
    if isinstance(negotiation, dict):
        speed = mau_speed_gbps(_text(negotiation.get("current")))
    return name, speed


def mau_speed_gbps(mau: str) -> float:
    """The speed of an 802.3 MAU type as lldpd prints it, in Gb/s; 0 when it names none."""
    match = _MAU_SPEED.match(mau)
    if not match:
        return 0.0
    value = float(match.group(1)) + (float(f"0.{match.group(2)}") if match.group(2) else 0.0)
    return value if match.group(3) else value / 1000


def parse_lldp(path: Path, switch: str) -> list[FoundLink]:
    """The neighbours one switch reports, from its ``lldpcli show neighbors -f json`` output."""
    document = parse_json(read_text(path, MAX_LLDP_BYTES), str(path))

    def fail(message: str) -> DesignError:
        return DesignError([Problem(str(path), 0, 0, "", message)])

    links = []
    for local, record in _interfaces(document, fail):
        system = _system_name(record.get("chassis"))
        port, speed = _port_id(record.get("port"))
        if not system or not port:
            raise fail(f'interface "{local}": neighbour without a chassis name/id or port id')
        links.append(FoundLink((switch, local), (system, port), 0, "", speed, f"{path}:{local}"))
    return links
