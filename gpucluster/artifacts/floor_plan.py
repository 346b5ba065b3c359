"""The floor plan for the design review: every rack at its floor coordinates, coloured by purpose, with a bar for
its maximum load against the rack power budget; above FLOOR_LABEL_MAX_RACKS racks the rack names give way to row
and SU labels, and above FLOOR_ELEMENT_MAX_RACKS racks the racks of one colour are drawn as one path (a 131,072-GPU
hall is 5,400 racks: as an element and a tooltip each, the drawing was most of the report's HTML and most of the time
WeasyPrint took to lay out and draw the PDF), and so are the scalable units' outlines; no rack has a tooltip then
(every rack's and SU's load is in the power workbook)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from itertools import groupby

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


def rack_sizes_mm(plan: Plan) -> dict[str, tuple[float, float]]:
    """Rack -> (width, depth) of its catalog part, in millimetres (600 x 1200 where the catalog gives none)."""
    sizes = {}
    for rack in plan.racks.values():
        part = plan.catalog_parts[rack.part]
        sizes[rack.name] = (
            float(getattr(part, "width_mm", 600) or 600),
            float(getattr(part, "depth_mm", 1200) or 1200),
        )
    return sizes


def rack_span_mm(plan: Plan, sizes: dict[str, tuple[float, float]] | None = None) -> tuple[float, float]:
    """(across the rows, along the depth) the racks span on the floor, in millimetres: the rows and the aisles
    between them (the floor space the decision summary quotes and the floor plan draws)."""
    sizes = rack_sizes_mm(plan) if sizes is None else sizes
    racks = list(plan.racks.values())
    span_x = max((r.x_mm + sizes[r.name][0] for r in racks), default=0.0) - min((r.x_mm for r in racks), default=0.0)
    span_y = max((r.y_mm + sizes[r.name][1] for r in racks), default=0.0) - min((r.y_mm for r in racks), default=0.0)
    return span_x, span_y


def floor_plan(plan: AnalysedPlan) -> FloorPlan:
    """The racks on the floor, coloured by purpose, each with its maximum load against the rack budget. A hall
    deeper than it is wide is turned a quarter (rows run down the page), so it fills a landscape page."""
    site = plan.design.site
    budget_w = float(site.rack_power_budget_kw) * 1000
    racks = list(plan.racks.values())
    labelled = len(racks) <= FLOOR_LABEL_MAX_RACKS
    sizes = rack_sizes_mm(plan)
    span_x, span_y = rack_span_mm(plan, sizes)
    turned = span_y > span_x
    drawn = []
    for rack in racks:
        width, depth = sizes[rack.name]
        x, y, w, h = (rack.y_mm, rack.x_mm, depth, width) if turned else (rack.x_mm, rack.y_mm, width, depth)
        colour = purpose_colour(rack.purpose)
        limit_w, over = rack_limit(plan, rack, budget_w)
        share = min(1.0, rack.power_max_w / limit_w) if limit_w else 0.0
        su = f" SU {rack.su}" if rack.su is not None else ""
        load = f"{rack.power_max_w / 1000:,.1f} kW max, {rack.power_typical_w / 1000:,.1f} kW typical"
        drawn.append(
            FloorRack(
                name=rack.name,
                x=x,
                y=y,
                width=w,
                depth=h,
                fill=tint(colour, 0.75),
                stroke=colour,
                bar_height=round(h * share, 1),
                over_budget=over,
                title=f"{rack.name}: {rack.purpose}{su}, {len(rack.devices)} devices, {load}",
                lines=(rack.name, f"{rack.power_max_w / 1000:,.0f} kW") if labelled else (),
            )
        )
    drawn += _cdus(plan, racks, sizes, turned, labelled)
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


def _cdus(
    plan: AnalysedPlan, racks: list[RackPlan], sizes: dict[str, tuple[float, float]], turned: bool, labelled: bool
) -> list[FloorRack]:
    """The in-row coolant distribution units (analyse/budget.py, N+1 per scalable unit) at the end of the row that
    holds their scalable unit's last rack, each a rack's footprint (the CDUs' own footprints are not in the
    catalog), so the floor shows the positions they take."""
    from gpucluster.analyse.budget import kept_power_budget  # liquid-cooled rack systems only; read on use

    if not any(rack.rack_system for rack in racks):
        return []
    colour = ROLES["coolant-distribution-unit"].colour
    row_end: dict[float, float] = {}
    for rack in racks:
        row_end[rack.y_mm] = max(row_end.get(rack.y_mm, rack.x_mm), rack.x_mm + sizes[rack.name][0])
    drawn = []
    number = 0
    for group in kept_power_budget(plan).cdus:
        members = [r for r in racks if r.rack_system and f"SU {r.su}" == group.name] or [
            r for r in racks if r.rack_system
        ]
        last = max(members, key=lambda r: (r.y_mm, r.x_mm))
        width, depth = sizes[last.name]
        for _unit in range(group.units):
            number += 1
            x_mm, y_mm = row_end[last.y_mm], last.y_mm
            row_end[last.y_mm] = x_mm + width
            x, y, w, h = (y_mm, x_mm, depth, width) if turned else (x_mm, y_mm, width, depth)
            name = f"CDU{number}"
            drawn.append(
                FloorRack(
                    name=name,
                    x=x,
                    y=y,
                    width=w,
                    depth=h,
                    fill=tint(colour, 0.75),
                    stroke=colour,
                    bar_height=0.0,
                    over_budget=False,
                    title=f"{name}: coolant distribution unit {group.cdu} for {group.name} ({group.needed}+1)",
                    lines=(name, group.name) if labelled else (),
                )
            )
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
