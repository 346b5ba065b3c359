"""Slurm configs: real slurmctlds load them, Debian's slurm-wlm 22.05 and Slurm 26.05 built from
../shared/tools/slurm/ (.ci/build-slurm), and what they report (scontrol show topology, topoconf, nodes,
partitions) agrees with the plan; slurmd -G parses gres.conf and cgroup.conf. The slurmctld helpers are in
tests/slurmctld.py and the fixtures (debian_slurm, current_slurm, load_slurm) in conftest.py."""

from __future__ import annotations

import os
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import hostlist
import pytest
import yaml
from conftest import DESIGNS, EXAMPLES, planned, write_design
from slurmctld import Loaded, local_copy, problems

from gpucluster import load_design, plan_design
from gpucluster.analyse.scheduling import scheduler_split
from gpucluster.artifacts.slurm import slurm_files
from gpucluster.errors import DesignError
from gpucluster.plan.model import Plan
from gpucluster.plan.registry import is_gpu_node


def _plan_fabric(plan: Plan) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """From the plan's links alone: the GPU servers under each compute leaf, and the switches under each switch."""
    servers: dict[str, set[str]] = defaultdict(set)
    below: dict[str, set[str]] = defaultdict(set)
    for link in plan.links:
        if link.network != "compute":
            continue
        if link.tier == 0 and is_gpu_node(plan.devices[link.a_device].role):
            servers[link.b_device].add(link.a_device)
        elif link.tier > 0:
            below[link.b_device].add(link.a_device)
    return servers, below


def _leaf_members(topology_conf: str) -> dict[str, list[str]]:
    """The plan leaves each merged Slurm leaf stands for, from the comment above it."""
    members = {}
    for name, switches in re.findall(r"^# (\S+): (\S+)$", topology_conf, flags=re.MULTILINE):
        members[name] = hostlist.expand_hostlist(switches)
    return members


def _check_against_plan(plan: Plan, files: dict[str, str], servers: list[str], loaded: Loaded) -> None:
    """What slurmctld loaded is the plan: no complaint in its log; its tree's leaves hold the plan leaves' servers
    and its upper switches the plan's switches below them; nodes, GPUs, features and partitions as planned."""
    assert not loaded.problems, "slurmctld complained:\n" + "\n".join(loaded.problems)
    assert "select/cons_tres" in loaded.config
    members = _leaf_members(files["topology.conf"]) if "topology.conf" in files else _members(plan, servers)
    _check_tree(plan, _tree_switches(loaded), members, servers)

    by_name = {r["NodeName"]: r for r in loaded.nodes}
    assert sorted(by_name) == sorted(servers)
    for name in servers:
        part = plan.part(name)
        record = by_name[name]
        assert record["Gres"] == f"gpu:{part.gpu.gres_type}:{part.gpu.count}"
        assert int(record["CPUTot"]) == part.cpu.sockets * part.cpu.cores_per_socket * part.cpu.threads_per_core
        assert int(record["RealMemory"]) == int((part.memory_gb - part.os_reserved_memory_gb) * 1024)
        device = plan.devices[name]
        features = record["AvailableFeatures"].split(",")
        assert f"su{device.su:02d}" in features and f"rack_{device.rack.lower()}" in features
        expected_partitions = {"spares" if device.spare else "gpu", "burnin"}
        assert set(record["Partitions"].split(",")) == expected_partitions
    parts = {p["PartitionName"]: p for p in loaded.partitions}
    assert parts["gpu"]["Default"] == "YES"
    assert parts["gpu"]["OverSubscribe"] == "EXCLUSIVE" or parts["gpu"].get("Exclusive") == "NODE"


def _tree_switches(loaded: Loaded) -> dict[str, dict[str, str]]:
    """The tree switches slurmctld reports: of its default topology, and of each topology of a topology.yaml."""
    records = loaded.topology + [r for records in loaded.topologies.values() for r in records]
    return {r["SwitchName"]: r for r in records if "SwitchName" in r}


def _check_tree(
    plan: Plan, reported: dict[str, dict[str, str]], members: dict[str, list[str]], servers: list[str]
) -> None:
    plan_servers, plan_below = _plan_fabric(plan)
    placed: list[str] = []
    for name, record in reported.items():
        nodes_here = set(hostlist.expand_hostlist(record["Nodes"]))
        level = int(record["Level"])
        if level == 0:
            leaves = members.get(name, [name])
            for leaf in leaves:
                assert plan.devices[leaf].tier == 1 and plan.devices[leaf].network == "compute"
                assert plan_servers[leaf] & set(servers) == nodes_here, f"{leaf}: servers differ from the plan"
            placed += sorted(nodes_here)
        else:
            device = plan.devices[name]  # spines and cores keep their plan names
            assert device.network == "compute" and device.tier == level + 1
            children = set(hostlist.expand_hostlist(record["Switches"]))
            expected = set()
            for child in plan_below[name]:
                merged = next((m for m, leaves in members.items() if child in leaves), child)
                if merged in reported:
                    expected.add(merged)
            assert children == expected, f"{name}: switches below differ from the plan"
    assert sorted(placed) == sorted(servers), "every Slurm server under exactly one leaf"
    for leaf, attached in plan_servers.items():
        if attached & set(servers):
            assert any(leaf in members.get(n, [n]) for n in reported), f"plan leaf {leaf} missing"


@pytest.mark.external
def test_slurmctld_loads_one_su_configs_and_agrees_with_the_plan(debian_slurm, load_slurm):
    _, plan = planned("superpod-h100-1su")
    files = slurm_files(plan, version="22.05")
    servers = [d.name for d in plan.gpu_nodes()]
    _check_against_plan(plan, files, servers, load_slurm(debian_slurm, files))


def _three_tier(tmp_path: Path) -> Plan:
    loaded = load_design(
        write_design(
            tmp_path,
            "name: three-tier\ncompute: {server: dgx-h100, servers: 254, spare_servers: 2}\n"
            "compute_fabric: {scalable_unit_servers: 16}\nmanagement: {management_servers: 2}\n",
        )
    )
    plan = plan_design(loaded)
    assert {d.tier for d in plan.switches("compute")} == {1, 2, 3}
    return plan


@pytest.mark.external
def test_slurmctld_loads_three_tier_topology_with_cores(tmp_path, debian_slurm, load_slurm):
    """A 3-tier fat tree: leaves (merged per SU), pod spines and cores, as slurmctld reports them."""
    plan = _three_tier(tmp_path)
    files = slurm_files(plan, version="22.05")
    servers = [d.name for d in plan.gpu_nodes()]
    _check_against_plan(plan, files, servers, load_slurm(debian_slurm, files))
    assert "SwitchName=compute-core-" in files["topology.conf"]


@pytest.mark.external
def test_slurm_side_of_a_split_design_holds_only_its_servers(debian_slurm, load_slurm):
    _, plan = planned("lab-4-servers")
    files = slurm_files(plan, version="22.05")
    slurm_servers = ["gpu001", "gpu002"]  # kubernetes_servers: 2 takes the last two
    _check_against_plan(plan, files, slurm_servers, load_slurm(debian_slurm, files))
    assert "gpu003" not in "".join(files.values()) and "gpu004" not in "".join(files.values())


# ---- Slurm 26.05 (built by .ci/build-slurm): every example's configs, for 26.05 and for the design's own release.
SLURM_EXAMPLES = [
    name
    for name in EXAMPLES
    if (yaml.safe_load((DESIGNS / f"{name}.yaml").read_text()).get("scheduler") or {}).get("kind") != "kubernetes"
]


def _members(plan: Plan, servers: list[str]) -> dict[str, list[str]]:
    """The plan leaves each merged Slurm leaf stands for (scheduling's leaf groups)."""
    from gpucluster.analyse.scheduling import fabric_tree

    return {s.name: list(s.members) for s in fabric_tree(plan, servers).switches if s.tier == 1}


def _check_topology_yaml(plan: Plan, files: dict[str, str], servers: list[str], loaded: Loaded) -> None:
    """A topology.yaml load: the tree slurmctld reports is the plan's fabric, and scontrol show topoconf prints back
    every topology of the file (slurmctld ignores misspelt keys in topology.yaml, so the file is compared with what
    was loaded)."""
    assert _tree_switches(loaded), loaded.topology_text
    written = yaml.safe_load(files["topology.yaml"])
    shown = yaml.safe_load(loaded.topoconf)
    assert _topologies(shown) == _topologies(written), loaded.topoconf


def _topologies(document: object) -> list[tuple[str, str, bool, list[tuple[str, tuple[str, ...]]]]]:
    """(name, plugin, cluster default, [(switch or block, hosts and children expanded)]) per topology."""
    out = []
    for topology in document:  # type: ignore[attr-defined]
        # topoconf prints every plugin's section, empty ones as {}: the topology's plugin is its non-empty one
        plugin = "tree" if topology.get("tree") else "block" if topology.get("block") else "flat"
        entries = []
        if plugin == "tree":
            for switch in topology["tree"]["switches"]:
                below = switch.get("nodes") or switch.get("children") or ""
                entries.append((switch["switch"], tuple(hostlist.expand_hostlist(below))))
        elif plugin == "block":
            for block in topology["block"]["blocks"]:
                entries.append((block["block"], tuple(hostlist.expand_hostlist(block["nodes"]))))
            entries.append(("block_sizes", tuple(str(s) for s in topology["block"].get("block_sizes", []))))
        out.append((topology["topology"], plugin, bool(topology.get("cluster_default")), sorted(entries)))
    return sorted(out)


@pytest.mark.external
@pytest.mark.parametrize("design", SLURM_EXAMPLES)
@pytest.mark.parametrize("version", ["26.05", "design"])
def test_slurm_26_05_loads_every_example_and_agrees_with_the_plan(design, version, current_slurm, load_slurm):
    _, plan = planned(design)
    files = slurm_files(plan, version=None if version == "design" else version)
    servers = list(scheduler_split(plan).slurm)
    loaded = load_slurm(current_slurm, files)
    _check_against_plan(plan, files, servers, loaded)
    if "topology.yaml" in files:
        _check_topology_yaml(plan, files, servers, loaded)
    if version == "26.05":
        assert "Exclusive=NODE" in files["slurm.conf"] and "OverSubscribe=EXCLUSIVE" not in files["slurm.conf"]
        parts = {p["PartitionName"]: p for p in loaded.partitions}
        assert all(p["Exclusive"] == "NODE" for p in parts.values()), parts


@pytest.mark.external
def test_slurm_26_05_loads_a_three_tier_tree(tmp_path, current_slurm, load_slurm):
    plan = _three_tier(tmp_path)
    files = slurm_files(plan, version="26.05")
    servers = [d.name for d in plan.gpu_nodes()]
    loaded = load_slurm(current_slurm, files)
    _check_against_plan(plan, files, servers, loaded)
    _check_topology_yaml(plan, files, servers, loaded)
    assert {int(r["Level"]) for r in _tree_switches(loaded).values()} == {0, 1, 2}


@pytest.mark.external
def test_slurm_26_05_loads_nvlink_blocks(tmp_path, current_slurm, load_slurm):
    """The block topology (the NVLink domains, cluster default) beside the fabric tree, as 26.05 loads them."""
    plan = nvl_plan(tmp_path)
    files = slurm_files(plan, version="26.05")
    servers = [d.name for d in plan.gpu_nodes()]
    loaded = load_slurm(current_slurm, files)
    _check_against_plan(plan, files, servers, loaded)
    _check_topology_yaml(plan, files, servers, loaded)
    assert loaded.topology == loaded.topologies["nvlink"]  # the blocks are the cluster default
    blocks = [r for r in loaded.topologies["nvlink"] if "BlockName" in r]
    assert sorted(tuple(hostlist.expand_hostlist(b["Nodes"])) for b in blocks) == sorted(
        tuple(d) for d in _nvl_domains(files)
    )


def _nvl_domains(files: dict[str, str]) -> list[list[str]]:
    topology = next(t for t in yaml.safe_load(files["topology.yaml"]) if "block" in t)
    return [hostlist.expand_hostlist(b["nodes"]) for b in topology["block"]["blocks"]]


def test_the_topoconf_comparison_catches_a_misspelt_key():
    """slurmctld ignores a misspelt key in topology.yaml; comparing the file with topoconf is what catches it."""
    written = [
        {"topology": "fabric", "cluster_default": True, "tree": {"switches": [{"switch": "s1", "nodes": "a[1-2]"}]}}
    ]
    shown = [{"topology": "fabric", "cluster_default": True, "tree": {"switches": [{"switch": "s1"}]}}]
    assert _topologies(shown) != _topologies(written)


@pytest.mark.external
def test_slurmd_parses_gres_and_cgroup_conf(tmp_path, debian_slurm):
    """slurmd -G reads slurm.conf, gres.conf and cgroup.conf for one node and prints its GPUs."""
    if os.getuid() != 0:
        pytest.skip("slurmd -G needs GPU character devices; mknod needs root")
    _, plan = planned("superpod-h100-1su")
    local = local_copy(slurm_files(plan, version="22.05"), tmp_path)
    for name, text in local.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "dev").mkdir()
    for index in range(8):
        os.mknod(tmp_path / "dev" / f"nvidia{index}", 0o600 | 0o020000, os.makedev(195, index))
    env = {**os.environ, "SLURM_CONF": str(tmp_path / "slurm.conf")}
    result = subprocess.run(
        [str(debian_slurm.slurmd), "-G", "-N", "gpu007", "-f", str(tmp_path / "slurm.conf")],
        env=env,
        capture_output=True,
        text=True,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert not problems(output), output
    assert re.search(r"Gres Name=gpu Type=h100 Count=8 .*File=\S+/dev/nvidia\[0-7\]", output), output


def test_rejected_line_is_caught():
    """The log check is not blind: a misspelt key in a copy is reported, and so is a deprecated option."""
    assert problems("slurmctld: error: _parse_next_key: Parsing error at unrecognized key: Bogus")
    assert problems("slurmctld: error: WARNING: Multiple leaf switches contain nodes: gpu[001-004]")
    assert not problems("slurmctld: error: mpi/pmix_v4: init: can not load PMIx library")


def test_configs_target_the_designs_slurm_version():
    _, plan = planned("superpod-h100-1su")
    files = slurm_files(plan)  # the design's default, 25.11
    assert "Slurm 25.11" in files["slurm.conf"] and "topology.yaml" in files
    assert "OverSubscribe=EXCLUSIVE" in files["slurm.conf"]  # Exclusive=NODE only from 26.05
    older = slurm_files(plan, version="24.05")
    assert "TopologyPlugin=topology/tree" in older["slurm.conf"] and "topology.conf" in older
    newer = slurm_files(plan, version="25.05")
    assert "topology.conf" not in newer and "TopologyPlugin" not in newer["slurm.conf"].split("# Topologies")[0]
    topologies = yaml.safe_load(newer["topology.yaml"])
    assert [t["topology"] for t in topologies] == ["fabric"] and topologies[0]["cluster_default"] is True
    switches = {s["switch"]: s for s in topologies[0]["tree"]["switches"]}
    assert hostlist.expand_hostlist(switches["compute-leaf-su01"]["nodes"]) == [f"gpu{i:03d}" for i in range(1, 32)]
    assert switches["compute-spine-01"]["children"] == "compute-leaf-su01"


NVL_CATALOG = """
sources:
  TEST: "test-only part: an NVL72-class compute tray (4 GPUs per tray, 72 GPUs per NVLink domain)"
parts:
  - id: nvl-test-tray
    kind: gpu_server
    vendor: Test
    model: NVL test tray
    u_height: 1
    power_max_w: 2000
    power_typical_w: 1600
    psus: {count: 2, rating_w: 2000, redundancy: "1+1", inlet: C20}
    gpu: {model: Test GPU, count: 4, memory_gb: 186, tdp_w: 1200, bf16_dense_tflops: 2500, gres_type: tgpu,
          nvlink_domain_gpus: 72, nvlink_bandwidth_gbytes_per_s: 1800}
    cpu: {model: Test CPU, sockets: 2, cores_per_socket: 72, threads_per_core: 1}
    memory_gb: 960
    os_reserved_memory_gb: 48
    ports:
      - {role: compute, cage_type: osfp, cages: 4, speed_gbps: 800, technology: infiniband-xdr, name_format: "P{cage}",
         os_devices: [mlx5_0, mlx5_1, mlx5_4, mlx5_5], netdevs: [ibp3s0, ibp4s0, ibp5s0, ibp6s0]}
      - {role: storage, cage_type: qsfp112, cages: 2, speed_gbps: 400, technology: ethernet, name_format: "S{cage}"}
      - {role: inband, cage_type: qsfp112, cages: 2, speed_gbps: 200, technology: ethernet, name_format: "I{cage}",
         netdevs: [eth0, eth1]}
      - {role: bmc, cage_type: rj45, cages: 1, speed_gbps: 1, technology: ethernet, name_format: "BMC"}
    sources: {u_height: TEST, power_max_w: TEST, power_typical_w: TEST, psus: TEST, gpu: TEST, cpu: TEST,
              memory_gb: TEST, os_reserved_memory_gb: TEST, ports: TEST}
"""

NVL_DESIGN = """
name: nvl-test
catalog: [nvl.yaml]
compute: {server: nvl-test-tray, servers: 36, spare_servers: 0}
compute_fabric: {scalable_unit_servers: 18, fabric_manager: null}
storage_network: {technology: ethernet, switch: sn5600}
parallel_filesystem: {kind: weka}
management: {management_servers: 1}
"""


def nvl_plan(tmp_path: Path) -> Plan:
    write_design(tmp_path, NVL_CATALOG, "nvl.yaml")
    return plan_design(load_design(write_design(tmp_path, NVL_DESIGN)))


def test_nvlink_domains_become_blocks_from_slurm_23_11(tmp_path):
    """The catalog has no NVL72-class server today; a test catalog entry drives the block code path. 22.05
    cannot load topology/block, so the file is checked against topology.conf(5)'s block grammar."""
    plan = nvl_plan(tmp_path)
    files = slurm_files(plan, version="24.05")
    conf = files["slurm.conf"]
    assert "TopologyPlugin=topology/block" in conf and "SwitchType=switch/nvidia_imex" in conf
    lines = [line for line in files["topology.conf"].splitlines() if line and not line.startswith("#")]
    blocks = [re.fullmatch(r"BlockName=(\S+) Nodes=(\S+)", line) for line in lines[:-1]]
    assert all(blocks) and lines[-1] == "BlockSizes=18,36"
    domains = [hostlist.expand_hostlist(b.group(2)) for b in blocks]
    assert [len(d) for d in domains] == [18, 18]
    for domain in domains:  # one NVLink domain = the trays of one rack
        assert len({plan.devices[n].rack for n in domain}) == 1
    older = slurm_files(plan, version="23.02")
    assert "TopologyPlugin=topology/tree" in older["slurm.conf"] and "need the block plugin" in older["topology.conf"]
    newest = yaml.safe_load(slurm_files(plan, version="25.05")["topology.yaml"])
    assert [(t["topology"], t["cluster_default"]) for t in newest] == [("fabric", False), ("nvlink", True)]
    assert newest[1]["block"]["block_sizes"] == [18, 36]


def test_no_block_topology_for_eight_gpu_servers():
    _, plan = planned("superpod-h200-4su")
    files = slurm_files(plan)
    assert "BlockName" not in files["topology.conf"] and "nvidia_imex" not in files["slurm.conf"]


def test_kubernetes_only_design_writes_no_slurm_config():
    _, plan = planned("b200-roce-2su")
    assert slurm_files(plan) == {}


@pytest.mark.parametrize(
    ("scheduler", "message"),
    [
        ("{kind: both}", "needs kubernetes_servers"),
        ("{kind: slurm, kubernetes_servers: 2}", "only used with kind 'both'"),
        ("{kind: both, kubernetes_servers: 4}", "leaves no production server for Slurm"),
        ("{kind: kubernetes, kubernetes: {teams: [{name: a, gpus: 24}, {name: b, gpus: 16}]}}", "add up to 40 GPUs"),
        ("{kind: kubernetes, kubernetes: {teams: [{name: a, gpus: 8}, {name: a, gpus: 8}]}}", "repeated: a"),
        ("{kind: kubernetes, kubernetes: {teams: [{name: Team_A, gpus: 8}]}}", "String should match pattern"),
        ("{kind: slurm, slurm: {version: '24.06'}}", "'24.06' is not allowed; expected '22.05'"),
        ("{kind: kubernetes, kubernetes: {topology_label_prefix: a.b}}", "topology_label_prefix is for"),
        ("{kind: kubernetes, kubernetes: {kueue_api: v1alpha1}}", "expected 'v1beta2' or 'v1beta1'"),
    ],
)
def test_scheduler_settings_get_located_errors(tmp_path, scheduler, message):
    path = write_design(tmp_path, f"name: s\ncompute: {{server: hgx-h100-oem, servers: 4}}\nscheduler: {scheduler}\n")
    with pytest.raises(DesignError) as error:
        plan_design(load_design(path))
    text = str(error.value)
    assert message in text and re.search(r"design\.yaml:\d+:\d+: scheduler", text), text


def test_two_controllers_share_their_state_and_slurmdbd_runs_on_both_head_nodes():
    _, plan = planned("superpod-h200-4su")
    conf = slurm_files(plan)["slurm.conf"]
    heads = [d.name for d in plan.devices_with("management-server")]
    assert re.findall(r"^SlurmctldHost=(.*)$", conf, re.M) == heads[:2]
    assert "StateSaveLocation=/cm/shared/apps/slurm/var/cm/statesave\n" in conf
    assert f"AccountingStorageHost={heads[0]}\n" in conf and f"AccountingStorageBackupHost={heads[1]}\n" in conf
    assert "MpiDefault=pmix\n" in conf


def test_one_controller_keeps_its_state_locally_and_a_design_can_name_the_shared_path(tmp_path):
    one = plan_design(
        load_design(write_design(tmp_path, "name: one\ncompute: {servers: 4}\nmanagement: {management_servers: 1}\n"))
    )
    conf = slurm_files(one)["slurm.conf"]
    assert "StateSaveLocation=/var/spool/slurmctld\n" in conf and "AccountingStorageBackupHost" not in conf
    named = plan_design(
        load_design(
            write_design(
                tmp_path,
                "name: named\ncompute: {servers: 4}\nscheduler: {slurm: {state_save_location: /lustre/slurm/state}}\n",
                "named.yaml",
            )
        )
    )
    assert "StateSaveLocation=/lustre/slurm/state\n" in slurm_files(named)["slurm.conf"]


def test_a_state_path_with_spaces_or_a_newline_is_refused(tmp_path):
    path = write_design(
        tmp_path,
        'name: bad\ncompute: {servers: 4}\nscheduler: {slurm: {state_save_location: "/x\\nMpiDefault=none"}}\n',
    )
    with pytest.raises(DesignError) as error:
        load_design(path)
    assert "state_save_location" in str(error.value)


def test_pyxis_writes_plugstack_conf_and_none_writes_none(tmp_path):
    _, plan = planned("superpod-h200-4su")
    files = slurm_files(plan)
    assert files["plugstack.conf"].splitlines()[-1] == "required spank_pyxis.so"
    plain = plan_design(
        load_design(
            write_design(tmp_path, "name: plain\ncompute: {servers: 4}\nscheduler: {slurm: {containers: none}}\n")
        )
    )
    assert "plugstack.conf" not in slurm_files(plain)


@pytest.mark.external
def test_slurm_26_05_takes_the_ha_accounting_pmix_and_plugstack_settings(current_slurm, load_slurm):
    """slurmctld 26.05 loads the HA configs with plugstack.conf beside them, without complaint, and runs pmix."""
    _, plan = planned("superpod-h200-4su")
    files = slurm_files(plan)
    assert "plugstack.conf" in files
    loaded = load_slurm(current_slurm, files)
    assert not loaded.problems, loaded.problems
    config = dict(re.findall(r"^(\w+)\s+= (.*)$", loaded.config, re.M))
    assert config["MpiDefault"] == "pmix"


# --- the site's partitions and accounts (scheduler.slurm.partitions, .accounts) ---------------------------------

SITE_SLURM = """name: uni-48
compute: {server: dgx-b200, servers: 48, spare_servers: 0}
scheduler:
  kind: slurm
  slurm:
    version: "26.05"
    partitions:
      - {name: long, nodes: 36, max_time: "7-00:00:00", default_time: "1-00:00:00",
         allow_accounts: [physics, chemistry, biology]}
      - {name: debug, nodes: 12, default: true, max_time: "2:00:00", default_time: "30", max_nodes: 4}
    accounts:
      - {name: sciences, fairshare: 100}
      - {name: physics, parent: sciences, fairshare: 50, max_gpus: 192, users: [alice, bob]}
      - {name: chemistry, parent: sciences, fairshare: 30, max_jobs: 20, users: [carol]}
      - {name: biology, parent: sciences, fairshare: 20, max_wall: "3-00:00:00", users: [dave]}
"""


def _site_plan(tmp_path: Path, text: str = SITE_SLURM) -> Plan:
    return plan_design(load_design(write_design(tmp_path, text)))


def test_slurm_26_05_loads_the_sites_partitions_and_agrees_with_the_design(tmp_path, current_slurm, load_slurm):
    """Two partitions, "long" (36 servers) and "debug" (12, the default), and three departments' accounts: the real
    slurmctld loads the configs without complaint and reports each partition's servers, limits and accounts."""
    plan = _site_plan(tmp_path)
    files = slurm_files(plan)
    assert {"slurmdbd.conf", "accounts.sh"} <= set(files)
    loaded = load_slurm(current_slurm, files)
    assert not loaded.problems, loaded.problems
    parts = {p["PartitionName"]: p for p in loaded.partitions}
    assert sorted(parts) == ["burnin", "debug", "long"]  # no gpu partition; no spares partition without spares
    servers = [d.name for d in plan.gpu_nodes()]
    assert hostlist.expand_hostlist(parts["long"]["Nodes"]) == servers[:36]
    assert hostlist.expand_hostlist(parts["debug"]["Nodes"]) == servers[36:]
    assert (parts["debug"]["Default"], parts["long"]["Default"]) == ("YES", "NO")
    assert (parts["long"]["MaxTime"], parts["long"]["DefaultTime"]) == ("7-00:00:00", "1-00:00:00")
    assert (parts["debug"]["MaxTime"], parts["debug"]["DefaultTime"], parts["debug"]["MaxNodes"]) == (
        "02:00:00",
        "00:30:00",
        "4",
    )
    assert parts["long"]["AllowAccounts"] == "physics,chemistry,biology"
    assert parts["debug"]["AllowAccounts"] == "ALL"


def test_accounts_are_added_parents_first_with_their_shares_limits_and_users(tmp_path):
    text = (
        SITE_SLURM.replace("      - {name: sciences, fairshare: 100}\n", "")
        + "      - {name: sciences, fairshare: 100}\n"
    )  # the parent listed last: still added first
    files = slurm_files(_site_plan(tmp_path, text))
    script = files["accounts.sh"]
    added = re.findall(r"^add account (\S+) cluster=\"\$cluster\" parent=(\S+)$", script, re.M)
    assert added == [("sciences", "root"), ("physics", "sciences"), ("chemistry", "sciences"), ("biology", "sciences")]
    assert "set_limits physics fairshare=50 grptres=gres/gpu=192 maxjobs=-1 maxwall=-1\n" in script
    assert "set_limits chemistry fairshare=30 grptres=gres/gpu=-1 maxjobs=20 maxwall=-1\n" in script
    assert "set_limits biology fairshare=20 grptres=gres/gpu=-1 maxjobs=-1 maxwall=3-00:00:00\n" in script
    assert re.findall(r"^add user (\S+) account=(\S+)", script, re.M) == [
        ("alice", "physics"),
        ("bob", "physics"),
        ("carol", "chemistry"),
        ("dave", "biology"),
    ]
    assert "cluster=uni_48\n" in script
    syntax = subprocess.run(["sh", "-n"], input=script, text=True, capture_output=True)
    assert syntax.returncode == 0, syntax.stderr
    conf = files["slurm.conf"]
    assert "AccountingStorageEnforce=associations,limits\n" in conf
    heads = [d.name for d in _site_plan(tmp_path).devices_with("management-server")]
    dbd = files["slurmdbd.conf"]
    assert (
        f"DbdHost={heads[0]}\n" in dbd
        and f"DbdBackupHost={heads[1]}\n" in dbd
        and "StoragePass" not in dbd.split("\n# ")[-1]
    )


def test_accounts_sh_runs_every_sacctmgr_command_it_means_to(tmp_path):
    """accounts.sh under a stand-in sacctmgr on PATH: every command runs, in order, and a failing 'modify' stops
    the script with an error instead of leaving a limit unset."""
    script = slurm_files(_site_plan(tmp_path))["accounts.sh"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls"
    fake = bin_dir / "sacctmgr"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {log}\n[ "$2" != modify ] || [ -z "${{FAIL_MODIFY:-}}" ]\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    ran = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == "-i add cluster uni_48"
    assert (
        "-i modify account where name=physics cluster=uni_48 set fairshare=50 grptres=gres/gpu=192 maxjobs=-1 "
        "maxwall=-1" in calls
    )
    assert sum(c.startswith("-i add user") for c in calls) == 4
    failed = subprocess.run(["sh", "-c", script], env={**env, "FAIL_MODIFY": "1"}, capture_output=True, text=True)
    assert failed.returncode == 1 and "cannot set the shares and limits of account sciences" in failed.stderr


def test_designs_without_partitions_keep_the_gpu_partition_and_write_no_accounts():
    _, plan = planned("superpod-h100-1su")
    files = slurm_files(plan)
    assert "PartitionName=gpu " in files["slurm.conf"] and "AccountingStorageEnforce" not in files["slurm.conf"]
    assert "slurmdbd.conf" not in files and "accounts.sh" not in files


@pytest.mark.parametrize(
    ("partitions", "accounts", "where", "message"),
    [
        ("[{name: long, nodes: 60}]", "[]", "partitions.0.nodes", "asks for 60 servers; Slurm runs 48"),
        (
            "[{name: long, nodes: 40}, {name: debug, nodes: 12}]",
            "[]",
            "partitions.1.nodes",
            "the partitions before it take 40",
        ),
        ("[{name: long, node_list: [gpu001, gpu999]}]", "[]", "partitions.0.node_list.1", "'gpu999' is not a"),
        ("[{name: a, nodes: 1}, {name: a, nodes: 1}]", "[]", "scheduler.slurm", "repeated: a"),
        ("[]", "[{name: x}, {name: x}]", "scheduler.slurm", "account names must be unique; repeated: x"),
        ("[]", "[{name: physics, parent: science}]", "scheduler.slurm", "unknown parent 'science'"),
        ("[]", "[{name: a, parent: b}, {name: b, parent: a}]", "scheduler.slurm", "go round in a circle"),
        ("[{name: a, nodes: 1, allow_accounts: [nobody]}]", "[]", "scheduler.slurm", "unknown account(s) nobody"),
        ("[{name: Long, nodes: 1}]", "[]", "partitions.0.name", "String should match pattern"),
        ("[{name: burnin, nodes: 1}]", "[]", "partitions.0", "is taken"),
        ("[{name: default, nodes: 1}]", "[]", "partitions.0", "is taken"),
        ("[{name: a}]", "[]", "partitions.0", "give 'nodes'"),
        ("[{name: a, nodes: 1, max_time: '1 day'}]", "[]", "partitions.0.max_time", "String should match pattern"),
        ("[{name: a, nodes: 1, max_time: '1:00:00', default_time: '2:00:00'}]", "[]", "partitions.0", "longer than"),
        ("[{name: a, nodes: 1, default: true}, {name: b, nodes: 1, default: true}]", "[]", "slurm", "only one"),
        ("[]", "[{name: a, users: ['Bob Smith']}]", "accounts.0.users", "is not a user name"),
        ("[]", "[{name: root}]", "accounts.0", "'root' is Slurm's own top account"),
    ],
)
def test_partitions_and_accounts_get_located_errors(tmp_path, partitions, accounts, where, message):
    text = (
        "name: s\ncompute: {server: dgx-b200, servers: 48, spare_servers: 0}\n"
        f"scheduler: {{slurm: {{partitions: {partitions}, accounts: {accounts}}}}}\n"
    )
    path = write_design(tmp_path, text)
    with pytest.raises(DesignError) as error:
        plan_design(load_design(path))
    text = str(error.value)
    assert message in text and re.search(r"design\.yaml:\d+:\d+: \S*" + re.escape(where), text), text


def test_a_bad_partition_is_exit_2_and_writes_nothing(tmp_path):
    from click.testing import CliRunner

    from gpucluster.cli import main

    path = write_design(tmp_path, SITE_SLURM.replace("nodes: 36", "nodes: 37"))
    result = CliRunner().invoke(main, ["build", str(path), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2 and "asks for 12 servers" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_partitions_need_a_slurm_side(tmp_path):
    path = write_design(
        tmp_path,
        "name: k\ncompute: {servers: 4}\nscheduler: {kind: kubernetes, slurm: {partitions: [{name: a, nodes: 1}]}}\n",
    )
    with pytest.raises(DesignError, match="need a Slurm side"):
        load_design(path)
