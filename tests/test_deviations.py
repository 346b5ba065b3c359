"""The report states where the plan deviates from the reference architecture, and every derived or assumed catalog
value the design uses."""

from __future__ import annotations

from pathlib import Path

from conftest import planned, write_design

from gpucluster import load_design, plan_design
from gpucluster.analyse.deviations import RA_4SU_COUNTS, RA_SOURCE, assumptions, deviations, is_ra_4su_shape, used_parts
from gpucluster.artifacts.report import report_html
from gpucluster.plan.queries import links_on

RA_DESIGN = Path(__file__).parent / "designs" / "ra-h100-4su.yaml"


def test_the_4su_design_is_compared_with_table_7_and_every_difference_is_listed() -> None:
    _loaded, plan = planned("superpod-h200-4su")
    assert is_ra_4su_shape(plan)
    listed = {d.subject.removesuffix(f" ({RA_SOURCE})"): d for d in deviations(plan) if RA_SOURCE in d.subject}
    devices = list(plan.devices.values())
    counts = {
        "inband": sum(1 for d in devices if d.role == "switch" and d.network == "inband"),
        "oob": sum(1 for d in devices if d.role == "switch" and d.network == "oob"),
        "storage": sum(1 for d in devices if d.role == "switch" and d.network == "storage"),
        "compute": sum(1 for d in devices if d.role == "switch" and d.network == "compute"),
        **{
            role: sum(1 for d in devices if d.role == role)
            for role in ("fabric-manager", "management-server", "gpu-server")
        },
    }
    for key, (reference, what) in RA_4SU_COUNTS.items():
        if counts[key] == reference:
            assert what not in listed, key
        else:
            assert listed[what].reference == f"{reference:,}" and listed[what].plan == f"{counts[key]:,}", key
    assert counts["compute"] == 48 and counts["gpu-server"] == 127  # as Table 7: not listed
    # the MinIO staging tier's 200GbE ports take SN5600 in-band leaves (split ports), whose 400G cores cannot take
    # the out-of-band switches' 100G uplinks: both differences from Table 7 are listed with the switch model
    assert plan.settings.inband_switch == "sn5600" and listed["in-band Ethernet switches"].plan == "4"
    assert counts["oob"] == 10 and "out-of-band switches (SN2201)" in listed
    subjects = {d.subject for d in deviations(plan)}
    assert f"In-band switch model ({RA_SOURCE})" in subjects and "UFM cabling" not in subjects  # splitters, as the RA


def test_the_ra_4su_design_has_table_7s_in_band_and_out_of_band_switches() -> None:
    """H100 RA Table 7: 8 in-band SN4600C (6 leaves in pairs, 2 cores: Table 8's 24 leaf-core cables) and 8 SN2201
    out-of-band switches, which uplink into the in-band core (Table 8: "two uplinks per OOB to in-band", 16)."""
    plan = plan_design(load_design(RA_DESIGN))
    inband = plan.switches("inband")
    assert len(inband) == 8 and {d.part for d in inband} == {"sn4600c"}
    assert plan.totals.switches["inband"] == {"leaf": 6, "spine": 2}
    assert plan.totals.links["inband"]["leaf-spine"] == 24
    oob = plan.switches("oob")
    assert len(oob) == 8 and {d.part for d in oob} == {"sn2201"}
    uplinks = [link for link in links_on(plan, "oob") if link.tier == 1]
    assert len(uplinks) == 16 and {plan.devices[link.b_device].network for link in uplinks} == {"inband"}
    assert {plan.devices[link.b_device].tier for link in uplinks} == {2}
    analysis = plan.analysis["oob"]
    assert analysis["all_hosts_reach_each_other"]  # through the in-band core
    listed = {d.subject for d in deviations(plan)}
    assert not any(what in s for s in listed for _n, what in (RA_4SU_COUNTS["inband"], RA_4SU_COUNTS["oob"]))


def test_a_design_of_another_shape_is_not_held_to_table_7() -> None:
    _loaded, plan = planned("lab-4-servers")
    assert not is_ra_4su_shape(plan)
    subjects = [d.subject for d in deviations(plan)]
    assert not any("Table 7" in s for s in subjects)
    assert "GPU servers" in subjects  # an OEM HGX server, not a DGX


def test_every_derived_value_of_a_used_part_is_listed_and_no_unused_part() -> None:
    _loaded, plan = planned("superpod-h200-4su")
    used = set(used_parts(plan))
    assert {"dgx-h200", "qm9700", "ddn-ai400x2", "minio-aistor-datapod-node"} <= used
    assert "gb200-nvl72" not in used
    listed = assumptions(plan)
    assert {a.part for a in listed} <= used
    expected = sum(
        1
        for part in used
        for source in plan.catalog_parts[part].sources.values()
        if source.startswith("derived") or "assum" in source.lower()
    )
    assert len(listed) == expected > 0


def test_the_report_has_the_deviations_section(tmp_path) -> None:
    _loaded, plan = planned("superpod-h200-4su")
    html = report_html(plan, tmp_path)
    assert "Deviations from the reference architecture, and assumptions" in html
    for d in deviations(plan):
        assert d.note.replace("'", "&#39;") in html
    first = assumptions(plan)[0]
    assert f"<code>{first.field}</code>" in html


def test_the_4su_design_lists_its_racks_and_pdus_against_table_7_and_keeps_the_ras_power_distribution() -> None:
    """Table 7: 38 racks, 96 + 12 PDUs. The plan's extra network/storage/management racks each add two PDUs, and
    the report says so; its N+1 distribution is the RA's, so it is not a deviation (2N would be)."""
    _loaded, plan = planned("superpod-h200-4su")
    by_subject = {d.subject: d for d in deviations(plan)}
    other = [r for r in plan.racks.values() if r.purpose != "compute"]
    racks = by_subject[f"Racks ({RA_SOURCE})"]
    assert racks.reference.startswith("38") and racks.plan == f"{len(plan.racks)} (32 compute + {len(other)} other)"
    pdus = by_subject[f"Rack PDUs ({RA_SOURCE})"]
    assert pdus.plan == f"96 + {2 * len(other)}"
    assert "Power distribution" not in by_subject
    assert "raritan-px3-5747v-v2" in {a.part for a in assumptions(plan)}  # its current is assumed, and listed


def test_the_ra_4su_design_has_table_7s_38_racks_with_the_ras_management_rack() -> None:
    """H100 RA Table 7: 38 racks (32 compute, a leaf rack per SU and two more) and 96 + 12 PDUs. The compute
    spines stand in a rack of their own and the management servers, storage appliances, storage UFM pair and
    their switches share the RA's management rack: before, one central rack per purpose (network, management,
    storage) made 39 racks, 7 of them non-compute, and 96 + 14 PDUs."""
    plan = plan_design(load_design(RA_DESIGN))
    other = [r for r in plan.racks.values() if r.purpose != "compute"]
    assert len(plan.racks) == 38 and len(other) == 6
    assert sum(len(r.pdus) for r in other) == 12
    su_racks = [r for r in other if r.su is not None and r.purpose == "network"]
    assert len(su_racks) == 4
    central = [r for r in other if r not in su_racks]
    roles = [
        {(plan.devices[d].role, plan.devices[d].network) for d in r.devices if plan.devices[d].role != "pdu"}
        for r in central
    ]
    assert {("switch", "compute")} in roles  # the spines alone
    shared = next(r for r in roles if ("management-server", None) in r)
    assert {("storage", None), ("fabric-manager", "storage"), ("switch", "storage"), ("switch", "inband")} <= shared
    subjects = {d.subject for d in deviations(plan)}
    assert f"Racks ({RA_SOURCE})" not in subjects and f"Rack PDUs ({RA_SOURCE})" not in subjects


def test_the_default_design_says_its_extra_rack_holds_the_object_storage_tier() -> None:
    _loaded, plan = planned("superpod-h200-4su")
    racks = {d.subject: d for d in deviations(plan)}[f"Racks ({RA_SOURCE})"]
    assert racks.plan == "39 (32 compute + 7 other)"
    assert "the object-storage tier (12 x minio-aistor-datapod-node, 24U), which the RA does not have" in racks.note


def test_the_h100_1su_plan_lists_its_sn5600_in_band_and_out_of_band_aggregation_against_the_ra():
    """H100 RA Tables 7 and 8: the in-band network is SN4600C and the SN2201 uplink into it; the 1-SU example
    builds in-band on SN5600 (no 100G QSFP28 ports), so its out-of-band needs an SN4600C aggregation pair."""
    plan = planned("superpod-h100-1su")[1]
    by_subject = {d.subject.removesuffix(f" ({RA_SOURCE})"): d for d in deviations(plan)}
    assert by_subject["In-band switch model"].reference == "SN4600C (64 x 100G)"
    assert by_subject["In-band switch model"].plan == "sn5600"
    assert by_subject["Out-of-band aggregation"].plan == "2 x sn4600c aggregating the SN2201"


def test_a_dgx_nvl72_plan_is_the_ra_s_system_and_su_with_no_oem_or_dgx_psu_wording(tmp_path):
    """GB200 RA: an SU is 8 DGX GB200 rack systems (144 trays); a DGX NVL72's trays are not OEM servers and its
    power is its shelves, not a DGX's six PSUs on three PDUs."""
    _loaded, plan = planned("gb200-nvl72-1su")
    text = " ".join(f"{d.subject} {d.reference} {d.plan} {d.note}" for d in deviations(plan))
    assert "Scalable unit" not in text and "OEM" not in text and "PSUs" not in text
    path = write_design(
        tmp_path,
        "name: g\nsite: {cooling: liquid, cooling_capacity_kw: 150, power_feed: {redundancy: 2N}}\n"
        "compute: {server: gb300-nvl72, gpus: 72}\n"
        "storage_network: {technology: ethernet, switch: sn5600}\nparallel_filesystem: {kind: vast}\n",
    )
    two_n = {d.subject: d for d in deviations(plan_design(load_design(path)))}
    power = two_n["Power distribution (racks without power shelves)"]
    assert "DGX" not in power.reference and "N+N" in power.note
