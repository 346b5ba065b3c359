"""Spectrum-X Ethernet fabrics as NVIDIA builds them: rail leaves sized by the switch (64 nodes per rail leaf at
400G on SN5600/SN5610), two planes for ConnectX-8 (B300/GB300), and what a plane failure costs."""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import EXAMPLES, planned, write_design
from k8s_upstream import check_custom_resource

from gpucluster import load_design, plan_design
from gpucluster.catalog.load import load_catalog
from gpucluster.catalog.schema import Switch
from gpucluster.errors import DesignError
from gpucluster.plan.fabric import HostPort, LeafGroup, build_clos, leaf_host_ports
from gpucluster.plan.model import Plan, PlanDraft
from gpucluster.plan.queries import links_on

# DGX SuperPOD B300 (Spectrum-X) RA Table 3, 64 nodes per SU, two planes:
# SU -> (nodes, leaf, spine, node-leaf, leaf-spine). Leaf and spine count both planes.
B300_SPECTRUM_X_TABLE_3 = {
    1: (64, 16, 8, 512, 512),
    2: (128, 32, 16, 1024, 1024),
    4: (256, 64, 32, 2048, 2048),
    8: (512, 128, 64, 4096, 4096),
    16: (1024, 256, 128, 8192, 8192),
}


def _two_plane_fabric(scalable_units: int, nodes_per_su: int = 64, rails: int = 8) -> Plan:
    """The compute fabric alone: each GPU's ConnectX-8 runs as 2 x 400GbE, one port on each plane's rail leaf."""
    switch = load_catalog().get("sn5610", Switch)
    plan = PlanDraft.scratch("b300-spectrum-x")
    for plane in (1, 2):
        groups = [
            LeafGroup(
                f"su{su:02d}-r{rail}",
                [HostPort(f"su{su}-n{n}", f"p{rail}/{plane}", rail, 400, rail) for n in range(nodes_per_su)],
                su=su,
                rail=rail,
            )
            for su in range(1, scalable_units + 1)
            for rail in range(1, rails + 1)
        ]
        build_clos(plan, network="compute", groups=groups, leaf_part=switch, plane=plane)
    return plan


@pytest.mark.parametrize("scalable_units", sorted(B300_SPECTRUM_X_TABLE_3))
def test_two_plane_sn5610_fabric_matches_the_b300_spectrum_x_ra_table_3(scalable_units):
    """Leaf and spine counts are the table's; node-leaf and leaf-spine count 400G links per plane, which is
    the table's figure whether it is read per plane or in 800G cables of both planes."""
    nodes, leaf, spine, node_leaf, leaf_spine = B300_SPECTRUM_X_TABLE_3[scalable_units]
    plan = _two_plane_fabric(scalable_units)
    switches = plan.switches("compute")
    assert sum(1 for s in switches if s.tier == 1) == leaf
    assert sum(1 for s in switches if s.tier == 2) == spine
    assert not [s for s in switches if s.tier not in (1, 2)]
    for plane in (1, 2):
        links = [link for link in plan.links if link.plane == plane]
        assert sum(1 for link in links if link.tier == 0) == node_leaf
        assert sum(1 for link in links if link.tier == 1) == leaf_spine
        assert {link.speed_gbps for link in links} == {400}
    # read in 800G ports over both planes: every leaf uplink cage (2 x 400G) is used, one per GPU
    uplink_cages = {(link.a_device, link.a_cage) for link in plan.links if link.tier == 1}
    assert len(uplink_cages) == leaf_spine
    # every host's two ports land on different planes' leaves
    assert nodes * 8 * 2 == sum(1 for link in plan.links if link.tier == 0)


def test_an_800g_ethernet_rail_leaf_serves_64_nodes_at_400g_and_a_quantum_2_leaf_32():
    catalog = load_catalog()
    assert leaf_host_ports(catalog.get("sn5600", Switch)) == 64
    assert leaf_host_ports(catalog.get("sn5610", Switch)) == 64
    assert leaf_host_ports(catalog.get("qm9700", Switch)) == 32
    assert leaf_host_ports(catalog.get("q3400-ra", Switch)) == 72
    assert leaf_host_ports(catalog.get("sn5600", Switch), oversubscription=3) == 96


def _b200_roce(tmp_path: Path, servers: int, extra: str = "") -> Plan:
    path = write_design(
        tmp_path,
        f"name: b200-sx\ncompute: {{server: dgx-b200, servers: {servers}, spare_servers: 0}}\n"
        "compute_fabric: {technology: roce, switch: sn5600}\nstorage_network: {technology: ethernet, switch: sn5600}\n"
        f"parallel_filesystem: {{kind: weka}}\n{extra}",
    )
    return plan_design(load_design(path))


def test_the_b200_spectrum_x_example_runs_bluefield_3_supernics_as_nvidia_builds_it():
    """NVIDIA's Spectrum-X runs HGX B200 on BlueField-3 SuperNICs (Network Operator Spectrum-X quick start): the
    example's compute ports are B3140H 400GbE (device ID a2dc), still 8 rail leaves and 4 spines for 64 servers."""
    from gpucluster.artifacts.nccl import nccl_files

    _, plan = planned("b200-roce-2su")
    server = plan.part(plan.gpu_nodes()[0].name)
    (compute,) = server.port_groups("compute")
    assert (server.id, compute.pci_device_id, compute.speed_gbps) == ("hgx-b200-spectrum-x", "a2dc", 400)
    assert plan.totals.switches["compute"] == {"leaf": 8, "spine": 4}
    assert plan.settings.servers_per_rack == 2  # as NVIDIA racks B200, in 35 kW racks
    assert "= 0xa2dc ]" in nccl_files(plan)["nccl/nccl.env"]


def test_64_dgx_b200_on_spectrum_x_take_8_leaves_and_4_spines(tmp_path):
    """Two 32-server SUs share each rail leaf: 8 SN5600 leaves of 64 x 400G down and 64 x 400G up, 4 spines."""
    plan = _b200_roce(tmp_path, 64)
    assert plan.totals.switches["compute"] == {"leaf": 8, "spine": 4}
    assert plan.totals.links["compute"] == {"host-leaf": 512, "leaf-spine": 512}
    for leaf in plan.switches("compute", 1):
        down = [link for link in plan.links if link.b_device == leaf.name and link.tier == 0]
        up = [link for link in plan.links if link.a_device == leaf.name and link.tier == 1]
        assert len(down) == len(up) == 64
        assert {link.rail for link in down} == {leaf.rail}
        assert {plan.devices[link.a_device].su for link in down} == {1, 2}
    assert next(s.name for s in plan.switches("compute", 1)) == "compute-leaf-su01-02-r1"
    analysis = plan.analysis["compute"]
    assert analysis["all_hosts_reach_each_other"]
    assert analysis["hops"]["max_switch_hops"] == 3


def test_a_rail_group_past_a_leaf_grows_by_whole_leaves(tmp_path):
    """96 servers = 3 SUs: SUs 1-2 share leaves, SU 3 has its own half-full leaf per rail."""
    plan = _b200_roce(tmp_path, 96)
    names = sorted(s.name for s in plan.switches("compute", 1))
    assert "compute-leaf-su01-02-r8" in names and "compute-leaf-su03-r8" in names
    assert plan.totals.switches["compute"]["leaf"] == 16
    assert plan.analysis["compute"]["all_hosts_reach_each_other"]


PLANES_CATALOG = """
sources:
  TEST: "test-only part: an 8-GPU server whose ConnectX-8 ports run as 2 x 400GbE, one per plane"
parts:
  - id: cx8-test-server
    kind: gpu_server
    vendor: Test
    model: CX-8 test server
    u_height: 10
    power_max_w: 14500
    power_typical_w: 11600
    psus: {count: 6, rating_w: 3300, redundancy: "5+1", inlet: C20}
    gpu: {model: Test GPU, count: 8, memory_gb: 270, tdp_w: 1100, bf16_dense_tflops: 2250, gres_type: tgpu,
          nvlink_domain_gpus: 8, nvlink_bandwidth_gbytes_per_s: 1800}
    cpu: {model: Test CPU, sockets: 2, cores_per_socket: 56, threads_per_core: 2}
    memory_gb: 2048
    os_reserved_memory_gb: 102.4
    ports:
      - {role: compute, cage_type: osfp, cages: 8, speed_gbps: 800, technology: infiniband-xdr,
         name_format: "OSFP{cage}", ethernet_planes: 2, pci_device_id: "1023",
         plane_netdevs: [[r1p1, r1p2], [r2p1, r2p2], [r3p1, r3p2], [r4p1, r4p2], [r5p1, r5p2], [r6p1, r6p2],
                         [r7p1, r7p2], [r8p1, r8p2]]}
      - {role: storage, cage_type: qsfp112, cages: 2, speed_gbps: 400, technology: ethernet, name_format: "S{cage}"}
      - {role: inband, cage_type: qsfp112, cages: 2, speed_gbps: 200, technology: ethernet, name_format: "I{cage}"}
      - {role: bmc, cage_type: rj45, cages: 1, speed_gbps: 1, technology: ethernet, name_format: "BMC"}
    sources: {u_height: TEST, power_max_w: TEST, power_typical_w: TEST, psus: TEST, gpu: TEST, cpu: TEST,
              memory_gb: TEST, os_reserved_memory_gb: TEST, ports: TEST}
"""


def _planes_plan(
    tmp_path: Path,
    fabric: str = "{technology: roce, switch: sn5610, scalable_unit_servers: 64}",
    extra: str = "",
    catalog: str = PLANES_CATALOG,
) -> Plan:
    write_design(tmp_path, catalog, "cx8.yaml")
    path = write_design(
        tmp_path,
        "name: cx8\ncatalog: [cx8.yaml]\ncompute: {server: cx8-test-server, servers: 64, spare_servers: 0}\n"
        f"compute_fabric: {fabric}\nstorage_network: {{technology: ethernet, switch: sn5600}}\n"
        f"parallel_filesystem: {{kind: weka}}\nmanagement: {{management_servers: 1}}\n{extra}",
    )
    return plan_design(load_design(path))


def test_connectx_8_on_spectrum_x_builds_two_planes_each_gpu_one_400g_port_on_each(tmp_path):
    plan = _planes_plan(tmp_path)
    assert plan.settings.compute_planes == 2
    assert plan.totals.switches["compute"] == {"leaf": 16, "spine": 8}  # RA Table 3, 1 SU
    host_links = [link for link in plan.links if link.network == "compute" and link.tier == 0]
    assert len(host_links) == 1024 and {link.speed_gbps for link in host_links} == {400}
    server = sorted(d.name for d in plan.gpu_nodes())[0]
    mine = sorted(
        (link.a_port, link.plane, plan.devices[link.b_device].plane) for link in host_links if link.a_device == server
    )
    assert mine[:2] == [("OSFP1/1", 1, 1), ("OSFP1/2", 2, 2)]
    for switch in plan.switches("compute"):
        assert switch.plane in (1, 2) and switch.name.startswith(f"compute-p{switch.plane}-")
    for link in links_on(plan, "compute"):
        if link.tier:
            assert plan.devices[link.a_device].plane == plan.devices[link.b_device].plane == link.plane


def test_a_plane_failure_halves_bandwidth_and_cuts_no_gpu_off(tmp_path):
    """B300 RA: "A single switch failure, transceiver failure or cable failure will not lead to a catastrophic
    job abortion ... continue to operate on 1/2 of the original bandwidth"."""
    analysis = _planes_plan(tmp_path).analysis["compute"]
    assert analysis["all_hosts_reach_each_other"]
    assert set(analysis["planes"]) == {"1", "2"}
    for plane in analysis["planes"].values():
        assert plane["all_hosts_reach_each_other"] and plane["host_ports"] == 512
        assert plane["hops"]["max_switch_hops"] == 3
    assert analysis["plane_failure"] == {
        "plane": 1,
        "host_ports_lost": 512,
        "hosts_cut_off": 0,
        "bandwidth_kept_fraction": 0.5,
    }
    leaf = analysis["single_switch_failure"]["leaf"]
    assert leaf["still_connected"] and leaf["host_ports_cut_off"] == 64


def test_planes_are_refused_where_the_ports_do_not_split(tmp_path):
    path = write_design(
        tmp_path,
        "name: x\ncompute: {server: dgx-b200, servers: 8}\ncompute_fabric: {technology: roce, planes: 2}\n",
    )
    with pytest.raises(DesignError, match=r"planes: dgx-b200's compute port does not split into planes"):
        load_design_and_plan(path)
    with pytest.raises(DesignError, match=r"compute_fabric\.planes: .*splits into 2 planes; use 2"):
        _planes_plan(tmp_path, "{technology: roce, switch: sn5610, planes: 1}")
    path = write_design(tmp_path, "name: x\ncompute: {server: dgx-h100, servers: 8}\ncompute_fabric: {planes: 2}\n")
    with pytest.raises(DesignError, match="planes split Ethernet ports; this fabric is infiniband-ndr"):
        load_design_and_plan(path)


def load_design_and_plan(path: Path) -> Plan:
    return plan_design(load_design(path))


# --- the host side: NCCL and Kubernetes on a RoCE fabric ------------------------------------------------------


def _k8s_roce_plan(tmp_path: Path, server: str = "dgx-h100", extra: str = "") -> Plan:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = write_design(
        tmp_path,
        f"name: roce-k8s\ncompute: {{server: {server}, servers: 16, spare_servers: 0}}\n"
        "compute_fabric: {technology: roce, switch: sn5600}\nstorage_network: {technology: ethernet, switch: sn5600}\n"
        f"parallel_filesystem: {{kind: weka}}\nscheduler: {{kind: kubernetes{extra}}}\n",
    )
    return plan_design(load_design(path))


def test_each_rail_gets_a_secondary_network_with_the_routed_31_its_leaf_is_configured_with(tmp_path):
    from gpucluster.artifacts.kubernetes import kubernetes_manifests
    from gpucluster.artifacts.switch_config import switch_files

    plan = _k8s_roce_plan(tmp_path)
    documents = kubernetes_manifests(plan)["network-operator.yaml"]
    policy, pools, networks = documents[0], documents[1:9], documents[9:]
    netdevs = ["enp24s0np0", "enp64s0np0", "enp79s0np0", "enp94s0np0", "enp154s0np0", "enp192s0np0"]
    netdevs += ["enp206s0np0", "enp220s0np0"]  # DGX H100 UG Table 5, Ethernet names, in rail (GPU) order
    resources = json.loads(policy["spec"]["sriovDevicePlugin"]["config"])["resourceList"]
    assert [r["selectors"]["pfNames"] for r in resources] == [[n] for n in netdevs]
    assert [r["resourceName"] for r in resources] == [f"hostdev-rail{r}" for r in range(1, 9)]
    assert set(policy["spec"]) == {"sriovDevicePlugin", "nvIpam", "secondaryNetwork"}
    for document in documents:  # each against the upstream CRD of its apiVersion, as the API server would
        checked = check_custom_resource(document)
        assert checked.schema_errors == [] and checked.cel.failures == [], document["kind"]
    trees = {
        name: yaml.safe_load(text)[0]["set"]
        for name, text in switch_files(plan).items()
        if name.endswith(".yaml") and "/" not in name
    }
    leaf_address = {}
    for link in links_on(plan, "compute"):
        if link.tier == 0:
            address = next(iter(trees[f"{link.b_device}.yaml"]["interface"][link.b_port]["ip"]["address"]))
            leaf_address[(link.a_device, link.rail)] = address
    for rail, pool in enumerate(pools, start=1):
        assert (pool["kind"], pool["metadata"]["name"], pool["spec"]["perNodeNetworkPrefix"]) == (
            "CIDRPool",
            f"rail{rail}",
            31,
        )
        assert pool["spec"]["gatewayIndex"] == 0 and pool["spec"]["routes"] == [{"dst": pool["spec"]["cidr"]}]
        allocations = pool["spec"]["staticAllocations"]
        assert len(allocations) == 16
        for allocation in allocations:  # the node's /31 is the one its rail leaf routes, the leaf the gateway
            assert allocation["prefix"] == leaf_address[(allocation["nodeName"], rail)]
            assert allocation["prefix"].startswith(allocation["gateway"] + "/")
            assert ipaddress.ip_network(allocation["prefix"]).subnet_of(ipaddress.ip_network(pool["spec"]["cidr"]))
    for rail, network in enumerate(networks, start=1):
        assert network["metadata"]["name"] == f"training-rail{rail}"
        assert network["spec"]["resourceName"] == f"nvidia.com/hostdev-rail{rail}"
        assert json.loads(network["spec"]["ipam"]) == {
            "type": "nv-ipam",
            "poolName": f"rail{rail}",
            "poolType": "cidrpool",
        }


def test_training_pods_attach_every_rail_network_and_request_each_rails_port(tmp_path):
    """Both launch templates (Trainer TrainJob, Training Operator PyTorchJob) attach the rail networks of their
    namespace and ask for each rail's port."""
    from gpucluster.artifacts.nccl import nccl_files

    rails = [f"nvidia.com/hostdev-rail{r}" for r in range(1, 9)]
    plan = _k8s_roce_plan(tmp_path)
    (job,) = yaml.safe_load_all(nccl_files(plan)["launch/trainjob.yaml"])
    namespace = job["metadata"]["namespace"]
    patch = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    pod = patch["template"]["spec"]["template"]
    networks = pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"].split(",")
    assert networks == [f"{namespace}-rail{r}" for r in range(1, 9)]
    limits = job["spec"]["trainer"]["resourcesPerNode"]["limits"]
    assert [k for k in limits if k.startswith("nvidia.com/hostdev-rail")] == rails
    plan = _k8s_roce_plan(tmp_path / "v1", extra=", kubernetes: {training_job: pytorchjob}")
    job = next(d for d in yaml.safe_load_all(nccl_files(plan)["launch/pytorchjob.yaml"]) if d["kind"] == "PyTorchJob")
    for spec in job["spec"]["pytorchReplicaSpecs"].values():
        pod = spec["template"]
        networks = pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"].split(",")
        assert networks == [f"{job['metadata']['namespace']}-rail{r}" for r in range(1, 9)]
        limits = pod["spec"]["containers"][0]["resources"]["limits"]
        assert [k for k in limits if k.startswith("nvidia.com/hostdev-rail")] == rails


def test_nccl_marks_the_traffic_class_the_switches_run_lossless():
    from gpucluster.artifacts.nccl import nccl_files
    from gpucluster.plan.roce import ROCE_QOS

    _, plan = planned("b200-roce-2su")
    env = nccl_files(plan)["nccl/nccl.env"]
    assert f"\nNCCL_IB_TC={ROCE_QOS.dscp * 4}\n" in env and "\nNCCL_IB_GID_INDEX=3\n" in env
    assert ROCE_QOS.dscp // 8 == ROCE_QOS.priority  # Cumulus's default map: DSCP 24-31 -> switch priority 3


def test_nccl_finds_the_dgx_b200_compute_hcas_by_their_pci_device_id(tmp_path):
    """The catalog has no RDMA names for DGX B200; its ConnectX-7 (1021) and BlueField-3 (a2dc) differ by device ID,
    so the sourced nccl.env lists only the ConnectX-7 RDMA devices (checked on a fake sysfs with bash)."""
    from gpucluster.artifacts.nccl import nccl_files

    plan = _b200_roce(tmp_path, 64)
    env = nccl_files(plan)["nccl/nccl.env"]
    sysfs = tmp_path / "infiniband"
    for name, device in [("mlx5_0", "0x1021"), ("mlx5_1", "0xa2dc"), ("mlx5_2", "0x1021"), ("mlx5_3", "0xa2dc")]:
        (sysfs / name / "device").mkdir(parents=True)
        (sysfs / name / "device" / "device").write_text(device + "\n")
    script = env.replace("/sys/class/infiniband", str(sysfs)) + '\nprintf %s "$NCCL_IB_HCA"\n'
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout == "=mlx5_0:1,mlx5_2:1"


def test_device_plugin_selects_the_compute_hcas_by_name_or_device_id(tmp_path):
    from gpucluster.artifacts.kubernetes import kubernetes_manifests

    _, plan = planned("b200-roce-2su")  # HGX B200 with BlueField-3 SuperNICs (a2dc) for compute, ConnectX-7 beside
    policy = kubernetes_manifests(plan)["network-operator.yaml"][0]
    config = json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])
    assert config["configList"][0]["selectors"] == {"vendors": ["15b3"], "linkTypes": ["ether"], "deviceIDs": ["a2dc"]}
    plan = _k8s_roce_plan(tmp_path, extra=", kubernetes: {rdma: sriov}")
    resources = json.loads(
        kubernetes_manifests(plan)["network-operator.yaml"][0]["spec"]["sriovDevicePlugin"]["config"]
    )
    assert resources["resourceList"][0]["selectors"]["pfNames"] == ["enp24s0np0"]  # the Ethernet name, not ibp24s0
    networks = [d for d in kubernetes_manifests(plan)["network-operator.yaml"] if d["kind"] == "HostDeviceNetwork"]
    assert [n["spec"]["resourceName"] for n in networks] == [f"nvidia.com/rail{r}" for r in range(1, 9)]


def test_roce_burn_in_tests_rdma_bandwidth_on_the_lossless_class(tmp_path):
    """ib_write_bw on RoCE: GID index 3 (RoCE v2) and the traffic class the switches run lossless (the example runs
    Kubernetes alone: its burn-in is Kubernetes Jobs, each pair's pods running ib-write-bw-pair.sh)."""
    from gpucluster import write_artifacts

    loaded, plan = (load := planned("b200-roce-2su"))[0], load[1]
    folder = write_artifacts(plan, loaded, tmp_path, only=["burn-in"]) / "burn-in" / "kubernetes"
    [_namespace, config_map] = yaml.safe_load_all((folder / "00-namespace.yaml").read_text())
    script = config_map["data"]["ib-write-bw-pair.sh"]
    assert "--tclass=104" in script and '-x "$gid"' in script
    [stage] = folder.glob("stage-*-ib-write-bw.yaml")
    jobs = list(yaml.safe_load_all(stage.read_text()))
    commands = [job["spec"]["template"]["spec"]["containers"][0]["command"][-1].split() for job in jobs]
    assert jobs and all(command[5] == "3" for command in commands)  # client, server, threshold, then the GID index


def test_hgx_spectrum_x_servers_carry_one_bluefield_3_supernic_per_gpu(tmp_path):
    """Spectrum-X on HGX H200/B200 as NVIDIA builds it: eight BlueField-3 SuperNICs B3140H (400GbE, device ID a2dc),
    the compute HCAs NCCL and the device plugin pick by that ID."""
    from gpucluster.artifacts.kubernetes import kubernetes_manifests
    from gpucluster.artifacts.nccl import nccl_files
    from gpucluster.catalog.schema import GpuServer, Nic

    catalog = load_catalog()
    supernic = catalog.get("bluefield-3-b3140h", Nic)
    assert supernic.part_number == "900-9D3D4-00EN-HA0"
    for server_id in ("hgx-h200-spectrum-x", "hgx-b200-spectrum-x"):
        server = catalog.get(server_id, GpuServer)
        (compute,) = server.port_groups("compute")
        assert (compute.port_count, compute.speed_gbps, compute.technology) == (8, 400, "ethernet")
        assert compute.pci_device_id == supernic.ports[0].pci_device_id == "a2dc"
    path = write_design(
        tmp_path,
        "name: h200-sx\ncompute: {server: hgx-h200-spectrum-x, servers: 64, spare_servers: 0}\n"
        "storage_network: {technology: ethernet, switch: sn5600}\nparallel_filesystem: {kind: weka}\n"
        "scheduler: {kind: kubernetes}\n",
    )
    plan = plan_design(load_design(path))
    assert plan.settings.compute_fabric == "roce"
    assert plan.totals.switches["compute"] == {"leaf": 8, "spine": 4}
    assert "= 0xa2dc ]" in nccl_files(plan)["nccl/nccl.env"]
    policy = kubernetes_manifests(plan)["network-operator.yaml"][0]
    selectors = json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])["configList"][0]["selectors"]
    assert selectors["deviceIDs"] == ["a2dc"]


def test_nccl_finds_the_oem_hgx_compute_hcas_by_device_id_and_port_rate(tmp_path):
    """The lab's OEM HGX H100 has ConnectX-7 (1021) on every port group and no sourced RDMA names; only its compute
    ports run at 400G (storage 200G, in-band 100G), so the sourced nccl.env lists the 1021 devices whose port 1
    reports 400 Gb/s (checked on a fake sysfs with bash): never a storage or in-band port, nor another vendor's."""
    from gpucluster.artifacts.nccl import nccl_files

    _, plan = planned("lab-4-servers")
    env = nccl_files(plan)["nccl/nccl.env"]
    sysfs = tmp_path / "infiniband"
    ports = [
        ("mlx5_0", "0x1021", "400 Gb/sec (4X NDR)"),
        ("mlx5_1", "0x1021", "200 Gb/sec (2X NDR)"),  # storage
        ("mlx5_10", "0x1021", "400 Gb/sec (4X NDR)"),
        ("mlx5_2", "0x1021", "100 Gb/sec (4X EDR)"),  # in-band
        ("mlx5_3", "0x1021", "400 Gb/sec (4X NDR)"),
        ("irdma0", "0x1592", "400 Gb/sec (4X NDR)"),  # not a ConnectX-7
    ]
    for name, device, rate in ports:
        (sysfs / name / "device").mkdir(parents=True)
        (sysfs / name / "device" / "device").write_text(device + "\n")
        (sysfs / name / "ports" / "1").mkdir(parents=True)
        (sysfs / name / "ports" / "1" / "rate").write_text(rate + "\n")
    script = env.replace("/sys/class/infiniband", str(sysfs)) + '\nprintf %s "$NCCL_IB_HCA"\n'
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout == "=mlx5_0:1,mlx5_10:1,mlx5_3:1"


@pytest.mark.parametrize("name", EXAMPLES)
def test_nccl_ib_hca_is_set_on_every_example_server_model(name):
    """NCCL_IB_HCA names the compute HCAs: by RDMA name, or by the compute adapters' PCI device ID where the
    catalog has no names (DGX B200 on ConnectX-7 1021 beside BlueField-3; DGX B300, GB300 trays: ConnectX-8 1023),
    and by device ID and port rate where every port group shares the ID (the lab's OEM HGX H100)."""
    from gpucluster.artifacts.nccl import nccl_files

    _, plan = planned(name)
    env = nccl_files(plan)["nccl/nccl.env"]
    assert re.search(r"^NCCL_IB_HCA=\S", env, flags=re.MULTILINE), env


def test_each_plane_of_each_rail_gets_its_own_pool_device_and_network(tmp_path):
    """ConnectX-8 on two Spectrum-X planes (software multiplane: one PF per plane): per rail and plane an NV-IPAM
    CIDRPool giving each node the /31 its plane's rail leaf routes, a device-plugin resource for that plane's PF and a
    HostDeviceNetwork per team namespace, each valid against the upstream CRDs; the launch pods attach all 16."""
    from gpucluster.artifacts.kubernetes import kubernetes_manifests
    from gpucluster.artifacts.nccl import nccl_files
    from gpucluster.artifacts.switch_config import switch_files

    plan = _planes_plan(
        tmp_path,
        extra="scheduler: {kind: kubernetes, kubernetes: {teams: [{name: llm, gpus: 256}, {name: vision, gpus: 256}]}}"
        "\n",
    )
    documents = kubernetes_manifests(plan)["network-operator.yaml"]
    policy = documents[0]
    keys = [f"rail{rail}-plane{plane}" for rail in range(1, 9) for plane in (1, 2)]
    resources = json.loads(policy["spec"]["sriovDevicePlugin"]["config"])["resourceList"]
    assert [r["resourceName"] for r in resources] == [f"hostdev-{key}" for key in keys]
    assert [r["selectors"]["pfNames"] for r in resources] == [[f"r{r}p{p}"] for r in range(1, 9) for p in (1, 2)]
    pools = [d for d in documents if d["kind"] == "CIDRPool"]
    networks = [d for d in documents if d["kind"] == "HostDeviceNetwork"]
    assert [pool["metadata"]["name"] for pool in pools] == keys
    assert [n["metadata"]["name"] for n in networks] == [f"{team}-{key}" for team in ("llm", "vision") for key in keys]
    for document in documents:
        checked = check_custom_resource(document)
        assert checked.schema_errors == [] and checked.cel.failures == [], document["kind"]
    trees = {
        name: yaml.safe_load(text)[0]["set"]
        for name, text in switch_files(plan).items()
        if name.endswith(".yaml") and "/" not in name
    }
    leaf_address = {}
    for link in links_on(plan, "compute"):
        if link.tier == 0:
            address = next(iter(trees[f"{link.b_device}.yaml"]["interface"][link.b_port]["ip"]["address"]))
            leaf_address[(link.a_device, link.rail, link.plane)] = (address, plan.devices[link.b_device].plane)
    cidrs = set()
    for pool in pools:
        rail, plane = (
            int(part.removeprefix("rail").removeprefix("plane")) for part in pool["metadata"]["name"].split("-")
        )
        allocations = pool["spec"]["staticAllocations"]
        assert len(allocations) == 64  # every node, once
        cidrs.add(pool["spec"]["cidr"])
        for allocation in allocations:  # the /31 its plane's rail leaf routes, on that plane's leaf
            address, leaf_plane = leaf_address[(allocation["nodeName"], rail, plane)]
            assert allocation["prefix"] == address and leaf_plane == plane
            assert ipaddress.ip_network(allocation["prefix"]).subnet_of(ipaddress.ip_network(pool["spec"]["cidr"]))
    assert len(cidrs) == 16  # each plane's rail its own block
    (job,) = yaml.safe_load_all(nccl_files(plan)["launch/trainjob.yaml"])
    patch = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    annotations = patch["template"]["spec"]["template"]["metadata"]["annotations"]
    namespace = job["metadata"]["namespace"]
    assert annotations["k8s.v1.cni.cncf.io/networks"].split(",") == [f"{namespace}-{key}" for key in keys]
    limits = job["spec"]["trainer"]["resourcesPerNode"]["limits"]
    assert [k for k in limits if k.startswith("nvidia.com/hostdev-")] == [f"nvidia.com/hostdev-{key}" for key in keys]


def test_planes_without_named_interfaces_get_no_per_rail_networks(tmp_path):
    """Without each plane's interface name the device plugin cannot tell one plane's PF from the other's: no per-plane
    network is written (the shared RDMA resource by device ID instead), rather than a network on a guessed name."""
    from gpucluster.artifacts.kubernetes import kubernetes_manifests

    nameless = re.sub(r",\s*plane_netdevs: \[\[.*?\]\]", "", PLANES_CATALOG, flags=re.DOTALL)
    assert "plane_netdevs" not in nameless
    plan = _planes_plan(tmp_path, extra="scheduler: {kind: kubernetes}\n", catalog=nameless)
    documents = kubernetes_manifests(plan)["network-operator.yaml"]
    assert [d["kind"] for d in documents] == ["NicClusterPolicy"]
    selectors = json.loads(documents[0]["spec"]["rdmaSharedDevicePlugin"]["config"])["configList"][0]["selectors"]
    assert selectors["deviceIDs"] == ["1023"]


def test_plane_netdevs_need_one_name_per_plane(tmp_path):
    broken = PLANES_CATALOG.replace("[r8p1, r8p2]", "[r8p1]")
    with pytest.raises(DesignError, match="plane_netdevs: port 8 lists 1 interfaces for 2 planes"):
        _planes_plan(tmp_path, catalog=broken)


def _leaf_addresses(plan: Plan, files: dict[str, str]) -> dict[tuple[str, str], str]:
    """(host, host port) -> the /31 address its leaf's NVUE configuration gives the leaf port."""
    trees = {name: yaml.safe_load(text)[0]["set"] for name, text in files.items() if re.fullmatch(r"[^/]+\.yaml", name)}
    found = {}
    for link in [*links_on(plan, "compute"), *links_on(plan, "storage")]:
        if (
            link.tier == 0
            and f"{link.b_device}.yaml" in trees
            and link.b_port in trees[f"{link.b_device}.yaml"]["interface"]
        ):
            interface = trees[f"{link.b_device}.yaml"]["interface"][link.b_port]
            if "ip" in interface:
                found[(link.a_device, link.a_port)] = next(iter(interface["ip"]["address"]))
    return found


def test_every_host_gets_each_rail_s_address_on_the_31_its_leaf_routes():
    """Spectrum-X routes each SuperNIC on a /31 to its rail leaf (switches/*.yaml); the host side needs the other
    half: hosts/rail-addresses.csv gives every host's every rail its address, the leaf as gateway and the MTU."""
    import csv
    import io

    from gpucluster.artifacts.switch_config import HOST_RAIL_TABLE, switch_files

    _loaded, plan = planned("b200-roce-2su")
    files = switch_files(plan)
    rows = list(csv.DictReader(io.StringIO(files[HOST_RAIL_TABLE])))
    leaf = _leaf_addresses(plan, files)
    assert len(rows) == len(leaf) and sum(row["Network"] == "compute" for row in rows) == 64 * 8
    for row in rows:
        network = ipaddress.ip_network(leaf[(row["Host"], row["Port"])], strict=False)
        host = ipaddress.ip_interface(row["Address"])
        assert network.prefixlen == 31 and host.network == network
        assert ipaddress.ip_address(row["Gateway"]) in network and str(host.ip) != row["Gateway"]
        assert host.network.subnet_of(ipaddress.ip_network(row["Rail block"])) and row["MTU"] == "9000"
    assert {row["Rail"] for row in rows if row["Network"] == "compute"} == {str(r) for r in range(1, 9)}
    # the OEM server's SuperNIC interface names are not published: the table, no netplan on guessed names
    assert all(row["Interface"] == "" for row in rows) and not [n for n in files if n.startswith("hosts/netplan/")]


def test_a_server_with_named_rail_interfaces_gets_a_netplan_per_host_matching_its_leaves(tmp_path):
    """DGX H100 (its user guide names the interfaces): hosts/netplan/<host>.yaml puts each rail interface on the
    /31 its leaf routes, at the in-band MTU, with a route to the rail's block via the leaf."""
    from gpucluster.artifacts.switch_config import switch_files

    plan = _k8s_roce_plan(tmp_path)
    files = switch_files(plan)
    leaf = _leaf_addresses(plan, files)
    netplans = {n: yaml.safe_load(t) for n, t in files.items() if n.startswith("hosts/netplan/")}
    assert sorted(netplans) == sorted(f"hosts/netplan/{d.name}.yaml" for d in plan.gpu_nodes())
    for link in links_on(plan, "compute"):
        if link.tier:
            continue
        ethernets = netplans[f"hosts/netplan/{link.a_device}.yaml"]["network"]["ethernets"]
        [entry] = [
            e
            for e in ethernets.values()
            if ipaddress.ip_interface(e["addresses"][0]).network
            == ipaddress.ip_network(leaf[(link.a_device, link.a_port)], strict=False)
        ]
        assert entry["mtu"] == 9000
        assert entry["routes"][0]["via"] == leaf[(link.a_device, link.a_port)].split("/")[0]
