"""A new user's first real design (issue 21): 512 H200 GPUs on InfiniBand, VAST for a 405B model's
checkpoints, object storage, Slurm plus Kubernetes for two teams, 40 kW racks with rear doors.

`tests/designs/brief-h200-512.yaml` is the brief as the user wrote it (15T tokens in 90 days: far too much
for 512 GPUs); `designs/h200-512-two-teams.yaml` is the same cluster with a workload it can train.
"""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import DESIGNS, ROOT, planned, write_design

from gpucluster import load_design, plan_design, write_artifacts
from gpucluster.cli import main
from gpucluster.plan.model import Plan
from gpucluster.training import analyse_checkpoints
from gpucluster.training.model import compute_days, step_seconds

BRIEF = ROOT / "tests" / "designs" / "brief-h200-512.yaml"


@pytest.fixture(scope="module")
def brief() -> Plan:
    return plan_design(load_design(BRIEF))


def _rule(plan: Plan, name: str) -> list:
    return [f for f in plan.findings if f.rule == f"rule:{name}"]


# --- 1. one training model, and the workload checked against the plan ------------------------------------


def test_a_workload_the_plan_cannot_train_in_its_target_is_an_error_naming_the_fields(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["validate", str(BRIEF)])
    assert result.exit_code == 2
    assert "rule:workload-fits-plan" in result.output and "beyond the 90-day target" in result.output
    assert "compute.gpus" in result.output and "workload.target_days" in result.output


def test_time_to_train_is_compute_over_the_plans_goodput(brief: Plan) -> None:
    a = analyse_checkpoints(brief)
    (finding,) = _rule(brief, "workload-fits-plan")
    assert finding.severity == "error"
    assert a.compute_days == pytest.approx(2082.0, abs=0.1)  # 3.65e25 / (512 x 989.4e12 x 0.4) / 86400
    assert a.time_to_train_days == pytest.approx(a.compute_days / a.goodput)
    assert f"{a.time_to_train_days:,.1f} days" in finding.message and f"{a.goodput:.1%} goodput" in finding.message


def test_the_step_is_the_mfu_step_with_loading_and_sync_inside_it(brief: Plan) -> None:
    a = analyse_checkpoints(brief)
    w = a.workload
    assert a.step.seconds == pytest.approx(step_seconds(w, a.gpus, a.peak_tflops))
    assert a.step.load_s + a.step.compute_s + a.step.sync_s == pytest.approx(a.step.seconds)
    steps = w.training_tokens_b * 1e9 / (w.global_batch_tokens_m * 1e6)
    assert steps * a.step.seconds / 86400 == pytest.approx(compute_days(w, a.gpus, a.peak_tflops))


def test_a_target_just_met_is_a_warning_and_a_fitting_workload_is_ok() -> None:
    _loaded, plan = planned("h200-512-two-teams")
    (ok,) = _rule(plan, "workload-fits-plan")
    assert ok.severity == "ok" and "within the 60-day target" in ok.message
    loaded = load_design(DESIGNS / "h200-512-two-teams.yaml")
    a = analyse_checkpoints(plan)
    tight = loaded.design.model_copy(
        update={"workload": loaded.design.workload.model_copy(update={"target_days": a.time_to_train_days / 0.95})}
    )
    from gpucluster import design_from_model

    (warning,) = _rule(plan_design(design_from_model(tight)), "workload-fits-plan")
    assert warning.severity == "warning" and "within 10% of the" in warning.message


def test_a_dataset_larger_than_the_filesystem_is_an_error(brief: Plan) -> None:
    loaded = load_design(BRIEF)
    from gpucluster import design_from_model

    big = loaded.design.model_copy(
        update={"workload": loaded.design.workload.model_copy(update={"dataset_tb": 9000, "target_days": 3000})}
    )
    findings = _rule(plan_design(design_from_model(big)), "workload-fits-plan")
    assert [f.severity for f in findings] == ["error"]
    assert "9,000 TB dataset does not fit" in findings[0].message
    assert "parallel_filesystem.capacity_tb" in findings[0].message


def test_checkpoint_md_and_the_simulation_page_replay_the_same_stated_run(tmp_path: Path) -> None:
    loaded, plan = planned("h200-512-two-teams")
    folder = write_artifacts(plan, loaded, tmp_path, ["checkpoint", "simulation"])
    a = analyse_checkpoints(plan)
    text = (folder / "checkpoint.md").read_text()
    assert "| Simulated run length | 60 days (workload.target_days); simulation.html replays the same length |" in text
    assert f"| Time to train | {a.time_to_train_days:,.1f} days = compute / {a.goodput:.1%} goodput" in text
    assert "MFU is over the whole step" in text
    html = (folder / "simulation.html").read_text()
    params = json.loads(re.search(r'<script id="params" type="application/json">(.*?)</script>', html, re.S)[1])
    assert params["horizon_s"] == pytest.approx(60 * 86400)
    assert "One run of 60.0 days (workload.target_days): the same run length checkpoint.md simulates." in html
    assert params["step_s"] == pytest.approx(a.step.seconds)
    assert params["interval_min_s"] * 5000 >= params["horizon_s"]  # at most 5,000 timeline pieces


def test_size_from_a_design_keeps_its_settings_and_agrees_with_checkpoint_md(tmp_path: Path) -> None:
    out = tmp_path / "starter.yaml"
    result = CliRunner().invoke(main, ["size", "--from", str(BRIEF), "--tokens-b", "1000", "-o", str(out)])
    assert result.exit_code == 0, result.output
    document = yaml.safe_load(out.read_text())
    assert document["compute"]["server"] == "dgx-h200"
    # the design's 40 kW budget and cooling as written, racks packed to the budget: 3 DGX H200 each
    assert document["site"] == {"rack_power_budget_kw": 40.0, "cooling": "rear-door", "servers_per_rack": 3}
    # every section size does not decide is the source's, as written: fabric, storage, scheduler and its teams
    source = yaml.safe_load(BRIEF.read_text())
    for section in ("compute_fabric", "parallel_filesystem", "object_storage", "scheduler"):
        assert document[section] == source[section], section
    assert document["workload"]["model_parameters_b"] == 405 and document["workload"]["training_tokens_b"] == 1000
    loaded = load_design(out)
    plan = plan_design(loaded)
    a = analyse_checkpoints(plan)
    assert f"train in {a.time_to_train_days:,.1f} days" in result.output
    assert a.time_to_train_days <= 0.9 * 90
    folder = write_artifacts(plan, loaded, tmp_path / "out", ["checkpoint"])
    assert f"| Time to train | {a.time_to_train_days:,.1f} days" in (folder / "checkpoint.md").read_text()
    # the starter draws nothing against what size chose: servers, spares, checkpoint interval
    sizing = [f for f in plan.findings if f.rule in {"rule:workload-fits-plan", "rule:checkpoint-write-time"}]
    sizing += [f for f in plan.findings if f.rule == "rule:spares-cover-repairs"]
    assert sizing and all(f.severity == "ok" for f in sizing), [f.message for f in sizing]
    assert not [f for f in plan.findings if f.subject == "site.servers_per_rack"]


def test_size_from_a_design_keeps_its_host_names_and_finds_its_price_list_from_the_new_folder(tmp_path: Path) -> None:
    source_folder = tmp_path / "site"
    source_folder.mkdir()
    (source_folder / "prices.csv").write_text("part_number,unit_price,currency\n", encoding="utf-8")
    source = yaml.safe_load(BRIEF.read_text())
    source["compute"]["hostname_prefix"] = "node"
    source["bom"] = {"price_list": "prices.csv", "spare_optics_fraction": 0.1}
    design = write_design(source_folder, yaml.safe_dump(source, sort_keys=False))
    out = tmp_path / "starter.yaml"  # a folder above the source's: the price list is inside it
    result = CliRunner().invoke(main, ["size", "--from", str(design), "--tokens-b", "1000", "-o", str(out)])
    assert result.exit_code == 0, result.output
    document = yaml.safe_load(out.read_text())
    assert document["compute"]["hostname_prefix"] == "node" and "gpus" not in document["compute"]
    assert document["bom"] == {"price_list": "site/prices.csv", "spare_optics_fraction": 0.1}


def test_size_without_a_workload_names_the_missing_options(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["size", "--parameters-b", "8", "-o", str(tmp_path / "x.yaml")])
    assert result.exit_code == 2 and "give --tokens-b, --days" in result.output
    assert not (tmp_path / "x.yaml").exists()


# --- 6. the catalog without reading YAML --------------------------------------------------------------------


def test_catalog_lists_every_kind_with_key_figures_and_sources() -> None:
    from gpucluster.catalog.listing import PART_KINDS
    from gpucluster.catalog.schema import AnyPart

    assert {k.kind for k in PART_KINDS} == set(typing.get_args(AnyPart))
    result = CliRunner().invoke(main, ["catalog"])
    assert result.exit_code == 0, result.output
    for kind in PART_KINDS:
        assert re.search(rf"^{kind.name} \(\d+\)$", result.output, re.M), kind.name
    assert "sources: none cited" not in result.output


def test_catalog_of_one_kind_gives_its_figures_and_full_citations() -> None:
    result = CliRunner().invoke(main, ["catalog", "storage", "--citations"])
    assert result.exit_code == 0, result.output
    assert "vast-ceres-df3060-2cnode: VAST Data" in result.output and "switch (" not in result.output
    assert "1,196 TB usable; 51 GB/s read; 12 GB/s write" in result.output
    assert "source: derived: min(2 x 29, 1 x 51) = 51 GB/s NFS read" in result.output
    switches = CliRunner().invoke(main, ["catalog", "switch"]).output
    assert "qm9700: NVIDIA Quantum-2 QM9700" in switches and "on-board subnet manager" in switches


def test_catalog_of_an_unknown_kind_exits_2_naming_the_kinds() -> None:
    result = CliRunner().invoke(main, ["catalog", "gpus"])
    assert result.exit_code == 2 and "'gpu-server'" in result.output


# --- 3. partial scalable units and the subnet manager ---------------------------------------------------------


def test_a_partial_last_unit_warning_names_the_fields_that_fill_the_units(brief: Plan) -> None:
    (warning,) = [f for f in brief.findings if f.rule == "planning" and "scalable unit 3" in f.message]
    assert "64 servers + 3 spares + 1 fabric-manager slot need 68" in warning.message
    assert "compute_fabric.fabric_managers: 0 (the qm9700 switches run an on-board subnet manager" in warning.message
    assert "compute.spare_servers: 0" in warning.message and "compute.servers: 60" in warning.message
    loaded = load_design(BRIEF)
    from gpucluster import design_from_model

    fixed = loaded.design.model_copy(
        update={
            "compute_fabric": loaded.design.compute_fabric.model_copy(update={"fabric_managers": 0}),
            "compute": loaded.design.compute.model_copy(update={"spare_servers": 0}),
        }
    )
    plan = plan_design(design_from_model(fixed))
    assert plan.totals.scalable_units == 2 and plan.totals.switches["compute"] == {"leaf": 16, "spine": 8}
    assert not [f for f in plan.findings if "scalable unit" in f.message]
    (sm,) = [f for f in _rule(plan, "subnet-manager-present") if f.message.startswith("compute")]
    assert sm.severity == "ok" and "qm9700 switches' on-board subnet manager runs it" in sm.message


def test_an_infiniband_fabric_without_any_subnet_manager_is_an_error(tmp_path: Path) -> None:
    design = tmp_path / "d.yaml"
    design.write_text("name: no-sm\ncompute: {servers: 31}\ncompute_fabric: {switch: qm9790, fabric_manager: null}\n")
    result = CliRunner().invoke(main, ["validate", str(design)])
    assert result.exit_code == 2
    assert "rule:subnet-manager-present" in result.output and "qm9790 switches run none" in result.output
    assert "compute_fabric.fabric_manager" in result.output


# --- 5. storage as delivered, shared object storage, ports at their speed, weights ------------------------------


def test_the_summary_gives_storage_as_delivered_and_as_asked(brief: Plan) -> None:
    from gpucluster.artifacts.summary import summary_lines

    text = "\n".join(summary_lines(brief))
    # 2,000 TB asked of VAST and no throughput: sized by capacity, 2 boxes deliver 2 x 1,195.56 TB, 2 x 51 GB/s
    # (issue 32: the RA's H100 throughput level is not imposed on a design that asks for capacity alone)
    assert "2 x vast-ceres-df3060-2cnode: the appliances deliver 2,391 TB, 102 GB/s read, 24 GB/s write" in text
    assert "(target asked 2,000 TB, sized by capacity: no throughput target asked)" in text
    assert "RA-11333-001" not in text.split("object")[0]
    assert "5 x vast-ceres-df3060-2cnode-s3: delivered 5,978 TB, 132 GB/s read (asked 5,000 TB)" in text
    assert brief.settings.parallel_filesystem_capacity_tb == pytest.approx(2 * 1195.56)


def test_object_storage_can_share_the_vast_cluster(tmp_path: Path) -> None:
    loaded, plan = planned("h200-512-two-teams")
    assert not plan.devices_with("object-storage")  # no boxes of its own
    # 2,000 TB of files + 5,000 TB of objects on one VAST cluster: 6 boxes of 1,195.56 TB
    assert plan.settings.parallel_filesystem_blocks == 6 and plan.settings.object_storage_shared
    assert plan.facts["checkpoint"]["training"]["filesystem_capacity_tb"] == pytest.approx(6 * 1195.56 - 5000)
    folder = write_artifacts(plan, loaded, tmp_path, ["checkpoint"])
    assert "nothing is copied between the tiers" in (folder / "checkpoint.md").read_text()


def test_shared_object_storage_needs_a_platform_that_serves_s3(tmp_path: Path) -> None:
    design = tmp_path / "d.yaml"
    design.write_text(
        "name: lustre-s3\ncompute: {servers: 31}\n"
        "object_storage: {capacity_tb: 500, shared_with_parallel_filesystem: true}\n"
    )
    result = CliRunner().invoke(main, ["validate", str(design)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "object_storage.shared_with_parallel_filesystem" in result.output and "not S3" in result.output


def test_a_host_port_linked_below_its_speed_is_a_warning_naming_both_ends(brief: Plan, tmp_path: Path) -> None:
    # by default the object store's 200GbE ports take SN5600 in-band leaves (split ports): nothing runs slow
    assert brief.settings.inband_switch == "sn5600"
    assert not [f for f in _rule(brief, "host-ports-at-full-speed") if f.severity != "ok"]
    design = tmp_path / "brief-sn4600c.yaml"  # the RA's 100G SN4600C chosen by hand: the rule warns
    design.write_text(BRIEF.read_text() + "management: {inband_switch: sn4600c}\n")
    (warning,) = [f for f in _rule(plan_design(load_design(design)), "host-ports-at-full-speed") if f.severity != "ok"]
    assert warning.severity == "warning"
    assert "20 vast-ceres-df3060-2cnode-s3 port(s) of 200G run at 100G on sn4600c (inband network)" in warning.message
    assert "obj-01 cnode1-data (200G) to inband-leaf-" in warning.message
    assert "management.inband_switch" in warning.message


def test_parts_without_a_weight_are_named_instead_of_weighing_nothing(brief: Plan) -> None:
    (finding,) = [f for f in brief.findings if f.rule == "catalog"]
    assert finding.severity == "warning" and "2 x vast-ceres-df3060-2cnode" in finding.message
    assert "5 x vast-ceres-df3060-2cnode-s3" in finding.message and "weight_kg" in finding.message


# --- 2. racks packed to the power budget, cooling shown against the site's -------------------------------------


def test_racks_divide_the_su_by_default_and_an_advisory_names_the_packing_field(brief: Plan) -> None:
    assert brief.settings.servers_per_rack == 2
    (advisory,) = [f for f in brief.findings if f.subject == "site.servers_per_rack"]
    assert advisory.severity == "advisory"
    assert "2 x dgx-h200 (20.6 kW of the 40 kW budget)" in advisory.message
    assert "site.servers_per_rack: 3 packs them in 24 compute racks instead of 34" in advisory.message


def test_servers_per_rack_packs_racks_to_the_budget_and_the_circuits_follow(brief: Plan) -> None:
    from gpucluster.analyse.budget import power_budget

    _loaded, packed = planned("h200-512-two-teams")
    assert packed.settings.servers_per_rack == 3
    compute = [r for r in packed.racks.values() if r.purpose == "compute"]
    assert len(compute) == 24 and max(r.power_max_w for r in compute) <= 40_000
    assert not [f for f in packed.findings if f.subject == "site.servers_per_rack"]
    # every SU's network rack stands among its compute racks
    for su in (1, 2, 3):
        row = sorted((r for r in packed.racks.values() if r.su == su), key=lambda r: (r.row, r.position))
        kinds = [r.purpose for r in row]
        assert "network" in kinds[1:-1] or len(kinds) <= 2, (su, kinds)
    circuits = lambda plan: sum(r.circuits.circuits_per_feed for r in power_budget(plan).racks)  # noqa: E731
    assert circuits(packed) < circuits(brief)  # fewer, fuller racks: fewer circuits


def test_servers_per_rack_beyond_the_budget_is_an_error_naming_the_field(tmp_path: Path) -> None:
    design = tmp_path / "d.yaml"
    design.write_text(
        BRIEF.read_text().replace("  cooling: rear-door\n", "  cooling: rear-door\n  servers_per_rack: 4\n")
    )
    result = CliRunner().invoke(main, ["validate", str(design)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "site.servers_per_rack: 4 x dgx-h200" in result.output and "takes at most 3" in result.output


def test_each_rack_shows_the_cooling_it_needs_against_the_sites(tmp_path: Path) -> None:
    loaded, plan = planned("h200-512-two-teams")
    text = (write_artifacts(plan, loaded, tmp_path, ["power"]) / "power-cooling.md").read_text()
    assert "| Cooling needed | Site cooling |" in text
    assert re.search(r"\| rear-door \| rear-door: 3\d\.\d of 60 kW \|", text)  # 3 DGX H200 need the rear door
    assert re.search(r"\| air \| rear-door: \d+\.\d of 60 kW \(air alone would do\) \|", text)  # network racks


# --- 4. a scheduler and team view ---------------------------------------------------------------------------


def test_kubernetes_takes_its_servers_on_the_fewest_scalable_units(brief: Plan) -> None:
    from gpucluster.analyse.scheduling import kubernetes_units, scheduler_split

    split = scheduler_split(brief)
    units = {brief.devices[n].su for n in split.kubernetes}
    assert units == {2}  # 16 servers: half of SU 2, not the ends of SU 2 and SU 3
    by_su = {1: [f"a{i}" for i in range(31)], 2: [f"b{i}" for i in range(32)], 3: [f"c{i}" for i in range(4)]}
    assert kubernetes_units(by_su, 4) == by_su[3]  # a count a unit fills exactly: that unit, whole
    assert kubernetes_units(by_su, 32) == by_su[2]
    assert {name[0] for name in kubernetes_units(by_su, 36)} == {"b", "c"}  # whole SU 2 and SU 3


@pytest.mark.slow
def test_the_summary_and_report_show_each_schedulers_servers_queues_and_place_on_the_fabric(
    brief: Plan, tmp_path: Path
) -> None:
    from gpucluster.artifacts.summary import summary_lines

    text = "\n".join(summary_lines(brief))
    assert re.search(
        r"  slurm    \d+ servers \(48 \+ \d spare, 384 GPUs\) on SU 1, 2, 3 under 3 leaf groups; "
        r"partitions: gpu: 48 servers, the default; spares: \d servers; burnin: \d+ servers",
        text,
    )
    assert re.search(
        r"  kubernetes \d+ servers \(16 \+ \d spare, 128 GPUs\) on SU 2 under 1 leaf group; Kueue queues: "
        r"research: 64 GPUs guaranteed \(8 servers\); product: 64 GPUs guaranteed \(8 servers\)",
        text,
    )
    loaded, plan = planned("h200-512-two-teams")
    html = (write_artifacts(plan, loaded, tmp_path, ["report"]) / "report.html").read_text()
    section = html[html.index('id="schedulers"') : html.index('id="power"')]
    assert "Slurm" in section and "Kubernetes" in section and "compute-leaf-su02" in section
    assert "<b>research</b> 64 GPUs guaranteed (8 servers)" in section and "<b>gpu</b> 48 servers" in section


@pytest.mark.slow
def test_the_first_design_builds_every_artifact(tmp_path: Path) -> None:
    """VAST blocks on the InfiniBand storage network (their catalog ports name no technology), shared S3,
    both schedulers, packed racks: every writer runs."""
    result = CliRunner().invoke(main, ["build", str(DESIGNS / "h200-512-two-teams.yaml"), "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "h200-512-two-teams"
    for name in ("plan.json", "summary.md", "report.html", "checkpoint.md", "simulation.html", "power-cooling.md"):
        assert (folder / name).is_file(), name
    net = (folder / "verify" / "expected-storage.net").read_text()
    assert "pfs-01" not in net  # the VAST ports are not InfiniBand ports ibnetdiscover would list
    assert "kubernetes" in (folder / "summary.md").read_text()
