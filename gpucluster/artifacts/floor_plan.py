"""The floor plan for the design review: every rack at its floor coordinates, coloured by purpose, with a bar for
its maximum load against its limit. Above FLOOR_LABEL_MAX_RACKS racks, row and SU labels replace rack names; above
FLOOR_ELEMENT_MAX_RACKS the racks of one colour, and the SUs' outlines, are one path each, without tooltips (a
131,072-GPU hall's 5,400 racks as elements were most of the report's HTML and PDF time; loads are in power.xlsx)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from itertools import groupby

from gpucluster.analyse.floor import Floor, kept_floor
from gpucluster.artifacts.drawings import Label
from gpucluster.catalog.schema import RackSystem
from gpucluster.formats.templating import render
from gpucluster.plan.model import AnalysedPlan, Plan, RackPlan
from gpucluster.plan.rack_scale import shelf_capacity_w
from gpucluster.plan.registry import ROLES, purpose_colour, tint

FLOOR_LABEL_MAX_RACKS = 240  # rack names and loads drawn up to this many racks
FLOOR_ELEMENT_MAX_RACKS = 1_024  # each rack its own element and tooltip up to this many racks; above, a path a colour


@dataclass(frozen=True, slots=True)
class FloorRack:
    name: str
    x: float
    y: float
    width: float
    depth: float
    fill: str
    stroke: str
    bar_height: float  # maximum load against the rack budget, as a share of the depth
    over_budget: bool
    title: str
    lines: tuple[str, ...]  # empty when racks are too many to label


@dataclass(frozen=True, slots=True)
class FloorPath:
    """Every rack (or load bar) of one colour as one SVG path, for a hall too large for an element per rack."""

    fill: str
    stroke: str
    stroke_width: float
    d: str


@dataclass(frozen=True, slots=True)
class FloorPlan:
    """Every rack at its floor coordinates (millimetres; the y axis runs from the first row down, or across when
    the hall is turned)."""

    min_x: float
    min_y: float
    width: float
    height: float
    racks: tuple[FloorRack, ...]
    rows: tuple[Label, ...]
    sus: tuple[tuple[float, float, float, float, str], ...]  # x, y, width, height, label
    paths: tuple[FloorPath, ...]  # the racks and their bars, merged by colour; empty: an element per rack
    su_outlines: str  # with merged racks, the SUs' outlines as one path; else "" (an element each)
    font_mm: float  # row and SU labels
    unit_mm: float  # text in the racks; line widths are fractions of it
    labelled: bool
    budget_kw: float
    turned: bool  # rows run down the drawing (a hall deeper than wide)

    def svg(self) -> str:
        return render("report/floor.svg", f=self)


def floor_plan(plan: AnalysedPlan) -> FloorPlan:
    """The racks on the floor, coloured by purpose, each with its maximum load against the rack budget. A hall
    deeper than it is wide is turned a quarter (rows run down the page), so it fills a landscape page."""
    budget_w = float(plan.design.site.rack_power_budget_kw) * 1000
    racks = list(plan.racks.values())
    labelled = len(racks) <= FLOOR_LABEL_MAX_RACKS
    floor = kept_floor(plan)
    sizes = floor.rack_sizes_mm
    turned = floor.depth_mm > floor.width_mm
    drawn = []
    for rack in racks:
        limit_w, over = rack_limit(plan, rack, budget_w)
        share = min(1.0, rack.power_max_w / limit_w) if limit_w else 0.0
        su = f" SU {rack.su}" if rack.su is not None else ""
        load = f"{rack.power_max_w / 1000:,.1f} kW max, {rack.power_typical_w / 1000:,.1f} kW typical"
        title = f"{rack.name}: {rack.purpose}{su}, {len(rack.devices)} devices, {load}"
        lines = (rack.name, f"{rack.power_max_w / 1000:,.0f} kW") if labelled else ()
        place = (rack.x_mm, rack.y_mm, *sizes[rack.name])
        drawn.append(_floor_rack(rack.name, place, turned, purpose_colour(rack.purpose), title, lines, share, over))
    drawn += _cdus(floor, turned, labelled)
    rack_width = min((w for w, _d in sizes.values()), default=600.0)
    unit = font = rack_width * 0.28  # rack text and line widths; labels of rows and SUs
    if not labelled:  # nothing written in the racks: row and SU labels grow to stay legible on a large hall
        font *= 2.5
    left = font * (3 if turned else 8)  # SU labels turned up the side, or row letters
    top = font * (3.5 if turned else 2.5)  # row letters, or SU labels
    min_x = min((r.x for r in drawn), default=0.0) - left
    min_y = min((r.y for r in drawn), default=0.0) - top
    max_x = max((r.x + r.width for r in drawn), default=0.0) + rack_width * 0.5
    max_y = max((r.y + r.depth for r in drawn), default=0.0) + font
    rows = []
    row_of: Callable[[FloorRack], float] = (lambda r: r.x) if turned else (lambda r: r.y)
    for _row, members in groupby(sorted(drawn, key=lambda r: (row_of(r), r.x + r.y)), key=row_of):
        first = next(iter(members))
        letter = (_row_letter(first.name),)
        if turned:
            rows.append(Label(first.x + first.width / 2, first.y - font * 1.2, letter, "middle"))
        else:
            rows.append(Label(first.x - font * 1.4, first.y + first.depth / 2 + font / 2, letter, "end"))
    sus = []
    segments: dict[tuple[int, float], list[FloorRack]] = defaultdict(list)
    for rack, shown in zip(racks, drawn[: len(racks)], strict=True):  # the CDUs after them belong to no SU
        if rack.su is not None:
            segments[(rack.su, row_of(shown))].append(shown)
    for (su_number, _y), segment in sorted(segments.items()):
        x0 = min(r.x for r in segment)
        y0 = min(r.y for r in segment)
        x1 = max(r.x + r.width for r in segment)
        y1 = max(r.y + r.depth for r in segment)
        sus.append((x0, y0, x1 - x0, y1 - y0, f"SU {su_number}"))
    merged = len(drawn) > FLOOR_ELEMENT_MAX_RACKS
    return FloorPlan(
        min_x=round(min_x, 1),
        min_y=round(min_y, 1),
        width=round(max_x - min_x, 1),
        height=round(max_y - min_y, 1),
        racks=tuple(drawn),
        rows=tuple(rows),
        sus=tuple(sus),
        paths=_merged(drawn, unit) if merged else (),
        su_outlines=_outlines(sus, unit) if merged else "",
        font_mm=round(font, 1),
        unit_mm=round(unit, 1),
        labelled=labelled,
        budget_kw=budget_w / 1000,
        turned=turned,
    )


def rack_limit(plan: Plan, rack: RackPlan, budget_w: float) -> tuple[float, bool]:
    """The power a rack's bar is drawn against and whether it is over it, with the rules' verdicts: the rack budget
    for a rack on PDUs (its maximum above it is an error); a rack-scale system's shelves for its rack (rule
    rack-system-power-and-cooling: sustained draw above their redundant capacity, or peak above their nameplate,
    is an error; a peak between the two only a warning)."""
    system = plan.catalog_parts.get(rack.rack_system or "")
    if not isinstance(system, RackSystem):
        return budget_w, rack.power_max_w > budget_w
    usable_w, nameplate_w = shelf_capacity_w(plan, system)
    return usable_w, rack.power_typical_w > usable_w + 1e-6 or rack.power_max_w > nameplate_w + 1e-6


def _floor_rack(
    name: str,
    place: tuple[float, float, float, float],
    turned: bool,
    colour: str,
    title: str,
    lines: tuple[str, ...],
    share: float = 0.0,
    over: bool = False,
) -> FloorRack:
    """A rack (or a CDU) as drawn; `place` is its x, y, width and depth on the floor (mm), `share` its bar's."""
    x_mm, y_mm, width, depth = place
    x, y, w, h = (y_mm, x_mm, depth, width) if turned else (x_mm, y_mm, width, depth)
    return FloorRack(name, x, y, w, h, tint(colour, 0.75), colour, round(h * share, 1), over, title, lines)


def _cdus(floor: Floor, turned: bool, labelled: bool) -> list[FloorRack]:
    """The in-row coolant distribution units where the floor puts them (analyse/floor.py), each drawn as a rack."""
    colour = ROLES["coolant-distribution-unit"].colour
    drawn = []
    for cdu in floor.cdus:
        group = cdu.group
        draw = "draw not published" if group.power_w is None else f"{group.power_w / group.units / 1000:,.2f} kW"
        title = f"{cdu.name}: coolant distribution unit {group.cdu} for {group.name} ({group.needed}+1), {draw}"
        lines = (cdu.name, group.name) if labelled else ()
        place = (cdu.x_mm, cdu.y_mm, cdu.width_mm, cdu.depth_mm)
        drawn.append(_floor_rack(cdu.name, place, turned, colour, title, lines))
    return drawn


def _row_letter(rack: str) -> str:
    return rack.rstrip("0123456789")


def _merged(racks: list[FloorRack], unit_mm: float) -> tuple[FloorPath, ...]:
    """The racks as one path per fill and outline, then their load bars as one path per colour: the same shapes,
    sizes and rounding an element per rack has (templates/report/floor.svg)."""
    outlines: dict[tuple[str, str, float], list[str]] = defaultdict(list)
    bars: dict[str, list[str]] = defaultdict(list)
    for r in racks:
        stroke, width = ("#D62728", 0.4) if r.over_budget else (r.stroke, 0.1)
        outlines[(r.fill, stroke, round(unit_mm * width, 1))].append(
            f"M{r.x:g} {r.y:g}h{r.width:g}v{r.depth:g}h{-r.width:g}z"
        )
        if r.bar_height:
            bar_width = round(r.width * 0.2, 1)
            bars[r.stroke].append(
                f"M{r.x + r.width * 0.72:g} {round(r.y + r.depth - r.bar_height, 1):g}"
                f"h{bar_width:g}v{r.bar_height:g}h{-bar_width:g}z"
            )
    return (
        *(FloorPath(fill, stroke, width, "".join(d)) for (fill, stroke, width), d in outlines.items()),
        *(FloorPath(colour, "none", 0.0, "".join(d)) for colour, d in bars.items()),
    )


def _outlines(sus: list[tuple[float, float, float, float, str]], unit_mm: float) -> str:
    """The SUs' dashed outlines as one path, each the rectangle the template draws for it."""
    pad = unit_mm * 0.25
    return "".join(
        f"M{round(x - pad, 1):g} {round(y - pad, 1):g}h{round(w + 2 * pad, 1):g}v{round(h + 2 * pad, 1):g}"
        f"h{-round(w + 2 * pad, 1):g}z"
        for x, y, w, h, _label in sus
    )
