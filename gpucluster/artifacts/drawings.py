"""SVG drawings of each network's tiers for the design review, from its graph.

A network is drawn device by device while no level holds more than DETAIL_MAX_PER_LEVEL devices. Above that a box
is a group with its count (a kind of host in an SU, a tier's switches in an SU or pod, the central ones) and a line
the bundle of links between two boxes; a level of more than MAX_BOXES_PER_LEVEL boxes first merges each SU's kinds,
then neighbouring SUs or pods into ranges, so a 131,072-GPU fabric draws as readably as a 4-SU one.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx

from gpucluster.analyse.totals import link_tier_name, tier_name
from gpucluster.formats.templating import render
from gpucluster.plan.analysis import graphs
from gpucluster.plan.model import AnalysedPlan, Device, Plan
from gpucluster.plan.registry import NETWORK_INFO, ROLES, tint

DETAIL_MAX_PER_LEVEL = 36  # one box per device up to this many devices on every level (a 1-SU SuperPOD)
MAX_BOXES_PER_LEVEL = 12  # above it, kinds merge per SU, then SUs or pods into ranges

HOSTS_COLOUR = "#64748B"  # a box that merges hosts of several roles
OTHER_SWITCH_COLOUR = "#8C8C8C"  # a switch of another network (by its management port)
# Hosts on a drawing: the roles with a drawing order, in it; the other kinds after them, by name
_KIND_ORDER = tuple(
    r.name for r in sorted(ROLES.values(), key=lambda r: r.drawing_order or 0) if r.drawing_order is not None
)

# Layout, in SVG user units (CSS pixels at 100 %)
_WIDTH = 1000.0
_MARGIN_LEFT = 120.0  # level names
_MARGIN_RIGHT = 150.0  # link totals
_LEVEL_GAP = 96.0
_CHAR_WIDTH = 6.0  # of the 10 px label font, for fitting names


@dataclass(frozen=True, slots=True)
class Box:
    x: float
    y: float
    width: float
    height: float
    fill: str
    stroke: str
    lines: tuple[str, ...]
    title: str
    devices: int  # the devices the box stands for
    font_size: float
    rotate: bool = False  # text turned upright, for narrow boxes of one device
    bold_first: bool = False  # the first line names the SU, pod or central group


@dataclass(frozen=True, slots=True)
class Bundle:
    x1: float
    y1: float
    x2: float
    y2: float
    links: int
    width: float
    opacity: float
    title: str
    label: str = ""  # link count, where the bundles are few enough to label


@dataclass(frozen=True, slots=True)
class Label:
    x: float
    y: float
    lines: tuple[str, ...]
    anchor: str = "start"


@dataclass(frozen=True, slots=True)
class Drawing:
    """A network's tiers: boxes on levels (hosts at the bottom), bundles of links between them."""

    network: str
    title: str
    width: float
    height: float
    colour: str
    boxes: tuple[Box, ...]
    bundles: tuple[Bundle, ...]
    labels: tuple[Label, ...]
    detailed: bool  # one box per device
    devices: int
    links: int

    def svg(self) -> str:
        return render("report/network.svg", d=self)


@dataclass(slots=True)
class _Group:
    level: int
    kinds: dict[str, int]  # kind -> devices
    scope: str  # "SU", "pod" or "" (central)
    numbers: list[int]
    members: list[str]
    name: str = ""  # a single device's name (detailed drawings)


def network_drawing(plan: AnalysedPlan, network: str) -> Drawing:
    graph = graphs(plan)[network]
    levels: dict[str, int] = {node: _level(plan.devices[node], network) for node in graph.nodes}
    detailed = max(Counter(levels.values()).values(), default=0) <= DETAIL_MAX_PER_LEVEL
    if detailed:
        groups = [_device_group(plan, plan.devices[node], levels[node], network) for node in graph.nodes]
    else:
        groups = _grouped(plan, network, levels)
    by_level: dict[int, list[_Group]] = defaultdict(list)
    for group in groups:
        by_level[group.level].append(group)
    for level, members in by_level.items():
        by_level[level] = sorted(members, key=_order)
    return _layout(plan, network, by_level, detailed)


def _level(device: Device, network: str) -> int:
    """0 for hosts (anything attached to this network that is not one of its switches), else the switch's tier."""
    if device.role == "switch" and device.network == network and device.tier:
        return device.tier
    return 0


def _kind(device: Device, network: str) -> str:
    if device.role == "switch":
        return "switch" if device.network == network else f"{device.network}-switch"
    return device.role


def _su(plan: Plan, device: Device) -> int | None:
    if device.su is not None:
        return device.su
    rack = plan.racks.get(device.rack)
    return rack.su if rack is not None else None


def _device_group(plan: Plan, device: Device, level: int, network: str) -> _Group:
    su = _su(plan, device)
    return _Group(
        level, {_kind(device, network): 1}, "SU" if su else "", [su] if su else [], [device.name], device.name
    )


def _grouped(plan: Plan, network: str, levels: dict[str, int]) -> list[_Group]:
    keyed: dict[tuple[int, str, str, int | None], _Group] = {}  # (level, kind, scope, number)
    for node, level in levels.items():
        device = plan.devices[node]
        kind = _kind(device, network)
        su = _su(plan, device) if level == 0 else device.su  # a spine stands in its pod's rack, not in an SU
        number: int | None
        if level and su is None and device.pod is not None:
            scope, number = "pod", device.pod
        else:
            scope, number = ("SU", su) if su is not None else ("", None)
        key = (level, kind, scope, number)
        group = keyed.get(key)
        if group is None:
            group = keyed[key] = _Group(level, {kind: 0}, scope, [number] if number is not None else [], [])
        group.kinds[kind] += 1
        group.members.append(node)
    by_level: dict[int, list[_Group]] = defaultdict(list)
    for group in keyed.values():
        by_level[group.level].append(group)
    for level, members in by_level.items():
        if len(members) > MAX_BOXES_PER_LEVEL:
            by_level[level] = _merge_kinds(members)
    crowded = [members for members in by_level.values() if len(members) > MAX_BOXES_PER_LEVEL]
    sizes: dict[str, int] = defaultdict(lambda: 1)
    for members in crowded:
        for scope, size in _range_sizes(members).items():
            sizes[scope] = max(sizes[scope], size)
    result = []
    for members in by_level.values():
        result.extend(_merge_ranges(members, sizes) if len(members) > MAX_BOXES_PER_LEVEL else members)
    return result


# groups that merge into one range box (_family): the scope, and the kind (or "several")
_Family = tuple[str, tuple[str, ...]]


def _merge_kinds(groups: list[_Group]) -> list[_Group]:
    """One box per SU (or pod) and one for the central ones; other networks' switches count together."""
    merged: dict[tuple[str, int | None], _Group] = {}  # (scope, number)
    for group in sorted(groups, key=_order):
        key = (group.scope, group.numbers[0] if group.numbers else None)
        into = merged.get(key)
        if into is None:
            into = merged[key] = _Group(group.level, {}, group.scope, list(group.numbers), [])
        for kind, count in group.kinds.items():
            kind = "other-switch" if kind.endswith("-switch") else kind
            into.kinds[kind] = into.kinds.get(kind, 0) + count
        into.members.extend(group.members)
    return list(merged.values())


def _range_sizes(groups: list[_Group]) -> dict[str, int]:
    """How many SUs (pods) one box must hold for this level to fit, per scope."""
    central = sum(1 for g in groups if not g.numbers)
    families: dict[_Family, set[int]] = defaultdict(set)
    for group in groups:
        if group.numbers:
            families[_family(group)].update(group.numbers)
    room = max(1, (MAX_BOXES_PER_LEVEL - central) // max(1, len(families)))
    sizes: dict[str, int] = {}
    for (scope, _kinds), numbers in families.items():
        sizes[scope] = max(sizes.get(scope, 1), math.ceil(len(numbers) / room))
    return sizes


def _merge_ranges(groups: list[_Group], sizes: dict[str, int]) -> list[_Group]:
    """SUs (or pods) merge into ranges of the same size on every level, so lines join boxes of the same SUs."""
    result = [g for g in groups if not g.numbers]
    merged: dict[tuple[_Family, int], _Group] = {}  # (family, range)
    for group in sorted((g for g in groups if g.numbers), key=_order):
        key = (_family(group), (group.numbers[0] - 1) // sizes[group.scope])
        into = merged.get(key)
        if into is None:
            into = merged[key] = _Group(group.level, {}, group.scope, [], [])
            result.append(into)
        for kind, count in group.kinds.items():
            into.kinds[kind] = into.kinds.get(kind, 0) + count
        into.numbers.extend(group.numbers)
        into.members.extend(group.members)
    return result


def _family(group: _Group) -> _Family:
    """Groups that merge into one range box: the same scope, and the same kind (or several kinds)."""
    return (group.scope, tuple(group.kinds) if len(group.kinds) == 1 else ("several",))


def _order(group: _Group) -> tuple[int, str, tuple[tuple[int, str], ...], int, str]:
    """SUs and pods first, central groups last; groups of the same kinds together, in SU (pod) order."""
    kinds = tuple(sorted(_kind_rank(kind) for kind in group.kinds))
    return (0 if group.numbers else 1, group.scope, kinds, group.numbers[0] if group.numbers else 0, group.name)


def _kind_rank(kind: str) -> tuple[int, str]:
    return (_KIND_ORDER.index(kind), kind) if kind in _KIND_ORDER else (len(_KIND_ORDER), kind)


def _scope_text(group: _Group) -> str:
    if not group.numbers:
        return "central" if group.level or len(group.kinds) > 1 else ""
    low, high = min(group.numbers), max(group.numbers)
    if low == high:
        return f"{group.scope} {low}"
    return f"{group.scope}s {low}-{high}"


def _kind_text(kind: str, count: int, level: int) -> str:
    if kind == "switch":
        name = tier_name(level)
        plural = {"leaf": "leaves"}.get(name, name + "s")
        return f"{count:,} {name if count == 1 else plural}"
    if kind == "other-switch":
        return f"{count:,} switch{'es' if count != 1 else ''}"
    if kind.endswith("-switch"):
        network = kind.removesuffix("-switch")
        return f"{count:,} {network} switch{'es' if count != 1 else ''}"
    entry = ROLES.get(kind)
    singular, plural = (entry.label, entry.plural) if entry else (kind, kind + "s")
    return f"{count:,} {singular if count == 1 else plural}"


def _colour(group: _Group) -> str:
    if len(group.kinds) > 1:
        return HOSTS_COLOUR
    entry = ROLES.get(next(iter(group.kinds)))
    return entry.colour if entry else OTHER_SWITCH_COLOUR


def _layout(plan: AnalysedPlan, network: str, by_level: dict[int, list[_Group]], detailed: bool) -> Drawing:
    graph = graphs(plan)[network]
    top = max(by_level, default=0)
    widest = max((len(groups) for groups in by_level.values()), default=1)
    slot_min = 26.0 if detailed else 58.0
    width = max(_WIDTH, _MARGIN_LEFT + _MARGIN_RIGHT + widest * slot_min)
    inner = width - _MARGIN_LEFT - _MARGIN_RIGHT
    tiers = {t.tier: t for t in plan.tiers if t.network == network}
    boxes: list[Box] = []
    labels: list[Label] = []
    anchor: dict[str, tuple[float, float, float]] = {}  # node -> (x centre, top y, bottom y)
    centres: dict[int, tuple[float, float]] = {}
    y = 12.0
    for level in range(top, -1, -1):
        groups = by_level.get(level, [])
        if not groups:
            continue
        slot = inner / len(groups)
        box_width = min(slot - (3 if detailed else 8), 170.0)
        texts = [_box_lines(plan, group, level, detailed) for group in groups]
        rotate = detailed and box_width < _CHAR_WIDTH * max(len(t[0][0]) for t in texts) + 8
        if rotate:
            height = _CHAR_WIDTH * max(len(t[0][0]) for t in texts) + 8
            fonts = [_font_size(box_width, height, lines, True) for lines, _title in texts]
        else:
            fonts = [_font_size(box_width, 0, lines, False) for lines, _title in texts]
            if min(fonts) < 8 and not detailed:  # too narrow: the count above what it counts
                texts = [(_wrapped(lines), title) for lines, title in texts]
                fonts = [_font_size(box_width, 0, lines, False) for lines, _title in texts]
            height = 8.0 + 1.2 * max(font * len(t[0]) for font, t in zip(fonts, texts, strict=True))
        for i, (group, (lines, title), font) in enumerate(zip(groups, texts, fonts, strict=True)):
            x_centre = _MARGIN_LEFT + slot * (i + 0.5)
            colour = _colour(group)
            boxes.append(
                Box(
                    round(x_centre - box_width / 2, 1),
                    round(y, 1),
                    round(box_width, 1),
                    round(height, 1),
                    tint(colour),
                    colour,
                    lines,
                    title,
                    len(group.members),
                    font,
                    rotate,
                    bold_first=not detailed and bool(group.numbers or group.level or len(group.kinds) > 1),
                )
            )
            for member in group.members:
                anchor[member] = (x_centre, y, y + height)
        centres[level] = (y, y + height)
        tier = tiers.get(level)
        if level == 0:
            hosts = sum(len(g.members) for g in groups)
            text: tuple[str, ...] = ("hosts", f"{hosts:,} devices")
        elif tier is not None:
            text = (tier.name, f"{tier.switches:,} x {tier.switch_part}")
        else:
            text = (tier_name(level),)
        labels.append(Label(8.0, round(y + height / 2 - 4, 1), text))
        y += height + _LEVEL_GAP
    height = y - _LEVEL_GAP + 10.0

    bundles = _bundles(graph, anchor, detailed)
    links = plan.totals.links[network]
    for link_tier in range(top):
        upper = centres.get(link_tier + 1)
        lower = centres.get(link_tier)
        name = link_tier_name(link_tier)
        count = links.get(name, 0)
        if upper is None or lower is None or not count:
            continue
        speed = _tier_gbps(plan, network, link_tier)
        labels.append(Label(width - 8.0, (upper[1] + lower[0]) / 2, (name, f"{count:,} links", speed), anchor="end"))
    return Drawing(
        network=network,
        title=NETWORK_INFO[network].title,
        width=round(width, 1),
        height=round(height, 1),
        colour=NETWORK_INFO[network].colour,
        boxes=tuple(boxes),
        bundles=tuple(bundles),
        labels=tuple(labels),
        detailed=detailed,
        devices=graph.number_of_nodes(),
        links=sum(links.values()),
    )


def _box_lines(plan: Plan, group: _Group, level: int, detailed: bool) -> tuple[tuple[str, ...], str]:
    if detailed:
        return (group.name,), f"{group.name} ({plan.devices[group.name].part})"
    scope = _scope_text(group)
    kinds = sorted(group.kinds.items(), key=lambda kv: _kind_rank(kv[0]))
    lines = tuple(([scope] if scope else []) + [_kind_text(k, n, level) for k, n in kinds])
    return lines, " · ".join(lines)


def _wrapped(lines: tuple[str, ...]) -> tuple[str, ...]:
    """Each "192 GPU servers" line as "192" and "GPU servers"; the heading stays whole."""
    result = []
    for line in lines:
        count, _space, what = line.partition(" ")
        if what and count.replace(",", "").isdigit():
            result += [count, what]
        else:
            result.append(line)
    return tuple(result)


def _font_size(width: float, height: float, lines: tuple[str, ...], rotate: bool) -> float:
    """The label font (10 px at most) that fits the longest line across the box (or up it, when turned)."""
    room = (height if rotate else width) - 6
    across = width - 2 if rotate else 10.0
    longest = max(len(line) for line in lines)
    return round(max(4.0, min(10.0, room / (0.6 * longest), across)), 1)


def _tier_gbps(plan: Plan, network: str, link_tier: int) -> str:
    """The bandwidth of one tier of links: the down side of the tier above."""
    tier = next((t for t in plan.tiers if t.network == network and t.tier == link_tier + 1), None)
    if tier is None:
        return ""
    return f"{tier.down_gbps / 1000:,.1f} Tb/s"


def _bundles(graph: nx.Graph[str], anchor: dict[str, tuple[float, float, float]], detailed: bool) -> list[Bundle]:
    counts: dict[tuple[tuple[float, float, float], tuple[float, float, float]], list[float]] = {}
    for a, b, data in graph.edges(data=True):
        end_a, end_b = anchor[a], anchor[b]
        if end_a == end_b:
            continue  # links inside one group
        upper, lower = (end_a, end_b) if end_a[1] < end_b[1] else (end_b, end_a)
        if upper[1] == lower[1]:
            continue  # same level (none in a tree; kept out of the drawing if a design has them)
        total = counts.setdefault((upper, lower), [0, 0.0])
        total[0] += data.get("links", 1)
        total[1] += data.get("bandwidth_gbps", 0.0)
    between: dict[tuple[float, float], int] = defaultdict(int)
    for upper, lower in counts:
        between[(upper[2], lower[1])] += 1
    bundles = []
    for (upper, lower), (links, gbps) in sorted(counts.items()):
        few = between[(upper[2], lower[1])] <= 12
        width = (0.5 if detailed else 0.6) + 1.4 * math.log10(max(links, 1))
        bundles.append(
            Bundle(
                x1=round(upper[0], 1),
                y1=round(upper[2], 1),
                x2=round(lower[0], 1),
                y2=round(lower[1], 1),
                links=int(links),
                width=round(width, 2),
                opacity=0.45 if detailed else 0.6,
                title=f"{int(links):,} links, {gbps / 1000:,.1f} Tb/s",
                label=f"{int(links):,}" if few and not detailed else "",
            )
        )
    return bundles


def networks_drawn(plan: Plan) -> Iterable[str]:
    """The networks the plan has graphs for, in the order the report shows them."""
    return [n for n in plan.networks() if n in graphs(plan) and graphs(plan)[n].number_of_nodes()]
