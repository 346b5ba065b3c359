"""Slurm configs: a real slurmctld (Debian's slurm-wlm 22.05) loads them, and what it reports agrees with the
plan; slurmd -G parses gres.conf and cgroup.conf. What 22.05 cannot load (the block plugin, topology.yaml,
24.05-only keys) is checked structurally below, against the man pages' grammar."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import hostlist
import pytest
import yaml
from conftest import planned, write_design

from gpucluster import load_design, plan_design
from gpucluster.artifacts.slurm import slurm_files
from gpucluster.errors import DesignError
from gpucluster.plan.model import Plan

SLURMCTLD = shutil.which("slurmctld") or "/usr/sbin/slurmctld"
SLURMD = shutil.which("slurmd") or "/usr/sbin/slurmd"
needs_slurm = pytest.mark.skipif(
    not (Path(SLURMCTLD).exists() and shutil.which("scontrol")), reason="slurm-wlm not installed (.ci/install-tools)"
)

# Log lines the test environment causes, not the configs: slurmctld probes every MPI plugin and this machine
# has no PMIx library; a fresh state directory has no state files yet; there is no NVIDIA driver (NVML) here;
# the copy stores no accounting (see _local_copy) while jobacct_gather still gathers it.
_ENVIRONMENT_NOISE = (
    "Job accounting information gathered, but not stored",
    "you have asked for it not to be stored (accounting_storage/none)",
    "can only be used with SlurmDBD, ignoring",  # fair-share weights: checked below in the key list instead
    "mpi/pmix",
    "MPI: Cannot create context",
    "state file",
    "Trying backup state save file",
    "We were configured with nvml functionality, but that lib wasn't found",
)
_BAD = re.compile(r"error|fatal|warning|ignor|unrecognized|invalid|unknown|not supported", re.IGNORECASE)


def _local_copy(files: dict[str, str], scratch: Path) -> dict[str, str]:
    """The generated configs with only what lets slurmctld run here changed: the controller is localhost,
    no munge (auth/none, cred/none), no accounting (slurmdbd needs a MySQL server, and slurmctld will not start
    with AccountingStorageTRES when slurmdbd is down: these three lines go unchecked), state and logs in the
    scratch folder, nodes FUTURE (no name resolution), GPU device files in the scratch folder. Every replaced
    key must be present."""
    conf = files["slurm.conf"]
    port = _free_port()
    replace = {
        r"^(SlurmctldHost=.*\n)+": "SlurmctldHost=localhost\n",
        r"^AuthType=.*$": "AuthType=auth/none",
        r"^CredType=.*$": "CredType=cred/none",
        r"^AccountingStorageType=.*$": "AccountingStorageType=accounting_storage/none",
        r"^AccountingStorageHost=.*\n": "",
        r"^AccountingStorageTRES=.*\n": "",
        r"^SlurmUser=.*$": f"SlurmUser={_user()}",
        r"^StateSaveLocation=.*$": f"StateSaveLocation={scratch}/state",
        r"^SlurmdSpoolDir=.*$": f"SlurmdSpoolDir={scratch}/spool",
        r"^SlurmctldPort=.*$": f"SlurmctldPort={port}",
        r"^SlurmdPort=.*$": f"SlurmdPort={port + 1}",
    }
    for pattern, new in replace.items():
        conf, count = re.subn(pattern, new, conf, flags=re.MULTILINE)
        assert count, f"slurm.conf has no line matching {pattern}"
    conf = re.sub(r"^(NodeName=.*)$", r"\1 State=FUTURE", conf, flags=re.MULTILINE)
    conf += (
        f"SlurmctldPidFile={scratch}/slurmctld.pid\nSlurmctldLogFile={scratch}/slurmctld.log\n"
        f"SlurmdPidFile={scratch}/slurmd.pid\nSlurmctldDebug=info\nMailProg=/bin/true\n"
    )
    local = dict(files)
    local["slurm.conf"] = conf
    local["gres.conf"] = files["gres.conf"].replace("/dev/nvidia", f"{scratch}/dev/nvidia")
    return local


def _free_port() -> int:
    """A port below Linux's ephemeral range (32768-60999), so no client connection of a parallel test takes it
    between this check and slurmctld's bind; the next two are free too (SlurmdPort)."""
    for attempt in range(200):
        port = 10000 + (os.getpid() * 7919 + attempt * 131) % 20000
        try:
            for offset in range(2):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port + offset))
        except OSError:
            continue
        return port
    raise AssertionError("no free port for slurmctld")


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def _problems(log: str) -> list[str]:
    return [
        line
        for line in log.splitlines()
        if _BAD.search(line) and not any(noise in line for noise in _ENVIRONMENT_NOISE)
    ]


def _parse_records(text: str, one_per_line: bool = False) -> list[dict[str, str]]:
    """scontrol output: records separated by blank lines (show topology: one per line), key=value pairs
    separated by spaces."""
    records = []
    for block in re.split(r"\n" if one_per_line else r"\n\s*\n", text.strip()):
        record = {}
        for key, value in re.findall(r"(\w+)=(\S*)", block):
            record.setdefault(key, value)
        if record:
            records.append(record)
    return records


class _Slurmctld:
    """slurmctld in the foreground on the scratch folder's configs, and scontrol against it."""

    def __init__(self, scratch: Path):
        self.scratch = scratch
        self.env = {**os.environ, "SLURM_CONF": str(scratch / "slurm.conf")}
        (scratch / "state").mkdir()
        (scratch / "spool").mkdir()
        self.process = subprocess.Popen(
            [SLURMCTLD, "-D", "-i", "-f", str(scratch / "slurm.conf")],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError("slurmctld exited:\n" + self.stop())
            ping = subprocess.run(["scontrol", "ping"], env=self.env, capture_output=True, text=True)
            if "UP" in ping.stdout:
                return
            time.sleep(0.2)
        raise AssertionError("slurmctld did not answer:\n" + self.stop())

    def scontrol(self, *args: str) -> str:
        result = subprocess.run(["scontrol", *args], env=self.env, capture_output=True, text=True, check=True)
        return result.stdout

    def stop(self) -> str:
        """Stop slurmctld; return everything it logged."""
        if self.process.poll() is None:
            self.process.terminate()
        output, _ = self.process.communicate(timeout=30)
        log_file = self.scratch / "slurmctld.log"
        return output + (log_file.read_text() if log_file.exists() else "")


def _load(files: dict[str, str], scratch: Path):
    local = _local_copy(files, scratch)
    for name, text in local.items():
        (scratch / name).write_text(text)
    ctld = _Slurmctld(scratch)
    try:
        topology = ctld.scontrol("show", "topology")
        nodes = ctld.scontrol("--future", "show", "nodes")
        partitions = ctld.scontrol("show", "partitions")
        config = ctld.scontrol("show", "config")
    finally:
        log = ctld.stop()
    return _parse_records(topology, one_per_line=True), _parse_records(nodes), _parse_records(partitions), config, log


def _plan_fabric(plan: Plan) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """From the plan's links alone: the GPU servers under each compute leaf, and the switches under each switch."""
    servers: dict[str, set[str]] = defaultdict(set)
    below: dict[str, set[str]] = defaultdict(set)
    for link in plan.links:
        if link.network != "compute":
            continue
        if link.tier == 0 and plan.devices[link.a_device].role == "gpu-server":
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


def _check_against_plan(plan: Plan, files: dict[str, str], servers: list[str], scratch: Path) -> str:
    topology, nodes, partitions, config, log = _load(files, scratch)
    problems = _problems(log)
    assert not problems, "slurmctld complained:\n" + "\n".join(problems)
    assert "topology/tree" in config and "select/cons_tres" in config

    plan_servers, plan_below = _plan_fabric(plan)
    members = _leaf_members(files["topology.conf"])
    reported = {r["SwitchName"]: r for r in topology}
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

    by_name = {r["NodeName"]: r for r in nodes}
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
    parts = {p["PartitionName"]: p for p in partitions}
    assert parts["gpu"]["OverSubscribe"] == "EXCLUSIVE" and parts["gpu"]["Default"] == "YES"
    return log


@needs_slurm
def test_slurmctld_loads_one_su_configs_and_agrees_with_the_plan(tmp_path):
    _, plan = planned("superpod-h100-1su")
    files = slurm_files(plan, version="22.05")
    servers = [d.name for d in plan.devices_with("gpu-server")]
    _check_against_plan(plan, files, servers, tmp_path)


@needs_slurm
def test_slurmctld_loads_three_tier_topology_with_cores(tmp_path):
    """A 3-tier fat tree: leaves (merged per SU), pod spines and cores, as slurmctld reports them."""
    loaded = load_design(
        write_design(
            tmp_path,
            "name: three-tier\ncompute: {server: dgx-h100, servers: 254, spare_servers: 2}\n"
            "compute_fabric: {scalable_unit_servers: 16}\nmanagement: {management_servers: 2}\n",
        )
    )
    plan = plan_design(loaded)
    assert {d.tier for d in plan.switches("compute")} == {1, 2, 3}
    files = slurm_files(plan, version="22.05")
    servers = [d.name for d in plan.devices_with("gpu-server")]
    scratch = tmp_path / "slurm"
    scratch.mkdir()
    _check_against_plan(plan, files, servers, scratch)
    assert "SwitchName=compute-core-" in files["topology.conf"]


@needs_slurm
def test_slurm_side_of_a_split_design_holds_only_its_servers(tmp_path):
    _, plan = planned("lab-4-servers")
    files = slurm_files(plan, version="22.05")
    slurm_servers = ["gpu001", "gpu002"]  # kubernetes_servers: 2 takes the last two
    _check_against_plan(plan, files, slurm_servers, tmp_path)
    assert "gpu003" not in "".join(files.values()) and "gpu004" not in "".join(files.values())


@needs_slurm
@pytest.mark.skipif(os.getuid() != 0, reason="slurmd -G needs GPU character devices; mknod needs root")
def test_slurmd_parses_gres_and_cgroup_conf(tmp_path):
    """slurmd -G reads slurm.conf, gres.conf and cgroup.conf for one node and prints its GPUs."""
    _, plan = planned("superpod-h100-1su")
    local = _local_copy(slurm_files(plan, version="22.05"), tmp_path)
    for name, text in local.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "dev").mkdir()
    for index in range(8):
        os.mknod(tmp_path / "dev" / f"nvidia{index}", 0o600 | 0o020000, os.makedev(195, index))
    env = {**os.environ, "SLURM_CONF": str(tmp_path / "slurm.conf")}
    result = subprocess.run(
        [SLURMD, "-G", "-N", "gpu007", "-f", str(tmp_path / "slurm.conf")], env=env, capture_output=True, text=True
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert not _problems(output), output
    assert re.search(r"Gres Name=gpu Type=h100 Count=8 .*File=\S+/dev/nvidia\[0-7\]", output), output


def test_rejected_line_is_caught(tmp_path):
    """The log check is not blind: a misspelt key in a copy is reported."""
    assert _problems("slurmctld: error: _parse_next_key: Parsing error at unrecognized key: Bogus")
    assert _problems("slurmctld: error: WARNING: Multiple leaf switches contain nodes: gpu[001-004]")
    assert not _problems("slurmctld: error: mpi/pmix_v4: init: can not load PMIx library")


def test_configs_target_the_designs_slurm_version():
    _, plan = planned("superpod-h100-1su")
    files = slurm_files(plan)  # the design's default, 24.05
    assert "Slurm 24.05" in files["slurm.conf"] and "TopologyPlugin=topology/tree" in files["slurm.conf"]
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
    ],
)
def test_scheduler_settings_get_located_errors(tmp_path, scheduler, message):
    path = write_design(tmp_path, f"name: s\ncompute: {{server: hgx-h100-oem, servers: 4}}\nscheduler: {scheduler}\n")
    with pytest.raises(DesignError) as error:
        plan_design(load_design(path))
    text = str(error.value)
    assert message in text and re.search(r"design\.yaml:\d+:\d+: scheduler", text), text
