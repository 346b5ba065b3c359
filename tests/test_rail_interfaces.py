"""An OEM server's compute interfaces named by the design (compute.rail_interfaces): the names NVIDIA does not
publish for OEM HGX servers reach the hosts' netplan and the pods' per-rail networks, and a RoCE design without
them is told what it is missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import DESIGNS, write_design
from k8s_upstream import check_custom_resource

from gpucluster import load_design, plan_design
from gpucluster.artifacts.kubernetes import kubernetes_manifests
from gpucluster.artifacts.switch_config import switch_files
from gpucluster.cli import main

NAMES = [f"ens{rail}np0" for rail in range(1, 9)]  # what `ip link` would show, one per rail


def _b200_roce(tmp_path: Path, names: str | None) -> Path:
    """The b200-roce-2su example, with compute.rail_interfaces set to `names` (YAML) when given."""
    text = (DESIGNS / "b200-roce-2su.yaml").read_text(encoding="utf-8")
    if names is not None:
        text = text.replace("  spare_servers: 2\n", f"  spare_servers: 2\n  rail_interfaces: {names}\n", 1)
    return write_design(tmp_path, text, "b200-roce-2su.yaml")


def test_named_rail_interfaces_give_each_rail_a_pod_network_and_each_host_a_netplan(tmp_path: Path) -> None:
    plan = plan_design(load_design(_b200_roce(tmp_path, json.dumps(NAMES))))
    documents = kubernetes_manifests(plan)["network-operator.yaml"]
    policy = documents[0]
    resources = json.loads(policy["spec"]["sriovDevicePlugin"]["config"])["resourceList"]
    assert [r["selectors"]["pfNames"] for r in resources] == [[name] for name in NAMES]
    pools = [d for d in documents if d["kind"] == "CIDRPool"]
    assert [pool["metadata"]["name"] for pool in pools] == [f"rail{rail}" for rail in range(1, 9)]
    for document in documents:
        checked = check_custom_resource(document)
        assert checked.schema_errors == [] and checked.cel.failures == [], document["kind"]
    files = switch_files(plan)
    netplan = yaml.safe_load(files["hosts/netplan/gpu001.yaml"])["network"]["ethernets"]
    assert list(netplan) == NAMES  # the storage ports, not named, stay in the address table only
    pool_of_rail1 = {a["nodeName"]: a for a in pools[0]["spec"]["staticAllocations"]}
    host, gateway = netplan["ens1np0"]["addresses"][0], netplan["ens1np0"]["routes"][0]["via"]
    assert pool_of_rail1["gpu001"]["gateway"] == gateway and host.split("/")[0] != gateway
    assert not any("compute interfaces" in f.message for f in plan.findings)


def test_a_roce_server_without_interface_names_is_warned_which_field_to_set(tmp_path: Path) -> None:
    plan = plan_design(load_design(_b200_roce(tmp_path, None)))
    warnings = [f.message for f in plan.findings if "compute interfaces" in f.message]
    assert len(warnings) == 1 and "compute.rail_interfaces" in warnings[0]
    assert not any(name.startswith("hosts/netplan/") for name in switch_files(plan))


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (json.dumps(NAMES[:7]), "has 8 compute ports: name 8 interfaces in rail order, not 7"),
        (json.dumps([*NAMES[:7], NAMES[0]]), "each interface name may be given once"),
        (json.dumps([[n, n + "x"] for n in NAMES]), "the compute fabric has one plane: give each rail one name"),
        (json.dumps([*NAMES[:7], "bad name"]), "should match pattern"),
        (json.dumps([*NAMES[:7], "a-name-of-16-chr"]), "should match pattern"),
    ],
)
def test_wrong_rail_interfaces_are_a_located_error(tmp_path: Path, names: str, message: str) -> None:
    design = _b200_roce(tmp_path, names)
    result = CliRunner().invoke(main, ["validate", str(design)])
    assert result.exit_code == 2, result.output
    assert f"{design}:" in result.output and "compute.rail_interfaces" in result.output
    assert message in result.output and "Traceback" not in result.output
