"""Phased growth, as the user sees it: the plan lock a build writes (every rack's place, device's rack and U,
link's ports and cable's id and labels, as printed) and what a revised plan changes against a lock.

Reading and applying a lock is the planner's (gpucluster/plan/lock.py); this module is a view of a plan (its
labels are the cable schedule's).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path

import hostlist
import orjson

from gpucluster.plan.labels import Locator, cable_connectors, end_labels
from gpucluster.plan.lock import LOCK_SCHEMA, Lock, link_key, locked_key
from gpucluster.plan.model import Plan
from gpucluster.plan.queries import queries


def lock_records(plan: Plan) -> dict[str, Iterator[Mapping[str, object]]]:
    """The lock's lists, sorted: racks by floor position, devices by name, links by ends, cables by id. Each list's
    records are made as they are written (a 131,072-GPU plan's lock has 1.5 million), after sorting what orders
    them."""
    racks = (
        {
            "name": r.name,
            "part": r.part,
            "row": r.row,
            "position": r.position,
            "x_mm": float(r.x_mm),
            "y_mm": float(r.y_mm),
            "purpose": r.purpose,
            "su": r.su,
            "height_u": r.height_u,
        }
        for r in sorted(plan.racks.values(), key=lambda r: (r.row, r.position))
    )
    devices = (
        {"name": d.name, "part": d.part, "rack": d.rack, "u": d.u_position}
        for d in sorted(plan.devices.values(), key=attrgetter("name"))
    )
    links, found_in = plan.links, queries(plan)
    by_ends = sorted(
        range(len(links)),
        key=lambda i: (links[i].network, links[i].a_device, links[i].a_port, links[i].b_device, links[i].b_port),
    )
    link_records = (
        {
            "network": link.network,
            "a": [link.a_device, link.a_port],
            "b": [link.b_device, link.b_port],
            "cable": found_in.cable_id(i),
        }
        for i in by_ends
        for link in (links[i],)
    )
    labels = sorted(cable_labels(plan))
    cables = ({"id": cable_id, "a_label": a_label, "b_label": b_label} for cable_id, a_label, b_label in labels)
    return {"racks": racks, "devices": devices, "links": link_records, "cables": cables}


def cable_labels(plan: Plan) -> Iterator[tuple[str, str, str]]:
    """(cable id, A-end label, B-end label) of every cable in plan order, as the cable schedule prints them."""
    locate = Locator(plan)
    for cable in plan.cables:
        a, bs = cable_connectors(plan, cable)
        a_label, b_label = end_labels(locate.identifier(a), [locate.identifier(b) for b in bs])
        yield cable.id, a_label, b_label


def lock_chunks(plan: Plan) -> Iterator[bytes]:
    """The lock of a plan, a piece at a time (UTF-8): a JSON object whose lists hold one record per line (compact,
    keys sorted). A large plan's lock runs to hundreds of megabytes: written as it is made, it is never held whole."""
    yield f'{{\n"schema": {json.dumps(LOCK_SCHEMA)},\n"cluster": {json.dumps(plan.name)},\n'.encode()
    records = lock_records(plan)
    for i, (key, items) in enumerate(records.items()):
        yield f'"{key}": ['.encode()
        separator = b"\n"
        for item in items:
            # orjson writes what json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False) wrote, faster
            yield separator + orjson.dumps(item, option=orjson.OPT_SORT_KEYS)
            separator = b",\n"
        yield b"\n]" + (b",\n" if i < len(records) - 1 else b"\n")
    yield b"}\n"


def lock_text(plan: Plan) -> str:
    """The lock of a plan as one text (lock_chunks)."""
    return b"".join(lock_chunks(plan)).decode("utf-8")


def write_lock(plan: Plan, path: Path) -> None:
    """Write the plan's lock atomically (a temporary file beside it, on disk before it is renamed over it: a full
    disk fails here, not after the rename)."""
    staging = path.with_name(f".{path.name}.tmp")
    try:
        with open(staging, "wb") as out:
            for chunk in lock_chunks(plan):
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.replace(staging, path)
    finally:
        if staging.exists():
            staging.unlink()


@dataclass
class LockChanges:
    """A revised plan against the lock it was built under: what it keeps, adds and removes, and anything kept
    that moved or was relabelled (which a phase of growth should never do)."""

    kept_devices: int = 0
    added_devices: list[str] = field(default_factory=list)
    removed_devices: list[str] = field(default_factory=list)
    moved_devices: list[str] = field(default_factory=list)  # "name: A01 U12 -> B03 U4"
    added_racks: list[str] = field(default_factory=list)
    removed_racks: list[str] = field(default_factory=list)
    moved_racks: list[str] = field(default_factory=list)
    kept_links: int = 0
    added_links: list[str] = field(default_factory=list)
    removed_links: list[str] = field(default_factory=list)  # between devices the revision still has: re-cabling
    dropped_links: int = 0  # of removed devices
    kept_cables: int = 0
    added_cables: list[str] = field(default_factory=list)  # "id: a label"
    removed_cables: list[str] = field(default_factory=list)
    relabelled_cables: list[str] = field(default_factory=list)
    replaced_cables: list[str] = field(default_factory=list)  # removed, though every device it joins is kept
    changed_racks: list[str] = field(default_factory=list)  # racks that gain or lose devices or cables, in order

    @property
    def moves(self) -> list[str]:
        """Everything that changes what is already built: moves, re-cabling, relabelling."""
        return [
            *(f"device moved: {m}" for m in self.moved_devices),
            *(f"rack moved: {m}" for m in self.moved_racks),
            *(f"link re-cabled: {m}" for m in self.removed_links),
            *(f"cable relabelled: {m}" for m in self.relabelled_cables),
            *(f"cable replaced: {m}" for m in self.replaced_cables),
        ]

    @property
    def pure_growth(self) -> bool:
        return not self.moves and not self.removed_devices and not self.removed_racks


def lock_changes(lock: Lock, plan: Plan) -> LockChanges:
    """Compare a plan with a lock (the plan built under it, or any other)."""
    changes = LockChanges()
    locked_device = {d.name: d for d in lock.devices}
    for name, device in plan.devices.items():
        entry = locked_device.get(name)
        if entry is None or entry.part != device.part:
            changes.added_devices.append(name)
        elif (entry.rack, entry.u) != (device.rack, device.u_position):
            changes.moved_devices.append(f"{name}: {entry.rack} U{entry.u} -> {device.rack} U{device.u_position}")
        else:
            changes.kept_devices += 1
    changes.removed_devices = sorted(
        n for n, e in locked_device.items() if n not in plan.devices or plan.devices[n].part != e.part
    )
    locked_rack = {r.name: r for r in lock.racks}
    for name, rack in plan.racks.items():
        spot = locked_rack.get(name)
        if spot is None:
            changes.added_racks.append(name)
        elif (spot.row, spot.position) != (rack.row, rack.position):
            changes.moved_racks.append(f"{name}: row {spot.row} position {spot.position} -> {rack.row} {rack.position}")
    changes.removed_racks = sorted(set(locked_rack) - set(plan.racks))
    planned = {link_key(link) for link in plan.links}
    locked_links = {locked_key(entry) for entry in lock.links}
    changes.kept_links = len(planned & locked_links)
    changes.added_links = sorted(_link_text(k) for k in planned - locked_links)
    gone = set(changes.removed_devices)
    for key in sorted(locked_links - planned):
        if key[1] in gone or key[3] in gone:
            changes.dropped_links += 1
        else:
            changes.removed_links.append(_link_text(key))
    labels = {c.id: (c.a_label, c.b_label) for c in lock.cables}
    seen = set()
    for cable_id, a_label, b_label in cable_labels(plan):
        seen.add(cable_id)
        before = labels.get(cable_id)
        if before is None:
            changes.added_cables.append(f"{cable_id}: {a_label}")
        elif before != (a_label, b_label):
            changes.relabelled_cables.append(f"{cable_id}: {before[0]} -> {a_label}")
        else:
            changes.kept_cables += 1
    changes.removed_cables = sorted(set(labels) - seen)
    ends: dict[str, set[str]] = {}
    for link in lock.links:
        if link.cable is not None:
            ends.setdefault(link.cable, set()).update((link.a[0], link.b[0]))
    changes.replaced_cables = [
        f"{cable}: {labels[cable][0]}"
        for cable in changes.removed_cables
        if ends.get(cable) and not ends[cable] & gone and ends[cable] <= plan.devices.keys()
    ]
    touched = {plan.devices[n].rack for n in changes.added_devices}
    touched |= {d.rack for d in lock.devices if d.name in set(changes.removed_devices)}
    for key in planned - locked_links:
        touched |= {plan.devices[key[1]].rack, plan.devices[key[3]].rack}
    changes.changed_racks = sorted(
        (r for r in touched if r in plan.racks), key=lambda r: (plan.racks[r].row, plan.racks[r].position)
    )
    return changes


def _link_text(key: Iterable[str]) -> str:
    network, a_device, a_port, b_device, b_port = key
    return f"{network}: {a_device} {a_port} - {b_device} {b_port}"


MAX_LISTED = 20  # moves, removed links and cables named one by one in a command's output


def lock_lines(changes: LockChanges) -> list[str]:
    """What a build under a lock kept, added and removed, for the command's output."""
    lines = [
        f"lock: kept {changes.kept_devices:,} devices, {changes.kept_links:,} links, {changes.kept_cables:,} cables "
        "where they were (rack, U, ports, id and labels)"
    ]
    if changes.added_devices or changes.added_racks or changes.added_cables:
        lines.append(
            f"lock: added {len(changes.added_devices):,} devices ({_hosts(changes.added_devices)}), "
            f"{len(changes.added_racks):,} racks ({_hosts(changes.added_racks)}), {len(changes.added_links):,} links, "
            f"{len(changes.added_cables):,} cables"
        )
    if changes.removed_devices or changes.removed_racks or changes.removed_cables:
        lines.append(
            f"lock: removed {len(changes.removed_devices):,} devices ({_hosts(changes.removed_devices)}), "
            f"{len(changes.removed_racks):,} racks ({_hosts(changes.removed_racks)}), "
            f"{len(changes.removed_cables):,} cables ({changes.dropped_links:,} links of removed devices)"
        )
    moves = changes.moves
    if moves:
        lines.append(f"lock: {len(moves):,} changes to what is built (moves, re-cabling, relabelling):")
        lines += [f"  {move}" for move in moves[:MAX_LISTED]]
        if len(moves) > MAX_LISTED:
            lines.append(f"  ... and {len(moves) - MAX_LISTED:,} more")
    return lines


def _hosts(names: list[str]) -> str:
    """Names as a host list (gpu[065-096],D[04-15]), cut short."""
    if not names:
        return "none"
    text: str = hostlist.collect_hostlist(names)  # hostlist has no type information
    return text if len(text) <= 300 else text[:297] + "..."
