"""What changed between two revisions of a design, for the reviewer (review.html and review.pdf): the BOM's
figures and lines (growth/diff.py), the fabric's and the job's figures, the devices, links and racks, the power
budget, and the files the two builds generate (which changed, with a short text diff)."""

from __future__ import annotations

import difflib
import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import hostlist

from gpucluster.analyse.budget import power_budget
from gpucluster.analyse.totals import link_tier_name
from gpucluster.growth.diff import PlanDiff, diff_plans
from gpucluster.plan.model import NETWORKS, AnalysedPlan, Link, Plan

if TYPE_CHECKING:
    from gpucluster.growth.phases import LockChanges

K = TypeVar("K")  # what a comparison keys devices, links or racks by
Kind = TypeVar("Kind", str, tuple[int, int])  # what _counted counts: a role or purpose, or (network, tier)

MAX_DIFF_LINES = 60  # of a changed text file's unified diff shown in the review
MAX_DIFF_BYTES = 4_000_000  # larger text files are compared, not diffed (difflib is quadratic at worst)
MAX_FILE_DIFFS = 40  # changed files whose diff is shown; the others are listed
MAX_FOLDER_DIFFS = 8  # of them in one top-level folder: a folder of many generated files hides no other's diffs
MAX_LISTED = 200  # devices, links or racks named one by one before the list is only counted
_BINARY_SUFFIXES = {".xlsx", ".pdf", ".png", ".svg"}  # drawings: a text diff of their paths says nothing


@dataclass(frozen=True, slots=True)
class Figure:
    """A number before and after (None where a revision does not have it)."""

    name: str
    old: float | None
    new: float | None
    unit: str = ""
    digits: int = 0

    @property
    def change(self) -> float | None:
        return None if self.old is None or self.new is None else self.new - self.old

    @property
    def changed(self) -> bool:
        if self.old is None or self.new is None:
            return self.old != self.new
        return round(self.old, self.digits) != round(self.new, self.digits)


@dataclass(frozen=True, slots=True)
class Modified:
    """One thing present in both revisions whose attributes differ: name -> (attribute, old, new) ..."""

    name: str
    changes: tuple[tuple[str, str, str], ...]


@dataclass
class Changes:
    """Added, removed and modified things of one kind (devices, links, racks), named or counted."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    modified: list[Modified] = field(default_factory=list)
    unchanged: int = 0
    counts: list[Figure] = field(default_factory=list)  # per role / network and tier / purpose

    @property
    def any(self) -> bool:
        return bool(self.added or self.removed or self.modified)

    @property
    def modified_attributes(self) -> list[tuple[str, int]]:
        """How many things changed each attribute (rack of 66, part of 31 ...)."""
        counts = Counter(attribute for m in self.modified for attribute, _old, _new in m.changes)
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    @property
    def added_text(self) -> str:
        return _compressed(self.added)

    @property
    def removed_text(self) -> str:
        return _compressed(self.removed)


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    status: str  # added | removed | changed
    old_bytes: int | None
    new_bytes: int | None
    diff: tuple[str, ...] = ()  # unified diff lines, at most MAX_DIFF_LINES
    lines_added: int | None = None  # None for binary or too-large files
    lines_removed: int | None = None
    note: str = ""  # why no diff is shown


@dataclass
class FileChanges:
    changed: list[FileChange]
    unchanged: int


@dataclass
class PlanChanges:
    old_name: str
    new_name: str
    bom: PlanDiff  # headline figures (GPUs, servers, switches, cables, racks, IT kW, prices) and BOM lines
    figures: list[Figure]  # the fabric's and the job's
    devices: Changes
    links: Changes
    racks: Changes
    power: list[Figure]
    files: FileChanges | None = None
    phase: LockChanges | None = None  # the new revision against the plan lock of what is built (gpucluster diff --lock)


def compare_plans(
    old: AnalysedPlan,
    new: AnalysedPlan,
    old_folder: Path | None = None,
    new_folder: Path | None = None,
    bom: PlanDiff | None = None,
) -> PlanChanges:
    """Everything the review shows; the files when both build folders are given. `bom` is the BOM comparison
    when the caller has it (priced from each design's price list); without it the BOMs are compared unpriced."""
    files = compare_folders(old_folder, new_folder) if old_folder and new_folder else None
    return PlanChanges(
        old_name=old.name,
        new_name=new.name,
        bom=bom or diff_plans(old, new),
        figures=_pair(plan_figures(old), plan_figures(new)),
        devices=compare_devices(old, new),
        links=compare_links(old, new),
        racks=compare_racks(old, new),
        power=_pair(power_figures(old), power_figures(new)),
        files=files,
    )


def plan_figures(plan: AnalysedPlan) -> dict[str, tuple[float, str, int]]:
    """name -> (value, unit, digits): the fabric's and the job's figures, from the plan's own views (the BOM diff
    has the counts of GPUs, servers, switches per network, cables and racks)."""
    t = plan.totals
    figures: dict[str, tuple[float, str, int]] = {}
    for network in plan.networks():
        for tier, n in t.switches[network].items():
            figures[f"{network} {tier} switches"] = (n, "", 0)
        figures[f"{network} links"] = (sum(t.links[network].values()), "", 0)
        bisection = plan.analysis_of(network).get("bisection_bandwidth_gbps")
        if bisection is not None:
            figures[f"{network} bisection bandwidth"] = (bisection / 1000, "Tb/s", 1)
    hops = plan.analysis_of("compute").get("hops", {}).get("max_switch_hops")
    if hops is not None:
        figures["compute switch hops, at most"] = (hops, "", 0)
    checkpoint = plan.checkpoint
    if checkpoint:
        figures["Checkpoint write"] = (checkpoint["write_seconds"], "s", 1)
        mtbf_hours = checkpoint["mtbf_hours"]  # None where no failure rate applies (an infinite MTBF)
        if mtbf_hours is not None and math.isfinite(mtbf_hours):
            figures["Job MTBF"] = (mtbf_hours, "h", 1)
        figures["Checkpoint goodput"] = (100 * checkpoint["goodput"], "%", 2)
    return figures


def power_figures(plan: AnalysedPlan) -> dict[str, tuple[float, str, int]]:
    budget = power_budget(plan)
    figures = {  # the IT load is among the BOM's figures
        "Facility power, maximum": (budget.facility_max_w / 1000, "kW", 1),
        "Facility power, typical": (budget.facility_typical_w / 1000, "kW", 1),
        "Energy per year": (budget.annual_energy_mwh, "MWh", 0),
        "Circuits": (sum(c.circuits for c in budget.circuit_kinds), "", 0),
        "Heaviest rack": (max((r.load.max_w for r in budget.racks), default=0.0) / 1000, "kW", 1),
    }
    if budget.annual_cost is not None:
        figures[f"Energy cost per year ({budget.site.currency})"] = (budget.annual_cost, "", 0)
    return figures


def compare_devices(old: Plan, new: Plan) -> Changes:
    def attributes(plan: Plan, name: str) -> dict[str, str]:
        d = plan.devices[name]
        return {"part": d.part, "rack": d.rack, "U": str(d.u_position), "role": d.role, "spare": str(d.spare)}

    changes = _compare(set(old.devices), set(new.devices), lambda n: attributes(old, n), lambda n: attributes(new, n))
    changes.counts = _counted([d.role for d in old.devices.values()], [d.role for d in new.devices.values()])
    return changes


def compare_links(old: Plan, new: Plan) -> Changes:
    """Links are the same when they join the same two ports on the same network; their speed may change."""
    old_links = {_link_key(link): link for link in old.links}
    new_links = {_link_key(link): link for link in new.links}
    changes = _compare(
        set(old_links),
        set(new_links),
        lambda k: {"speed": f"{old_links[k].speed_gbps:g} Gb/s"},
        lambda k: {"speed": f"{new_links[k].speed_gbps:g} Gb/s"},
    )
    changes.counts = _counted(
        [(NETWORKS.index(link.network), link.tier) for link in old.links],
        [(NETWORKS.index(link.network), link.tier) for link in new.links],
        lambda key: f"{NETWORKS[key[0]]} {link_tier_name(key[1])}",
    )
    return changes


def compare_racks(old: Plan, new: Plan) -> Changes:
    def attributes(plan: Plan, name: str) -> dict[str, str]:
        r = plan.racks[name]
        return {
            "purpose": r.purpose,
            "SU": "-" if r.su is None else str(r.su),
            "devices": str(len(r.devices)),
            "maximum": f"{r.power_max_w / 1000:,.1f} kW",
            "typical": f"{r.power_typical_w / 1000:,.1f} kW",
        }

    changes = _compare(set(old.racks), set(new.racks), lambda n: attributes(old, n), lambda n: attributes(new, n))
    changes.counts = _counted([r.purpose for r in old.racks.values()], [r.purpose for r in new.racks.values()])
    return changes


def _counted(old: list[Kind], new: list[Kind], name: Callable[[Kind], str] = str) -> list[Figure]:
    """How many of each kind (role, purpose, network and tier) before and after, in the kinds' order."""
    before, after = Counter(old), Counter(new)
    return [Figure(name(key), before[key], after[key]) for key in sorted(before.keys() | after.keys())]


def compare_folders(old: Path, new: Path) -> FileChanges:
    """The files two builds wrote: which were added, removed or changed, with a short unified diff of text."""
    old_files, new_files = _files(old), _files(new)
    changed = []
    unchanged = 0
    diffs: Counter[str] = Counter()  # shown diffs per top-level folder ("" for the output folder's own files)
    for path in sorted(old_files | new_files):
        a, b = old / path, new / path
        if path not in new_files:
            changed.append(FileChange(path, "removed", a.stat().st_size, None))
        elif path not in old_files:
            changed.append(FileChange(path, "added", None, b.stat().st_size))
        else:
            before, after = a.read_bytes(), b.read_bytes()
            if before == after:
                unchanged += 1
                continue
            folder = path.split("/", 1)[0] if "/" in path else ""
            show = diffs.total() < MAX_FILE_DIFFS and diffs[folder] < MAX_FOLDER_DIFFS
            change = _file_change(path, before, after, show=show)
            diffs[folder] += bool(change.diff)
            changed.append(change)
    return FileChanges(changed, unchanged)


def _file_change(path: str, before: bytes, after: bytes, show: bool) -> FileChange:
    sizes = (len(before), len(after))
    if Path(path).suffix in _BINARY_SUFFIXES or b"\0" in before[:4096] or b"\0" in after[:4096]:
        return FileChange(path, "changed", *sizes, note="binary")
    if max(sizes) > MAX_DIFF_BYTES:
        return FileChange(path, "changed", *sizes, note="too large to diff here")
    old_lines = before.decode("utf-8", "replace").splitlines()
    new_lines = after.decode("utf-8", "replace").splitlines()
    diff = list(difflib.unified_diff(old_lines, new_lines, f"old/{path}", f"new/{path}", n=1, lineterm=""))
    added = sum(1 for line in diff[2:] if line.startswith("+"))
    removed = sum(1 for line in diff[2:] if line.startswith("-"))
    shown = tuple(_clip(line) for line in diff[:MAX_DIFF_LINES]) if show else ()
    note = "" if show else f"diffs shown for {MAX_FILE_DIFFS} changed files, {MAX_FOLDER_DIFFS} of a folder at most"
    if show and len(diff) > MAX_DIFF_LINES:
        note = f"first {MAX_DIFF_LINES} of {len(diff):,} diff lines"
    return FileChange(path, "changed", *sizes, diff=shown, lines_added=added, lines_removed=removed, note=note)


def _clip(line: str, width: int = 220) -> str:
    return line if len(line) <= width else line[: width - 1] + "…"


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def _compare(
    old: set[K],
    new: set[K],
    old_attributes: Callable[[K], dict[str, str]],
    new_attributes: Callable[[K], dict[str, str]],
) -> Changes:
    changes = Changes(added=_names(new - old), removed=_names(old - new))
    for key in sorted(old & new, key=str):
        before, after = old_attributes(key), new_attributes(key)
        differ = tuple((k, before[k], after[k]) for k in before if before[k] != after[k])
        if differ:
            changes.modified.append(Modified(_name(key), differ))
        else:
            changes.unchanged += 1
    return changes


def _link_key(link: Link) -> tuple[str, tuple[str, str], tuple[str, str]]:
    a, b = sorted([(link.a_device, link.a_port), (link.b_device, link.b_port)])
    return (link.network, a, b)


def _name(key: object) -> str:
    if isinstance(key, tuple) and len(key) == 3:
        network, (a_device, a_port), (b_device, b_port) = key
        return f"{network}: {a_device} {a_port} - {b_device} {b_port}"
    return str(key)


def _names(keys: Iterable[object]) -> list[str]:
    return sorted(_name(k) for k in keys)


def _compressed(names: list[str]) -> str:
    """Names as host lists (gpu[001-031]); links, which are not names, one per line up to MAX_LISTED."""
    if not names:
        return ""
    if any(" " in n for n in names):
        shown = names[:MAX_LISTED]
        more = len(names) - len(shown)
        return "\n".join(shown) + (f"\n... and {more:,} more" if more else "")
    listed: str = hostlist.collect_hostlist(names)  # hostlist has no type information
    return listed


def _pair(old: dict[str, tuple[float, str, int]], new: dict[str, tuple[float, str, int]]) -> list[Figure]:
    figures = []
    for name in dict.fromkeys([*old, *new]):
        before, after = old.get(name), new.get(name)
        _value, unit, digits = before or new[name]
        figures.append(Figure(name, before[0] if before else None, after[0] if after else None, unit, digits))
    return figures
