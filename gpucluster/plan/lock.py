"""The plan lock: what is built stays where it is.

`gpucluster build` writes ``<design>.lock.json`` beside the design: every rack's place, every device's rack and
U, every link's ports and every cable's id and labels. A later build keeps them for a device still in the design
(same name, same part), a link between two kept devices and a cable over the same links; new equipment goes into
free space of its kept neighbours' rack, new racks onto free floor positions (docs/growth.md). The file is JSON,
one sorted record per line, so it diffs and merges well; read as user input, bounded, strictly checked and
located like a design.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from gpucluster.catalog.ports import PortPool, device_ports
from gpucluster.catalog.schema import Pdu
from gpucluster.design.load import LoadedDesign
from gpucluster.errors import MAX_REPORTED, DesignError, Problem
from gpucluster.inputs.jsonsource import json_position
from gpucluster.plan.model import Device, Link, Plan, PlanDraft, RackPlan
from gpucluster.plan.oob import PDU_NETWORK_PORT
from gpucluster.plan.power.circuits import pdus_needed, pdus_to_keep_psus
from gpucluster.plan.rack_scale import is_nvlink_port
from gpucluster.plan.racks import pdu_suffixes, rack_inlets, rack_name
from gpucluster.plan.registry import NETWORK_NAMES, RACK_PURPOSES
from gpucluster.plan.resolve import existing_parts

LOCK_SCHEMA = "gpucluster-lock/1"
LOCK_SUFFIX = ".lock.json"
MAX_LOCK_BYTES = 512 * 1024 * 1024  # a 131,072-GPU plan's lock is about 200 MB
MAX_RECORDS = 4_000_000  # per list: above the links of the largest supported plan

_Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9 _.:/+@-]{0,199}$")]  # device, part, port (limits.py)
_RackName = Annotated[str, Field(pattern=r"^[A-Z]{1,3}[0-9]{2,4}$")]
_CableId = Annotated[str, Field(pattern=r"^[A-Z]-[A-Z]{1,3}[0-9]{2,4}-[0-9]{4,7}$")]
_Label = Annotated[str, Field(pattern=r"^[^\x00-\x1f\x7f]{0,4000}$")]
_Count = Annotated[int, Field(ge=0, le=1_000_000)]
_Mm = Annotated[float, Field(ge=0, le=1e9, allow_inf_nan=False)]
_End = Annotated[list[_Name], Field(min_length=2, max_length=2)]


def _one_of(allowed: Iterable[str], what: str) -> Callable[[str], str]:
    names = tuple(allowed)

    def check(value: str) -> str:
        if value not in names:
            raise ValueError(f"not a {what} (one of {', '.join(names)})")
        return value

    return check


_Network = Annotated[str, AfterValidator(_one_of(NETWORK_NAMES, "network"))]
_Purpose = Annotated[str, AfterValidator(_one_of(RACK_PURPOSES, "rack purpose"))]


class _Record(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class LockedRack(_Record):
    name: _RackName
    part: _Name
    row: _Count
    position: _Count
    x_mm: _Mm
    y_mm: _Mm
    purpose: _Purpose
    su: _Count | None = None
    height_u: Annotated[int, Field(ge=1, le=100)]


class LockedDevice(_Record):
    name: _Name
    part: _Name
    rack: _RackName
    u: Annotated[int, Field(ge=0, le=100)]  # lowest rack unit; 0 for zero-U devices (PDUs)


class LockedLink(_Record):
    network: _Network
    a: _End  # [device, port]
    b: _End
    cable: _CableId | None = None  # None for a backplane link (no cable)


class LockedCable(_Record):
    id: _CableId
    a_label: _Label
    b_label: _Label


class Lock(_Record):
    """A plan lock as written by :func:`lock_text`."""

    schema_: Literal["gpucluster-lock/1"] = Field(alias="schema")
    cluster: _Name
    racks: Annotated[list[LockedRack], Field(max_length=MAX_RECORDS)]
    devices: Annotated[list[LockedDevice], Field(max_length=MAX_RECORDS)]
    links: Annotated[list[LockedLink], Field(max_length=MAX_RECORDS)]
    cables: Annotated[list[LockedCable], Field(max_length=MAX_RECORDS)]


def default_lock_path(design: Path) -> Path:
    """``designs/x.yaml`` -> ``designs/x.lock.json``."""
    return design.with_name(design.stem + LOCK_SUFFIX)


# -- reading ----------------------------------------------------------------------------------------------------


def read_design_lock(path: Path, loaded: LoadedDesign) -> Lock:
    """A design's lock, checked against the parts a lock of it may name: the catalog's and the hand-offs of the
    design's existing filesystems (the command and the Pulumi program read it alike)."""
    existing = existing_parts(loaded)
    return read_lock(
        path, loaded.design.name, {**loaded.catalog.parts, **existing} if existing else loaded.catalog.parts
    )


def read_lock(path: Path, cluster: str, parts: Mapping[str, Any]) -> Lock:
    """Read and check a lock for the design named `cluster` against the catalog `parts` it is built with; every
    problem is a DesignError at the lock's file:line:column."""
    where = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_LOCK_BYTES:
            raise DesignError(
                [Problem(where, 0, 0, "", f"a lock is at most {MAX_LOCK_BYTES >> 20} MiB, this is {size >> 20} MiB")]
            )
        raw = path.read_bytes()
    except OSError as error:
        raise DesignError([Problem(where, 0, 0, "", f"cannot read the lock: {error.strerror}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise DesignError([Problem(where, line, 1, "", "a lock is UTF-8 JSON; this byte is not UTF-8")]) from None
    at = _Locator(where, text)
    try:
        lock = Lock.model_validate_json(raw)  # pydantic-core parses and checks in one pass
    except ValidationError as exc:
        raise DesignError(_schema_problems(at, exc.errors())) from None
    if lock.cluster != cluster:
        message = (
            f"this lock is of the cluster {lock.cluster!r}, not {cluster!r}: name the design's own lock with "
            "--lock, or start afresh with --relock"
        )
        raise DesignError([at.problem(("cluster",), message)])
    problems = _check_consistent(at, lock) + _check_parts(at, lock, parts)
    if problems:
        raise DesignError(problems[:MAX_REPORTED])
    return lock


@dataclass(frozen=True)
class _Locator:
    """Places a problem at the line and column of a lock's value, however the file is laid out (hand-edited,
    pretty-printed); positions are found only for the problems, so a good lock is parsed once, fast."""

    where: str
    text: str

    def problem(self, loc: tuple[str | int, ...], message: str) -> Problem:
        line, column = json_position(self.text, loc)
        return Problem(self.where, line, column, _dotted(loc), message)


def _dotted(loc: tuple[str | int, ...]) -> str:
    return ".".join(f"[{part}]" if isinstance(part, int) else str(part) for part in loc).replace(".[", "[")


def _schema_problems(at: _Locator, errors: list[Any]) -> list[Problem]:
    """The lock's JSON syntax error, a foreign schema, or each field the schema refuses, located."""
    syntax = next((e for e in errors if e["type"] == "json_invalid"), None)
    if syntax is not None:
        reason = str(syntax["ctx"].get("error", syntax["msg"]))
        found = re.search(r"line (\d+) column (\d+)", reason + syntax["msg"])
        line, column = (int(found[1]), max(1, int(found[2]))) if found else (0, 0)
        return [Problem(at.where, line, column, "", f"not JSON: {reason[:200]}")]
    if any(e["loc"] in ((), ("schema",)) for e in errors):
        found_schema = re.search(r'"schema"\s*:\s*("(?:[^"\\]|\\.){0,60}")', at.text)
        message = (
            f"not a plan lock of this tool: schema {found_schema[1] if found_schema else 'missing'}, "
            f"expected {LOCK_SCHEMA!r} (write a new one with gpucluster build --relock)"
        )
        return [at.problem(("schema",) if found_schema else (), message)]
    unknown = "unknown field: a lock holds only what gpucluster build writes"
    return [
        at.problem(tuple(e["loc"]), unknown if e["type"] == "extra_forbidden" else e["msg"])
        for e in errors[:MAX_REPORTED]
    ]


def _check_consistent(at: _Locator, lock: Lock) -> list[Problem]:
    """Names unique, every device in a rack of the lock, every link's ends among the devices; floor positions and
    cable ids unique (labels on site: a duplicate is the lock's error, never renumbered)."""
    problems = _duplicate_racks(at, lock) + _duplicate_cable_ids(at, lock)
    racks = {r.name for r in lock.racks}
    devices: set[str] = set()
    for i, device in enumerate(lock.devices):
        if device.name in devices:
            problems.append(at.problem(("devices", i, "name"), "a device listed twice"))
        devices.add(device.name)
        if device.rack not in racks:
            problems.append(at.problem(("devices", i, "rack"), "a rack the lock does not list"))
        if len(problems) >= MAX_REPORTED:
            return problems
    for i, link in enumerate(lock.links):
        for end in ("a", "b"):
            if getattr(link, end)[0] not in devices:
                problems.append(at.problem(("links", i, end, 0), "a device the lock does not list"))
        if len(problems) >= MAX_REPORTED:
            break
    return problems


def _duplicate_racks(at: _Locator, lock: Lock) -> list[Problem]:
    """A rack name or a floor position listed twice: two racks cannot stand in one place."""
    problems = []
    seen: set[str] = set()
    placed: dict[tuple[int, int], str] = {}
    for i, rack in enumerate(lock.racks):
        if rack.name in seen:
            problems.append(at.problem(("racks", i, "name"), "a rack listed twice"))
        seen.add(rack.name)
        other = placed.setdefault((rack.row, rack.position), rack.name)
        if other != rack.name:
            message = f"rack {rack.name} at row {rack.row} position {rack.position}, where rack {other} stands"
            problems.append(at.problem(("racks", i, "position"), message))
    return problems


def _duplicate_cable_ids(at: _Locator, lock: Lock) -> list[Problem]:
    """A cable id listed twice: each is a label on a cable on site, so the lock is wrong, not the plan."""
    first: dict[str, int] = {}
    problems = []
    for i, cable in enumerate(lock.cables):
        index = first.setdefault(cable.id, i)
        if index != i:
            message = f"cable id {cable.id} listed twice (also cables[{index}]): each labels one cable on site"
            problems.append(at.problem(("cables", i, "id"), message))
    return problems


def _check_parts(at: _Locator, lock: Lock, parts: Mapping[str, Any]) -> list[Problem]:
    """Every device's part is in the catalog, and every link end a port that part has: a hand-edited port is the
    lock's error here, not the catalog's or the site's later on."""
    problems = []
    ports_of: dict[str, tuple[Any, frozenset[str]]] = {}  # device -> its part and the part's port names
    by_part: dict[str, frozenset[str]] = {}
    for i, device in enumerate(lock.devices):
        part = parts.get(device.part)
        if part is None:
            problems.append(at.problem(("devices", i, "part"), f"part {device.part!r} is not in the catalog"))
            continue
        if device.part not in by_part:
            by_part[device.part] = _port_names(part)
        ports_of[device.name] = (part, by_part[device.part])
    for i, link in enumerate(lock.links):
        for end in ("a", "b"):
            device, port = getattr(link, end)
            part, names = ports_of.get(device, (None, frozenset()))
            if part is None or port in names:
                continue
            if link.network == "nvlink" and is_nvlink_port(part, port):
                continue
            problems.append(at.problem(("links", i, end, 1), f"{device} (part {part.id}) has no port {port!r}"))
        if len(problems) >= MAX_REPORTED:
            break
    return problems


def _port_names(part: Any) -> frozenset[str]:
    """Every port (and split port half) a catalog part has, by name; a PDU has its one network port, which the
    catalog does not list."""
    if isinstance(part, Pdu):
        return frozenset({PDU_NETWORK_PORT})
    return frozenset(
        name
        for pool in device_ports(part).values()
        for name in (*pool.names, *(h for pair in pool.halves for h in pair))
    )


# -- applying ---------------------------------------------------------------------------------------------------


def link_key(link: Link) -> tuple[str, str, str, str, str]:
    return (link.network, link.a_device, link.a_port, link.b_device, link.b_port)


def locked_key(link: LockedLink) -> tuple[str, str, str, str, str]:
    return (link.network, link.a[0], link.a[1], link.b[0], link.b[1])


@dataclass
class _Floor:
    """Free floor positions for new racks: the lock's positions are never reused."""

    per_row: int
    pitch_mm: float
    row_pitch_mm: float
    taken: set[tuple[int, int]] = field(default_factory=set)
    names: set[str] = field(default_factory=set)

    def free_from(self, row: int, position: int) -> tuple[int, int]:
        while (row, position) in self.taken or rack_name(row, position) in self.names:
            position += 1
            if position >= self.per_row:
                row, position = row + 1, 0
        return row, position


@dataclass
class _Racks:
    """The final racks as they are filled: which units of each are used, and the floor positions taken."""

    floor: _Floor
    final: dict[str, RackPlan] = field(default_factory=dict)
    used_u: dict[str, list[bool]] = field(default_factory=dict)
    # the most each rack's devices draw: every kept device from the start (whichever planned rack it is met in),
    # then each new device put there, so a new device is held to the rack's whole budget
    load_w: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))

    def open(self, spec: RackPlan, template: RackPlan) -> RackPlan:
        """The final rack `spec` describes (created once), with the rack-scale system of its planned rack."""
        rack = self.final.get(spec.name)
        if rack is None:
            spec.rack_system, spec.nvlink_domain = template.rack_system, template.nvlink_domain
            rack = self.final[spec.name] = spec
            self.used_u[spec.name] = [False] * (spec.height_u + 2)
            self.floor.taken.add((spec.row, spec.position))
            self.floor.names.add(spec.name)
        return rack

    def occupy(self, rack: RackPlan, device: Device, u: int) -> None:
        used = self.used_u[rack.name]
        for unit in range(u, u + math.ceil(device.u_height)):
            if 0 < unit < len(used):
                used[unit] = True

    def fits_at(self, rack: RackPlan, device: Device, u: int) -> bool:
        height = math.ceil(device.u_height)
        return height == 0 or (
            u >= 1 and u + height - 1 <= rack.height_u and not any(self.used_u[rack.name][u : u + height])
        )

    def free_u(self, rack: RackPlan, device: Device) -> int | None:
        if math.ceil(device.u_height) == 0:
            return 0
        return next((u for u in range(1, rack.height_u + 1) if self.fits_at(rack, device, u)), None)


def place_under_lock(
    plan: PlanDraft,
    lock: Lock,
    power_w: Callable[[Device], float],
    budget_w: float,
    per_row: int,
    pitch_mm: float,
    row_pitch_mm: float,
) -> None:
    """Keep every kept device at its locked rack and U and every locked rack at its place; put new devices
    into free space of the rack their kept rack-mates stand in (within its U and power budget), else into
    new racks at free floor positions. PDUs follow their rack's name. ``power_w(device)`` is the most a
    device draws (with its optics), as the racks were packed."""
    locked_device = {d.name: d for d in lock.devices}
    kept = {
        name
        for name, device in plan.devices.items()
        if device.role != "pdu" and (entry := locked_device.get(name)) is not None and entry.part == device.part
    }
    floor = _Floor(per_row, pitch_mm, row_pitch_mm)
    floor.taken = {(r.row, r.position) for r in lock.racks}
    floor.names = {r.name for r in lock.racks}
    racks = _Racks(floor)
    _place_kept(plan, lock, kept, locked_device, racks)
    for name in kept:
        racks.load_w[locked_device[name].rack] += power_w(plan.devices[name])
    carried: defaultdict[str, list[str]] = defaultdict(list)  # final rack -> the planned PDUs brought to it
    new_rack_of: dict[str, RackPlan] = {}
    for planned in list(plan.racks.values()):
        votes = Counter(locked_device[n].rack for n in planned.devices if n in kept)
        target = racks.final[min(votes, key=lambda r: (-votes[r], r))] if votes else None
        home: Counter[str] = Counter()
        for device in [plan.devices[n] for n in planned.devices]:
            if device.name in kept:
                racks.final[device.rack].devices.append(device.name)
                home[device.rack] += 1
                continue
            rack = _rack_for_new(plan, device, planned, target, racks, new_rack_of, power_w, budget_w)
            device.rack = rack.name
            rack.devices.append(device.name)
            racks.occupy(rack, device, device.u_position)
            home[rack.name] += 1
        if planned.pdus and home:
            carried[min(home, key=lambda r: (-home[r], r))] += planned.pdus
    _total_rack_power(plan, racks.final.values(), power_w)
    _settle_pdus(plan, lock, racks.final, carried)
    plan.racks = {
        r.name: r for r in sorted(racks.final.values(), key=lambda r: (r.row, r.position)) if r.devices or r.pdus
    }


def _place_kept(plan: Plan, lock: Lock, kept: set[str], locked_device: dict[str, LockedDevice], racks: _Racks) -> None:
    """Kept devices first, at their locked rack and U, so new devices only take the space left around them."""
    locked_rack = {r.name: r for r in lock.racks}
    for name in sorted(kept):
        entry = locked_device[name]
        spec = locked_rack[entry.rack]
        template = plan.racks[plan.devices[name].rack]
        home_rack = racks.open(RackPlan(**spec.model_dump()), template)
        device = plan.devices[name]
        if math.ceil(device.u_height) and not racks.fits_at(home_rack, device, entry.u):
            raise ValueError(
                f"the plan lock puts {name} ({math.ceil(device.u_height)}U) at U{entry.u} of rack {home_rack.name}, "
                f"which is beyond its {home_rack.height_u}U or taken by another device of the lock: the lock is "
                "corrupted (build with --relock to plan afresh)"
            )
        device.rack, device.u_position = home_rack.name, entry.u
        racks.occupy(home_rack, device, entry.u)


def _rack_for_new(
    plan: Plan,
    device: Device,
    planned: RackPlan,
    target: RackPlan | None,
    racks: _Racks,
    new_rack_of: dict[str, RackPlan],
    power_w: Callable[[Device], float],
    budget_w: float,
) -> RackPlan:
    """The rack a new device goes into, its U set: free space in `target` (the rack its kept rack-mates stand
    in) within its power budget, else the one new rack its planned rack becomes, at a free floor position."""
    if target is not None:
        u = racks.free_u(target, device)
        if u is not None and racks.load_w[target.name] + power_w(device) <= budget_w:
            device.u_position = u
            racks.load_w[target.name] += power_w(device)
            return target
    rack = new_rack_of.get(planned.name)
    if rack is None:
        floor = racks.floor
        row, position = floor.free_from(planned.row, planned.position)
        x_mm, y_mm = float(position * floor.pitch_mm), float(row * floor.row_pitch_mm)
        fresh = replace(planned, name=rack_name(row, position), row=row, position=position, x_mm=x_mm, y_mm=y_mm)
        fresh.devices, fresh.pdus = [], []
        rack = new_rack_of[planned.name] = racks.open(fresh, planned)
    if not racks.fits_at(rack, device, device.u_position):
        u = racks.free_u(rack, device)
        if u is None:
            raise ValueError(f"{device.name} does not fit the free space of rack {rack.name}")
        device.u_position = u
    return rack


def _settle_pdus(plan: PlanDraft, lock: Lock, final: dict[str, RackPlan], carried: dict[str, list[str]]) -> None:
    """Every final rack gets the PDUs its whole load needs (plan/power/circuits.py), the lock's first under their
    locked names. Each is a planned PDU renamed, with its out-of-band link: first those brought to the rack, then
    others' spares; a rack still short takes a new PDU (_add_pdu). Planned PDUs no rack needs are dropped."""
    locked_pdus: defaultdict[str, list[str]] = defaultdict(list)
    for entry in lock.devices:
        if entry.name.startswith(f"{entry.rack}-pdu-"):
            locked_pdus[entry.rack].append(entry.name)
    renames: dict[str, str] = {}
    spare: list[str] = []  # planned PDUs their rack does not need, in rack order
    short: list[tuple[RackPlan, str, str]] = []  # (rack, PDU name, model) still to find a PDU for
    for rack in sorted(final.values(), key=lambda r: (r.row, r.position)):
        model, names = _pdus_for(plan, rack, locked_pdus[rack.name])
        given = carried.get(rack.name, [])
        for old, new in zip(given, names, strict=False):
            renames[old] = new
            plan.devices[old].part = model
        spare += given[len(names) :]
        short += [(rack, name, model) for name in names[len(given) :]]
        rack.pdus = names
    filled = min(len(short), len(spare))
    for (_rack, name, model), old in zip(short[:filled], spare[:filled], strict=True):
        renames[old] = name
        plan.devices[old].part = model
    if len(spare) > filled:
        dropped = set(spare[filled:])
        plan.links = [link for link in plan.links if link.a_device not in dropped and link.b_device not in dropped]
        for name in dropped:
            del plan.devices[name]
    _rename_devices(plan, renames)
    for name, device in plan.devices.items():
        if device.role == "pdu":
            device.rack = name.rsplit("-pdu-", 1)[0]
    for rack, name, model in short[filled:]:  # added once the planned PDUs have their final names
        _add_pdu(plan, lock, rack, name, model)


def _pdus_for(plan: Plan, rack: RackPlan, locked: list[str]) -> tuple[str, list[str]]:
    """The PDU model a final rack takes and the names of the PDUs its load needs: the lock's PDUs of the rack first
    (in the order their feeds name them), then the feeds' names not yet taken. None in a rack-scale system's rack
    (power shelves on its busbar)."""
    if rack.rack_system or not rack.devices:
        return "", []
    parts = plan.catalog_parts
    model = plan.settings.pdu if rack.purpose == "compute" else plan.settings.non_compute_pdu
    pdu = parts[model]
    if not isinstance(pdu, Pdu):
        raise ValueError(f"the plan's PDU model {model} is not a PDU of the catalog")
    devices = [plan.devices[n] for n in rack.devices]
    spread = max((pdus_to_keep_psus(parts.get(p)) for p in {d.part for d in devices}), default=1)
    feed = plan.design.site.power_feed
    count = pdus_needed(rack.power_max_w, rack_inlets(parts, devices), pdu, feed, spread)
    by_feed = [f"{rack.name}-pdu-{suffix}" for suffix in pdu_suffixes(count, feed.redundancy)]
    names = sorted(locked, key=lambda n: (n not in by_feed, by_feed.index(n) if n in by_feed else 0, n))[:count]
    names += [n for n in by_feed if n not in names][: count - len(names)]
    return model, names


def _add_pdu(plan: PlanDraft, lock: Lock, rack: RackPlan, name: str, model: str) -> None:
    """A PDU no planned one stands for, with its out-of-band link: on the access switch port the lock links it to,
    else on a free port of the access switch its rack's devices use (or of another access switch with room)."""
    template = next((link for link in plan.links if plan.devices[link.a_device].role == "pdu"), None)
    if template is None:
        raise ValueError(f"rack {rack.name} needs PDU {name}, and the plan links no PDU to copy its link from")
    plan.add(Device(name, model, "pdu", rack=rack.name))
    link = replace(template, a_device=name)
    plan.links.append(link)
    entry = next((e for e in lock.links if e.a[0] == name and e.b[0] in plan.devices), None)
    if entry is not None:
        link.b_device = entry.b[0]
        _set_port(plan, link, "b", entry.b[1], force=True)
        return
    used: defaultdict[str, set[str]] = defaultdict(set)
    for other in plan.links:
        used[other.b_device].add(other.b_port)
    for e in lock.links:
        used[e.b[0]].add(e.b[1])
    near = Counter(
        other.b_device
        for other in plan.links
        if other.network == template.network and plan.devices[other.a_device].rack == rack.name and other.tier == 0
    )
    leaves = sorted((d.name for d in plan.switches(template.network, 1)), key=lambda n: (-near[n], n))
    role = next(r for r, pool in device_ports(plan.part(template.b_device)).items() if template.b_port in pool.names)
    for switch in leaves:
        pool = device_ports(plan.part(switch)).get(role)
        free = [n for n in pool.names if n not in used[switch]] if pool is not None else []
        if free:
            link.b_device = switch
            _set_port(plan, link, "b", free[0], force=True)
            return
    raise ValueError(f"no free {role} port left on the {template.network} access switches for PDU {name}")


def _total_rack_power(plan: Plan, racks: Iterable[RackPlan], power_w: Callable[[Device], float]) -> None:
    """Each final rack's devices in U order and its maximum and typical power, from what it now holds."""
    for rack in racks:
        rack.devices.sort(key=lambda n: (plan.devices[n].u_position, n))
        rack.power_max_w = sum(power_w(plan.devices[n]) for n in rack.devices)
        rack.power_typical_w = sum(
            float(getattr(plan.catalog_parts[plan.devices[n].part], "power_typical_w", 0.0)) for n in rack.devices
        )


def _rename_devices(plan: PlanDraft, renames: dict[str, str]) -> None:
    if not renames:
        return
    devices = {}
    for name, device in plan.devices.items():
        new = renames.get(name, name)
        device.name = new
        devices[new] = device
    plan.devices = devices
    for link in plan.links:
        link.a_device = renames.get(link.a_device, link.a_device)
        link.b_device = renames.get(link.b_device, link.b_device)


def keep_locked_ports(plan: Plan, lock: Lock) -> None:
    """Links between two devices the lock also joins keep the lock's ports; a new link whose port a kept link
    holds moves to a free port of the same kind on that device (one the lock left unused where there is one)."""
    locked: dict[tuple[str, str, str], list[LockedLink]] = defaultdict(list)  # (network, a device, b device)
    used_in_lock: dict[str, set[str]] = defaultdict(set)
    for entry in lock.links:
        locked[(entry.network, entry.a[0], entry.b[0])].append(entry)
        used_in_lock[entry.a[0]].add(entry.a[1])
        used_in_lock[entry.b[0]].add(entry.b[1])
    _keep_host_leaves(plan, lock)
    matched, taken = _match_locked_links(plan, locked)
    ports = _Ports(taken, used_in_lock)
    moving: list[tuple[Link, str]] = []
    for index, link in enumerate(plan.links):
        if matched[index]:
            ports.use_cage(link.b_device, link.b_cage, link.b_half)
            continue
        for end in ("a", "b"):
            device, port = (link.a_device, link.a_port) if end == "a" else (link.b_device, link.b_port)
            if port in taken[device]:
                moving.append((link, end))
            else:
                taken[device].add(port)
                if end == "b":
                    ports.use_cage(device, link.b_cage, link.b_half)
    for link, end in moving:
        _move_to_free_port(plan, link, end, ports)


def _keep_host_leaves(plan: Plan, lock: Lock) -> None:
    """A kept host port stays on the leaf port it is cabled to, where that leaf is still there (a grown
    out-of-band group may plan it on another access switch)."""
    host_end = {(entry.network, entry.a[0], entry.a[1]): entry for entry in lock.links}
    part_of = {d.name: d.part for d in lock.devices}
    for link in plan.links:
        if link.tier != 0:
            continue
        entry = host_end.get((link.network, link.a_device, link.a_port))
        if entry is None or entry.b[0] == link.b_device:
            continue
        leaf = plan.devices.get(entry.b[0])
        if leaf is not None and leaf.network == link.network and part_of.get(leaf.name) == leaf.part:
            link.b_device = leaf.name
            _set_port(plan, link, "b", entry.b[1], force=True)


def _match_locked_links(
    plan: Plan, locked: dict[tuple[str, str, str], list[LockedLink]]
) -> tuple[bytearray, dict[str, set[str]]]:
    """Pair the plan's links between two devices with the lock's links between them, same ports first, then the
    rest in order, moving each paired link onto its locked ports; returns which links are paired and the ports
    the paired links hold per device."""
    matched = bytearray(len(plan.links))
    by_pair: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for index, link in enumerate(plan.links):
        if (link.network, link.a_device, link.b_device) in locked:
            by_pair[(link.network, link.a_device, link.b_device)].append(index)
    taken: dict[str, set[str]] = defaultdict(set)
    for pair, indexes in by_pair.items():
        entries = list(locked[pair])
        remaining = []
        for index in indexes:
            link = plan.links[index]
            same = next((e for e in entries if (e.a[1], e.b[1]) == (link.a_port, link.b_port)), None)
            if same is not None:
                entries.remove(same)
                matched[index] = 1
            else:
                remaining.append(index)
        for index, entry in zip(remaining, entries, strict=False):
            link = plan.links[index]
            _set_port(plan, link, "a", entry.a[1])
            _set_port(plan, link, "b", entry.b[1])
            matched[index] = 1
        for index in indexes:
            if matched[index]:
                link = plan.links[index]
                taken[link.a_device].add(link.a_port)
                taken[link.b_device].add(link.b_port)
    return matched, taken


@dataclass
class _Ports:
    """The ports taken per device, and the cages a switch uses split (1:2 splitter halves) and whole: a cage
    breaks out one way (fabric._Placer), so a moved link never mixes the two in one cage."""

    taken: dict[str, set[str]]
    used_in_lock: dict[str, set[str]]
    split_cages: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    whole_cages: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))

    def use_cage(self, device: str, cage: int, half: int) -> None:
        (self.split_cages if half else self.whole_cages)[device].add(cage)

    def free(self, plan: Plan, device: str, role: str, half: int) -> list[str]:
        """The free ports of `role` on `device`: halves of split ports for a half link, else whole ports."""
        pool = device_ports(plan.part(device)).get(role)
        if pool is None:
            return []
        if half:
            return _free_halves(pool, self.taken[device], self.split_cages[device], self.whole_cages[device])
        return [
            name
            for name, cage in zip(pool.names, pool.cages, strict=True)
            if name not in self.taken[device] and cage not in self.split_cages[device]
        ]


def _move_to_free_port(plan: Plan, link: Link, end: str, ports: _Ports) -> None:
    """Move one end of a new link whose port a kept link holds to a free port of the same role, one the lock
    left unused first; a new host whose leaf is full goes to a leaf of its network with room."""
    device = link.a_device if end == "a" else link.b_device
    port = link.a_port if end == "a" else link.b_port
    role = next((r for r, p in device_ports(plan.part(device)).items() if port in p.names or _half_slot(p, port)), None)
    if role is None:
        return  # a port of no pool (a PDU's network port): kept as planned
    half = link.b_half if end == "b" else 0
    candidates = [device]
    if link.tier == 0 and end == "b":
        # the leaf is full with the hosts kept on it: a new host goes to a leaf of its network with room,
        # one of the same group first (oob-leaf-central, oob-leaf-central-2 ...)
        stem = device.split("-")
        candidates += sorted(
            (d.name for d in plan.switches(link.network, 1) if d.name != device),
            key=lambda n: (n.split("-")[: len(stem)] != stem, n),
        )
    for candidate in candidates:
        free = ports.free(plan, candidate, role, half)
        if free:
            break
    else:
        raise ValueError(
            f"{device}: no free {role} port left for {link.a_device}:{link.a_port} beside the locked links "
            "(build with --relock to plan the network afresh)"
        )
    choice = next((name for name in free if name not in ports.used_in_lock[candidate]), free[0])
    if candidate != device:
        link.b_device = candidate
    _set_port(plan, link, end, choice, force=True)
    ports.taken[candidate].add(choice)
    if end == "b":
        ports.use_cage(candidate, link.b_cage, half)


def _half_slot(pool: PortPool, port: str) -> tuple[int, int] | None:
    """(port index, half 1 or 2) of a split port's half named ``port``, or None."""
    for index, pair in enumerate(pool.halves):
        if port in pair:
            return index, pair.index(port) + 1
    return None


def _free_halves(pool: PortPool, taken: set[str], split: set[int], whole: set[int]) -> list[str]:
    """Free halves of split ports on a switch, the second half of a port already split first (one splitter fibre
    serves both), never in a cage whose ports run whole."""
    open_halves, fresh = [], []
    for index, pair in enumerate(pool.halves):
        cage = pool.cages[index]
        if cage in whole:
            continue
        free = [name for name in pair if name not in taken]
        if len(free) == 1 and cage in split:
            open_halves += free
        elif len(free) == 2:
            fresh += free
    return open_halves + fresh


def _set_port(plan: Plan, link: Link, end: str, port: str, force: bool = False) -> None:
    """Put one end of a link on another port of its device, with that port's cage (a split port's half where the
    link's b end is a half)."""
    device = link.a_device if end == "a" else link.b_device
    if not force and (link.a_port if end == "a" else link.b_port) == port:
        return
    cage = 0
    for pool in device_ports(plan.part(device)).values():
        slot = _half_slot(pool, port) if end == "b" and link.b_half else None
        if slot is not None:
            cage = pool.cages[slot[0]]
            link.b_half = slot[1]
            break
        if port in pool.names:
            cage = pool.cages[pool.names.index(port)]
            break
    if end == "a":
        link.a_port, link.a_cage = port, cage or link.a_cage
    else:
        link.b_port, link.b_cage = port, cage or link.b_cage


_CABLE_NUMBER = re.compile(r"^(?P<prefix>[A-Z])-(?P<rack>[A-Z]+[0-9]+)-(?P<number>[0-9]+)$")


def keep_locked_cable_ids(plan: Plan, lock: Lock) -> None:
    """A cable over the same links as a locked one keeps its id; every other cable is numbered on after the
    highest number its network and rack have in the lock, so no id is ever given to two cables."""
    from gpucluster.plan.cables import cable_id

    grouped: dict[str, set[tuple[str, str, str, str, str]]] = defaultdict(set)
    for entry in lock.links:
        if entry.cable is not None:
            grouped[entry.cable].add(locked_key(entry))
    by_links = {frozenset(keys): cable_name for cable_name, keys in grouped.items()}
    highest: dict[tuple[str, str], int] = defaultdict(int)
    for cable_name in grouped:
        match = _CABLE_NUMBER.match(cable_name)
        if match:
            key = (match["prefix"], match["rack"])
            highest[key] = max(highest[key], int(match["number"]))
    fresh = []
    for cable in plan.cables:
        locked_id = by_links.get(frozenset(link_key(plan.links[i]) for i in cable.links))
        if locked_id is not None:
            cable.id = locked_id
        else:
            fresh.append(cable)
    for cable in fresh:
        match = _CABLE_NUMBER.match(cable.id)
        if match is None:
            continue
        key = (match["prefix"], match["rack"])
        highest[key] += 1
        cable.id = cable_id(match["prefix"], match["rack"], highest[key])
