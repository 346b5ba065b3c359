"""Checkpoint size, write time from the plan, staging, the failure units and the checkpoint design rules."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest
from conftest import planned, write_design

from gpucluster import DesignError, load_design, plan_design
from gpucluster.analyse.rules import rule_facts
from gpucluster.plan.analysis import graphs
from gpucluster.training import analyse_checkpoints

LAB = """
name: lab
site: {rack_power_budget_kw: 50}
compute: {server: hgx-h100-oem, servers: 4, spare_servers: 1}
compute_fabric: {fabric_manager: null}
management: {management_servers: 1}
"""


def lab(tmp_path: Path, extra: str = "", name: str = "design.yaml"):
    return plan_design(load_design(write_design(tmp_path, LAB + extra, name)))


# The plan writes checkpoints at what its filesystem blocks deliver, so a slow filesystem is a slow block: a
# test catalog of Lustre blocks that write 0.01, 1, 2 and 4 GB/s (ports as the AI400X2's).
SLOW_BLOCK = """
  - kind: storage_block
    id: test-lustre-{name}
    vendor: Test
    model: Lustre block writing {write} GB/s
    tier: parallel-filesystem
    filesystems: [lustre]
    u_height: 2
    capacity_tb: 500
    read_gbytes_per_s: {read}
    write_gbytes_per_s: {write}
    power_typical_w: 1000
    power_max_w: 1000
    ports:
      - {{role: storage, cage_type: qsfp56, cages: 8, speed_gbps: 200, technology: infiniband-ndr,
         name_format: "ib{{index}}"}}
    sources: {{tier: t, filesystems: t, u_height: t, capacity_tb: t, read_gbytes_per_s: t, write_gbytes_per_s: t,
      power_typical_w: t, power_max_w: t, ports: t}}
"""


def slow_filesystem(tmp_path: Path, write_gbytes_per_s: float) -> str:
    """Design lines that put a filesystem writing ``write_gbytes_per_s`` under the lab."""
    name = str(write_gbytes_per_s).replace(".", "-")
    text = "sources: {t: a block made for this test}\nparts:" + SLOW_BLOCK.format(
        name=name, write=write_gbytes_per_s, read=2 * write_gbytes_per_s
    )
    (tmp_path / f"slow-{name}.yaml").write_text(text, encoding="utf-8")
    asked = f"read_gbytes_per_s: {2 * write_gbytes_per_s}, write_gbytes_per_s: {write_gbytes_per_s}"  # one block
    return f"catalog: [slow-{name}.yaml]\nparallel_filesystem: {{block: test-lustre-{name}, {asked}}}\n"


def test_a_70b_adam_checkpoint_is_about_one_terabyte(h200_4su) -> None:
    _, plan = h200_4su
    a = analyse_checkpoints(plan)
    assert a.checkpoint_bytes == pytest.approx(0.98e12)  # 70e9 x 14 bytes (seed: "around 1 TB")
    assert not a.assumed


def test_write_time_is_the_checkpoint_over_the_slowest_stage(h200_4su) -> None:
    _, plan = h200_4su
    a = analyse_checkpoints(plan)
    slowest = min(limit.gbytes_per_s for limit in a.write.limits)
    assert a.write_s == pytest.approx(0.98e12 / (slowest * 1e9))
    assert a.write.bottleneck.name == "parallel filesystem write"
    assert slowest == plan.settings.parallel_filesystem_write_gbytes_per_s


@pytest.mark.parametrize("name", ["superpod-h100-1su", "superpod-h200-4su"])
def test_storage_network_capacity_equals_the_max_flow_from_servers_to_storage(name: str) -> None:
    _, plan = planned(name)
    a = analyse_checkpoints(plan)
    graph = graphs(plan)["storage"].copy()
    for device in plan.devices.values():
        if device.role == "gpu-server" and not device.spare and device.name in graph:
            graph.add_edge("SOURCE", device.name, bandwidth_gbps=float("inf"))
        elif device.role == "storage":
            graph.add_edge(device.name, "SINK", bandwidth_gbps=float("inf"))
    directed = graph.to_directed()
    flow = nx.maximum_flow_value(directed, "SOURCE", "SINK", capacity="bandwidth_gbps")
    network = next(limit for limit in a.write.limits if limit.name == "storage network")
    assert network.gbytes_per_s == pytest.approx(flow / 8)


def test_faster_parallel_filesystem_writes_shorten_the_checkpoint(tmp_path: Path) -> None:
    slow = analyse_checkpoints(lab(tmp_path, slow_filesystem(tmp_path, 2), "a.yaml"))
    fast = analyse_checkpoints(lab(tmp_path, slow_filesystem(tmp_path, 4), "b.yaml"))
    assert slow.write_s == pytest.approx(2 * fast.write_s)


def test_a_design_without_a_workload_is_analysed_for_the_seeds_70b_example(tmp_path: Path) -> None:
    plan = lab(tmp_path)
    a = analyse_checkpoints(plan)
    assert a.assumed and a.workload.model_parameters_b == 70
    assert a.interval_from == "Daly's optimum"
    assert plan.facts["checkpoint"]["workload"] == "assumed"


def test_failure_units_count_job_gpus_servers_nics_optics_and_compute_switches(tmp_path: Path) -> None:
    plan = lab(tmp_path)
    units = {k.kind: k.units for k in analyse_checkpoints(plan).kinds}
    production = [d for d in plan.gpu_nodes() if not d.spare]
    assert units["gpu"] == 8 * len(production) and units["server"] == len(production)
    assert units["switch"] == len(plan.switches("compute"))
    job_cables = [
        c
        for c in plan.cables
        if c.network == "compute" and not all(plan.devices[plan.links[i].a_device].spare for i in c.links)
    ]
    optics = sum((c.a_transceiver is not None) + (c.b_transceiver is not None) for c in job_cables)
    assert units["nic_optics"] == 8 * len(production) + optics


def test_async_checkpoints_pause_the_gpus_briefly_and_write_in_the_background(tmp_path: Path) -> None:
    a = analyse_checkpoints(
        lab(tmp_path, slow_filesystem(tmp_path, 2) + "workload: {model_parameters_b: 70, checkpoint_mode: async}\n")
    )
    assert a.stall_s < a.write_s and a.background_s == a.write_s
    # PyTorch's 0.78 s for 528 MB per GPU, scaled to 0.98 TB over 32 GPUs (4 servers; the spare idles)
    assert a.stall_s == pytest.approx(0.78 * (0.98e12 / 32) / (70e9 * 14 / 1856))


def test_staging_runs_at_the_slowest_of_object_storage_network_and_filesystem(tmp_path: Path) -> None:
    plan = lab(
        tmp_path, "object_storage: {capacity_tb: 400}\nworkload: {model_parameters_b: 8, training_tokens_b: 1000}\n"
    )
    a = analyse_checkpoints(plan)
    assert a.staging_in is not None and a.dataset_bytes == pytest.approx(4e12)  # 1e12 tokens x 4 bytes
    assert a.staging_in.gbytes_per_s == min(limit.gbytes_per_s for limit in a.staging_in.limits)
    assert {limit.name for limit in a.staging_in.limits} >= {"object storage read", "parallel filesystem write"}


def test_checkpoint_facts_are_plain_json_and_the_rule_reads_them(h200_4su) -> None:
    _, plan = h200_4su
    facts = rule_facts(plan, plan.checkpoint, plan.burn_in)
    assert json.loads(json.dumps(facts["checkpoint"])) == facts["checkpoint"]
    assert any(f.rule == "rule:checkpoint-write-time" and f.severity == "ok" for f in plan.findings)


def test_a_checkpoint_slower_than_its_interval_is_an_error(tmp_path: Path) -> None:
    plan = lab(
        tmp_path,
        slow_filesystem(tmp_path, 1) + "workload: {model_parameters_b: 70, checkpoint_interval_minutes: 10}\n",
    )
    errors = [f for f in plan.findings if f.rule == "rule:checkpoint-write-time" and f.severity == "error"]
    assert errors and "longer than" in errors[0].message


def test_a_long_blocking_pause_is_a_warning_and_an_interval_far_from_dalys_advisory(tmp_path: Path) -> None:
    plan = lab(
        tmp_path,
        slow_filesystem(tmp_path, 1) + "workload: {model_parameters_b: 70, checkpoint_interval_minutes: 60}\n",
    )
    severities = {f.severity for f in plan.findings if f.rule == "rule:checkpoint-write-time"}
    assert severities == {"warning", "advisory"}


def test_an_assumed_workload_never_fails_a_design(tmp_path: Path) -> None:
    plan = lab(tmp_path, slow_filesystem(tmp_path, 0.01))
    findings = [f for f in plan.findings if f.rule == "rule:checkpoint-write-time"]
    assert findings and all(f.severity in ("ok", "advisory") for f in findings)
    assert "assumed 70B workload" in findings[0].message


def test_too_few_spares_for_repairs_is_advisory(tmp_path: Path) -> None:
    plan = lab(tmp_path, "workload: {model_parameters_b: 7, repair_hours: 8000, spare_confidence: 0.99}\n")
    spares = [f for f in plan.findings if f.rule == "rule:spares-cover-repairs"]
    assert spares[0].severity == "advisory"


@pytest.mark.parametrize(
    ("workload", "field", "words"),
    [
        ("{model_parameters_b: 70, failure_rates: {gpuu: 0.1}}", "workload.failure_rates.gpuu", "did you mean 'gpu'"),
        ("{model_parameters_b: 70, spare_confidence: 1.5}", "workload.spare_confidence", "more than 0.9999"),
        ("{model_parameters_b: 70, checkpoint_mode: lazy}", "workload.checkpoint_mode", "'blocking'"),
        ("{model_parameters_b: 70, optimiser: adam}", "workload.optimiser", "did you mean 'optimizer'"),
    ],
)
def test_bad_workload_fields_are_located(tmp_path: Path, workload: str, field: str, words: str) -> None:
    path = write_design(tmp_path, LAB + f"workload: {workload}\n")
    with pytest.raises(DesignError) as caught:
        load_design(path)
    problem = caught.value.problems[0]
    assert problem.field == field and words in problem.message and problem.line == 7


def test_a_job_that_never_fails_checkpoints_once_at_the_end(tmp_path: Path) -> None:
    rates = "{gpu: 0, server: 0, nic_optics: 0, switch: 0, software: 0}"
    a = analyse_checkpoints(
        lab(tmp_path, f"workload: {{model_parameters_b: 7, run_days: 10, failure_rates: {rates}}}\n")
    )
    assert a.interval_s == pytest.approx(10 * 86400, rel=0.01) and a.goodput > 0.9999


def test_spare_sizing_ends_at_any_confidence_the_design_allows():
    """The Poisson tail stops adding once a float cannot hold more; never more spares than servers."""
    from gpucluster.training.reliability import spares_needed

    assert spares_needed(2048, 0.13, 72, 0.9999999999999999) <= 2048
    assert spares_needed(20, 50.0, 72, 0.99) <= 20
    # a mean of 10 servers in repair: the Poisson 95 % quantile is 15
    assert spares_needed(100, 0.1, 8766, 0.95) == 15
