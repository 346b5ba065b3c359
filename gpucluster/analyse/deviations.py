"""Where a plan differs from the DGX SuperPOD reference architecture, and which catalog values it rests on that
are derived or assumed rather than published: what a reviewer must know before signing the design.

The RA's counts compared here are those of its fully tested configuration, the 4-SU, 127-node DGX H100 SuperPOD
(RA-11333-001, Appendix A, Table 7). They are
compared only for a design of that shape (four 32-server SUs of DGX H100 or H200 on NDR InfiniBand), where a
difference is a real deviation rather than a difference of size.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from gpucluster.catalog.schema import RackSystem
from gpucluster.plan.model import AnalysedPlan, Plan
from gpucluster.plan.queries import links_on
from gpucluster.plan.registry import NETWORK_NAMES

RA_SOURCE = "H100 RA (RA-11333-001) Appendix A, Table 7"
# H100 RA Table 7 (4 SU, 127 nodes): role -> (count, what the RA lists)
RA_4SU_COUNTS: dict[str, tuple[int, str]] = {
    "inband": (8, "in-band Ethernet switches"),
    "oob": (8, "out-of-band switches (SN2201)"),
    "storage": (16, "storage-fabric switches (QM9700)"),
    "compute": (48, "compute-fabric switches (QM9700, 32 leaf + 16 spine)"),
    "fabric-manager": (4, "UFM appliances (2 compute fabric, 2 storage fabric)"),
    "management-server": (4, "BCM management servers"),
    "gpu-server": (127, "DGX H100 systems"),
}
RA_4SU_RACKS = 38  # Table 7: 38 Legrand NVIDPD13
RA_4SU_COMPUTE_RACKS = 32  # four DGX per rack (H100 RA: such a rack "exceeds 40 kW")
RA_4SU_PDUS = (96, 12)  # Table 7: PX3-5878I2R-P1Q2R1A15D5 (3 per compute rack) and PX3-5747V-V2 (2 per other rack)
RA_SU_SERVERS = 32
H100_RA_SERVERS = ("dgx-h100", "dgx-h200")  # the servers the H100 RA's Tables 7 and 8 describe
RA_RACK_SYSTEMS_PER_SU = 8  # GB200 RA architecture: "each SU contains 8 DGX GB200 systems" (rack systems)


@dataclass(frozen=True, slots=True)
class Deviation:
    """One place the plan differs from the RA: what the RA has, what the plan has, and why."""

    subject: str
    reference: str
    plan: str
    note: str


@dataclass(frozen=True, slots=True)
class Assumption:
    """A catalog value this design uses that was derived or assumed, with its working."""

    part: str
    field: str
    note: str


def is_ra_4su_shape(plan: AnalysedPlan) -> bool:
    """Four 32-server SUs of DGX H100/H200 on NDR InfiniBand: the shape Table 7 describes."""
    s = plan.settings
    return (
        s.server in H100_RA_SERVERS
        and s.scalable_unit_servers == RA_SU_SERVERS
        and s.compute_technology == "infiniband-ndr"
        and plan.totals.scalable_units == 4
    )


WHY = {
    "inband": "the in-band leaves are packed with every host's bonded ports and take 4 uplinks each, 2 to each of "
    "2 top-tier switches, as the RA's; a difference comes from the hosts the design puts on in-band (object "
    "storage, more head nodes) or a faster switch model",
    "oob": "one access switch per 48 management ports in each SU, the central racks' ports on their free ports, the "
    "uplinks into the in-band top tier as the RA's where its ports are 100G (SN4600C), else into an aggregation pair "
    "(management.oob_aggregation_switch); a difference comes from the ports the design's racks hold",
    "storage": "the planner dual-homes servers and appliances over a-side and b-side leaves sized by the ports "
    "the design's storage needs",
    "fabric-manager": "a UFM pair per InfiniBand fabric: compute_fabric.fabric_managers and "
    "storage_network.fabric_managers (0 on an Ethernet storage network)",
    "management-server": "management.management_servers in the design",
    "compute": "the compute fabric's tiers for this server count",
    "gpu-server": "compute.servers and compute.spare_servers in the design",
}


def deviations(plan: AnalysedPlan) -> list[Deviation]:
    """Every place this plan differs from the RA: design choices first, then counts against Table 7."""
    return [
        *_design_choices(plan),
        *_storage_and_cabling(plan),
        *_inband_network(plan),
        *(_table_7_counts(plan) if is_ra_4su_shape(plan) else []),
    ]


def _design_choices(plan: AnalysedPlan) -> list[Deviation]:
    """The design's own choices against the RA's: scalable unit, oversubscription, servers, power, UFM placement."""
    s = plan.settings
    found: list[Deviation] = []
    system = plan.catalog_part(s.rack_system, RackSystem) if s.rack_system else None
    su = s.scalable_unit_servers
    # the GB200 RA's SU is 8 rack systems ("each SU contains 8 DGX GB200 systems"), the H100 RA's 32 servers
    reference_su = RA_RACK_SYSTEMS_PER_SU * system.compute_trays if system else RA_SU_SERVERS
    if su != reference_su:
        unit = "compute trays" if system else "servers"
        found.append(
            Deviation(
                "Scalable unit",
                f"{reference_su} {unit}" + (f" ({RA_RACK_SYSTEMS_PER_SU} racks, GB200 RA)" if system else ""),
                f"{su} {unit}",
                "compute_fabric.scalable_unit_servers",
            )
        )
    over = s.compute_oversubscription or 1
    if over != 1:
        found.append(
            Deviation(
                "Compute fabric",
                "non-blocking (1:1) fat tree",
                f"{over:g}:1 oversubscribed at the leaf",
                "compute_fabric.oversubscription",
            )
        )
    found += _system_and_power(plan, system)
    if plan.devices_with("fabric-manager") and s.fabric_manager_ports == "own-leaf":
        found.append(
            Deviation(
                "UFM placement",
                'the UFM takes a server slot of SU 1 ("a DGX system must be removed to accommodate for UFM '
                'connectivity")',
                "the UFM pair on a leaf of its own outside the SUs, racked with the management servers",
                "compute_fabric.fabric_manager_ports: own-leaf: every SU keeps all its server slots, for one more "
                "leaf and its uplinks",
            )
        )
    found += _xdr_manager_slot(plan)
    found += _one_su_rack_aligned_cores(plan)
    return found


def _system_and_power(plan: Plan, system: RackSystem | None) -> list[Deviation]:
    """GPU systems other than NVIDIA's DGX, and power provisioning other than the RA's. A rack-scale system is
    judged as the rack it is (its trays are not OEM servers) and its power as its shelves."""
    found = []
    if system is None and not plan.settings.server.startswith("dgx-"):
        found.append(
            Deviation(
                "GPU servers",
                "NVIDIA DGX systems",
                plan.settings.server,
                "an OEM server: the RA's tested figures do not apply",
            )
        )
    elif system is not None and not system.model.startswith("DGX"):
        found.append(
            Deviation(
                "Rack-scale systems",
                "NVIDIA DGX GB200 / GB300 NVL72",
                system.model,
                "an OEM rack system: the RA's tested figures do not apply",
            )
        )
    redundancy = getattr(getattr(getattr(plan.design, "site", None), "power_feed", None), "redundancy", "N+1")
    if redundancy == "N+1":
        return found
    if system is not None:
        found.append(
            Deviation(
                "Power distribution (racks without power shelves)",
                "PDUs with any one PDU or feed lost at full power (N+1)",
                f"{redundancy} provisioning",
                "site.power_feed.redundancy; the rack-scale systems' power shelves stay "
                f"{system.power_shelf_redundancy} on the busbar",
            )
        )
        return found
    found.append(
        Deviation(
            "Power distribution",
            "three PDUs per compute rack, a DGX's six PSUs split 2-2-2: any one PDU or feed lost at full power",
            f"{redundancy} provisioning",
            "site.power_feed.redundancy: "
            + ("A/B feeds, PSUs 3 + 3: a feed loss caps a DGX" if redundancy == "2N" else "a feed loss stops racks"),
        )
    )
    return found


def _one_su_rack_aligned_cores(plan: AnalysedPlan) -> list[Deviation]:
    """The GB200 RA's Table 3 (relayed) starts at 2 SU; at 1 SU the plan keeps the core tier of its per-SU figures
    so the four rail groups are one InfiniBand subnet: an assumption a reviewer must see."""
    if not plan.settings.rack_system or plan.totals.scalable_units != 1:
        return []
    counts = plan.totals.switches.get("compute", {})
    if not counts.get("core"):
        return []
    return [
        Deviation(
            "Compute fabric (1 SU)",
            "GB200 RA Table 3 (relayed): rows from 2 SU (64 leaves, 48 spines, 18 cores); no 1-SU row found",
            f"{counts.get('leaf', 0)} leaves, {counts.get('spine', 0)} spines, {counts['core']} cores: the table's "
            "per-SU figures",
            "the cores join the four rail groups into one InfiniBand subnet that the UFM pair manages (assumption)",
        )
    ]


def _xdr_manager_slot(plan: Plan) -> list[Deviation]:
    """The B300 XDR RA's Table 3 counts 72 nodes per SU, but its fabric has no free port for the UFM pair: where the
    UFM takes server slots of SU 1, say so."""
    s = plan.settings
    if s.compute_technology != "infiniband-xdr" or s.fabric_manager_ports == "own-leaf" or s.rack_system:
        return []
    managers = [d for d in plan.devices_with("fabric-manager") if (d.network or "compute") == "compute"]
    names = {d.name for d in managers}
    manager_ports = sum(1 for k in links_on(plan, "compute") if k.a_device in names)
    rails = max((k.rail or 0 for k in links_on(plan, "compute") if k.purpose == "gpu"), default=0)
    slots = -(-manager_ports // rails) if rails else 0
    first = sum(1 for d in plan.gpu_nodes() if d.su == 1)
    if not slots or first + slots != s.scalable_unit_servers:  # only where the UFM fills SU 1 up to its size
        return []
    return [
        Deviation(
            "UFM placement (XDR)",
            f"B300 XDR RA Table 3: {s.scalable_unit_servers} nodes per SU (8 Q3400 leaves, 4 spines, every port used)",
            f"SU 1 holds {first} servers: the UFM pair's {manager_ports} ports take {slots} server slot(s), "
            "as the H100 RA has a DGX removed for UFM connectivity",
            "compute_fabric.fabric_manager_ports: own-leaf keeps every slot, for one more leaf and the spines its "
            "uplinks need",
        )
    ]


def _storage_and_cabling(plan: AnalysedPlan) -> list[Deviation]:
    """A filesystem capacity the RA does not give, and cabling no NVIDIA document confirms (from the rule facts)."""
    s = plan.settings
    found: list[Deviation] = []
    asked = s.parallel_filesystem_asked
    if asked is not None and asked.get("capacity_basis"):
        found.append(
            Deviation(
                "Parallel filesystem capacity",
                "no capacity per SU or per GPU (H100 RA Table 6 gives storage throughput per SU only)",
                f"{s.parallel_filesystem_capacity_tb:,.0f} TB: {s.parallel_filesystem_blocks} x "
                f"{s.parallel_filesystem_block}, derived from the throughput",
                asked["capacity_basis"],
            )
        )
    # from the rule facts (gpucluster.analyse.rules), once the rules have run
    for g in plan.facts.get("unsplit_half_speed_links", []) if plan.facts else []:
        found.append(
            Deviation(
                f"{g['link_gbps']:g}G hosts on {g['port_gbps']:g}G {g['switch_part']} ports ({g['network']})",
                "a 1:2 splitter into a split port, as on NDR (MFP7E20); for XDR ports no NVIDIA document was found",
                f"{g['links']} link(s) on whole ports with a straight {g['cable_part']}, e.g. {g['example']}",
                "unconfirmed cabling (the rule host-ports-at-full-speed warns): confirm it with NVIDIA before ordering",
            )
        )
    return found


def _inband_network(plan: Plan) -> list[Deviation]:
    """The in-band network against Tables 7 and 8: EVPN multihoming for MLAG, no data-centre uplinks, its switch."""
    found: list[Deviation] = []
    if plan.switches("inband"):
        found.append(
            Deviation(
                "In-band leaf pairs",
                "MLAG pairs with 2 ISL cables each (Table 8: 6 x 980-9I54C-00V001)",
                "EVPN multihoming: each server's bond spans its leaf pair without a peer link",
                "no peer-link cables or ports; each leaf's NVUE file in switches/ configures the Ethernet segments",
            )
        )
        found.append(
            Deviation(
                "In-band uplinks to the data centre",
                "4 x 100G CWDM4 from the in-band core (Table 8, 980-9I17Q-00CM00)",
                "not planned",
                "the site's own network: add its uplinks, optics and fibre to the order",
            )
        )
    inband_switch = plan.settings.inband_switch
    if plan.settings.server not in H100_RA_SERVERS:
        return found
    if plan.switches("inband") and inband_switch != "sn4600c":
        found.append(
            Deviation(
                f"In-band switch model ({RA_SOURCE})",
                "SN4600C (64 x 100G)",
                inband_switch,
                "management.inband_switch: the object store's 200GbE ports run at full speed on SN5600 ports split "
                "by 1:2 splitter fibres; SN4600C ports are 100G",
            )
        )
    aggregation = [d for d in plan.devices.values() if d.role == "switch" and d.network == "oob" and (d.tier or 1) > 1]
    if aggregation:
        models = ", ".join(sorted({d.part for d in aggregation}))
        found.append(
            Deviation(
                f"Out-of-band aggregation ({RA_SOURCE})",
                "the SN2201 uplink into the in-band SN4600C top tier: no switches of their own",
                f"{len(aggregation)} x {models} aggregating the SN2201",
                "the in-band top tier's ports are not 100G QSFP28 "
                f"({inband_switch}), so the out-of-band uplinks go to an aggregation pair "
                "(management.oob_aggregation_switch): its switches, rails and AOCs are on the order",
            )
        )
    return found


def _table_7_counts(plan: Plan) -> list[Deviation]:
    """Switch, server and rack counts of a plan of the RA's 4-SU shape against Table 7."""
    switches = Counter(d.network for d in plan.devices.values() if d.role == "switch")
    roles = Counter(d.role for d in plan.devices.values())
    counts = {key: switches[key] if key in NETWORK_NAMES else roles[key] for key in RA_4SU_COUNTS}
    found = [
        Deviation(f"{what} ({RA_SOURCE})", f"{reference:,}", f"{counts[key]:,}", WHY[key])
        for key, (reference, what) in RA_4SU_COUNTS.items()
        if counts[key] != reference
    ]
    return found + _rack_deviations(plan)


def _rack_deviations(plan: Plan) -> list[Deviation]:
    """Racks and rack PDUs against Table 7."""
    found = []
    compute = [r for r in plan.racks.values() if r.purpose == "compute"]
    other = [r for r in plan.racks.values() if r.purpose != "compute"]
    if len(plan.racks) != RA_4SU_RACKS:
        found.append(
            Deviation(
                f"Racks ({RA_SOURCE})",
                f"{RA_4SU_RACKS} ({RA_4SU_COMPUTE_RACKS} compute + {RA_4SU_RACKS - RA_4SU_COMPUTE_RACKS} other)",
                f"{len(plan.racks)} ({len(compute)} compute + {len(other)} other)",
                _racks_why(plan),
            )
        )
    pdus = (sum(len(r.pdus) for r in compute), sum(len(r.pdus) for r in other))
    if pdus != RA_4SU_PDUS:
        found.append(
            Deviation(
                f"Rack PDUs ({RA_SOURCE})",
                f"{RA_4SU_PDUS[0]} compute-rack + {RA_4SU_PDUS[1]} other-rack PDUs",
                f"{pdus[0]} + {pdus[1]}",
                "as many PDUs as each rack's load, outlets and redundancy need (site.power_feed, site.pdu)",
            )
        )
    return found


def _racks_why(plan: Plan) -> str:
    """Why the plan's other racks differ from the RA's six: what the design adds that the RA does not hold."""
    why = (
        "a leaf rack per SU; the compute fabric's spines in racks of their own; the management servers, storage, "
        "UFM appliances and their switches sharing racks as the RA's management rack, each within the rack power "
        "budget and height"
    )
    staging = [d for d in plan.devices.values() if d.role == "object-storage"]
    if staging:
        parts = sorted({d.part for d in staging})
        units = sum(d.u_height for d in staging)
        why += (
            f"; the object-storage tier ({len(staging)} x {', '.join(parts)}, {units:g}U), which the RA does not "
            "have, takes the room of another rack"
        )
    return why


def used_parts(plan: Plan) -> list[str]:
    """Catalog ids of every part this plan orders: devices, racks, cables, optics and the PDU model."""
    cables = plan.cables  # 700,000 at 131,072 GPUs: a set per field, not a generator per cable
    ids: set[str | None] = {plan.settings.pdu, plan.settings.non_compute_pdu}
    ids |= {d.part for d in plan.devices.values()} | {r.part for r in plan.racks.values()}
    ids |= {c.cable_part for c in cables} | {c.a_transceiver for c in cables} | {c.b_transceiver for c in cables}
    return sorted(i for i in ids if i and i in plan.catalog_parts)


def assumptions(plan: Plan) -> list[Assumption]:
    """Every catalog value of a part this plan uses whose source is derived or assumed, not published."""
    found = []
    for part_id in used_parts(plan):
        part = plan.catalog_parts[part_id]
        for field, source in sorted(getattr(part, "sources", {}).items()):
            if source.startswith("derived") or "assum" in source.lower():
                found.append(Assumption(part_id, field, source))
    return found
