"""Switch configuration (docs/artifacts.md, "Switch configuration"): an NVUE startup file per Ethernet switch
(``switches/<switch>.yaml``), the hosts' rail addresses, and for InfiniBand the subnet-manager settings and
split-port commands.

The NVUE files are the ``/etc/nvue.d/startup.yaml`` form Cumulus Linux 5.14 writes (the user guide's startup.yaml
examples, e.g. "EVPN Multihoming", GitHub CumulusNetworks/docs content/cumulus-linux-514/Network-Virtualization/
Ethernet-Virtual-Private-Network-EVPN/EVPN-Multihoming.md). Sources of what they set: breakouts, Cumulus Linux 5.14
"Switch Port Attributes", Breakout Ports; the BGP-unnumbered underlay's private ASNs, RFC 6996 and RFC 7938 section
5.2.1; RoCE QoS, "RDMA over Converged Ethernet - RoCE", Default RoCE Configuration (gpucluster.plan.roce);
adaptive routing, the NVUE reference, Adaptive Routing (Spectrum-4 from 5.6; 5.15 renamed ``enable on`` to
``state enabled``); in-band bonds, "EVPN Multihoming". The addresses are this module's plan, labelled in each file.
"""

from __future__ import annotations

import io
import ipaddress
import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpucluster.catalog.ports import device_ports, port_details
from gpucluster.catalog.schema import Switch
from gpucluster.design.load import LoadedDesign
from gpucluster.formats.tables import GuardedCsvWriter
from gpucluster.formats.templating import render
from gpucluster.formats.yamlout import dump
from gpucluster.plan.model import Device, PhysicalPlan, Plan
from gpucluster.plan.queries import queries
from gpucluster.plan.roce import ROCE_QOS, roce_networks

CUMULUS_VERSION = "5.14"  # the release the NVIDIA Mission Control N-S guide deploys on SN5600 (NS_GUIDE)
SWITCH_MTU = 9216  # Cumulus Linux's default port MTU (5.14 "Switch Port Attributes", MTU)
# in-band bonds and their member ports alike (a bond's members carry its MTU), as the EVPN-MH example; the hosts'
# bonds and the RoCE rails use it too (RoCE needs only 4096 + headers), below the switch ports' 9216
HOST_MTU = 9000
PRIVATE_ASN_BASE = 4_200_000_000  # RFC 6996: 4200000000-4294967294 are private four-byte ASNs
NETWORK_ASN_BLOCK = {"compute": 1, "storage": 2, "inband": 3}  # ASN = base + block x 10^7 + plane x 10^6 + ...
LOOPBACKS = ipaddress.ip_network("10.255.0.0/16")
P2P_POOLS = {"compute": ipaddress.IPv4Network("10.0.0.0/11"), "storage": ipaddress.IPv4Network("10.32.0.0/13")}
INBAND_SUBNET = ipaddress.ip_network("10.64.0.0/15")
INBAND_VLAN = 10
INBAND_VNI = 10
ES_MAC = "44:38:39:FF:00:01"  # in the range NVIDIA reserves for EVPN-MH segment MACs (44:38:39:ff:00:00-ff:ff)


@dataclass
class _Port:
    """One cabled port of a switch as the plan cables it."""

    name: str
    speed_gbps: float
    far_device: str
    far_port: str
    tier: int  # the link's tier: 0 = host, >= 1 = switch to switch
    link_index: int
    half: int = 0  # 1 or 2: a half of a port split in two (its cage broken out 4x)


@dataclass
class SwitchConfig:
    name: str
    network: str
    asn: int
    loopback: str
    ports: list[_Port] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)


def write(plan: PhysicalPlan, loaded: LoadedDesign, folder: Path) -> None:
    out = folder / "switches"
    out.mkdir(exist_ok=True)
    for name, text in switch_files(plan).items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text, encoding="utf-8")


def switch_files(plan: Plan) -> dict[str, str]:
    files = {f"{c.name}.yaml": _render(plan, c) for c in switch_configs(plan)}
    for network in ("compute", "storage"):
        switches = plan.switches(network)
        if switches and _part(plan, switches[0]).technology.startswith("infiniband"):
            files[f"{network}-opensm.conf"] = opensm_conf(plan, network)
    for switch, ports in infiniband_split_ports(plan).items():
        files[f"{switch}-split-ports.txt"] = split_ports_commands(plan, switch, ports)
    rails = host_rail_ports(plan)
    if rails:
        files[HOST_RAIL_TABLE] = host_rail_table(rails)
        files.update(host_netplans(plan, rails))
    return files


HOST_RAIL_TABLE = "hosts/rail-addresses.csv"
RAIL_TABLE_COLUMNS = (
    *("Host", "Network", "Rail", "Plane", "Port", "Interface"),
    *("Address", "Gateway", "Rail block", "Leaf", "Leaf port", "MTU"),
)


@dataclass(frozen=True, slots=True)
class HostRailPort:
    """A host's port on a routed RoCE network: its /31 with the leaf, as the leaf's configuration routes it."""

    host: str
    network: str
    rail: int
    plane: int  # 0 on a single-plane fabric
    port: str  # the plan's port name on the host
    interface: str  # its Linux netdev where the catalog names it, else ""
    address: str  # the host's side of the /31, with its prefix
    gateway: str  # the leaf's side
    leaf: str
    leaf_port: str
    block: str  # the rail's (plane's) address block, routed through the leaf


def host_rail_ports(plan: Plan) -> list[HostRailPort]:
    """The host side of every /31 the leaves of routed RoCE networks hold (one address plan, _p2p_addresses)."""
    networks = [n for n in configured_networks(plan) if n in roce_networks(plan)]
    result = []
    for network in networks:
        blocks = rail_blocks(plan, network)
        names: dict[str, dict[str, str]] = {}
        for index, (leaf_address, host_address) in _p2p_addresses(plan, network).items():
            link = plan.links[index]
            part_id = plan.devices[link.a_device].part
            interfaces = names.get(part_id)
            if interfaces is None:
                interfaces = names[part_id] = _netdevs(plan.catalog_parts[part_id], network)
            key = (link.plane or 0, link.rail or 0)
            result.append(
                HostRailPort(
                    link.a_device,
                    network,
                    link.rail or 0,
                    link.plane or 0,
                    link.a_port,
                    interfaces.get(link.a_port, ""),
                    f"{host_address}/31",
                    leaf_address,
                    link.b_device,
                    link.b_port,
                    str(blocks[key]),
                )
            )
    return sorted(result, key=lambda r: (r.host, r.network, r.rail, r.plane, r.port))


def _netdevs(part: object, role: str) -> dict[str, str]:
    """Port name -> the Linux interface the catalog names for it on Ethernet (each plane's PF as port/plane)."""
    found: dict[str, str] = {}
    for detail in port_details(part, role):  # type: ignore[arg-type]
        netdev = detail.netdev_on(True)
        if netdev:
            found[detail.name] = netdev
        for plane, name in enumerate(detail.plane_netdevs or (), start=1):
            found[f"{detail.name}/{plane}"] = name
    return found


def host_rail_table(rails: list[HostRailPort]) -> str:
    """hosts/rail-addresses.csv: what a host's network configuration (or its provisioning) takes its addresses from."""
    buffer = io.StringIO()
    writer = GuardedCsvWriter(buffer)
    writer.writerow(RAIL_TABLE_COLUMNS)
    for r in rails:
        where = (r.host, r.network, r.rail, r.plane or "", r.port, r.interface)
        writer.writerow([*where, r.address, r.gateway, r.block, r.leaf, r.leaf_port, HOST_MTU])
    return buffer.getvalue()


def host_netplans(plan: Plan, rails: list[HostRailPort]) -> dict[str, str]:
    """hosts/netplan/<host>.yaml for each network of a host whose rail interfaces are all named (by the catalog or
    the design's compute.rail_interfaces), never on guessed names; the others are in the table only."""
    unnamed = {(rail.host, rail.network) for rail in rails if not rail.interface}
    by_host: dict[str, list[HostRailPort]] = defaultdict(list)
    for rail in rails:
        if (rail.host, rail.network) not in unnamed:
            by_host[rail.host].append(rail)
    files = {}
    for host, ports in by_host.items():
        ethernets = {
            p.interface: {
                "addresses": [p.address],
                "mtu": HOST_MTU,
                "routes": [{"to": p.block, "via": p.gateway}],
            }
            for p in ports
        }
        files[f"hosts/netplan/{host}.yaml"] = dump({"network": {"version": 2, "ethernets": ethernets}})
    return files


def configured_networks(plan: Plan) -> list[str]:
    """The Ethernet networks configured with NVUE (out-of-band access switches keep their factory layer-2 setup)."""
    return [
        n
        for n in ("compute", "storage", "inband")
        if (switches := plan.switches(n)) and _part(plan, switches[0]).technology == "ethernet"
    ]


def switch_configs(plan: Plan) -> list[SwitchConfig]:
    networks = configured_networks(plan)
    switches = sorted(
        (d for n in networks for d in plan.switches(n)), key=lambda d: (networks.index(d.network or ""), d.name)
    )
    if len(switches) > LOOPBACKS.num_addresses - 2:
        raise ValueError(f"{len(switches)} switches exceed the loopback plan {LOOPBACKS}")
    ports = _switch_ports(plan, {d.name for d in switches})
    mgmt = _management_ports(plan)
    roce = roce_networks(plan)
    p2p = {n: _p2p_addresses(plan, n) for n in networks if n in roce}
    inband_ids = _segment_ids(plan) if "inband" in networks else {}
    leaf_number: dict[str, int] = defaultdict(int)
    configs = []
    for ordinal, switch in enumerate(switches, start=1):
        network = switch.network or ""
        leaf_number[network] += switch.tier == 1
        config = SwitchConfig(
            switch.name,
            network,
            switch_asn(switch, leaf_number[network]),
            str(LOOPBACKS[ordinal]),
            _in_port_order(ports.get(switch.name, [])),
        )
        config.context = _context(
            plan, switch, config, mgmt.get(switch.name), p2p.get(network, {}), inband_ids, network in roce
        )
        configs.append(config)
    return configs


def switch_port_names(plan: Plan, switch: str) -> list[str]:
    """One switch's cabled ports in its configuration's order, without making every switch's configuration."""
    return [port.name for port in _in_port_order(_switch_ports(plan, {switch}).get(switch, []))]


def _in_port_order(ports: list[_Port]) -> list[_Port]:
    return sorted(ports, key=lambda p: _port_key(p.name))


def switch_asn(switch: Device, leaf_number: int) -> int:
    """RFC 7938 5.2.1 numbering in the private range: leaves unique, an upper-tier pod shared, the top tier shared."""
    block = NETWORK_ASN_BLOCK[switch.network or "compute"]
    base = PRIVATE_ASN_BASE + block * 10_000_000 + (switch.plane or 0) * 1_000_000 + (switch.tier or 1) * 100_000
    return base + (leaf_number if switch.tier == 1 else (switch.pod or 0))


def _switch_ports(plan: Plan, names: set[str]) -> dict[str, list[_Port]]:
    """Switch -> its ports on its own network, in link order (each network's links from the plan queries)."""
    links, devices, found_in = plan.links, plan.devices, queries(plan)
    ports: dict[str, list[_Port]] = defaultdict(list)
    for network in sorted({devices[name].network or "" for name in names}):
        for index in found_in.link_indexes(network):
            link = links[index]
            if link.a_device in names and devices[link.a_device].network == network:
                ports[link.a_device].append(
                    _Port(link.a_port, link.speed_gbps, link.b_device, link.b_port, link.tier, index)
                )
            if link.b_device in names and devices[link.b_device].network == network:
                ports[link.b_device].append(
                    _Port(link.b_port, link.speed_gbps, link.a_device, link.a_port, link.tier, index, link.b_half)
                )
    return ports


def _management_ports(plan: Plan) -> dict[str, tuple[str, str, str]]:
    """Switch -> (its management port, the out-of-band switch and port it is cabled to)."""
    return {
        link.a_device: (link.a_port, link.b_device, link.b_port)
        for link in queries(plan).links("oob", 0)
        if plan.devices[link.a_device].role == "switch"
    }


def rail_blocks(plan: Plan, network: str) -> dict[tuple[int, int], ipaddress.IPv4Network]:
    """(plane, rail) -> its own block of the /31 pool, so a rail interface routes its rail's block via its leaf."""
    keys = sorted({(link.plane or 0, link.rail or 0) for link in queries(plan).links(network, 0)})
    pool = P2P_POOLS[network]
    bits = max(0, math.ceil(math.log2(len(keys)))) if keys else 0
    return dict(zip(keys, pool.subnets(prefixlen_diff=bits), strict=False))


def _p2p_addresses(plan: Plan, network: str) -> dict[int, tuple[str, str]]:
    """Host link index -> (switch address, host address) of its /31, in link order within its rail's block."""
    blocks = rail_blocks(plan, network)
    used: dict[tuple[int, int], int] = defaultdict(int)
    result = {}
    links = plan.links
    for index in queries(plan).link_indexes(network, 0):
        link = links[index]
        key = (link.plane or 0, link.rail or 0)
        block = blocks[key]
        offset = 2 * used[key]
        if offset + 1 >= block.num_addresses:
            raise ValueError(f"rail block {block} of the {network} network is full")
        base = int(block.network_address) + offset
        result[index] = (str(ipaddress.IPv4Address(base)), str(ipaddress.IPv4Address(base + 1)))
        used[key] += 1
    return result


def host_addresses(plan: Plan, network: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(host, port) -> (host address, gateway) on a RoCE network's routed /31 host links."""
    addresses = _p2p_addresses(plan, network)
    return {(plan.links[i].a_device, plan.links[i].a_port): (host, switch) for i, (switch, host) in addresses.items()}


def _segment_ids(plan: Plan) -> dict[str, int]:
    """In-band host -> its EVPN-MH local segment ID, one per host and the same on every leaf it reaches."""
    hosts = sorted(queries(plan).host_leaves("inband"))
    return {host: index for index, host in enumerate(hosts, start=1)}


@dataclass(frozen=True, slots=True)
class _Interface:
    """One cabled port as the template writes it."""

    name: str
    description: str  # quoted
    speed: str
    address: str | None  # routed host port: the switch's /31 address
    neighbor: bool  # switch to switch: a BGP unnumbered neighbor
    adaptive_routing: bool
    evpn_uplink: bool
    segment: int | None  # in-band host port: the EVPN-MH bond's local segment ID
    bond_description: str  # quoted
    bond_members: tuple[str, ...] = ()  # on a segment's first port: every port of the bond on this switch


def _bonded(interfaces: list[_Interface]) -> list[_Interface]:
    """One bond per segment with all its ports on this switch (a bond written per port kept only the last)."""
    members: dict[int, list[str]] = {}
    for interface in interfaces:
        if interface.segment is not None:
            members.setdefault(interface.segment, []).append(interface.name)
    result = []
    for interface in interfaces:
        segment = interface.segment
        if segment is not None and members.get(segment, [None])[0] == interface.name:
            interface = replace(interface, bond_members=tuple(members[segment]))
        result.append(interface)
    return result


def _context(
    plan: Plan,
    switch: Device,
    config: SwitchConfig,
    mgmt: tuple[str, str, str] | None,
    p2p: dict[int, tuple[str, str]],
    segment_ids: dict[str, int],
    roce: bool,
) -> dict[str, Any]:
    """Everything the startup.yaml template needs for one switch (roce: its network runs RoCE)."""
    network = config.network
    evpn = network == "inband"
    leaf = switch.tier == 1
    interfaces = [
        _Interface(
            port.name,
            json.dumps(f"{port.far_device} {port.far_port}"),  # a JSON string is a YAML double-quoted scalar
            f"{port.speed_gbps:g}G",
            f"{p2p[port.link_index][0]}/31" if not port.tier and roce else None,
            bool(port.tier),
            bool(port.tier) and network == "compute",
            bool(port.tier) and evpn and leaf,
            segment_ids[port.far_device] if not port.tier and evpn else None,
            json.dumps(f"{port.far_device} bond"),
        )
        for port in config.ports
    ]
    interfaces = _bonded(interfaces)
    svi = None
    if evpn and leaf:
        leaf_index = int(ipaddress.ip_address(config.loopback)) - int(LOOPBACKS.network_address)
        svi = f"{INBAND_SUBNET[INBAND_SUBNET.num_addresses // 2 + leaf_index]}/{INBAND_SUBNET.prefixlen}"
    return {
        "hostname": json.dumps(switch.name),
        "loopback": config.loopback,
        "asn": config.asn,
        "mgmt": (mgmt[0], json.dumps(f"oob {mgmt[1]} {mgmt[2]}")) if mgmt else None,
        "breakouts": _broken_out_cages(_part(plan, switch), config.ports),
        "interfaces": interfaces,
        "switch_mtu": SWITCH_MTU,
        "host_mtu": HOST_MTU,
        "roce": roce,
        "qos": ROCE_QOS,
        "adaptive_routing": network == "compute",
        "evpn": evpn,
        "evpn_leaf": evpn and leaf,
        "svi": svi,
        "gateway": f"{INBAND_SUBNET[1]}/{INBAND_SUBNET.prefixlen}",
        "vlan": INBAND_VLAN,
        "vni": INBAND_VNI,
        "es_mac": ES_MAC,
    }


def _broken_out_cages(part: Switch, ports: list[_Port]) -> list[tuple[str, str]]:
    """(cage, breakout) of the multi-port cages in use: 2x, or 4x where a port is split for 1:2 splitter fibres."""
    used = {p.name for p in ports if not p.half}
    halves = {p.name for p in ports if p.half}
    cages = []
    for group in part.ports:
        if group.ports_per_cage < 2:
            continue
        split = dict(zip(group.port_names(), group.split_port_names(), strict=False))
        for offset, number in enumerate(range(group.number_from, group.number_from + group.cages)):
            subs = {
                group.name_format.format(cage=number, sub=i + 1, sub0=i, index=0) for i in range(group.ports_per_cage)
            }
            quarters = {half for (_name, cage), pair in split.items() if cage == offset + 1 for half in pair}
            if quarters & halves:
                cages.append((f"swp{number}", "4x"))
            elif subs & used:
                cages.append((f"swp{number}", "2x"))
    return cages


def _port_key(name: str) -> list[int | str]:
    """Natural order: swp2 before swp10, swp1s1 after swp1s0."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _part(plan: Plan, device: Device) -> Switch:
    part = plan.part(device.name)
    assert isinstance(part, Switch)
    return part


def _render(plan: Plan, config: SwitchConfig) -> str:
    device = plan.devices[config.name]
    return render(
        "switches/startup.yaml.j2",
        design=plan.name,
        switch=device,
        model=_part(plan, device).model,
        cumulus=CUMULUS_VERSION,
        **config.context,
    )


# --- InfiniBand -------------------------------------------------------------------------------------------------


def opensm_conf(plan: Plan, network: str) -> str:
    """UFM's subnet-manager settings: adaptive up/down routing rooted at the top tier (its switches listed)."""
    tiers = sorted({d.tier or 1 for d in plan.switches(network)})
    top = sorted(d.name for d in plan.switches(network, tiers[-1]))
    return render(
        "switches/opensm.conf.j2",
        design=plan.name,
        network=network,
        tiers=len(tiers),
        top=top,
        switches=len(plan.switches(network)),
        model=_part(plan, plan.switches(network)[0]).model,
    )


# --- InfiniBand split ports ---------------------------------------------------------------------------------------

MLNXOS_SPLIT_SOURCES = (
    "NVIDIA MLNX-OS User Manual v3.12.2302 LTS, InfiniBand Interface (Break-Out Cables: a split port x/y becomes "
    "x/y/1 and x/y/2; on Quantum-2 a port is <asic>/<cage>/<port>) and InfiniBand Interface Commands ('interface ib "
    "<port> port-type split-2 ... Splits selected port to 2', available with the split-ready profile), "
    "https://docs.nvidia.com/networking/display/nvidiamlnxosusermanualv3122302lts/infiniband+interface and "
    ".../infiniband+interface+commands",
    "NVIDIA InfiniBand Cluster Bring-up Procedure, Configuring a Split Port ('the switch does not auto-sense the "
    "cable type': system profile ib split-ready, shut the interface down, split it), "
    "https://docs.nvidia.com/networking/display/infinibandclusterbringupprocedure/Configuring+a+Split+Port",
    "the same sequence (split-ready profile, confirmed with 'yes', which reboots the switch and deletes its "
    "configuration; then per port 'interface ib 1/<cage>/<port>', 'shutdown', 'port-type split-2') as Dell Omnia's "
    "NDR switch playbook runs it (GitHub dell/omnia network/roles/infiniband/tasks/split_port_ndr.yml, "
    "files/split_ready.py) and as xcat2/xcat-core issue 6549 quotes NVIDIA's procedure",
)


@dataclass(frozen=True, slots=True)
class SplitPort:
    """One InfiniBand switch port the plan splits in two, and what each half is cabled to."""

    port: str  # as the switch OS shows it: IB1/<cage>/<port>
    halves: tuple[tuple[str, str], ...]  # (half's name, far end "device port") per cabled half, half 1 first


def infiniband_split_ports(plan: Plan) -> dict[str, list[SplitPort]]:
    """InfiniBand switch -> its ports carrying a 1:2 splitter's halves; only these are split (half speed each)."""
    halves: dict[str, dict[str, str]] = defaultdict(dict)
    devices = plan.devices
    for link in plan.links:
        if link.b_half and _part(plan, devices[link.b_device]).technology.startswith("infiniband"):
            halves[link.b_device][link.b_port] = f"{link.a_device} {link.a_port}"
    result = {}
    for switch in sorted(halves):
        used = halves[switch]
        pools = device_ports(_part(plan, devices[switch])).values()
        ports = [
            SplitPort(port, tuple((half, used[half]) for half in pair if half in used))
            for pool in pools
            for port, pair in zip(pool.names, pool.halves, strict=False)
            if used.keys() & set(pair)
        ]
        result[switch] = sorted(ports, key=lambda p: _port_key(p.port))
    return result


def mlnxos_interface(port: str) -> str:
    """MLNX-OS shows a Quantum-2 port as IB1/<cage>/<port>; its CLI takes it as ``interface ib 1/<cage>/<port>``."""
    match = re.fullmatch(r"IB(\d+(?:/\d+)+)", port)
    if match is None:
        raise ValueError(f"{port!r} is not an MLNX-OS InfiniBand port name (IB1/<cage>/<port>)")
    return match.group(1)


def split_ports_commands(plan: Plan, switch: str, ports: list[SplitPort]) -> str:
    """MLNX-OS commands splitting the ports (for an externally managed switch, the list to split with NVIDIA's
    firmware tools)."""
    device = plan.devices[switch]
    part = _part(plan, device)
    return render(
        "switches/split-ports.txt.j2",
        design=plan.name,
        switch=switch,
        network=device.network,
        model=part.model,
        managed=part.subnet_manager,
        ports=[(mlnxos_interface(p.port), [(mlnxos_interface(h), far) for h, far in p.halves]) for p in ports],
        sources=MLNXOS_SPLIT_SOURCES,
    )
