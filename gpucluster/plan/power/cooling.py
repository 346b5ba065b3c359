"""The cooling that removes a rack's heat: the site's capacity per rack, the share liquid loops take, and the
lightest cooling type a rack's density needs."""

from __future__ import annotations

# Heat one rack's cooling can remove, by cooling type, when the design does not say
# (COOLING_SOURCES: air ~25-30 kW practical with containment; active rear-door heat exchangers
# up to ~60 kW; direct liquid cooling 50-120+ kW per rack, GB200/GB300 NVL72 ~120-140 kW).
COOLING_CAPACITY_KW = {"air": 30.0, "rear-door": 60.0, "liquid": 140.0}
COOLING_SOURCES = {
    "air": "https://www.yobitel.com/knowledge-base/rear-door-heat-exchanger (air ~25-30 kW with containment)",
    "rear-door": "https://www.coolnetpower.com/blog/how-much-heat-can-a-rear-door-heat-exchanger-remove/ (active RDHx)",
    "liquid": "https://ai-infrastructure.net/datacentre-physical/ (DLC 50-120+ kW; NVL72 ~120-140 kW)",
}


def cooling_capacity_kw(site: object) -> float:
    capacity = getattr(site, "cooling_capacity_kw", None)
    return float(capacity) if capacity else COOLING_CAPACITY_KW[getattr(site, "cooling", "air")]


def liquid_heat_w(part: object, power_w: float) -> float:
    """The share of a part's heat its liquid loop takes (catalog `cooling`); the rest goes to the air."""
    cooling = getattr(part, "cooling", None)
    if cooling is None or cooling.method != "liquid":
        return 0.0
    return power_w * cooling.liquid_fraction


def cooling_needed(air_kw: float, liquid_kw: float) -> str:
    """The cooling a rack needs by its density: the lightest type whose default capacity takes its
    air-side heat (air, then rear-door); beyond that, or with liquid-cooled parts, direct liquid."""
    if liquid_kw > 0:
        return "liquid"
    for kind in ("air", "rear-door"):
        if air_kw <= COOLING_CAPACITY_KW[kind] + 1e-9:
            return kind
    return "liquid"


def cooling_against_site(air_kw: float, liquid_kw: float, site_cooling: str, capacity_kw: float) -> str:
    """What a rack needs against what the site gives: the heat its cooling takes of its capacity, and where the
    rack needs more (or could do with less) than the site's type. A liquid site's capacity is for liquid heat
    only: a rack's air-side heat (an NVL72's fans, NICs and drives; an air-cooled network rack) goes to the room
    air and is stated beside it, never counted against the coolant loop."""
    needed = cooling_needed(air_kw, liquid_kw)
    if site_cooling == "liquid":
        room = f"room air {air_kw:.1f} kW ({cooling_needed(air_kw, 0.0)})"
        if liquid_kw <= 0:
            return room
        text = f"liquid: {liquid_kw:.1f} of {capacity_kw:g} kW; {room}"
        if liquid_kw > capacity_kw + 1e-9:
            return f"{text}; over by {liquid_kw - capacity_kw:.1f} kW"
        return text
    text = f"{site_cooling}: {air_kw:.1f} of {capacity_kw:g} kW"
    if liquid_kw > 0:
        return f"{text}; needs a coolant loop for {liquid_kw:.1f} kW"
    if air_kw > capacity_kw + 1e-9:
        return f"{text}; over by {air_kw - capacity_kw:.1f} kW (needs {needed})"
    if needed != site_cooling:
        return f"{text} ({needed} alone would do)"
    return text
