"""Reference check: a design matching the DGX SuperPOD H100 4-SU reference architecture gives that
architecture's own bill of materials for the compute fabric (RA-11333-001 V11, Table 4, and
Appendix A Tables 7 and 8, https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/).

The four UFM appliances' 200G ports share two split leaf ports, each cabled with one 1:2 splitter fibre
(MFP7E20; the RA's 980-9I557-00N030, "NDR Cables, 200 Gbps, UFM to leaf ports"), as Table 8 has them.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from gpucluster import load_design, plan_design
from gpucluster.analyse.bom import Bom, build_bom

DESIGN = Path(__file__).parent / "designs" / "ra-h100-4su.yaml"

# H100 RA Table 4 (4 SU): leaf, spine, node-leaf cables (compute + UFM), leaf-spine cables
RA_LEAF, RA_SPINE, RA_NODE_LEAF, RA_LEAF_SPINE = 32, 16, 1020, 1024
# Table 7: compute-fabric switches (QM9700, 920-9B210-00FN-0M0), DGX H100 systems, UFM appliances
RA_COMPUTE_SWITCHES, RA_DGX, RA_UFM = 48, 127, 4
# Table 8: NDR 400G cables DGX-leaf and leaf-spine (980-9I570-00N030 = MFP7E10, multimode);
# switch twin-port finned transceivers; DGX twin-port flat-top transceivers; UFM transceivers;
# DGX QSFP112 storage transceivers
RA_NDR_400G_CABLES = 2040
RA_UFM_CABLES = 2  # 1:2 splitters, two UFMs each
RA_SWITCH_TRANSCEIVERS = ("980-9I510-00NS00", 1536)
RA_DGX_TRANSCEIVERS = ("980-9I51A-00NS00", 508)
RA_UFM_TRANSCEIVERS = ("980-9I51S-00NS00", 4)
RA_DGX_STORAGE_TRANSCEIVERS = ("980-9I693-00NS00", 254)


@cache
def _reference() -> tuple[object, Bom]:
    plan = plan_design(load_design(DESIGN))
    return plan, build_bom(plan)


def _count(bom: Bom, network: str, **where: object) -> int:
    return sum(
        line.quantity
        for line in bom.lines
        if line.network == network and all(getattr(line, key) == value for key, value in where.items())
    )


def test_compute_fabric_switches_and_links_match_the_ra() -> None:
    plan, bom = _reference()
    assert plan.totals.switches["compute"] == {"leaf": RA_LEAF, "spine": RA_SPINE}
    assert plan.totals.links["compute"] == {"host-leaf": RA_NODE_LEAF, "leaf-spine": RA_LEAF_SPINE}
    switches = [line for line in bom.lines if line.kind == "switch" and line.network == "compute"]
    assert [(line.part_number, line.quantity) for line in switches] == [("920-9B210-00FN-0M0", RA_COMPUTE_SWITCHES)]
    assert sum(line.quantity for line in bom.lines if line.kind == "gpu-server") == RA_DGX
    assert sum(line.quantity for line in bom.lines if line.kind == "fabric-manager") == RA_UFM


def test_ndr_cables_match_the_ra_with_the_ufm_splitters() -> None:
    plan, bom = _reference()
    cables = [line for line in bom.lines if line.kind == "cable" and line.network == "compute"]
    assert {line.model for line in cables} == {"MFP7E10-Nxxx", "MFP7E20-Nxxx"}  # "all ... multi-mode fiber"
    straight = sum(line.quantity for line in cables if line.model == "MFP7E10-Nxxx")
    assert straight == RA_NDR_400G_CABLES  # Table 8: 2,040 (before the splitters: 2,044, one per UFM)
    ufm_cables = [
        c for c in plan.cables if c.network == "compute" and plan.links[c.links[0]].purpose == "fabric-manager"
    ]
    assert len(ufm_cables) == RA_UFM_CABLES and all(len(c.links) == 2 for c in ufm_cables)
    assert {c.cable_part for c in ufm_cables} == {"mfp7e20-mmf-split-200g"}
    assert sum(line.quantity for line in cables if line.model == "MFP7E20-Nxxx") == RA_UFM_CABLES
    for cable in ufm_cables:  # two UFMs on the two halves of one leaf port
        links = [plan.links[i] for i in cable.links]
        assert len({(link.b_device, link.b_cage) for link in links}) == 1 and {link.b_half for link in links} == {1, 2}
        assert len({link.a_device for link in links}) == 2 and all(link.speed_gbps == 200 for link in links)


def test_transceivers_match_the_ra() -> None:
    _plan, bom = _reference()
    for part_number, count in (RA_SWITCH_TRANSCEIVERS, RA_DGX_TRANSCEIVERS, RA_UFM_TRANSCEIVERS):
        assert _count(bom, "compute", kind="transceiver", part_number=part_number) == count, part_number
    assert sum(line.quantity for line in bom.lines if line.kind == "transceiver" and line.network == "compute") == (
        RA_SWITCH_TRANSCEIVERS[1] + RA_DGX_TRANSCEIVERS[1] + RA_UFM_TRANSCEIVERS[1]
    )
    part_number, count = RA_DGX_STORAGE_TRANSCEIVERS
    assert _count(bom, "storage", kind="transceiver", part_number=part_number) == count
