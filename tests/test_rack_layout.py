"""Racks filled one after another stand side by side on the floor, and a filesystem's leaves stand with its
appliances: a 200G appliance port takes a splitter cable that reaches 30 m at most, so a large filesystem whose
racks wrapped from the end of one row to the start of the next (or whose leaves were racked after every
appliance) could not be cabled at all (the 131,072-GPU benchmark design failed that way)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from conftest import write_design

from gpucluster.design.load import load_design
from gpucluster.pipeline import plan_design
from gpucluster.plan.model import Plan

# 4 SUs and a filesystem of 45 AI400X2 with 90 storage leaf ports, on rows of 4 racks: the SUs and the
# central racks are longer than a row
WIDE_FILESYSTEM = """\
name: wide-filesystem
compute: {server: dgx-h100, servers: 128, spare_servers: 0}
compute_fabric: {fabric_manager: null}
parallel_filesystem: {kind: lustre, read_gbytes_per_s: 4000, write_gbytes_per_s: 2000}
site: {racks_per_row: 4}
"""


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    path = write_design(Path(tmp_path_factory.mktemp("wide")), WIDE_FILESYSTEM)
    return plan_design(load_design(path))


def _fill_order(plan: Plan) -> dict[str, int]:
    """Each rack's place in the order the planner filled them (the plan lists racks in that order)."""
    return {name: index for index, name in enumerate(plan.racks)}


def test_a_cluster_longer_than_a_row_snakes_so_consecutive_racks_are_neighbours(wide: Plan) -> None:
    per_row = wide.design.site.racks_per_row
    racks = list(wide.racks.values())
    assert max(r.row for r in racks if r.su is None) > min(r.row for r in racks if r.su is None), "central in 1 row"
    for before, after in pairwise(racks):
        if before.su != after.su:
            continue  # another cluster (an SU, or the central racks)
        beside = before.row == after.row and abs(before.position - after.position) == 1
        across_the_aisle = after.row == before.row + 1 and after.position == before.position
        assert beside or across_the_aisle, (before.name, after.name)
        assert 0 <= after.position < per_row


def test_storage_appliances_stand_within_a_rack_of_their_leaves(wide: Plan) -> None:
    order = _fill_order(wide)
    appliances = {d.name for d in wide.devices_with("storage")}
    links = [link for link in wide.links if link.network == "storage" and link.a_device in appliances]
    assert links
    for link in links:
        a, b = wide.devices[link.a_device].rack, wide.devices[link.b_device].rack
        assert abs(order[a] - order[b]) <= 1, (link.a_device, a, link.b_device, b)


# SU 3 (9 racks) snakes from one row of 6 into the next, which runs backwards; the small SU 4 after it (4
# servers: a compute and a network rack) would fit in that row's count of free positions, but they are at
# its start, not its end
SMALL_LAST_UNIT = """\
name: small-last-unit
compute: {server: dgx-h100, servers: 100, spare_servers: 0}
compute_fabric: {fabric_manager: null}
site: {racks_per_row: 6}
"""


def test_a_cluster_after_a_row_run_backwards_takes_no_rack_position_twice(tmp_path: Path) -> None:
    plan = plan_design(load_design(write_design(tmp_path, SMALL_LAST_UNIT)))
    places = [(rack.row, rack.position) for rack in plan.racks.values()]
    assert len(places) == len(set(places))
    for device in plan.devices.values():
        if device.rack and device.role != "pdu":  # zero-U PDUs are the rack's own, not in its U list
            assert device.name in plan.racks[device.rack].devices, (device.name, device.rack)
    assert {r.su for r in plan.racks.values()} >= {1, 2, 3, 4}
