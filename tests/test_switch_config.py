"""Switch configuration: an NVUE startup.yaml per Ethernet switch covering every port the plan cables, once, at its
speed; a BGP-unnumbered underlay; RoCE QoS and adaptive routing where the fabric needs them; OpenSM settings for
InfiniBand fabrics."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
import yaml
from conftest import EXAMPLES, planned

from gpucluster import design_from_model, plan_design
from gpucluster.artifacts.switch_config import (
    configured_networks,
    host_addresses,
    switch_configs,
    switch_files,
)
from gpucluster.plan.model import Plan
from gpucluster.plan.queries import links_on


def _parsed(plan: Plan) -> dict[str, dict]:
    """Switch -> the `set` tree of its startup.yaml, parsed with a real YAML reader."""
    result = {}
    for name, text in switch_files(plan).items():
        if name.endswith(".yaml") and "/" not in name:  # hosts/netplan/ files are the hosts' side
            document = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            assert isinstance(document, list) and len(document) == 1 and list(document[0]) == ["set"], name
            result[name.removesuffix(".yaml")] = document[0]["set"]
    return result


@pytest.mark.parametrize("design", EXAMPLES)
def test_every_cabled_port_of_every_ethernet_switch_appears_once_with_its_speed(design):
    _, plan = planned(design)
    trees = _parsed(plan)
    networks = configured_networks(plan)
    switches = [d for n in networks for d in plan.switches(n)]
    assert sorted(trees) == sorted(d.name for d in switches)
    ends: dict[str, list] = defaultdict(list)
    for link in plan.links:
        for device, port in ((link.a_device, link.a_port), (link.b_device, link.b_port)):
            if plan.devices[device].network == link.network:
                ends[device].append((port, link.speed_gbps))
    split_cages = {
        (link.b_device, "swp" + link.b_port.removeprefix("swp").split("s")[0]) for link in plan.links if link.b_half
    }
    for switch in switches:
        interfaces = trees[switch.name]["interface"]
        planned_ports = Counter()
        for port, speed in ends[switch.name]:
            planned_ports[port] += 1
            assert interfaces[port]["link"]["speed"] == f"{speed:g}G", (switch.name, port)
            bonded = any(port in i.get("bond", {}).get("member", {}) for i in interfaces.values())
            assert interfaces[port]["link"]["mtu"] == (9000 if bonded else 9216)  # a bond member: the bond's
        assert all(n == 1 for n in planned_ports.values()), "a plan port used twice"
        configured = {name for name, i in interfaces.items() if i.get("type") == "swp" and "speed" in i.get("link", {})}
        assert configured == set(planned_ports), switch.name
        for port in configured:  # a 400G sub-port sits on a parent cage broken out 2x, a split port's half 4x
            if "s" in port.removeprefix("swp"):
                parent = "swp" + port.removeprefix("swp").split("s")[0]
                breakout = "4x" if (switch.name, parent) in split_cages else "2x"
                assert interfaces[parent]["link"]["breakout"] == {breakout: {}}, (switch.name, parent)


@pytest.mark.parametrize("design", EXAMPLES)
def test_switch_to_switch_ports_are_bgp_unnumbered_neighbours_with_asns_per_tier(design):
    _, plan = planned(design)
    trees = _parsed(plan)
    by_tier: dict[tuple, set[int]] = defaultdict(set)
    leaf_asns = []
    for config in switch_configs(plan):
        tree = trees[config.name]
        switch = plan.devices[config.name]
        uplinks = {p.name for p in config.ports if p.tier}
        bgp = tree["vrf"]["default"]["router"]["bgp"]
        assert set(bgp.get("neighbor", {})) == uplinks
        assert all(n == {"peer-group": "underlay", "type": "unnumbered"} for n in bgp.get("neighbor", {}).values())
        assert bgp["peer-group"]["underlay"]["remote-as"] == "external"
        asn = tree["router"]["bgp"]["autonomous-system"]
        assert 4_200_000_000 <= asn <= 4_294_967_294  # RFC 6996 private four-byte range
        assert tree["router"]["bgp"]["router-id"] == config.loopback
        if switch.tier == 1:
            leaf_asns.append(asn)
        else:
            by_tier[(switch.network, switch.plane, switch.tier, switch.pod)].add(asn)
    assert len(leaf_asns) == len(set(leaf_asns)), "every leaf its own ASN"
    assert all(len(asns) == 1 for asns in by_tier.values()), "one ASN per upper-tier pod"
    loopbacks = [c.loopback for c in switch_configs(plan)]
    assert len(loopbacks) == len(set(loopbacks))


def test_roce_compute_fabric_is_lossless_with_adaptive_routing_and_routed_host_ports():
    _, plan = planned("b200-roce-2su")
    trees = _parsed(plan)
    addresses = host_addresses(plan, "compute")
    host_links = {(link.b_device, link.b_port): link for link in links_on(plan, "compute") if link.tier == 0}
    for switch in plan.switches("compute"):
        tree = trees[switch.name]
        assert tree["qos"]["roce"] == {"enable": True, "mode": "lossless"}
        assert tree["router"]["adaptive-routing"]["enable"] is True
        for port, interface in tree["interface"].items():
            link = host_links.get((switch.name, port))
            if link is not None:
                host, gateway = addresses[(link.a_device, link.a_port)]
                assert list(interface["ip"]["address"]) == [f"{gateway}/31"]
                assert int(host.split(".")[-1]) == int(gateway.split(".")[-1]) + 1
                assert interface["description"] == f"{link.a_device} {link.a_port}"
            elif "speed" in interface.get("link", {}):
                assert interface["router"]["adaptive-routing"]["enable"] is True
    storage = trees[plan.switches("storage")[0].name]
    assert storage["qos"]["roce"]["mode"] == "lossless" and "adaptive-routing" not in storage["router"]
    assert len(set(addresses.values())) == len(addresses)


def test_inband_hosts_get_one_evpn_multihomed_segment_on_both_leaves():
    _, plan = planned("superpod-h100-1su")
    trees = _parsed(plan)
    segments: dict[str, set] = defaultdict(set)
    for switch in plan.switches("inband", 1):
        tree = trees[switch.name]
        assert tree["evpn"] == {"enable": True, "multihoming": {"enable": True}}
        assert tree["nve"]["vxlan"]["source"]["address"] == tree["router"]["bgp"]["router-id"]
        for name, interface in tree["interface"].items():
            if interface.get("type") == "bond":
                segment = interface["evpn"]["multihoming"]["segment"]
                host = interface["description"].removesuffix(" bond")
                segments[host].add((name, segment["local-id"], segment["mac-address"]))
                assert interface["bridge"]["domain"]["br_default"]["access"] == 10
    servers = [d.name for d in plan.gpu_nodes()]
    for server in servers:  # both leaves give a server's bond the same ESI (same local-id and segment MAC)
        assert len(segments[server]) == 1, server
    assert "qos" not in trees[plan.switches("inband", 1)[0].name]


def test_the_management_port_names_the_out_of_band_switch_port_it_is_cabled_to():
    _, plan = planned("b200-roce-2su")
    trees = _parsed(plan)
    for link in links_on(plan, "oob"):
        if link.a_device in trees:
            eth0 = trees[link.a_device]["interface"][link.a_port]
            assert eth0["description"] == f"oob {link.b_device} {link.b_port}"
            assert eth0["ip"] == {"address": {"dhcp": {}}, "vrf": "mgmt"}


def test_two_plane_fabrics_number_each_planes_tiers_apart(tmp_path):
    from test_spectrum_x import _planes_plan

    plan = _planes_plan(tmp_path)
    configs = {c.name: c for c in switch_configs(plan)}
    spines = {
        (plan.devices[n].plane, c.asn)
        for n, c in configs.items()
        if c.network == "compute" and plan.devices[n].tier == 2
    }
    assert {plane for plane, _ in spines} == {1, 2} and len({asn for _, asn in spines}) == 2


def test_infiniband_fabrics_get_subnet_manager_settings_rooted_at_the_top_tier():
    _, plan = planned("superpod-h100-1su")
    files = switch_files(plan)
    conf = files["compute-opensm.conf"]
    assert "\nrouting_engine ar_updn\n" in conf
    spines = sorted(d.name for d in plan.switches("compute", 2))
    assert [line.strip("# ").strip() for line in conf.splitlines() if line.startswith("#   compute-")] == spines
    assert "ib sm sharp enable" in conf
    assert not any(name.startswith("compute-") and name.endswith(".yaml") for name in files)


def _split_commands(text: str) -> set[str]:
    """The ports an MLNX-OS command file splits: each 'port-type split-2' in the context of an 'interface ib' line."""
    split, interface = set(), None
    for line in text.splitlines():
        if line.startswith("interface ib "):
            interface = line.removeprefix("interface ib ")
        elif line == "port-type split-2":
            assert interface is not None
            split.add(interface)
        elif line == "exit":
            interface = None
    return split


def _planned_split_ports(plan: Plan) -> dict[str, set[str]]:
    """InfiniBand switch -> the ports (MLNX-OS CLI names, 1/<cage>/<port>) whose halves the plan cables."""
    split: dict[str, set[str]] = defaultdict(set)
    for link in plan.links:
        part = plan.catalog_parts[plan.devices[link.b_device].part]
        if link.b_half and part.technology.startswith("infiniband"):
            parent, half = link.b_port.rsplit("/", 1)
            assert half == str(link.b_half)
            split[link.b_device].add(parent.removeprefix("IB"))
    return split


@pytest.mark.parametrize("design", EXAMPLES)
def test_every_split_infiniband_port_is_configured_split_and_no_other_port_is(design):
    _, plan = planned(design)
    files = switch_files(plan)
    configured = {
        name.removesuffix("-split-ports.txt"): _split_commands(text)
        for name, text in files.items()
        if name.endswith("-split-ports.txt")
    }
    assert configured == _planned_split_ports(plan)
    for switch in configured:
        text = files[f"{switch}-split-ports.txt"]
        commands = [line for line in text.splitlines() if line and not line.startswith("#")]
        assert commands.index("system profile ib split-ready") < commands.index("port-type split-2")
        assert commands[-1] == "configuration write"
        for port in configured[switch]:  # both halves brought up, each named for what it is cabled to
            for half in (1, 2):
                assert f"interface ib {port}/{half}\nno shutdown\n" in text
                assert f"IB{port}/{half} -> " in text


def test_the_default_design_splits_the_ufm_ports_of_both_fabrics():
    _, plan = planned("superpod-h200-4su")
    split = {name: _split_commands(text) for name, text in switch_files(plan).items() if "split-ports" in name}
    assert split == {
        "compute-leaf-su01-r1-split-ports.txt": {"1/16/2"},
        "compute-leaf-su01-r2-split-ports.txt": {"1/16/2"},
        "storage-leaf-pfs-a-split-ports.txt": {"1/5/1"},
        "storage-leaf-pfs-b-split-ports.txt": {"1/5/1"},
    }


def test_an_externally_managed_switch_is_told_to_split_with_the_firmware_tools_not_the_cli():
    loaded, _plan = planned("superpod-h100-1su")
    fabric = loaded.design.compute_fabric.model_copy(update={"switch": "qm9790"})
    plan = plan_design(design_from_model(loaded.design.model_copy(update={"compute_fabric": fabric})))
    files = switch_files(plan)
    text = files["compute-leaf-su01-r1-split-ports.txt"]
    assert "Using mlxconfig to Split a Port in a Remotely Managed Switch" in text
    assert "IB1/16/2: IB1/16/2/1 -> ufm-01" in text
    assert not [line for line in text.splitlines() if line and not line.startswith("#")]  # no CLI commands


def test_an_in_band_bond_and_its_member_ports_carry_one_mtu():
    """A bond's members carry its MTU (Cumulus Linux bonds): every in-band bond and each of its member ports are
    configured at the same MTU, the hosts' 9000, while the fabric ports keep the switch default 9216."""
    _, plan = planned("b200-roce-2su")
    trees = _parsed(plan)
    bonds = 0
    for switch in plan.switches("inband", 1):
        interfaces = trees[switch.name]["interface"]
        for interface in interfaces.values():
            if interface.get("type") == "bond":
                bonds += 1
                members = interface["bond"]["member"]
                assert {interfaces[m]["link"]["mtu"] for m in members} == {interface["link"]["mtu"]} == {9000}
    assert bonds >= len(plan.gpu_nodes())


def test_a_host_with_both_in_band_ports_on_one_leaf_bonds_both_there():
    """The lab's single in-band leaf takes both of a server's in-band ports: one bond with both members (the bond
    written once per port left the first port out of it)."""
    _, plan = planned("lab-4-servers")
    [leaf] = plan.switches("inband", 1)
    interfaces = _parsed(plan)[leaf.name]["interface"]
    bonds = {i["description"]: set(i["bond"]["member"]) for i in interfaces.values() if i.get("type") == "bond"}
    assert len(bonds["gpu001 bond"]) == 2
    for members in bonds.values():
        assert {interfaces[m]["link"]["mtu"] for m in members} == {9000}
