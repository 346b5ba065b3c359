"""The Pulumi program and its components, run with the real SDK against mocks in preview mode."""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from pathlib import Path

import pulumi
import pytest
import yaml
from conftest import DESIGNS, ROOT, planned, write_design

from gpucluster.components import (
    CLUSTER_TYPE,
    DEVICE_GRANULARITY_MAX_SERVERS,
    FACTS_PROP,
    Cluster,
    stack_outputs,
)
from gpucluster.components import cluster as cluster_module
from gpucluster.components.offline import OfflineRun, run_offline
from gpucluster.components.policy import facts_from_props
from gpucluster.growth.phases import write_lock

PROGRAM = ROOT / "__main__.py"
EXAMPLE = ROOT / "examples" / "design_as_code" / "__main__.py"

# type -> the type of its parent (the root's parent is the stack)
PARENT_TYPE = {
    CLUSTER_TYPE: "pulumi:pulumi:Stack",
    "gpu-cluster:site:Site": CLUSTER_TYPE,
    "gpu-cluster:site:Rack": "gpu-cluster:site:Site",
    "gpu-cluster:compute:ScalableUnit": CLUSTER_TYPE,
    "gpu-cluster:compute:GpuServer": "gpu-cluster:compute:ScalableUnit",
    "gpu-cluster:network:ComputeFabric": CLUSTER_TYPE,
    "gpu-cluster:network:StorageNetwork": CLUSTER_TYPE,
    "gpu-cluster:network:ManagementNetwork": CLUSTER_TYPE,
    "gpu-cluster:network:SwitchTier": "gpu-cluster:network:*",
    "gpu-cluster:network:Switch": "gpu-cluster:network:SwitchTier",
    "gpu-cluster:network:FabricManager": "gpu-cluster:network:(ComputeFabric|StorageNetwork)",  # a UFM pair per fabric
    "gpu-cluster:storage:ParallelFilesystem": CLUSTER_TYPE,
    "gpu-cluster:storage:ObjectStorage": CLUSTER_TYPE,
    "gpu-cluster:storage:StorageBlock": "gpu-cluster:storage:*",
    "gpu-cluster:scheduler:Scheduler": CLUSTER_TYPE,
    "gpu-cluster:scheduler:HeadNode": "gpu-cluster:scheduler:Scheduler",
}


def _type_of_urn(urn: str) -> str:
    return urn.split("::")[2].split("$")[-1]


def _tree(name: str, granularity: str = "auto") -> OfflineRun:
    _loaded, plan = planned(name)
    return run_offline(lambda: Cluster(plan.name, plan, granularity))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def default_run() -> OfflineRun:
    return run_offline(PROGRAM)


def test_program_plans_the_default_design_into_one_rooted_tree(default_run: OfflineRun) -> None:
    roots = default_run.of_type(CLUSTER_TYPE)
    assert [r.name for r in roots] == ["superpod-h200-4su"]
    urns = {r.urn: r for r in default_run.resources}
    for resource in default_run.resources:
        parent_type = _type_of_urn(resource.parent)
        expected = PARENT_TYPE[resource.type]
        assert re.fullmatch(expected.replace("*", "[A-Za-z]+"), parent_type), (resource.name, parent_type)
        if resource.type != CLUSTER_TYPE:
            assert resource.parent in urns, resource.name
            assert resource.name.startswith("superpod-h200-4su-")


def test_type_tokens_are_gpu_cluster_module_type(default_run: OfflineRun) -> None:
    types = {r.type for r in default_run.resources}
    assert all(re.fullmatch(r"gpu-cluster:[a-z]+:[A-Z][A-Za-z]+", t) for t in types)
    assert types == set(PARENT_TYPE)


def test_the_default_design_registers_its_object_storage_tier_with_its_blocks(default_run: OfflineRun) -> None:
    """The seed's staging tier (raw data and finished models in object storage) is in the default preview."""
    _loaded, plan = planned("superpod-h200-4su")
    [store] = default_run.of_type("gpu-cluster:storage:ObjectStorage")
    blocks = [r for r in default_run.resources if r.parent == store.urn]
    assert len(blocks) == len(plan.devices_with("object-storage")) == store.inputs["blocks"] == 12
    assert {r.type for r in blocks} == {"gpu-cluster:storage:StorageBlock"}
    assert store.inputs["block_model"] == "minio-aistor-datapod-node"
    assert store.inputs["capacity_tb"] >= store.inputs["capacity_tb_wanted"] == 4900


def test_tree_has_one_resource_per_server_switch_rack_and_appliance_at_device_granularity(
    default_run: OfflineRun,
) -> None:
    _loaded, plan = planned("superpod-h200-4su")
    counts = Counter(r.type for r in default_run.resources)
    assert counts["gpu-cluster:compute:GpuServer"] == plan.totals.servers == 127
    assert counts["gpu-cluster:compute:ScalableUnit"] == plan.totals.scalable_units == 4
    assert counts["gpu-cluster:network:Switch"] == plan.totals.switches_total
    assert counts["gpu-cluster:network:SwitchTier"] == len(plan.tiers)
    assert counts["gpu-cluster:site:Rack"] == plan.totals.racks
    assert counts["gpu-cluster:storage:StorageBlock"] == len(plan.devices_with("storage")) + len(
        plan.devices_with("object-storage")
    )
    assert counts["gpu-cluster:network:FabricManager"] == len(plan.devices_with("fabric-manager"))
    assert counts["gpu-cluster:scheduler:HeadNode"] == len(plan.devices_with("management-server"))


def test_stack_outputs_are_the_plans_totals(default_run: OfflineRun) -> None:
    _loaded, plan = planned("superpod-h200-4su")
    outputs = default_run.outputs
    assert outputs == stack_outputs(plan)
    assert outputs["gpus"] == 1016 and outputs["servers"] == 127 and outputs["spare_servers"] == 4
    assert outputs["switches"]["compute"] == {"leaf": 32, "spine": 16}
    assert outputs["links"]["compute"] == sum(1 for link in plan.links if link.network == "compute")
    assert outputs["racks"] == len(plan.racks)
    assert outputs["it_power_max_kw"] == pytest.approx(sum(r.power_max_w for r in plan.racks.values()) / 1000)


def test_root_registers_the_stack_outputs_and_the_rule_facts_as_props(default_run: OfflineRun) -> None:
    _loaded, plan = planned("superpod-h200-4su")
    root = default_run.of_type(CLUSTER_TYPE)[0]
    assert FACTS_PROP in root.inputs
    facts = facts_from_props(root.inputs)
    assert {key: facts[key] for key in plan.facts} == plan.facts  # None-valued keys come back as None
    assert (
        root.inputs["design"]["compute"]["servers"] == 123 and root.inputs["design"]["site"]["cooling"] == "rear-door"
    )
    assert root.inputs["settings"]["compute_switch"] == "qm9700"
    assert root.inputs["granularity"] == "device"
    assert [(f["rule"], f["severity"]) for f in root.inputs["findings"]] == [
        (f.rule, f.severity) for f in plan.findings if f.severity != "ok"
    ]


def test_components_carry_the_plans_figures_as_props(default_run: OfflineRun) -> None:
    _loaded, plan = planned("superpod-h200-4su")
    server = default_run.named("superpod-h200-4su-gpu001").inputs
    device = plan.devices["gpu001"]
    assert (server["rack"], server["u_position"], server["model"]) == (device.rack, device.u_position, "dgx-h200")
    leaves = {link.b_device for link in plan.links if link.a_device == "gpu001" and link.network == "compute"}
    assert server["connected_to"]["compute"] == sorted(leaves)
    assert server["compute_bandwidth_gbps"] == 8 * 400

    rack = default_run.named("superpod-h200-4su-A01").inputs
    assert rack["devices"] == plan.racks["A01"].devices
    assert rack["power_max_kw"] == pytest.approx(plan.racks["A01"].power_max_w / 1000)

    leaf = default_run.named("superpod-h200-4su-compute-leaf").inputs
    tier = next(t for t in plan.tiers if t.network == "compute" and t.tier == 1)
    assert (leaf["switches"], leaf["down_gbps"], leaf["up_gbps"]) == (tier.switches, tier.down_gbps, tier.up_gbps)

    spine = default_run.named("superpod-h200-4su-compute-spine-01").inputs
    assert spine["down_links"] == sum(1 for link in plan.links if link.b_device == "compute-spine-01")
    assert spine["up_links"] == 0

    fabric = default_run.named("superpod-h200-4su-compute-fabric").inputs
    assert fabric["bisection_bandwidth_gbps"] == plan.analysis["compute"]["bisection_bandwidth_gbps"]
    assert fabric["fabric_managers"] == ["ufm-01", "ufm-02"]


def test_changing_the_design_changes_the_outputs_and_props(tmp_path: Path) -> None:
    """What `pulumi preview --diff` shows after an edit: one more SU of servers, no spares, planned under the
    plan lock of the first (so every rack and device keeps its name)."""
    lock = tmp_path / "built.lock.json"
    write_lock(planned("superpod-h100-1su")[1], lock)
    before = run_offline(PROGRAM, {"design": str(DESIGNS / "superpod-h100-1su.yaml"), "lock": str(lock)})
    text = (DESIGNS / "superpod-h100-1su.yaml").read_text().replace("servers: 30", "servers: 62")
    edited = write_design(tmp_path, text.replace("spare_servers: 1", "spare_servers: 0"))
    after = run_offline(PROGRAM, {"design": str(edited), "lock": str(lock)})

    assert (before.outputs["gpus"], after.outputs["gpus"]) == (248, 496)
    assert (before.outputs["scalable_units"], after.outputs["scalable_units"]) == (1, 2)
    assert after.outputs["switches"]["compute"]["leaf"] == 2 * before.outputs["switches"]["compute"]["leaf"]
    root_before, root_after = (run.of_type(CLUSTER_TYPE)[0].inputs for run in (before, after))
    assert root_before["design"]["compute"]["servers"] == 30 and root_after["design"]["compute"]["servers"] == 62
    rules_after = {f["rule"] for f in root_after["findings"]} - {f["rule"] for f in root_before["findings"]}
    assert "rule:spare-servers" in rules_after
    # a second SU adds resources; the central racks' out-of-band ports move onto its access switches' free ports, so
    # the central out-of-band switch of the 1-SU plan is the one resource that goes (as the RA's 8 SN2201 for 4 SUs)
    gone = {r.name for r in before.resources} - {r.name for r in after.resources}
    assert gone <= {"superpod-h100-1su-oob-leaf-central"}
    assert len(after.resources) > len(before.resources)


def test_rack_granularity_lists_servers_and_switches_instead_of_resources() -> None:
    _loaded, plan = planned("superpod-h200-4su")
    run = _tree("superpod-h200-4su", "rack")
    types = Counter(r.type for r in run.resources)
    assert types["gpu-cluster:compute:GpuServer"] == types["gpu-cluster:network:Switch"] == 0
    hostnames = [h for su in run.of_type("gpu-cluster:compute:ScalableUnit") for h in su.inputs["hostnames"]]
    assert sorted(hostnames) == sorted(d.name for d in plan.gpu_nodes())
    switches = [s for tier in run.of_type("gpu-cluster:network:SwitchTier") for s in tier.inputs["switch_names"]]
    assert sorted(switches) == sorted(d.name for d in plan.devices.values() if d.role == "switch")
    assert run.of_type(CLUSTER_TYPE)[0].inputs["granularity"] == "rack"
    assert types["gpu-cluster:site:Rack"] == len(plan.racks)


def test_auto_granularity_is_per_device_up_to_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    _loaded, plan = planned("superpod-h200-4su")
    assert plan.totals.servers <= DEVICE_GRANULARITY_MAX_SERVERS
    assert cluster_module.per_device(plan, "auto")
    monkeypatch.setattr(cluster_module, "DEVICE_GRANULARITY_MAX_SERVERS", 100)
    assert not cluster_module.per_device(plan, "auto")
    assert cluster_module.per_device(plan, "device") and not cluster_module.per_device(plan, "rack")
    with pytest.raises(ValueError, match="granularity 'servers'"):
        cluster_module.per_device(plan, "servers")  # type: ignore[arg-type]


def test_bad_config_and_bad_designs_stop_the_program_with_a_located_message(tmp_path: Path) -> None:
    with pytest.raises(pulumi.RunError, match="granularity: 'rows' is not one of auto, device, rack"):
        run_offline(PROGRAM, {"granularity": "rows"})
    bad = write_design(tmp_path, "name: bad\ncompute:\n  server: dgx-h100\n  servrs: 4\n")
    with pytest.raises(pulumi.RunError, match=r"design\.yaml:4:3: compute\.servrs: unknown field"):
        run_offline(PROGRAM, {"design": str(bad)})


def test_a_design_object_builds_the_same_tree_as_its_yaml_file() -> None:
    loaded, plan = planned("superpod-h100-1su")
    from_yaml = run_offline(lambda: Cluster("c", plan))
    from_object = run_offline(lambda: Cluster("c", loaded.design))

    def tree(run: OfflineRun) -> list[tuple]:
        return sorted((r.type, r.name, r.parent, json.dumps(r.inputs, sort_keys=True)) for r in run.resources)

    assert tree(from_object) == tree(from_yaml)
    with pytest.raises(TypeError, match="Cluster needs a Design or an AnalysedPlan, not dict"):
        run_offline(lambda: Cluster("c", {"name": "x"}))  # type: ignore[arg-type]


def test_design_as_code_example_builds_its_tree_with_object_storage_and_both_schedulers() -> None:
    run = run_offline(EXAMPLE, project="gpu-cluster-design-as-code")
    assert [r.name for r in run.of_type(CLUSTER_TYPE)] == ["h200-design-as-code"]
    storage = run.of_type("gpu-cluster:storage:ObjectStorage")[0].inputs
    assert storage["capacity_tb"] >= storage["capacity_tb_wanted"] == 5000
    filesystem = run.of_type("gpu-cluster:storage:ParallelFilesystem")[0].inputs
    assert filesystem["kind"] == "vast" and filesystem["capacity_tb"] >= 2000
    assert len(run.of_type("gpu-cluster:storage:StorageBlock")) == storage["blocks"] + filesystem["blocks"]
    scheduler = run.of_type("gpu-cluster:scheduler:Scheduler")[0].inputs
    assert scheduler["kind"] == "both" and scheduler["kubernetes"]["servers"] == 17  # 16 and their SU's spare
    assert scheduler["slurm"]["servers"] + scheduler["kubernetes"]["servers"] == run.outputs["servers"]
    assert run.outputs["scalable_units"] == 2
    findings = run.of_type(CLUSTER_TYPE)[0].inputs["findings"]
    assert ("rule:compute-fabric-non-blocking", "advisory") in [(f["rule"], f["severity"]) for f in findings]


def test_project_file_defaults_are_the_programs() -> None:
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert project["name"] == "gpu-cluster" and project["runtime"]["name"] == "python"
    program = ast.parse(PROGRAM.read_text())
    default = next(
        node.value.value
        for node in program.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DEFAULT_DESIGN"
    )
    assert project["config"]["design"]["default"] == default
    assert (ROOT / default).is_file()
    assert project["config"]["granularity"]["default"] == "auto"
    assert f"up to {DEVICE_GRANULARITY_MAX_SERVERS} servers" in project["config"]["granularity"]["description"]


def test_the_program_shows_an_existing_filesystem_and_a_new_one_beside_it_under_its_lock(tmp_path: Path) -> None:
    """The site's existing Lustre is reached over its stated links and nothing of it is bought; the new NFS home has
    its blocks. Under the plan lock `gpucluster build` writes (which names the existing filesystem's hand-off) the
    program reads the lock as the command does."""
    design = DESIGNS / "university-b200-existing-lustre.yaml"
    lock = tmp_path / "university.lock.json"
    write_lock(planned("university-b200-existing-lustre")[1], lock)
    for config in ({"design": str(design)}, {"design": str(design), "lock": str(lock)}):
        run = run_offline(PROGRAM, config)
        lustre, home = (r.inputs for r in run.of_type("gpu-cluster:storage:ParallelFilesystem"))
        assert lustre["existing"] is True and lustre["mount"] == "/lustre" and "block_model" not in lustre
        assert lustre["links"]["count"] == 8 and lustre["links"]["speed_gbps"] == 200
        assert (home["kind"], home["blocks"]) == ("nfs", 1)
        blocks = [r.name for r in run.of_type("gpu-cluster:storage:StorageBlock")]
        assert blocks == ["university-b200-existing-lustre-home-01"]
