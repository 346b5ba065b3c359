"""Cables for every link: routed run length, media, orderable length, part numbers and optics.

Run length follows the cable route: up from the port to the overhead tray, along the tray
(Manhattan distance between the racks), down to the other port, plus slack; inside one rack it
is the vertical distance plus routing to the cable manager. The media is the first catalog
option that reaches (copper, then active copper/AOC, multimode fibre with transceivers,
single-mode beyond multimode reach), as NVIDIA LinkX plans it
(https://docs.nvidia.com/networking/display/400g100gpam4ovpub/linkx-100g-pam4-product-line-overview). Two links
that join the same pair of twin-port cages share one straight twin cable when one exists. A
twin-port cage holds one transceiver module for both its ports, so fibre links joined through
twin-port cages share one media, and each such cage gets the module that reaches its longer link.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from itertools import count, repeat
from operator import attrgetter, is_
from typing import Any

import numpy as np
import numpy.typing as npt

from gpucluster.catalog.load import Catalog
from gpucluster.catalog.schema import Cable as CablePart
from gpucluster.catalog.schema import PortGroup, Transceiver, speaks
from gpucluster.design.schema import Cabling
from gpucluster.plan.model import Cable, Device, Finding, Link, Plan, PlanDraft
from gpucluster.plan.registry import NETWORK_INFO
from gpucluster.runtime.progress import track

RACK_UNIT_M = 0.04445  # EIA-310: 1U = 1.75 in
IN_RACK_ROUTING_M = 1.0  # to the vertical cable manager and back, both ends
MEDIA_ORDER = ("dac", "acc", "aoc", "mmf", "smf", "cat6")
# QSFP cages take the plugs of earlier generations (NVIDIA LinkX 100G-PAM4 overview: QSFP112 cages
# in ConnectX-7 and BlueField-3 accept QSFP56 and QSFP28 plugs; QSFP56 cages accept QSFP28).
CAGE_ACCEPTS = {
    "qsfp112": ("qsfp112", "qsfp56", "qsfp28"),
    "qsfp56": ("qsfp56", "qsfp28"),
}


class NoCableFits(ValueError):
    """No catalog cable (with optics) reaches for a link; names the link and what was needed, and keeps the
    link's host end (`device`) so the error can point at the design entry that put it there."""

    def __init__(self, message: str, device: str = "") -> None:
        super().__init__(message)
        self.device = device


@dataclass(frozen=True, eq=False)
class End:
    """What a cable plugs into at one end (one shared instance per kind, so identity is equality)."""

    cage_type: str
    ports_per_cage: int
    switch: bool


BACKPLANE = End("backplane", 1, False)  # a link on a system's backplane or cable cartridge: no cable to order


@dataclass(frozen=True, slots=True)
class Choice:
    """A cable at an orderable length with the optics at its ends; one choice serves every link of its kind and
    length, so what each cable copies from it is worked out here once."""

    cable: CablePart
    length_m: float
    a_transceiver: Transceiver | None
    b_transceiver: Transceiver | None
    media_rank: int  # the cable's media in MEDIA_ORDER: copper before fibre
    part_number: str | None
    a_module: str | None  # the transceivers' catalog ids
    b_module: str | None
    media: str  # the cable's
    part: str  # the cable's catalog id


_UNSEEN: Any = object()  # a kind of link and length not looked up yet

# (network, speed, (end a, end b), run length): a single-link cable's kind and length (_Singles)
_SingleKey = tuple[str, float, tuple[End, End], float]
# (technology, speed, end a, end b, links, split, media, halves): a kind of link (_Chooser)
_LinkKind = tuple[str | None, float, End, End, int, int, str | None, bool]
# (technology, speed, end a, end b, length, links, split, media, halves): a kind of link and its run length
_LinkKindAndLength = tuple[str | None, float, End, End, float, int, int, str | None, bool]
# (link indexes in order, twin-side end, far end, split): a two-link cable a link could share (_two_link_groups)
_TwoLinkOption = tuple[tuple[int, ...], End, End, int]


def _choice(cable: CablePart, length_m: float, a: Transceiver | None = None, b: Transceiver | None = None) -> Choice:
    return Choice(
        cable,
        length_m,
        a,
        b,
        MEDIA_ORDER.index(cable.media),
        cable.part_number_for(length_m),
        a.id if a else None,
        b.id if b else None,
        cable.media,
        cable.id,
    )


def run_length_m(plan: Plan, a: Device, b: Device, routing: Cabling) -> float:
    """Routed length between two devices before rounding up to an orderable length."""
    ra, rb = plan.racks[a.rack], plan.racks[b.rack]
    ua = _port_height_u(a, ra.height_u)
    ub = _port_height_u(b, rb.height_u)
    if ra.name == rb.name:
        routed = abs(ua - ub) * RACK_UNIT_M + IN_RACK_ROUTING_M
    else:
        up = (ra.height_u - ua) * RACK_UNIT_M + routing.tray_height_above_rack_m
        down = (rb.height_u - ub) * RACK_UNIT_M + routing.tray_height_above_rack_m
        along = (abs(ra.x_mm - rb.x_mm) + abs(ra.y_mm - rb.y_mm)) / 1000.0
        routed = up + along + down
    return routed * (1 + routing.slack_fraction) + routing.slack_m


def run_lengths_m(plan: Plan, links: list[Link], routing: Cabling) -> list[float]:
    """run_length_m of every link, rounded to the centimetre, computed over arrays (one pass per quantity
    instead of a call per link: a million links at 131,072 GPUs). The arithmetic is run_length_m's, term for
    term, so the lengths are the same floats."""
    racks = list(plan.racks.values())
    rack_index = {rack.name: i for i, rack in enumerate(racks)}
    names = list(plan.devices)
    device_index = {name: i for i, name in enumerate(names)}
    devices = [plan.devices[name] for name in names]
    rack_of = np.array([rack_index[d.rack] for d in devices], dtype=np.int64)
    rack_height = np.array([r.height_u for r in racks], dtype=np.float64)
    rack_x = np.array([r.x_mm for r in racks], dtype=np.float64)
    rack_y = np.array([r.y_mm for r in racks], dtype=np.float64)
    port_u = np.array([_port_height_u(d, plan.racks[d.rack].height_u) for d in devices], dtype=np.float64)
    # map over the links in C (a generator expression costs a frame resume per link)
    a = np.fromiter(map(device_index.__getitem__, map(attrgetter("a_device"), links)), np.int64, len(links))
    b = np.fromiter(map(device_index.__getitem__, map(attrgetter("b_device"), links)), np.int64, len(links))
    ra, rb = rack_of[a], rack_of[b]
    ua, ub = port_u[a], port_u[b]
    tray = routing.tray_height_above_rack_m
    within = np.abs(ua - ub) * RACK_UNIT_M + IN_RACK_ROUTING_M
    up = (rack_height[ra] - ua) * RACK_UNIT_M + tray
    down = (rack_height[rb] - ub) * RACK_UNIT_M + tray
    along = (np.abs(rack_x[ra] - rack_x[rb]) + np.abs(rack_y[ra] - rack_y[rb])) / 1000.0
    routed = np.where(ra == rb, within, up + along + down)
    lengths = routed * (1 + routing.slack_fraction) + routing.slack_m
    # Python's round (numpy's can differ in the last digit, and Python's is slow: a correctly rounded decimal
    # conversion), once per distinct length; one float object per distinct rounded length, which the cables keep (a
    # few thousand lengths among 700,000 cables at 131,072 GPUs)
    distinct, of_link = np.unique(lengths, return_inverse=True)
    shared: dict[float, float] = {}
    rounded = [shared.setdefault(length, length) for length in map(round, distinct.tolist(), repeat(2))]
    return list(map(rounded.__getitem__, of_link.tolist()))


def _stated_runs(plan: Plan, lengths: list[float], routing: Cabling) -> None:
    """An existing filesystem stands where the site has it, outside the plan's racks: its links' run is the one
    the design states (links.run_length_m), with the same slack as every other run."""
    runs = {
        fs["device_prefix"]: fs["links"]["run_length_m"]
        for fs in plan.settings.filesystems or ()
        if fs["existing"] and fs["links"] is not None
    }
    if not runs:
        return
    for index, link in enumerate(plan.links):
        if link.a_device in runs:
            lengths[index] = round(runs[link.a_device] * (1 + routing.slack_fraction) + routing.slack_m, 2)


def _port_height_u(device: Device, rack_height_u: int) -> float:
    if device.u_position == 0:  # zero-U PDU: its network port sits about mid-height
        return rack_height_u / 2
    return device.u_position + device.u_height / 2


def _technology(plan: Plan, network: str) -> str | None:
    return plan.settings.technology(network) or None


def add_cables(plan: PlanDraft, catalog: Catalog, routing: Cabling) -> None:
    """Give every link a cable.

    Where the hardware allows, one cable carries two links: a straight twin-port cable between
    two twin-port cages, or a 1:2 splitter from a switch's twin-port cage to two single-port
    host cages. Copper is chosen before fibre whatever the grouping; at equal media the cable
    carrying more links wins.

    Cables are made in link order (a two-link cable where its first free link is) and numbered in that order per
    network and rack. Only the links that could share a cable are weighed one by one; every other link takes the
    single-link cable of its kind and length, and those cables are made column by column (looked up, numbered and
    built in C loops: a million links at 131,072 GPUs).
    """
    parts = catalog.of_kind(CablePart)
    lookup = _EndLookup(catalog)
    links, devices = plan.links, plan.devices
    uncabled = {name for name, entry in NETWORK_INFO.items() if not entry.cabled}
    by_cage: dict[tuple[str, int], list[int]] = defaultdict(list)  # twin-port cages only
    done = bytearray(len(links))  # links cabled (or of an uncabled network: counted in the totals, no cable)
    ends = lookup.link_ends(links, devices, uncabled, by_cage, done)
    choose = _Chooser(parts, catalog.of_kind(Transceiver))
    technology_of = {network: _technology(plan, network) for network in NETWORK_INFO}
    lengths = run_lengths_m(plan, links, routing)
    _stated_runs(plan, lengths, routing)
    work = _Work(plan, ends, lengths, choose, technology_of, _Series(), [None] * len(links), done)
    split_ports = _split_port_groups(links, devices, lookup)
    groups = _two_link_groups(links, ends, by_cage, halves=bool(split_ports))
    for group in split_ports:
        _cable_split_port(work, group, parts)
    # the single-link cable of each kind of link and length, by (network, speed, ends, length): the network stands for
    # its technology (a shorter key than the chooser's)
    singles = _Singles(choose, technology_of)
    makes = np.frombuffer(done, dtype=np.uint8) == 0  # the links where a cable is made, in link order
    shared = _weigh_shared(work, groups, singles, makes)
    _make_cables(work, np.flatnonzero(makes).tolist(), shared, singles)
    _one_module_per_twin_cage(plan, ends, by_cage, work.cable_of, choose)


@dataclass(slots=True)
class _Work:
    """What add_cables' steps share: each link's ends and run length, the chooser, the numbering and what is made."""

    plan: Plan
    ends: list[tuple[End, End]]
    lengths: list[float]  # each link's run length
    choose: _Chooser
    technology_of: dict[str, str | None]  # network -> its technology
    series: _Series  # (network prefix, rack of the A end) -> the numbers of its cables
    cable_of: list[Cable | None]  # each link's cable (None: a backplane link, or none yet)
    done: bytearray  # links cabled (or of an uncabled network)


def _cable_split_port(work: _Work, group: tuple[int, ...], parts: list[CablePart]) -> None:
    """The two halves of a split switch port: one 1:2 splitter fibre (NVIDIA MFP7E20), a twin-port module in the
    switch cage and a single-port 400G module in 200G mode at each host, whatever the run (no straight cable or
    copper splitter serves a split port here)."""
    links, devices, lengths = work.plan.links, work.plan.devices, work.lengths
    link = links[group[0]]
    end_host, end_switch = work.ends[group[0]]
    longest = max(lengths[i] for i in group)
    technology = work.technology_of[link.network]
    choice = work.choose(technology, link.speed_gbps, end_switch, end_host, longest, 2, 2, halves=True)
    if choice is None:
        raise NoCableFits(
            f"no catalog 1:2 splitter fibre reaches {longest:.1f} m for the {link.speed_gbps:g}G "
            f"{technology or ''} link {link.a_device}:{link.a_port} - {link.b_device}:{link.b_port} (half of a "
            f"split port) on the {link.network} network; the longest split-port cable in the catalog reaches "
            f"{max((c.reach_m for c in parts if c.splits_port), default=0):g} m: bring the hosts nearer the "
            "central racks' leaves (more racks per row, or more servers per rack with a larger "
            "site.rack_power_budget_kw)",
            link.a_device,
        )
    for i in group:
        work.done[i] = 1
    # the a end is the one its links share (the switch cage); a cable with one leg used keeps its link's
    # ends, host (a) and switch (b), as every single-link cable does (cable_ends)
    a_module, b_module = choice.a_module, choice.b_module
    rack = devices[link.b_device].rack
    if len(group) == 1:
        a_module, b_module = b_module, a_module
        rack = devices[link.a_device].rack
    prefix = NETWORK_INFO[link.network].cable_prefix
    number = next(work.series[(prefix, rack)])
    # positional: Cable's fields in order (id, network, links, media, part, part number, length, run length,
    # modules at a and b); keywords cost more over 700,000 cables at 131,072 GPUs
    cable = Cable(
        cable_id(prefix, rack, number),
        link.network,
        group,
        choice.media,
        choice.part,
        choice.part_number,
        choice.length_m,
        longest,
        a_module,
        b_module,
    )
    work.plan.cables.append(cable)
    for i in group:
        work.cable_of[i] = cable


def _weigh_shared(
    work: _Work, groups: dict[int, list[_TwoLinkOption]], singles: _Singles, makes: npt.NDArray[np.bool_]
) -> dict[int, tuple[Choice, tuple[int, ...], float]]:
    """The links that could share a cable, weighed in link order: copper before fibre whatever the grouping, at equal
    media the cable carrying more links. Returns link -> the cable made there when it is one of the link's two-link
    options (a splitter may use one leg); the links a shared cable takes are marked done and made nowhere else."""
    links, ends, lengths, done = work.plan.links, work.ends, work.lengths, work.done
    choose, technology_of = work.choose, work.technology_of
    shared: dict[int, tuple[Choice, tuple[int, ...], float]] = {}
    for index in sorted(groups):  # the links that could share a cable, in link order
        if done[index]:
            makes[index] = False
            continue
        link = links[index]
        network, speed_gbps = link.network, link.speed_gbps
        length = lengths[index]
        choice = singles[(network, speed_gbps, ends[index], length)]
        group: tuple[int, ...] = (index,)
        run_length, sharing = length, None  # sharing: the two-link cable chosen over the link's own, if any
        for members, twin_end, far_end, split in groups[index]:
            if any(map(done.__getitem__, members)):
                continue
            longest = max(map(lengths.__getitem__, members))
            option = choose(technology_of[network], speed_gbps, twin_end, far_end, longest, 2, split)
            # copper before fibre whatever the grouping; at equal media the cable carrying more links
            if option is not None and (
                choice is None or (option.media_rank, -len(members)) < (choice.media_rank, -len(group))
            ):
                choice = sharing = option
                group, run_length = members, longest
        if sharing is not None:
            shared[index] = (sharing, group, run_length)
            if len(group) > 1:  # a single link's own place is never looked at again
                for i in group:
                    done[i] = 1
    return shared


def _make_cables(
    work: _Work, at: list[int], shared: dict[int, tuple[Choice, tuple[int, ...], float]], singles: _Singles
) -> None:
    """The cables made at the links `at` (in link order), column by column: each the single-link cable of its kind
    and length, or the shared cable weighed there; numbered per network and rack of the A end."""
    plan, lengths = work.plan, work.lengths
    links, devices = plan.links, plan.devices
    made_links = list(map(links.__getitem__, at))
    networks = list(map(attrgetter("network"), made_links))
    run = list(map(lengths.__getitem__, at))
    choices = list(
        map(
            singles.__getitem__,
            zip(networks, map(attrgetter("speed_gbps"), made_links), map(work.ends.__getitem__, at), run, strict=True),
        )
    )
    carried: list[tuple[int, ...]] = list(zip(at))  # each cable's links: its own link, or the two it shares
    for index, (choice, group, run_length) in shared.items():
        k = bisect_left(at, index)
        choices[k], carried[k], run[k] = choice, group, run_length
    if any(map(is_, choices, repeat(None))):
        _no_cable_fits(work, at[list(map(is_, choices, repeat(None))).index(True)])
    rack_of = {name: device.rack for name, device in devices.items()}
    prefix_of = {network: entry.cable_prefix for network, entry in NETWORK_INFO.items()}
    racks = list(map(rack_of.__getitem__, map(attrgetter("a_device"), made_links)))
    prefixes = list(map(prefix_of.__getitem__, networks))
    numbers = map(next, map(work.series.__getitem__, zip(prefixes, racks, strict=True)))
    made = list(
        track(
            map(
                Cable,
                map(_CABLE_ID, prefixes, racks, numbers),
                networks,
                carried,
                map(attrgetter("media"), choices),
                map(attrgetter("part"), choices),
                map(attrgetter("part_number"), choices),
                map(attrgetter("length_m"), choices),
                run,
                map(attrgetter("a_module"), choices),
                map(attrgetter("b_module"), choices),
            ),
            len(at),
            "cables",
        )
    )
    plan.cables.extend(made)
    cable_of = work.cable_of
    for index, cable in zip(at, made, strict=True):
        cable_of[index] = cable
    for index, (_choice, group, _run) in shared.items():
        for i in group:
            cable_of[i] = cable_of[index]


def _no_cable_fits(work: _Work, index: int) -> None:
    """Refuse a link no catalog cable reaches, naming it and its cages."""
    link, (end_a, end_b), length = work.plan.links[index], work.ends[index], work.lengths[index]
    technology = work.technology_of[link.network] or ""
    raise NoCableFits(
        f"no catalog cable reaches {length:.1f} m for the {link.speed_gbps:g}G {technology} "
        f"link {link.a_device}:{link.a_port} ({end_a.cage_type}) - {link.b_device}:{link.b_port} "
        f"({end_b.cage_type}) on the {link.network} network",
        link.a_device,
    )


class _Singles(dict[_SingleKey, Choice | None]):
    """(network, speed, (end a, end b), run length) -> the single-link cable of that kind and length (None: none
    reaches), chosen on first lookup: a dict, so that a million lookups run in C."""

    def __init__(self, choose: _Chooser, technology_of: dict[str, str | None]):
        super().__init__()
        self.choose, self.technology_of = choose, technology_of

    def __missing__(self, key: _SingleKey) -> Choice | None:
        network, speed_gbps, (end_a, end_b), length_m = key
        choice = self[key] = self.choose(self.technology_of[network], speed_gbps, end_a, end_b, length_m, 1, 1)
        return choice


class _Series(dict[tuple[str, str], Iterator[int]]):
    """(network prefix, rack) -> the numbers of that network's cables from that rack, 1, 2, ... in the order the
    cables are made (next() of it: the next number)."""

    def __missing__(self, key: tuple[str, str]) -> Iterator[int]:
        numbers = self[key] = count(1)
        return numbers


def cable_id(prefix: str, rack: str, number: int) -> str:
    """A cable's identifier: its network's letter, the rack its A end stands in and its number among that
    network's cables from that rack (``C-A04-0012``). Numbered per network and per rack, so growing one rack or
    changing another network never renumbers a cable whose label is already printed."""
    return _CABLE_ID(prefix, rack, number)


_CABLE_ID = "{}-{}-{:04d}".format  # cable_id's format, which add_cables also maps over a plan's cables at once


def cable_ends(plan: Plan, cable: Cable) -> tuple[Collection[tuple[str, int]], Collection[tuple[str, int]]]:
    """The distinct (device, cage) ends at the cable's a side and b side.

    The a side is the links' a side, except for a 1:2 splitter whose shared (twin-port) cage is on
    the links' b side: a cable's a end is always the end its links share.
    """
    if len(cable.links) == 1:  # most cables: the cable's ends are its link's ends
        link = plan.links[cable.links[0]]
        return ((link.a_device, link.a_cage),), ((link.b_device, link.b_cage),)
    links = [plan.links[i] for i in cable.links]
    a = {(link.a_device, link.a_cage) for link in links}
    b = {(link.b_device, link.b_cage) for link in links}
    return (b, a) if len(a) > 1 and len(b) == 1 else (a, b)


def _one_module_per_twin_cage(
    plan: PlanDraft,
    ends: list[tuple[End, End]],
    by_cage: dict[tuple[str, int], list[int]],
    cable_of: list[Cable | None],
    choose: _Chooser,
) -> None:
    """Give every twin-port cage one transceiver module: an NVIDIA twin-port OSFP module serves both
    ports with one media (SR8 multimode or DR8 single-mode: NVIDIA LinkX transceiver pages, catalog transceivers.yaml).

    Single-mode spreads from every single-mode link through the twin-port cages its fibre links
    share (a multimode link there becomes single-mode, and so on at its far cage); then each cage
    takes the longest-reaching module its two links were given, which reaches both. Where the
    catalog has no single-mode optic for such a link (e.g. a flat-top twin-port host cage), the
    link stays multimode and the plan carries a warning: that cage's ports need other partners.
    """
    links = plan.links
    queue = []
    for made in plan.cables:
        if made.media == "smf":
            link, (end_a, end_b) = links[made.links[0]], ends[made.links[0]]
            if end_a.ports_per_cage == 2:
                queue.append((link.a_device, link.a_cage))
            if end_b.ports_per_cage == 2:
                queue.append((link.b_device, link.b_cage))
    seen = set(queue)
    unfit: list[int] = []
    while queue:
        device, cage = queue.pop()
        for index in by_cage[(device, cage)]:
            cable = cable_of[index]
            if cable is None:
                continue
            if cable.media == "mmf" and not _refit(plan, cable, ends[index], choose):
                unfit.append(index)
            link = links[index]
            at_a = link.a_device == device  # a link never joins a device to itself
            far = (link.b_device, link.b_cage) if at_a else (link.a_device, link.a_cage)
            if cable.media == "smf" and ends[index][1 if at_a else 0].ports_per_cage == 2 and far not in seen:
                seen.add(far)
                queue.append(far)
    optics = {part.id: part for part in plan.catalog_parts.values() if isinstance(part, Transceiver)}
    for (device, _cage), indexes in by_cage.items():
        if len(indexes) != 2:
            continue
        i, j = indexes
        cable_i, cable_j = cable_of[i], cable_of[j]
        if cable_i is None or cable_j is None:
            continue
        at_a_i, at_a_j = links[i].a_device == device, links[j].a_device == device
        module_i = cable_i.a_transceiver if at_a_i else cable_i.b_transceiver
        module_j = cable_j.a_transceiver if at_a_j else cable_j.b_transceiver
        if module_i != module_j and module_i and module_j and optics[module_i].media == optics[module_j].media:
            widest = max(module_i, module_j, key=lambda t: optics[t].reach_m)
            for cable, at_a in ((cable_i, at_a_i), (cable_j, at_a_j)):
                if at_a:
                    cable.a_transceiver = widest
                else:
                    cable.b_transceiver = widest
    for index in sorted(unfit):
        link = links[index]
        plan.findings.append(
            Finding(
                "planning",
                "warning",
                f"{link.a_device}:{link.a_port} - {link.b_device}:{link.b_port} shares twin-port cages with "
                "single-mode links, but the catalog has no single-mode optic for it: it stays multimode, so one "
                "cage would need two kinds of module; give that cage's ports partners at similar distances",
                link.a_device,
            )
        )


def _refit(plan: Plan, cable: Cable, ends: tuple[End, End], choose: _Chooser) -> bool:
    """Turn a multimode cable single-mode, with single-mode optics at both ends (False: none fits, or a splitter
    fibre into a split port, which has no single-mode form in the catalog)."""
    link = plan.links[cable.links[0]]
    if link.b_half:
        return False
    choice = choose(_technology(plan, link.network), link.speed_gbps, *ends, cable.run_length_m, 1, 1, "smf")
    if choice is None:
        return False
    cable.media, cable.cable_part, cable.length_m = "smf", choice.cable.id, choice.length_m
    cable.part_number, cable.a_transceiver, cable.b_transceiver = choice.part_number, choice.a_module, choice.b_module
    return True


def _split_port_groups(links: list[Link], devices: dict[str, Device], lookup: _EndLookup) -> list[tuple[int, ...]]:
    """The links on each split switch port (their b end a half of it), in link order: one or two per port."""
    by_port: dict[tuple[str, str], list[int]] = {}
    for index, link in enumerate(links):
        if link.b_half:
            by_port.setdefault((link.b_device, lookup.parent(devices[link.b_device], link.b_port)), []).append(index)
    return [tuple(group) for group in by_port.values()]


def _two_link_groups(
    links: list[Link], ends: list[tuple[End, End]], by_cage: dict[tuple[str, int], list[int]], halves: bool
) -> dict[int, list[_TwoLinkOption]]:
    """Per link, the two-link cables it could share: a straight twin cable when both links of a twin-port
    cage go to the same far twin-port cage, or a 1:2 splitter when a switch's twin-port cage serves
    single-port host cages (one leg may stay unused). Value: (link indexes in order, twin-side end, far
    end, split). `halves`: whether any link is half of a split port (most plans have none to leave out)."""
    groups: dict[int, list[_TwoLinkOption]] = {}
    for (device, _cage), all_members in by_cage.items():
        # a split port's halves have their own splitter; by_cage lists a cage's links in link order
        members = tuple(i for i in all_members if not links[i].b_half) if halves else tuple(all_members)
        if not members:
            continue
        first = links[members[0]]
        at_a = first.a_device == device  # the cage is the first link's a end (a link never joins a device to itself)
        twin_end, far_end = ends[members[0]] if at_a else ends[members[0]][::-1]
        option: _TwoLinkOption | None = None
        if len(members) == 2 and at_a and far_end.ports_per_cage == 2:
            second = links[members[1]]
            if second.a_device == device:
                far_cage = (second.b_device, second.b_cage)
            else:
                far_cage = (second.a_device, second.a_cage)
            if far_cage == (first.b_device, first.b_cage):
                option = (members, twin_end, far_end, 1)
        if (
            option is None
            and twin_end.switch
            and far_end.ports_per_cage == 1
            and all(_far_end(links[i], ends[i], device).ports_per_cage == 1 for i in members[1:])
        ):
            option = (members, twin_end, far_end, 2)
        if option is not None:
            for i in members:
                groups.setdefault(i, []).append(option)
    return groups


def _far_end(link: Link, ends: tuple[End, End], device: str) -> End:
    """The end of a link away from `device`."""
    return ends[1] if link.a_device == device else ends[0]


class _EndLookup:
    """Port name -> the cage it sits in, per catalog part (worked out once per part)."""

    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self.halves: dict[str, dict[str, tuple[End, str]]] = {}  # part -> half-port name -> (its cage, its port)
        self.kinds: dict[tuple[str, int, bool], End] = {}

    def link_ends(
        self,
        links: list[Link],
        devices: dict[str, Device],
        uncabled: set[str],
        by_cage: dict[tuple[str, int], list[int]],
        done: bytearray,
    ) -> list[tuple[End, End]]:
        """Each link's (a end, b end); a link of an uncabled network has the backplane at both (and is marked in
        `done`). Each twin-port cage's links go into `by_cage` ((device, cage) -> link indexes in link order; one pass
        for both). Each device's port table is looked up once (a million links at 131,072 GPUs share some 60,000
        devices and a dozen parts)."""
        tables: dict[str, tuple[dict[str, End], End]] = {}  # device -> (port -> end, the end of a port not listed)
        by_part: dict[tuple[str, bool], dict[str, End]] = {}

        def table_of(name: str) -> tuple[dict[str, End], End]:
            device = devices[name]
            switch = device.role == "switch"
            table = by_part.get((device.part, switch))
            if table is None:
                table = by_part[(device.part, switch)] = self.part_table(device.part, switch)
            found = tables[name] = (table, self.shared("rj45", 1, switch))
            return found

        ends: list[tuple[End, End]] = []
        backplane = (BACKPLANE, BACKPLANE)
        for index, link in enumerate(links):
            if link.network in uncabled:
                ends.append(backplane)
                done[index] = 1
                continue
            table_a, other_a = tables.get(link.a_device) or table_of(link.a_device)
            end_a = table_a.get(link.a_port) or other_a
            if link.b_half:
                end_b = self.half_end(devices[link.b_device], link.b_port)
            else:
                table_b, other_b = tables.get(link.b_device) or table_of(link.b_device)
                end_b = table_b.get(link.b_port) or other_b
            if end_a.ports_per_cage == 2:
                by_cage[(link.a_device, link.a_cage)].append(index)
            if end_b.ports_per_cage == 2:
                by_cage[(link.b_device, link.b_cage)].append(index)
            ends.append((end_a, end_b))
        return ends

    def half_end(self, device: Device, port: str) -> End:
        """The cage of a port's half (split ports' names can repeat whole ports' names, so they are looked up apart)."""
        return self._halves(device)[port][0]

    def parent(self, device: Device, port: str) -> str:
        """The logical port a half belongs to."""
        return self._halves(device)[port][1]

    def _halves(self, device: Device) -> dict[str, tuple[End, str]]:
        table = self.halves.get(device.part)
        if table is None:
            table = self.halves[device.part] = {}
            for group in getattr(self.catalog.parts[device.part], "ports", []):
                end = self.shared(group.cage_type, group.ports_per_cage, device.role == "switch")
                for (name, _cage), pair in zip(group.port_names(), group.split_port_names(), strict=False):
                    for half in pair:
                        table[half] = (end, name)
        return table

    def shared(self, cage_type: str, ports_per_cage: int, switch: bool) -> End:
        """The one End of its kind (ends are compared by identity)."""
        key = (cage_type, ports_per_cage, switch)
        if key not in self.kinds:
            self.kinds[key] = End(*key)
        return self.kinds[key]

    def part_table(self, part_id: str, switch: bool) -> dict[str, End]:
        """Port name -> its end, for a device of a catalog part (a switch's or a host's)."""
        table: dict[str, End] = {}
        for group in getattr(self.catalog.parts[part_id], "ports", []):
            assert isinstance(group, PortGroup)
            end = self.shared(group.cage_type, group.ports_per_cage, switch)
            for name, _cage in group.port_names():
                table[name] = end
            if group.ethernet_planes:  # the same cage split into one port per plane, one module serving them all
                split = self.shared(group.cage_type, group.ethernet_planes, switch)
                for name, _cage, _plane in group.plane_port_names():
                    table[name] = split
        return table


class _Chooser:
    """The first catalog cable, in media order (or of the one `media` given), that fits both ends and reaches,
    remembered: the candidates per kind of link (technology, speed, ends, links, split, media), then the choice per
    length. Thousands of distinct run lengths share a handful of candidate lists and far fewer orderable lengths, so
    a candidate's orderable length is worked out once per run length and what it makes (its optics, its Choice) once
    per orderable length. For a splitter (split 2) `end_a` is the twin-port side and must be the cable's end_a."""

    def __init__(self, parts: list[CablePart], optics: list[Transceiver]):
        self.parts, self.optic = parts, _OpticFinder(optics)
        self.candidates: dict[_LinkKind, list[CablePart]] = {}
        self.choices: dict[_LinkKindAndLength, Choice | None] = {}
        self.orderable: dict[tuple[str, float], float | None] = {}  # (cable id, run length) -> orderable length
        # (cable id, orderable length, technology, speed, ends) -> its choice
        self.fitted: dict[tuple[str, float, str | None, float, End, End], Choice | None] = {}

    def __call__(
        self,
        technology: str | None,
        speed_gbps: float,
        end_a: End,
        end_b: End,
        length_m: float,
        links: int,
        split: int,
        media: str | None = None,
        halves: bool = False,
    ) -> Choice | None:
        key = (technology, speed_gbps, end_a, end_b, length_m, links, split, media, halves)
        try:
            return self.choices[key]  # most calls: a kind and length seen before
        except KeyError:
            pass
        kind = (technology, speed_gbps, end_a, end_b, links, split, media, halves)
        candidates = self.candidates.get(kind)
        if candidates is None:
            candidates = self.candidates[kind] = _candidates(self.parts, *kind)
        choice = self.choices[key] = self._first_that_reaches(
            candidates, technology, speed_gbps, end_a, end_b, length_m
        )
        return choice

    def _first_that_reaches(
        self,
        candidates: list[CablePart],
        technology: str | None,
        speed_gbps: float,
        end_a: End,
        end_b: End,
        length_m: float,
    ) -> Choice | None:
        orderable, fitted = self.orderable, self.fitted
        for cable in candidates:
            at = (cable.id, length_m)
            length = orderable.get(at, _UNSEEN)
            if length is _UNSEEN:
                length = orderable[at] = cable.orderable_length_m(length_m)
            if length is None:
                continue
            made = (cable.id, length, technology, speed_gbps, end_a, end_b)
            choice: Choice | None = fitted.get(made, _UNSEEN)
            if choice is _UNSEEN:
                choice = fitted[made] = self._fitted(cable, length, technology, speed_gbps, end_a, end_b)
            if choice is not None:
                return choice
        return None

    def _fitted(
        self, cable: CablePart, length_m: float, technology: str | None, speed_gbps: float, end_a: End, end_b: End
    ) -> Choice | None:
        """The cable at an orderable length with the optics its ends need (None: a fibre whose optics do not reach
        it as ordered, its coiled slack included, not just the route)."""
        if cable.media not in ("mmf", "smf"):
            return _choice(cable, length_m)
        optic_a = self.optic(cable.media, technology, speed_gbps, end_a, length_m)
        optic_b = self.optic(cable.media, technology, speed_gbps, end_b, length_m)
        if optic_a and optic_b:
            return _choice(cable, length_m, optic_a, optic_b)
        return None


def _candidates(
    parts: list[CablePart],
    technology: str | None,
    speed_gbps: float,
    end_a: End,
    end_b: End,
    links: int,
    split: int,
    media: str | None,
    halves: bool,
) -> list[CablePart]:
    """The catalog cables that fit a kind of link, in the order they are tried (media order, then the slowest,
    shortest-reaching that will do). A split port's halves take only a splitter that splits a port, and nothing
    else takes one."""
    candidates = [
        c
        for c in parts
        if c.links == links
        and c.split == split
        and c.splits_port == halves
        and media in (None, c.media)
        and speaks(c.technology, technology)
        and c.speed_gbps >= speed_gbps
        and (
            c.media in ("mmf", "smf")  # a fibre plugs into optics, which must fit the cages (checked below)
            or (_fits(c.end_a, end_a) and _fits(c.end_b, end_b))
            or (split == 1 and _fits(c.end_a, end_b) and _fits(c.end_b, end_a))
        )
    ]
    candidates.sort(key=lambda c: (MEDIA_ORDER.index(c.media), c.speed_gbps, c.reach_m, c.id))
    return candidates


class _OpticFinder:
    """The catalog module for a cage that reaches a fibre's length: of those that fit, the shortest-reaching (then
    the slowest). The modules that fit a kind of cage are found and sorted once; tens of thousands of lengths
    are then looked up in that short list."""

    def __init__(self, optics: list[Transceiver]):
        self.optics = optics
        self.fitting: dict[
            tuple[str, str | None, float, End], list[Transceiver]
        ] = {}  # (media, technology, speed, end)

    def __call__(
        self, media: str, technology: str | None, speed_gbps: float, end: End, length_m: float
    ) -> Transceiver | None:
        key = (media, technology, speed_gbps, end)
        fitting = self.fitting.get(key)
        if fitting is None:
            fitting = self.fitting[key] = sorted(
                (
                    t
                    for t in self.optics
                    if t.media == media
                    and _fits(t.cage_type, end)
                    and t.ports == end.ports_per_cage
                    and speaks(t.technology, technology)
                    and t.speed_gbps >= speed_gbps
                    and t.end in ("any", "switch" if end.switch else "host")
                ),
                key=lambda t: (t.reach_m, t.speed_gbps, t.id),
            )
        return next((t for t in fitting if t.reach_m >= length_m), None)


def _fits(plug: str, end: End) -> bool:
    return plug in CAGE_ACCEPTS.get(end.cage_type, (end.cage_type,))
