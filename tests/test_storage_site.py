"""Storage as the site has it (issue 32, item 4): a capacity alone sizes the filesystem by capacity (the RA's H100
throughput level is not imposed on it), and the throughput the chosen boxes give is shown beside any target."""

from __future__ import annotations

from conftest import write_design

from gpucluster import load_design, plan_design
from gpucluster.artifacts.summary import filesystem_figures

B200 = "compute: {server: hgx-b200-spectrum-x, servers: 48}\ncompute_fabric: {technology: roce}\n"


def _plan(tmp_path, text: str):
    return plan_design(load_design(write_design(tmp_path, "name: site\n" + B200 + text)))


def test_500_tb_asked_alone_buys_the_fewest_boxes_that_hold_it(tmp_path) -> None:
    plan = _plan(
        tmp_path, "storage_network: {technology: ethernet}\nparallel_filesystem: {kind: vast, capacity_tb: 500}\n"
    )
    s = plan.settings
    # one VAST box holds 1,195.56 TB (catalog); the RA's 'better' write level (20 GB/s per SU) would have bought 3
    assert s.parallel_filesystem_blocks == 1
    assert s.parallel_filesystem_capacity_tb < 3587
    figures = filesystem_figures(s)
    assert "the appliances deliver 1,196 TB, 51 GB/s read, 12 GB/s write" in figures
    assert "target asked 500 TB, sized by capacity: no throughput target asked" in figures
    assert "RA-11333-001" not in figures


def test_a_stated_throughput_is_the_target_and_nothing_is_added_beside_it(tmp_path) -> None:
    plan = _plan(
        tmp_path,
        "storage_network: {technology: ethernet}\n"
        "parallel_filesystem: {kind: vast, capacity_tb: 500, read_gbytes_per_s: 150}\n",
    )
    s = plan.settings
    assert s.parallel_filesystem_blocks == 3  # 150 / 51 GB/s read per box, rounded up
    asked = s.parallel_filesystem_asked
    assert asked is not None and asked["read_gbytes_per_s"] == 150 and asked["write_gbytes_per_s"] is None
    assert "target asked 500 TB, 150 GB/s read, from the design's figures" in filesystem_figures(s)


def test_a_stated_performance_level_still_sizes_for_the_ras_throughput(tmp_path) -> None:
    plan = _plan(
        tmp_path,
        "storage_network: {technology: ethernet}\n"
        "parallel_filesystem: {kind: vast, capacity_tb: 500, performance_level: better}\n",
    )
    s = plan.settings
    # 'better': 20 GB/s write per SU x 1.56 SUs = 31 GB/s over 12 GB/s per box: 3 boxes
    assert s.parallel_filesystem_blocks == 3
    assert "from the RA's 'better' level" in filesystem_figures(s)
