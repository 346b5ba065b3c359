"""Design rules: the seed's "Getting it right", each defined once.

A rule reads *facts*, a small plain-data summary of the plan (:func:`rule_facts`), so the same
definition runs in ``gpucluster validate`` and in the Pulumi policy pack, which receives the
facts as the cluster component's properties.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpucluster.analyse.burn_in import burn_in_facts
from gpucluster.analyse.compatibility import SWITCH_FIELD, incompatible_links
from gpucluster.catalog.ports import PortPool, device_ports
from gpucluster.catalog.schema import AnyPart, PowerShelf, RackSystem
from gpucluster.design.schema import PowerFeed
from gpucluster.plan.facts import (
    BurnInTest,
    CheckpointFacts,
    FabricFeedLoss,
    FeedLossFacts,
    HalfSpeedLink,
    OverlongCable,
    RackFacts,
    RuleFacts,
    SlowHostLink,
    SubnetManagerFacts,
)
from gpucluster.plan.model import RULE_PREFIX, Finding, PhysicalPlan, Plan, RackPlan, Severity
from gpucluster.plan.power.circuits import rack_circuits
from gpucluster.plan.power.cooling import cooling_capacity_kw, liquid_heat_w
from gpucluster.plan.power.cords import FeedLoss, feed_loss
from gpucluster.plan.queries import queries
from gpucluster.plan.racks import floor_load_kpa, loaded_weight_kg

COMPUTE_FABRIC_PURPOSES = {"gpu", "fabric", "fabric-manager"}


def rule_facts(plan: PhysicalPlan, checkpoint: CheckpointFacts | None, burn_in: list[BurnInTest]) -> RuleFacts:
    """The plain data the rules read (JSON-serialisable; also the Pulumi policy pack's input): the physical plan's,
    and those of its checkpoint model and burn-in tests."""
    design = plan.design
    site = getattr(design, "site", None)
    compute_switches = {d.name: d.part for d in plan.switches("compute")}
    catalog_parts = plan.catalog_parts
    found_in = queries(plan)
    purposes: Counter[str] = Counter(link.purpose for link in found_in.links("compute"))
    foreign = 0
    for network in found_in.networks():
        if network == "compute":
            continue
        for link in found_in.links(network):  # most join no compute switch: two lookups each
            a, b = link.a_device, link.b_device
            if a in compute_switches and link.a_port not in _mgmt_ports(catalog_parts.get(compute_switches[a])):
                foreign += 1
            if b in compute_switches and link.b_port not in _mgmt_ports(catalog_parts.get(compute_switches[b])):
                foreign += 1
    feed = getattr(site, "power_feed", None)
    losses = feed_loss(plan, feed) if feed else []
    return {
        "compute_fabric_link_purposes": dict(sorted(purposes.items())),
        "non_compute_links_on_compute_switches": foreign,
        "compute_oversubscription": [
            {"tier": t.name, "ratio": round(t.oversubscription, 4)}
            for t in plan.tiers
            if t.network == "compute" and t.up_gbps
        ],
        "racks": [_rack_facts(plan, rack, feed) for rack in plan.racks.values()],
        "floor_rating_kpa": getattr(site, "floor_load_kpa", None),
        "rack_power_budget_kw": getattr(site, "rack_power_budget_kw", None),
        "power_redundancy": feed.redundancy if feed else None,
        "fabric_feed_loss": fabric_feed_loss(plan, losses),
        "feed_loss": [
            {
                "part": loss.part,
                "devices": loss.devices,
                "psus": loss.psus,
                "surviving_psus": loss.surviving_psus,
                "surviving_kw": round(loss.surviving_w / 1000, 3),
                "split": loss.split,
                "max_kw": round(loss.max_w / 1000, 3),
                "typical_kw": round(loss.typical_w / 1000, 3),
            }
            for loss in losses
        ],
        "cooling": getattr(site, "cooling", None),
        "cooling_capacity_kw": cooling_capacity_kw(site) if site else None,
        "spare_servers": sum(1 for d in plan.gpu_nodes() if d.spare),
        "production_servers": sum(1 for d in plan.gpu_nodes() if not d.spare),
        "burn_in_plan": burn_in_facts(plan, burn_in),
        "checkpoint": checkpoint,
        "slow_host_links": slow_host_links(plan),
        "unsplit_half_speed_links": unsplit_half_speed_links(plan),
        "incompatible_links": incompatible_links(plan),
        "overlong_cables": overlong_cables(plan),
        "subnet_managers": subnet_manager_facts(plan),
    }


def fabric_feed_loss(plan: Plan, losses: list[FeedLoss]) -> list[FabricFeedLoss]:
    """Networks whose every switch is of a model one feed loss stops (its PSUs left carry less than its typical
    draw): losing one feed takes the whole fabric down, whatever the other racks' power."""
    stopping = {loss.part for loss in losses if loss.surviving_w < loss.typical_w}
    found: list[FabricFeedLoss] = []
    for network in sorted({d.network for d in plan.devices.values() if d.role == "switch" and d.network}):
        switches = plan.switches(network)
        parts = {d.part for d in switches}
        if switches and parts <= stopping:
            found.append({"network": network, "part": ", ".join(sorted(parts)), "switches": len(switches)})
    return found


def subnet_manager_facts(plan: Plan) -> list[SubnetManagerFacts]:
    """Each InfiniBand network and what can run its subnet manager: its fabric-manager appliances (UFM, a pair per
    fabric) or the switches' own on-board SM (catalog ``subnet_manager``)."""
    s = plan.settings
    facts: list[SubnetManagerFacts] = []
    for network, technology, switch, managers in (
        ("compute", s.compute_technology, s.compute_switch, s.fabric_managers),
        ("storage", s.storage_technology, s.storage_switch, s.storage_fabric_managers),
    ):
        if not str(technology or "").startswith("infiniband"):
            continue
        part = plan.catalog_parts.get(str(switch))
        fact: SubnetManagerFacts = {
            "network": network,
            "switch": switch,
            "switch_subnet_manager": bool(getattr(part, "subnet_manager", False)),
            "fabric_managers": managers,
        }
        if managers:  # absent without appliances (Pulumi drops None-valued properties)
            fact["fabric_manager"] = s.fabric_manager if network == "compute" else s.storage_fabric_manager
        facts.append(fact)
    return facts


def slow_host_links(plan: Plan) -> list[SlowHostLink]:
    """Host ports linked below their own speed (a 200G port on a 100G switch port), one record per kind
    of such link (network, host part and port speed, switch part, link speed) with a count and one
    example naming both ends."""
    speeds: dict[str, dict[str, float]] = {}  # part -> port name -> speed
    # host -> its part's port speeds; None for a switch (by its management port) or a part whose ports the catalog
    # does not list (PDUs): looked up once per host, not per link
    host_speeds: dict[str, dict[str, float] | None] = {}
    groups: dict[tuple[str, str, float, str, float], SlowHostLink] = {}
    found_in = queries(plan)
    for link in (link for network in found_in.networks() for link in found_in.links(network, 0)):
        by_name = host_speeds.get(link.a_device, _UNSEEN)
        if by_name is _UNSEEN:
            by_name = host_speeds[link.a_device] = _port_speeds(plan, link.a_device, speeds)
        if by_name is None:
            continue
        port_gbps = by_name.get(link.a_port)
        if port_gbps is None or link.speed_gbps >= port_gbps - 1e-9:
            continue  # ports of a split (multi-plane) link run at their share by design
        host, switch = plan.devices[link.a_device], plan.devices[link.b_device]
        key = (link.network, host.part, port_gbps, switch.part, link.speed_gbps)
        record = groups.setdefault(
            key,
            {
                "network": link.network,
                "host_part": host.part,
                "host_gbps": port_gbps,
                "switch_part": switch.part,
                "link_gbps": link.speed_gbps,
                "links": 0,
                "example": f"{link.a_device} {link.a_port} ({port_gbps:g}G) to {link.b_device} {link.b_port}",
            },
        )
        record["links"] += 1
    return [groups[k] for k in sorted(groups, key=str)]


_UNSEEN: Any = object()  # a host not looked up yet


def _port_speeds(plan: Plan, name: str, speeds: dict[str, dict[str, float]]) -> dict[str, float] | None:
    """A host's port name -> speed (its part's, made once per part in `speeds`); None for a switch or a part without
    listed ports."""
    host = plan.devices[name]
    if host.role == "switch":
        return None
    part = plan.catalog_parts.get(host.part)
    if part is None or not getattr(part, "ports", None):
        return None  # PDUs: a management port the catalog does not list
    by_name = speeds.get(host.part)
    if by_name is None:
        by_name = speeds[host.part] = {
            name: pool.speed_gbps for pool in device_ports(part).values() for name in pool.names
        }
    return by_name


def unsplit_half_speed_links(plan: Plan) -> list[HalfSpeedLink]:
    """Host ports at half a switch port's speed or less on a whole port of an InfiniBand switch whose ports do not
    split, on a straight cable: a 200G host (the UFM's NDR200 ports) on an 800G XDR port (Q3400). On NDR and
    Spectrum switches such a host takes half of a split port on a 1:2 splitter (plan/cables.py); for XDR ports no
    NVIDIA document was found that pairs a splitter or module with a 200G host (NVIDIA's XDR cable list reuses the
    NDR 1:2 splitter fibres, whose legs are 400G DR4, "800Gb/s XDR Twin-port OSFP and OSFP Transceivers and Fiber
    Part Numbers based on 200G-PAM4", docs.nvidia.com/networking/display/800g200gpam4list), so the plan's straight
    fibre is unconfirmed:
    one record per kind of such link, with a count and one example naming both ends."""
    candidates: list[int] = []
    pools: dict[str, PortPool | None] = {}  # switch part -> its fabric ports when they do not split, else None
    found_in = queries(plan)
    for network in found_in.networks():
        for index in found_in.link_indexes(network, 0):
            link = plan.links[index]
            if link.b_half:
                continue
            switch = plan.devices[link.b_device]
            if switch.part not in pools:  # InfiniBand switches: an Ethernet port takes a slower host by its own rules
                model = plan.catalog_parts[switch.part]
                infiniband = switch.role == "switch" and str(getattr(model, "technology", "")).startswith("infiniband")
                pool = device_ports(model).get("fabric") if infiniband else None
                pools[switch.part] = pool if pool is not None and not pool.halves else None
            whole = pools[switch.part]
            if whole is not None and link.speed_gbps * 2 <= whole.speed_gbps and link.b_port in whole.names:
                candidates.append(index)
    if not candidates:
        return []
    cable_of = {i: c for c in plan.cables for i in c.links}
    groups: dict[tuple[str, str, str, float, float], HalfSpeedLink] = {}
    for index in candidates:
        link = plan.links[index]
        switch, host = plan.devices[link.b_device], plan.devices[link.a_device]
        cable = cable_of.get(index)
        part = plan.catalog_parts.get(cable.cable_part) if cable is not None else None
        whole = pools[switch.part]
        if host.role == "switch" or whole is None or getattr(part, "split", 1) != 1:
            continue
        key = (link.network, host.part, switch.part, link.speed_gbps, whole.speed_gbps)
        record = groups.setdefault(
            key,
            {
                "network": link.network,
                "host_part": host.part,
                "switch_part": switch.part,
                "link_gbps": link.speed_gbps,
                "port_gbps": whole.speed_gbps,
                "cable_part": cable.cable_part if cable is not None else "",
                "links": 0,
                "example": f"{link.a_device} {link.a_port} to {link.b_device} {link.b_port}",
            },
        )
        record["links"] += 1
    return [groups[k] for k in sorted(groups, key=str)]


# A cable ordered at more than this multiple of its routed run (slack included) is coiled surplus the buyer pays
# for and the trays carry: the orderable steps of its family are too coarse for the run (issue 31's bound).
ORDERED_LENGTH_MAX_RATIO = 2.0


def overlong_cables(plan: Plan) -> list[OverlongCable]:
    """Cables ordered at more than ORDERED_LENGTH_MAX_RATIO times their run: one record per network, cable part and
    orderable length, with a count, the worst ratio and one example."""
    groups: dict[tuple[str, str, float], OverlongCable] = {}
    for cable in plan.cables:
        length, run = cable.length_m, cable.run_length_m
        if length <= ORDERED_LENGTH_MAX_RATIO * run:
            continue
        ratio = round(length / run, 2) if run > 0 else float(length)
        record = groups.setdefault(
            (cable.network, cable.cable_part, length),
            {
                "network": cable.network,
                "cable_part": cable.cable_part,
                "length_m": length,
                "cables": 0,
                "worst_ratio": ratio,
                "example": f"{cable.id}: a {run:g} m run ordered at {length:g} m",
            },
        )
        record["cables"] += 1
        record["worst_ratio"] = max(record["worst_ratio"], ratio)
    return [groups[k] for k in sorted(groups)]


def _rack_facts(plan: Plan, rack: RackPlan, feed: PowerFeed | None) -> RackFacts:
    liquid_w = sum(liquid_heat_w(plan.part(n), float(getattr(plan.part(n), "power_max_w", 0.0))) for n in rack.devices)
    facts: RackFacts = {
        "name": rack.name,
        "purpose": rack.purpose,
        "power_max_kw": round(rack.power_max_w / 1000, 3),
        "power_typical_kw": round(rack.power_typical_w / 1000, 3),
        "liquid_max_kw": round(liquid_w / 1000, 3),
    }
    weight_kg = loaded_weight_kg(plan, rack)
    site = getattr(plan.design, "site", None)
    if weight_kg is not None and site is not None:
        pitch_mm = site.rack_pitch_mm or getattr(plan.catalog_parts.get(rack.part), "width_mm", 600.0)
        facts["loaded_weight_kg"] = round(weight_kg, 1)
        facts["floor_cell_mm"] = [round(pitch_mm), round(site.row_pitch_mm)]
        facts["floor_load_kpa"] = round(floor_load_kpa(weight_kg, pitch_mm, site.row_pitch_mm), 2)
    if feed is not None and rack.pdus:
        pdu_circuits = rack_circuits(plan, rack, feed)
        facts |= {
            "circuits_per_feed": pdu_circuits.circuits_per_feed,
            "circuit_capacity_kw": round(pdu_circuits.capacity_w / 1000, 3),
            "outlets_ok": pdu_circuits.outlets_ok,
        }
    if rack.rack_system:
        system = plan.catalog_part(rack.rack_system, RackSystem)
        shelf = plan.catalog_part(system.power_shelf, PowerShelf)
        circuits = rack_circuits(plan, rack, feed) if feed is not None else None
        facts["rack_system"] = {
            "system": system.model,
            "shelves": system.power_shelves,
            "shelf_kw": round(shelf.rating_w / 1000, 3),
            "redundancy": system.power_shelf_redundancy,
            "usable_kw": round(circuits.capacity_w / 1000, 3) if circuits else None,
            "nameplate_kw": round(system.power_shelves * shelf.rating_w / 1000, 3),
            "circuit_kw": round(circuits.circuit_usable_w / 1000, 3) if circuits else None,
        }
    return facts


def _mgmt_ports(part: AnyPart | None) -> tuple[str, ...]:
    """A switch's own management ports: cabling them to the out-of-band network is allowed."""
    if part is None:
        return ()
    pool = device_ports(part).get("mgmt")
    return pool.names if pool else ()


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    check: Callable[[RuleFacts], list[Finding]]


def _fabric_only_for_gpus(facts: RuleFacts) -> list[Finding]:
    other = {k: v for k, v in facts["compute_fabric_link_purposes"].items() if k not in COMPUTE_FABRIC_PURPOSES}
    findings = []
    if other:
        findings.append(Finding("compute-fabric-gpu-only", "error", f"compute fabric carries non-GPU links: {other}"))
    if facts["non_compute_links_on_compute_switches"]:
        findings.append(
            Finding(
                "compute-fabric-gpu-only",
                "error",
                f"{facts['non_compute_links_on_compute_switches']} storage or management links touch compute switches",
            )
        )
    return findings or [Finding("compute-fabric-gpu-only", "ok", "the compute fabric carries only GPU traffic")]


def _oversubscription(facts: RuleFacts) -> list[Finding]:
    over = [t for t in facts["compute_oversubscription"] if t["ratio"] > 1.0 + 1e-9]
    if not over:
        return [Finding("compute-fabric-non-blocking", "ok", "every compute-fabric tier is 1:1")]
    return [
        Finding(
            "compute-fabric-non-blocking",
            "advisory",
            f"compute-fabric {t['tier']} tier is {t['ratio']:.2f}:1 oversubscribed; all-reduce across the "
            "oversubscribed tier runs slower than within it",
            t["tier"],
        )
        for t in over
    ]


def _rack_power_and_cooling(facts: RuleFacts) -> list[Finding]:
    """Every watt a rack draws becomes heat: a liquid site's per-rack capacity takes the liquid share (the rest
    goes to the room air), while air or rear-door cooling takes only the air share and cannot serve a liquid
    loop."""
    findings = []
    budget = facts["rack_power_budget_kw"]
    capacity = facts["cooling_capacity_kw"]
    for rack in facts["racks"]:
        if "rack_system" in rack:
            continue  # its shelves are its budget and it needs liquid cooling: rule rack-system-power-and-cooling
        found: list[tuple[Severity, str]] = []
        if budget is not None and rack["power_max_kw"] > budget + 1e-9:
            found.append(("error", f"draws up to {rack['power_max_kw']:.1f} kW, over the {budget:g} kW budget"))
        liquid = rack.get("liquid_max_kw", 0.0)
        if liquid > 0 and facts["cooling"] != "liquid":
            text = f"holds liquid-cooled parts ({liquid:.1f} kW to liquid) but the site's cooling is {facts['cooling']}"
            found.append(("warning", f"{text}: it needs a coolant loop (CDU) to the rack"))
        # a liquid site's capacity takes the liquid heat; the air share goes to the room (cooling_against_site)
        heat = liquid if facts["cooling"] == "liquid" else rack["power_max_kw"] - liquid
        if capacity is not None and heat > capacity + 1e-9:
            text = f"at {heat:.1f} kW is beyond what {facts['cooling']} cooling removes ({capacity:g} kW per rack)"
            found.append(("warning", f"{text}; choose a denser cooling type or fewer servers per rack"))
        name = rack["name"]
        findings += [Finding("rack-power-and-cooling", sev, f"rack {name} {message}", name) for sev, message in found]
    return findings or [
        Finding("rack-power-and-cooling", "ok", f"every rack within {budget:g} kW and its {facts['cooling']} cooling")
    ]


def _split(loss: FeedLossFacts) -> str:
    """How a model's PSUs spread over its rack's feeds ("2 + 2 + 2"); facts without it: the 2N halves."""
    return str(loss.get("split") or f"{loss['psus'] - loss['surviving_psus']} + {loss['surviving_psus']}")


def _rack_power_distribution(facts: RuleFacts) -> list[Finding]:
    """Each rack's circuits carry its maximum with the redundancy kept (2N: on one feed; N+1: with any one PDU or
    feed lost), every power cord has an outlet; flag models whose PSUs left after a feed loss cannot carry them."""
    findings = []
    feeds = {"2N": "one feed", "N+1": "all but one of its circuits"}.get(
        str(facts.get("power_redundancy")), "its circuits"
    )
    for rack in facts["racks"]:
        if "circuit_capacity_kw" not in rack:
            continue
        texts = []
        if rack["power_max_kw"] > rack["circuit_capacity_kw"] + 1e-9:
            texts.append(
                f" draws up to {rack['power_max_kw']:.1f} kW but {feeds} carries "
                f"{rack['circuit_capacity_kw']:.1f} kW ({rack['circuits_per_feed']} circuits per feed)"
            )
        if not rack["outlets_ok"]:
            texts.append(": its PDUs have too few outlets for its power cords")
        name = rack["name"]
        findings += [Finding("rack-power-distribution", "error", f"rack {name}{text}", name) for text in texts]
    for fabric in facts.get("fabric_feed_loss", []):
        findings.append(
            Finding(
                "rack-power-distribution",
                "error",
                f"one feed loss stops every {fabric['network']} switch ({fabric['switches']} x {fabric['part']}): "
                "the PSUs left on the other feeds carry less than its typical draw. Spread each switch's PSUs so "
                "those left after a feed loss carry it (site.power_feed.redundancy), or correct the model's PSU "
                "rating in the catalog (psus.rating_w) if it is understated",
                fabric["part"],
            )
        )
    for loss in facts.get("feed_loss", []):
        below_typical = loss["surviving_kw"] < loss["typical_kw"]
        findings.append(
            Finding(
                "rack-power-distribution",
                "warning" if below_typical else "advisory",
                f"{loss['devices']} x {loss['part']}: its {loss['psus']} PSUs split {_split(loss)}"
                f" over the rack's feeds, and the {loss['surviving_psus']} left after a feed loss "
                f"carry {loss['surviving_kw']:g} kW, below its {loss['max_kw']:g} kW maximum"
                + (
                    f" and its {loss['typical_kw']:g} kW typical draw: a feed loss stops it"
                    if below_typical
                    else ": on a feed loss it runs power-capped"
                ),
                loss["part"],
            )
        )
    return findings or [
        Finding("rack-power-distribution", "ok", f"every rack's circuits carry its maximum load on {feeds}")
    ]


def _rack_system_power_and_cooling(facts: RuleFacts) -> list[Finding]:
    """A rack-scale system's power shelves carry its sustained (typical) draw with their redundancy kept (N+N: on
    half the shelves) and its maximum within their nameplate; a maximum beyond the redundant capacity is a
    warning (the shelves lose their redundancy at peak). Its liquid heat needs direct liquid cooling with the
    capacity for it: an air-cooled or rear-door site cannot take it. Racks with the same finding share one."""
    racks = [rack for rack in facts["racks"] if "rack_system" in rack]
    if not racks:
        return []
    capacity = facts["cooling_capacity_kw"]
    name = "rack-system-power-and-cooling"
    grouped: dict[tuple[Severity, str, str], list[str]] = {}
    for rack in racks:
        system = rack["rack_system"]
        shelves = f"{system['shelves']} x {system['shelf_kw']:g} kW shelves"
        usable = system["usable_kw"]
        found: list[tuple[Severity, str]] = []
        if usable is not None and rack["power_typical_kw"] > usable + 1e-9:
            found.append(
                (
                    "error",
                    f"sustained draw {rack['power_typical_kw']:.1f} kW, more than its {shelves} deliver with "
                    f"{system['redundancy']} on {system['circuit_kw']:g} kW circuits ({usable:.1f} kW)",
                )
            )
        elif rack["power_max_kw"] > system["nameplate_kw"] + 1e-9:
            found.append(
                (
                    "error",
                    f"peak {rack['power_max_kw']:.1f} kW, over its {shelves}' nameplate "
                    f"({system['nameplate_kw']:.1f} kW)",
                )
            )
        elif usable is not None and rack["power_max_kw"] > usable + 1e-9:
            found.append(
                (
                    "warning",
                    f"peak {rack['power_max_kw']:.1f} kW, over the {usable:.1f} kW its {shelves} deliver with "
                    f"{system['redundancy']}: at peak the shelves are not redundant",
                )
            )
        liquid = rack.get("liquid_max_kw", 0.0)
        if facts["cooling"] != "liquid":
            found.append(
                (
                    "error",
                    f"{liquid:.1f} kW to liquid: a {facts['cooling']}-cooled site cannot take it; it needs "
                    "direct liquid cooling (site.cooling: liquid) with coolant distribution units",
                )
            )
        elif capacity is not None and liquid > capacity + 1e-9:
            found.append(
                (
                    "error",
                    f"{liquid:.1f} kW to liquid, beyond the {capacity:g} kW per rack the site's liquid cooling removes",
                )
            )
        for severity, text in found:
            grouped.setdefault((severity, system["system"], text), []).append(rack["name"])
    findings = [
        Finding(name, severity, f"{_racks(names, model)}: {text}", names[0])
        for (severity, model, text), names in grouped.items()
    ]
    return findings or [
        Finding(name, "ok", "every rack-scale system within its power shelves and the site's liquid cooling")
    ]


def _floor_loading(facts: RuleFacts) -> list[Finding]:
    """A rack's loaded weight over its floor cell (rack pitch x row pitch) within the floor's rated load: an
    NVL72 rack weighs about 1.36 t. Racks whose weight the catalog cannot complete are left to its warning."""
    rating = facts.get("floor_rating_kpa")
    racks = [rack for rack in facts["racks"] if "floor_load_kpa" in rack]
    if rating is None or not racks:
        return []
    name = "floor-loading"
    grouped: dict[tuple[float, float, tuple[int, ...]], list[str]] = {}
    for rack in racks:
        if rack["floor_load_kpa"] > rating + 1e-9:
            key = (rack["loaded_weight_kg"], rack["floor_load_kpa"], tuple(rack["floor_cell_mm"]))
            grouped.setdefault(key, []).append(rack["name"])
    findings = []
    for (kg, kpa, (width, depth)), names in sorted(grouped.items()):
        findings.append(
            Finding(
                name,
                "error",
                f"{_racks(names)}: {kg:,.0f} kg loaded on a {width} x {depth} mm floor cell is {kpa:.1f} kPa, over the "
                f"floor's {rating:g} kPa (site.floor_load_kpa): spread the racks (site.rack_pitch_mm, "
                "site.row_pitch_mm) or have the floor rated for it",
                names[0],
            )
        )
    heaviest = max(racks, key=lambda rack: rack["floor_load_kpa"])
    return findings or [
        Finding(
            name,
            "ok",
            f"the heaviest rack ({heaviest['name']}, {heaviest['loaded_weight_kg']:,.0f} kg) loads the floor with "
            f"{heaviest['floor_load_kpa']:.1f} kPa of its {rating:g} kPa",
        )
    ]


def _racks(names: list[str], model: str = "", shown: int = 4) -> str:
    """'rack r01 (model)', or '12 model racks (r01, r02, r03, ... r12)'."""
    if len(names) == 1:
        return f"rack {names[0]}" + (f" ({model})" if model else "")
    listed = ", ".join(names) if len(names) <= shown else f"{', '.join(names[: shown - 1])}, ... {names[-1]}"
    return f"{len(names)} {model + ' ' if model else ''}racks ({listed})"


def _spares(facts: RuleFacts) -> list[Finding]:
    checkpoint = facts.get("checkpoint")
    domains = checkpoint.get("domain_spares") if checkpoint else None
    if domains and domains["in_rack_spares"] > 0:
        trays = domains["racks"] * domains["in_rack_spares"]
        return [Finding("spare-servers", "ok", f"{trays} in-rack spare trays outside the jobs' NVLink segments")]
    if facts["spare_servers"] > 0:
        return [Finding("spare-servers", "ok", f"{facts['spare_servers']} hot-spare servers")]
    return [
        Finding(
            "spare-servers",
            "warning",
            "no spare servers: a failed server stops the job until it is repaired; keep one ready",
        )
    ]


def _host_ports_at_speed(facts: RuleFacts) -> list[Finding]:
    """A host port linked below its own speed halves (or worse) what that host moves: name both ends and the
    field that picks the switch."""
    name = "host-ports-at-full-speed"
    findings = [
        Finding(
            name,
            "warning",
            f"{g['links']} {g['host_part']} port(s) of {g['host_gbps']:g}G run at {g['link_gbps']:g}G on "
            f"{g['switch_part']} ({g['network']} network), e.g. {g['example']}; choose a faster switch "
            f"({SWITCH_FIELD.get(g['network'], 'the network switch')})",
            g["host_part"],
        )
        for g in facts.get("slow_host_links", [])
    ]
    findings += [
        Finding(
            name,
            "warning",
            f"{g['links']} {g['host_part']} port(s) of {g['link_gbps']:g}G take whole {g['port_gbps']:g}G "
            f"{g['switch_part']} ports on a straight cable ({g['cable_part']}; {g['network']} network), e.g. "
            f"{g['example']}: no NVIDIA document was found for a {g['link_gbps']:g}G host on a {g['port_gbps']:g}G "
            "port of this switch (no splitter or module pairing; its ports do not split in the catalog), so this "
            "cabling is unconfirmed: confirm it with NVIDIA before ordering",
            g["host_part"],
        )
        for g in facts.get("unsplit_half_speed_links", [])
    ]
    return findings or [Finding(name, "ok", "every host port is linked at its own speed")]


def _link_ends_compatible(facts: RuleFacts) -> list[Finding]:
    """A link whose two ends speak different generations never comes up: an error naming the part, what it meets,
    how many such links, an example and the fix."""
    name = "link-ends-compatible"
    findings = [
        Finding(
            name,
            "error",
            f"{g['links']} {g['part']} port(s) speaking {g['port_technology']} meet {g['other']} "
            f"({g['other_technology']}) on {g['cable_part']} ({g['network']} network), e.g. {g['example']}: these "
            f"links do not come up (LinkX optics do not downshift between generations); {g['fix']}",
            g["part"],
        )
        for g in facts.get("incompatible_links", [])
    ]
    return findings or [Finding(name, "ok", "every link's ports, modules and cables speak one generation")]


def _cables_at_orderable_length(facts: RuleFacts) -> list[Finding]:
    """A cable ordered far longer than its run wastes what it costs and crowds the trays: name the part, the
    length and an example, and say what to change."""
    name = "cables-near-their-run"
    findings = [
        Finding(
            name,
            "warning",
            f"{g['cables']} {g['cable_part']} cable(s) ({g['network']} network) ordered at {g['length_m']:g} m, more "
            f"than {ORDERED_LENGTH_MAX_RATIO:g} x their run (up to {g['worst_ratio']:g} x), e.g. {g['example']}: "
            "the part's orderable lengths are too coarse for these runs; add the shorter lengths its vendor sells "
            "to the catalog (lengths_m) or choose another cable",
            g["cable_part"],
        )
        for g in facts.get("overlong_cables", [])
    ]
    return findings or [
        Finding(name, "ok", f"every cable is ordered at most {ORDERED_LENGTH_MAX_RATIO:g} x its routed run")
    ]


def _subnet_manager(facts: RuleFacts) -> list[Finding]:
    """An InfiniBand fabric has no traffic until a subnet manager assigns its addresses and routes: UFM
    appliances, or the switches' on-board SM (say which)."""
    name = "subnet-manager-present"
    field = {"compute": "compute_fabric.fabric_manager", "storage": "storage_network.switch"}
    findings = []
    for n in facts.get("subnet_managers", []):
        if n["fabric_managers"]:
            text = f"{n['network']} fabric: {n['fabric_managers']} x {n['fabric_manager']} run its SM"
            findings.append(Finding(name, "ok", text))
        elif n["switch_subnet_manager"]:
            text = (
                f"{n['network']} fabric: no fabric-manager appliance; the {n['switch']} switches' on-board subnet "
                "manager runs it"
            )
            findings.append(Finding(name, "ok", text))
        else:
            text = (
                f"the {n['network']} InfiniBand fabric has no subnet manager: no fabric-manager appliance and the "
                f"{n['switch']} switches run none (externally managed); set {field[n['network']]} (e.g. UFM) or "
                "choose switches with an on-board SM (qm9700)"
            )
            findings.append(Finding(name, "error", text, n["network"]))
    return findings or [Finding(name, "ok", "no InfiniBand fabric")]


def _workload_finding(name: str, assumed: bool, prefix: str = "") -> Callable[..., Finding]:
    """A finding on the workload: an assumed workload informs, it cannot fail a design."""

    def finding(severity: Severity, message: str, subject: str = "") -> Finding:
        return Finding(name, "advisory" if assumed and severity != "ok" else severity, prefix + message, subject)

    return finding


# Checkpoint pauses above this share of the interval are a warning: well-run jobs stay far below it
# (BLOOM-176B 0.37 %: 2.3 TB in 40 s every 3 h, stas00/ml-engineering; CheckFreq <= 3.5 %, Mohan et al.,
# FAST'21). A threshold of this tool.
CHECKPOINT_STALL_WARNING_FRACTION = 0.05
# An interval whose goodput is this far below the goodput at Daly's optimum is advisory.
CHECKPOINT_GOODPUT_SLACK = 0.01


def _checkpoint_write_time(facts: RuleFacts) -> list[Finding]:
    """Checkpoint write time against the checkpoint interval (facts from gpucluster.training.checkpoint)."""
    c = facts.get("checkpoint")
    name = "checkpoint-write-time"
    if not c:
        return [Finding(name, "ok", "no checkpoint figures")]
    assumed = c["workload"] == "assumed"
    label = f"assumed {c['model_parameters_b']:g}B workload: " if assumed else ""
    interval_min = c["interval_seconds"] / 60
    write = f"{c['write_seconds']:.1f} s" if c["write_seconds"] < 120 else f"{c['write_seconds'] / 60:.1f} min"
    what = (
        f"{label}a {c['checkpoint_tb']:.2f} TB checkpoint takes {write} to write "
        f"({c['write_bottleneck']}, {c['write_gbytes_per_s']:,.0f} GB/s)"
    )

    finding = _workload_finding(name, assumed)
    if c["write_seconds"] >= c["interval_seconds"]:
        return [
            finding(
                "error",
                f"{what}, longer than the {interval_min:.1f}-min interval: the next checkpoint starts before "
                "the last is written; raise write throughput or lengthen the interval",
            )
        ]
    findings = []
    stall_share = c["stall_seconds"] / c["interval_seconds"]
    if stall_share > CHECKPOINT_STALL_WARNING_FRACTION:
        findings.append(
            finding(
                "warning",
                f"{what}; the GPUs stand idle {stall_share:.0%} of every {interval_min:.0f}-min interval; raise "
                f"write throughput ({c['write_bottleneck']}) or use async checkpoints",
            )
        )
    daly = c.get("daly_interval_seconds")
    if daly and c["goodput"] < c["goodput_at_daly"] - CHECKPOINT_GOODPUT_SLACK:
        findings.append(
            finding(
                "advisory",
                f"{label}a {interval_min:.0f}-min checkpoint interval gives {c['goodput']:.1%} goodput; "
                f"Daly's optimum ({daly / 60:.0f} min) gives {c['goodput_at_daly']:.1%}",
            )
        )
    return findings or [
        Finding(
            name,
            "ok",
            f"{what}, {c['stall_seconds'] / c['interval_seconds']:.1%} of the {interval_min:.0f}-min interval; "
            f"expected goodput {c['goodput']:.1%}",
        )
    ]


def _spares_cover_repairs(facts: RuleFacts) -> list[Finding]:
    c = facts.get("checkpoint")
    if not c:
        return []
    domains = c.get("domain_spares")
    if domains:  # rack-scale systems: in-rack spare trays outside each job segment, spare racks beyond that
        enough = domains["spare_racks_have"] >= domains["spare_racks_needed"]
        return [
            Finding(
                "spares-cover-repairs",
                "ok" if enough else "advisory",
                f"each rack keeps {domains['in_rack_spares']} trays outside the job's segment of {domains['segment']}; "
                f"a rack has more in repair at once with probability {domains['p_rack_short']:.1e}, which "
                f"{domains['spare_racks_needed']} spare racks cover with {c['spares']['confidence']:.0%} confidence "
                f"(the plan has {domains['spare_racks_have']})",
            )
        ]
    spares = c["spares"]
    enough = spares["have"] >= spares["needed"]
    covering = spares["have"] if enough else spares["needed"]
    text = (
        f"{covering} spare servers cover servers in repair ({spares['repair_hours']:g} h) with "
        f"{spares['confidence']:.0%} confidence"
    )
    text += f" (needed {spares['needed']})" if enough else f"; the plan has {spares['have']}"
    return [Finding("spares-cover-repairs", "ok" if enough else "advisory", text)]


# A plan whose time to train is above this share of the target days is a warning (training/model.py).
TARGET_MARGIN = 0.9
# Checkpoints the filesystem holds beside the dataset: the last durable one and the one being written
# (a failure during a write falls back to the previous one; gpucluster/training/simulate.py).
CHECKPOINTS_KEPT = 2


def _workload_fits_plan(facts: RuleFacts) -> list[Finding]:
    """The workload against the plan, every figure from the one training model (gpucluster/training/model.py):
    time to train on the plan's GPUs against ``target_days``, whether loading and gradient sync leave the step
    room for the MFU, and whether the dataset (with the checkpoints kept) fits the parallel filesystem."""
    name = "workload-fits-plan"
    c = facts.get("checkpoint")
    t = c.get("training") if c else None
    if not c or not t:
        return [Finding(name, "ok", "no workload figures")]
    assumed = c["workload"] == "assumed"

    finding = _workload_finding(name, assumed, "assumed workload: " if assumed else "")
    findings = []
    model = f"{c['model_parameters_b']:g}B x {t['tokens_b']:,.0f}B tokens" if t.get("tokens_b") else ""
    ttt, target = t.get("time_to_train_days"), t.get("target_days")
    how = (
        f"{t['compute_days']:,.1f} days of compute at {t['mfu']:.0%} MFU / {t['goodput']:.1%} goodput "
        f"on {t['gpus']:,} GPUs"
        if ttt is not None
        else ""
    )
    if ttt is not None and target:
        needs = f"; it needs {t.get('gpus_needed', 0):,} GPUs (compute.gpus) or a longer workload.target_days"
        if ttt > target + 1e-9:
            findings.append(
                finding(
                    "error",
                    f"{model} takes {ttt:,.1f} days on this plan ({how}), beyond the {target:g}-day target{needs}",
                    "workload.target_days",
                )
            )
        elif ttt > TARGET_MARGIN * target:
            findings.append(
                finding(
                    "warning",
                    f"{model} takes {ttt:,.1f} days on this plan ({how}), within {1 - TARGET_MARGIN:.0%} of the "
                    f"{target:g}-day target: a slower MFU or a bad run of failures misses it{needs}",
                    "workload.target_days",
                )
            )
    exposed = t["load_seconds"] + t["sync_seconds"]
    if exposed > t["step_seconds"] + 1e-9:
        findings.append(
            finding(
                "advisory",
                f"at {t['mfu']:.0%} MFU a step takes {t['step_seconds']:.1f} s, but loading the batch "
                f"({t['load_seconds']:.1f} s) and the gradient all-reduce ({t['sync_seconds']:.1f} s, estimated "
                "with tensor parallelism inside the NVLink domain) alone take longer unless overlapped: the MFU "
                "is out of reach on this plan; lower workload.mfu or raise workload.global_batch_tokens_m",
                "workload.mfu",
            )
        )
    dataset, capacity = t.get("dataset_tb"), t["filesystem_capacity_tb"]
    if dataset is not None:
        kept = dataset + CHECKPOINTS_KEPT * c["checkpoint_tb"]
        where = f"the parallel filesystem ({t['filesystem']}, {capacity:,.0f} TB usable)"
        if dataset > capacity + 1e-9:
            findings.append(
                finding(
                    "error",
                    f"the {dataset:,.0f} TB dataset does not fit {where}; raise parallel_filesystem.capacity_tb or "
                    "stage the dataset in parts (workload.dataset_tb)",
                    "parallel_filesystem.capacity_tb",
                )
            )
        elif kept > capacity + 1e-9:
            findings.append(
                finding(
                    "warning",
                    f"the {dataset:,.0f} TB dataset and {CHECKPOINTS_KEPT} checkpoints of {c['checkpoint_tb']:.2f} TB "
                    f"({kept:,.0f} TB) do not fit {where}; raise parallel_filesystem.capacity_tb",
                    "parallel_filesystem.capacity_tb",
                )
            )
    if findings:
        return findings
    parts = []
    if ttt is not None:
        parts.append(
            f"{model} takes {ttt:,.1f} days ({how})" + (f", within the {target:g}-day target" if target else "")
        )
    if dataset is not None:
        parts.append(f"the {dataset:,.0f} TB dataset and {CHECKPOINTS_KEPT} checkpoints fit {capacity:,.0f} TB")
    return [Finding(name, "ok", "; ".join(parts) or "the workload fits the plan")]


def _burn_in_plan(facts: RuleFacts) -> list[Finding]:
    plan = facts.get("burn_in_plan")
    if not plan or not plan["tests"]:
        return [Finding("burn-in-plan-present", "warning", "no burn-in plan: weak links found later cost much more")]
    missing = []
    if plan["servers_covered"] < plan["servers"]:
        missing.append(f"{plan['servers'] - plan['servers_covered']} GPU servers")
    # ib_write_bw measures a link against a peer server's HCA on the same rail: a lone server has none
    measurable = plan["compute_host_links"] if plan["servers"] > 1 else 0
    if plan["links_covered"] < measurable:
        missing.append(f"{measurable - plan['links_covered']} compute links")
    if missing:
        return [Finding("burn-in-plan-present", "error", f"the burn-in plan misses {' and '.join(missing)}")]
    if plan["compute_host_links"] and not measurable:
        message = (
            f"burn-in plan: {plan['tests']} tests in {plan['stages']} stages cover the one GPU server; its "
            f"{plan['compute_host_links']} compute links have no peer server to measure them with ib_write_bw "
            "(the cabling check still discovers them)"
        )
        return [Finding("burn-in-plan-present", "ok", message)]
    return [
        Finding(
            "burn-in-plan-present",
            "ok",
            f"burn-in plan: {plan['tests']} tests in {plan['stages']} stages cover {plan['servers']} GPU servers "
            f"and {plan['compute_host_links']} compute links",
        )
    ]


RULES: list[Rule] = [
    Rule("compute-fabric-gpu-only", "The compute fabric carries only GPU traffic.", _fabric_only_for_gpus),
    Rule("compute-fabric-non-blocking", "Compute-fabric oversubscription above 1:1 is advisory.", _oversubscription),
    Rule(
        "rack-power-and-cooling", "Every rack within the site's power budget and its cooling.", _rack_power_and_cooling
    ),
    Rule(
        "rack-power-distribution",
        "Every rack's circuits carry its maximum load with the feed redundancy kept.",
        _rack_power_distribution,
    ),
    Rule(
        "rack-system-power-and-cooling",
        "Every rack-scale system within its power shelves (with their redundancy) and the site's liquid cooling.",
        _rack_system_power_and_cooling,
    ),
    Rule("floor-loading", "Every rack's loaded weight within the floor's rated load.", _floor_loading),
    Rule("spare-servers", "Spare servers are present.", _spares),
    Rule(
        "subnet-manager-present",
        "Every InfiniBand fabric has a subnet manager: UFM appliances or the switches' own.",
        _subnet_manager,
    ),
    Rule("host-ports-at-full-speed", "Every host port is linked at its own speed.", _host_ports_at_speed),
    Rule(
        "link-ends-compatible",
        "Both ends of every link, with their modules and cable, speak one generation.",
        _link_ends_compatible,
    ),
    Rule(
        "cables-near-their-run",
        "Every cable is ordered at most twice its routed run (slack included).",
        _cables_at_orderable_length,
    ),
    Rule(
        "workload-fits-plan",
        "The workload trains within its target days on the plan, its step leaves room for the MFU, and its "
        "dataset fits the parallel filesystem.",
        _workload_fits_plan,
    ),
    Rule("checkpoint-write-time", "Checkpoint write time against the checkpoint interval.", _checkpoint_write_time),
    Rule(
        "spares-cover-repairs",
        "Spare servers cover the servers in repair at the workload's confidence.",
        _spares_cover_repairs,
    ),
    Rule(
        "burn-in-plan-present",
        "A burn-in plan tests every GPU server and every compute link before handover.",
        _burn_in_plan,
    ),
]


def check_rules(facts: RuleFacts, rules: list[Rule] | None = None) -> list[Finding]:
    findings: list[Finding] = []
    for rule in rules or RULES:
        findings.extend(rule.check(facts))
    return findings


def rule_findings(facts: RuleFacts) -> list[Finding]:
    """The design rules' findings, each rule's name after RULE_PREFIX (the planner's own findings have none)."""
    return [Finding(RULE_PREFIX + f.rule, f.severity, f.message, f.subject) for f in check_rules(facts)]
