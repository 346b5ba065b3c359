"""Where a design matches an NVIDIA DGX SuperPOD reference architecture, its switch and cable counts match
the architecture's published tables (DGX SuperPOD H100, B200, B300 RAs, network fabrics, Tables 3 and 4)."""

from __future__ import annotations

import pytest
from conftest import write_design

from gpucluster import load_design, plan_design
from gpucluster.catalog.load import load_catalog
from gpucluster.catalog.schema import Switch
from gpucluster.plan.fabric import HostPort, LeafGroup, build_clos
from gpucluster.plan.model import PlanDraft


def _rail_optimized(switch_id: str, scalable_units: int, servers_per_su: int, rails: int = 8, speed: float = 400):
    """The compute fabric alone, for SUs of identical servers with one port per rail."""
    switch = load_catalog().get(switch_id, Switch)
    groups = [
        LeafGroup(
            f"su{su:02d}-r{rail}",
            [HostPort(f"su{su}-n{n}", f"p{rail}", rail, speed, rail) for n in range(servers_per_su)],
            su=su,
            rail=rail,
        )
        for su in range(1, scalable_units + 1)
        for rail in range(1, rails + 1)
    ]
    plan = PlanDraft.scratch("ra")
    result = build_clos(plan, network="compute", groups=groups, leaf_part=switch)
    switches = {t.name: t.switches for t in result.tiers}
    links = [sum(1 for link in plan.links if link.tier == tier) for tier in range(len(result.tiers))]
    return switches, links


# DGX H100 RA Table 3 "Larger SuperPOD component counts" (32 nodes per SU; B200 RA has the same numbers
# and adds the 2-SU row): SU -> (leaf, spine, core); cables per tier equal the GPUs.
H100_TABLE_3 = {
    2: (16, 8, None),
    4: (32, 16, None),
    8: (64, 32, None),
    16: (128, 128, 64),
    32: (256, 256, 128),
    64: (512, 512, 256),
}


@pytest.mark.parametrize("scalable_units", sorted(H100_TABLE_3))
def test_qm9700_fabric_matches_the_h100_ra_table_3(scalable_units):
    leaf, spine, core = H100_TABLE_3[scalable_units]
    switches, links = _rail_optimized("qm9700", scalable_units, 32)
    assert switches == {"leaf": leaf, "spine": spine, **({"core": core} if core else {})}
    gpus = scalable_units * 32 * 8
    assert links == [gpus] * (3 if core else 2)


# DGX B300 XDR RA Table 3 (72 nodes per SU, Q3400-RA with 144 x 800G ports): SU -> (leaf, spine).
B300_XDR_TABLE_3 = {1: (8, 4), 2: (16, 8), 4: (32, 18), 8: (64, 36), 18: (144, 72)}


@pytest.mark.parametrize("scalable_units", sorted(B300_XDR_TABLE_3))
def test_q3400_fabric_matches_the_b300_xdr_ra_table_3(scalable_units):
    leaf, spine = B300_XDR_TABLE_3[scalable_units]
    switches, links = _rail_optimized("q3400-ra", scalable_units, 72, speed=800)
    assert switches == {"leaf": leaf, "spine": spine}
    assert links == [scalable_units * 72 * 8] * 2


# DGX H100 RA Table 4 "Compute fabric component count": SU 1 holds 31 DGX because UFM takes a slot;
# node-leaf cables include the 4 UFM links (the default UFM pair, two NDR200 ports each).
# SU -> (nodes, leaf, spine, node-leaf cables, spine-leaf cables).
H100_TABLE_4 = {
    1: (31, 8, 4, 252, 256),
    2: (63, 16, 8, 508, 512),
    3: (95, 24, 16, 764, 768),
    4: (127, 32, 16, 1020, 1024),
}


@pytest.mark.parametrize("scalable_units", sorted(H100_TABLE_4))
def test_dgx_h100_design_matches_the_h100_ra_table_4(tmp_path, scalable_units):
    nodes, leaf, spine, node_leaf, spine_leaf = H100_TABLE_4[scalable_units]
    path = write_design(
        tmp_path,
        f"name: ra\ncompute: {{server: dgx-h100, servers: {nodes}, spare_servers: 0}}\n",
    )
    plan = plan_design(load_design(path))
    assert plan.totals.scalable_units == scalable_units
    assert plan.totals.switches["compute"] == {"leaf": leaf, "spine": spine}
    assert plan.totals.links["compute"] == {"host-leaf": node_leaf, "leaf-spine": spine_leaf}
    servers_in_su1 = sum(1 for d in plan.gpu_nodes() if d.su == 1)
    assert servers_in_su1 == 31


def test_three_su_fabric_rounds_spines_up_to_divide_the_leaf_uplinks():
    """24 leaves need 12 spines' worth of ports, but 32 uplinks only divide evenly over 16 (RA Table 4)."""
    switches, _links = _rail_optimized("qm9700", 3, 32)
    assert switches == {"leaf": 24, "spine": 16}


@pytest.mark.slow
def test_131072_gpus_on_64_port_switches_take_four_tiers():
    switches, links = _rail_optimized("qm9700", 512, 32)
    assert list(switches) == ["leaf", "spine", "core", "supercore"]
    assert switches["leaf"] == 4096
    assert links == [131072] * 4
