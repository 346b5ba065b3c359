"""Storage figures as a reviewer reads them (issue 15, point 6): the RA's target throughput level and what the
appliances deliver, each named; a capacity the design did not ask for is derived from the appliances its
throughput needs (the RA gives throughput per SU and no capacity), with the arithmetic, in the summary, the
report and its deviations list."""

from __future__ import annotations

import html as html_escape

from conftest import planned, write_design

from gpucluster import load_design, plan_design
from gpucluster.analyse.deviations import deviations
from gpucluster.artifacts.report import report_html
from gpucluster.artifacts.summary import filesystem_figures, summary_lines

DEFAULT = "superpod-h200-4su"
DERIVED = (
    "capacity derived, as the RA gives storage throughput per SU and no capacity: 2 x ddn-ai400x2 (the blocks the "
    "throughput needs: 159/90 read and 79/65 write GB/s per block, rounded up) x 250 TB usable each = 500 TB"
)


def test_the_summary_names_the_ras_target_level_and_the_appliances_delivered_throughput() -> None:
    _loaded, plan = planned(DEFAULT)
    line = next(x for x in summary_lines(plan) if x.lstrip().startswith("storage  2 x ddn-ai400x2"))
    # delivered: 2 x (90 read, 65 write) per AI400X2 (catalog); target: the RA's 'better' level, 40/20 per SU
    assert "the appliances deliver 500 TB, 180 GB/s read, 130 GB/s write" in line
    assert "target asked 159 GB/s read, 79 GB/s write, from the RA's 'better' level: 40/20 GB/s per SU" in line
    assert DERIVED in line


def test_the_report_shows_both_throughputs_and_lists_the_derived_capacity_as_a_deviation(tmp_path) -> None:
    _loaded, plan = planned(DEFAULT)
    page = html_escape.unescape(report_html(plan, tmp_path))
    assert "the appliances deliver 500 TB, 180 GB/s read, 130 GB/s write" in page
    assert "from the RA's 'better' level" in page
    listed = {d.subject: d for d in deviations(plan)}
    capacity = listed["Parallel filesystem capacity"]
    assert capacity.plan == "500 TB: 2 x ddn-ai400x2, derived from the throughput"
    assert "Table 6" in capacity.reference and DERIVED in capacity.note
    assert capacity.reference in page and DERIVED in page


def test_a_capacity_the_design_asks_for_is_not_derived_nor_listed(tmp_path) -> None:
    text = (
        "name: asked\ncompute: {server: dgx-h100, servers: 64}\n"
        "parallel_filesystem: {kind: lustre, capacity_tb: 2000}\n"
    )
    plan = plan_design(load_design(write_design(tmp_path, text)))
    s = plan.settings
    assert s.parallel_filesystem_blocks == 8 and s.parallel_filesystem_capacity_tb == 2000  # 2,000 / 250 per block
    figures = filesystem_figures(s)
    assert "target asked 2,000 TB" in figures and "capacity derived" not in figures
    assert "Parallel filesystem capacity" not in {d.subject for d in deviations(plan)}


def test_a_larger_performance_level_derives_the_capacity_of_the_appliances_it_needs(tmp_path) -> None:
    """'best' for 4 SUs: 125/62 GB/s per SU x 4 = 500/248 GB/s -> 6 AI400X2 (500/90 = 5.6), so 1,500 TB."""
    text = (
        "name: best\ncompute: {server: dgx-h100, servers: 128, spare_servers: 0}\n"
        "compute_fabric: {fabric_managers: 0}\n"
        "parallel_filesystem: {kind: lustre, performance_level: best}\n"
    )
    plan = plan_design(load_design(write_design(tmp_path, text)))
    s = plan.settings
    assert s.parallel_filesystem_blocks == 6 and s.parallel_filesystem_capacity_tb == 1500
    asked = s.parallel_filesystem_asked
    assert asked is not None
    assert "6 x ddn-ai400x2 (the blocks the throughput needs: 500/90 read and 248/65 write" in asked["capacity_basis"]
    assert asked["capacity_basis"].endswith(
        "x 250 TB usable each = 1,500 TB; set parallel_filesystem.capacity_tb for the datasets and checkpoints"
    )
