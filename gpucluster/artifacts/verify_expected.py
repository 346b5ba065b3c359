"""What the bring-up check compares the fabric with, in ``verify/``:

* ``expected-<network>.net`` per InfiniBand network: the planned fabric in ibsim's topology format (=
  ibnetdiscover's output), each port line with the planned width and rate (``lid 0 4xNDR`` and ibsim's ``w= s= e=``
  options). ``ibsim -s`` simulates it (up to about 4 SUs: 256 switches and 2,048 nodes); ``gpucluster verify``
  reads it as a discovery file and finds nothing: how a site checks its own tooling before bring-up.
* ``node-descriptions.csv``: the node description each HCA and switch must carry to be recognised, where it
  stands, and how to set it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from gpucluster.catalog.schema import RackMounted
from gpucluster.design.load import LoadedDesign
from gpucluster.formats.tables import GuardedCsvWriter
from gpucluster.formats.templating import render_to
from gpucluster.plan.labels import Locator
from gpucluster.plan.model import PhysicalPlan, Plan
from gpucluster.plan.queries import queries
from gpucluster.runtime.collector import cycle_collector_paused
from gpucluster.runtime.progress import track
from gpucluster.verify.expected import PlannedEnd, PlannedLink, infiniband_networks, planned_links, port_info

FOLDER = "verify"
NODE_ID_CHARACTERS = 60  # ibsim keeps node ids of up to 64 characters (NODEIDLEN 65)

NODE_DESCRIPTION_COLUMNS = (
    "network",
    "device",
    "role",
    "rack",
    "u",
    "port",
    "rdma_device",
    "ib_port",
    "node_description",
    "how_to_set",
)


_PLAIN_ID = re.compile(r"[A-Za-z0-9_.-]*")  # what every name the planner makes is: kept as it is


def _node_id(end: PlannedEnd, ids: dict[str, str]) -> str:
    """The record id in the .net file: S-<switch> or H-<host>-<hca>, readable and unique."""
    found = ids.get(end.node)
    if found is None:
        stem = end.node.replace(" ", "-")
        if not _PLAIN_ID.fullmatch(stem):  # letters and digits stay (any script's), all else becomes _
            stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in stem)
        prefix = "S-" if end.switch else "H-"
        found = prefix + stem if len(stem) <= NODE_ID_CHARACTERS else f"{prefix}{len(ids) + 1:08d}"
        ids[end.node] = found
    return found


_SPLIT_NOTE = " [split half: stand-in port number]"  # short: ibsim's parser reads lines into a small buffer


# a record's line: (port, peer id, peer port, peer description, rate, cable, ends)
_Line = tuple[int, str, str, str, str, str, str]


def net_records(plan: Plan, links: Iterable[PlannedLink]) -> list[dict[str, Any]]:
    """One record per node (switches by name, then HCAs by name), each with its ports in port order: kind, ports,
    id, description and lines, a line per port (port, peer id, peer port, peer description, rate, cable, ends).
    `links` may be a stream: each link's ends are kept in the records' lines, the link itself is not."""
    ids: dict[str, str] = {}
    nodes: dict[str, dict[str, Any]] = {}
    lines_of: dict[str, list[_Line]] = {}  # node -> its record's lines
    ib_ports: dict[str, int] = {}  # catalog part -> its InfiniBand ports (a fabric has few switch models)
    numbers = _PortNumbers()

    def add(end: PlannedEnd) -> list[_Line]:
        record = nodes[end.node] = _record(plan, end, ids, ib_ports)
        found: list[_Line] = record["lines"]
        lines_of[end.node] = found
        return found

    for planned in links:  # half a million at 131,072 GPUs: each end written out once
        _index, _network, cable, a, b, speed, width, lane, split = planned
        a_device, a_port, a_node, a_number, _a_switch = a
        b_device, b_port, b_node, b_number, _b_switch = b
        rate = f"{width}x{lane}" if width else f"{speed:g}G"  # PlannedLink.rate
        a_id = ids.get(a_node) or _node_id(a, ids)
        b_id = ids.get(b_node) or _node_id(b, ids)
        note = _SPLIT_NOTE if split else ""
        a_ends = f"{a_device} {a_port} -> {b_device} {b_port}{note}"
        b_ends = f"{b_device} {b_port} -> {a_device} {a_port}{note}"
        (lines_of.get(a_node) or add(a)).append((numbers[a_number], b_id, b_number, b_node, rate, cable, a_ends))
        (lines_of.get(b_node) or add(b)).append((numbers[b_number], a_id, a_number, a_node, rate, cable, b_ends))
    for record in nodes.values():
        record["lines"].sort()
        record["ports"] = max(record["ports"], record["lines"][-1][0])  # a split half's stand-in number
    return sorted(nodes.values(), key=lambda r: (r["kind"] != "Switch", r["description"]))


class _PortNumbers(dict[str, int]):
    """A port number's text -> the number (a fabric has a few dozen; int() of each of a million ends is slower)."""

    def __missing__(self, text: str) -> int:
        number = self[text] = int(text)
        return number


def _record(plan: Plan, end: PlannedEnd, ids: dict[str, str], ib_ports: dict[str, int]) -> dict[str, Any]:
    ports = 1
    if end.switch:
        part = plan.devices[end.device].part
        if part not in ib_ports:
            ib_ports[part] = _ib_port_count(plan, end.device)
        ports = ib_ports[part]
    return {
        "kind": "Switch" if end.switch else "Ca",
        "ports": ports,
        "id": _node_id(end, ids),
        "description": end.node,
        "lines": [],
        "end": end,  # the end that first names the node (its node-descriptions.csv row)
    }


# ibsim's enabled-width and enabled-speed masks (ibsim/sim.h, LINKWIDTH_* and LINKSPEED_*/LINKSPEEDEXT_*): a port
# line's options w=, s= and e= set them, and a link comes up at the highest width and rate both ends enable.
# Without them ibsim 0.10 (Debian 12) and 0.11 bring an NDR link up at SDR: they read the rate from the comment
# only up to HDR (NDR from 0.12). The NDR bit exists from 0.11; 0.10 refuses e=8 (its masks end at HDR, "should be
# between 0 to 7"), and no ibsim release up to 0.12 knows XDR, so an XDR port gets no e= and comes up at QDR.
IBSIM_WIDTH = {1: 1, 2: 16, 4: 2, 8: 4, 12: 8}
IBSIM_SPEED = {"SDR": 1, "DDR": 3, "QDR": 7}  # with the lower speeds, as ibsim enables them itself
IBSIM_SPEED_EXT = {"FDR": 1, "EDR": 2, "HDR": 4, "NDR": 8}
_RATE = re.compile(r"(\d+)x([A-Z]+)")


def ibsim_port_options(rate: str) -> str:
    """The port-line options that make ibsim enable exactly the planned width and lane rate (e.g. 4xNDR:
    ``w=2 s=7 e=8``); empty for a rate ibsim cannot express (an Ethernet speed such as 400G)."""
    match = _RATE.fullmatch(rate)
    if match is None:
        return ""
    width, lane = int(match[1]), match[2]
    options = [f"w={IBSIM_WIDTH[width]}"] if width in IBSIM_WIDTH else []
    options.append(f"s={IBSIM_SPEED.get(lane, IBSIM_SPEED['QDR'])}")
    if lane in IBSIM_SPEED_EXT:
        options.append(f"e={IBSIM_SPEED_EXT[lane]}")
    return " ".join(options)


def net_blocks(records: list[dict[str, Any]]) -> Iterator[str]:
    """Each record's text in the .net file as ibnetdiscover prints it, each port line after its cable's label and
    with ibsim's width and rate options. Made here, not in the template: a template's loop over half a million
    port lines took most of the writer's time."""
    options = functools.cache(ibsim_port_options)  # a fabric has a handful of rates
    for r in records:
        if r["kind"] == "Switch":
            head = f'\nSwitch\t{r["ports"]} "{r["id"]}"\t\t# "{r["description"]}" enhanced port 0 lid 0 lmc 0\n'
            own = ""
        else:
            head = f'\nCa\t{r["ports"]} "{r["id"]}"\t\t# "{r["description"]}"\n'
            own = "lid 0 lmc 0 "
        lines = [
            f'# cable {cable}: {ends}\n[{port}]\t"{peer}"[{peer_port}]\t{options(rate)}\t'
            f'# {own}"{peer_node}" lid 0 {rate}\n'
            for port, peer, peer_port, peer_node, rate, cable, ends in r["lines"]
        ]
        yield head + "".join(lines)


def net_context(plan: Plan, network: str, records: list[dict[str, Any]]) -> dict[str, object]:
    """What verify/expected.net.j2 renders for one network's records (net_records)."""
    return {
        "design": plan.name,
        "network": network,
        "nodes": len(records),
        "links": sum(len(record["lines"]) for record in records) // 2,  # a line at each end of each link
        "blocks": net_blocks(records),
    }


def _ib_port_count(plan: Plan, device: str) -> int:
    ports = plan.part_as(device, RackMounted).ports
    return sum(bool(port_info(plan, device, name).ib_port) for group in ports for name, _cage in group.port_names())


def node_description_rows(plan: Plan, networks: list[str]) -> list[tuple[str, ...]]:
    """One row per InfiniBand node of each network."""
    locate = Locator(plan)
    rows: list[tuple[str, ...]] = []
    for network in networks:
        records = net_records(plan, _infiniband_planned(plan, network))
        rows += _node_rows(plan, network, (record["end"] for record in records), locate)
    return sorted(rows, key=_row_order)


def _node_rows(plan: Plan, network: str, ends: Iterable[PlannedEnd], locate: Locator) -> list[tuple[str, ...]]:
    """A row for each node among `ends` (the first end that names it)."""
    rows: dict[str, tuple[str, ...]] = {}
    for end in ends:
        if end.node in rows:
            continue
        device = plan.devices[end.device]
        if end.switch:
            port, rdma, ib_port = "", "", ""
            how = (
                f"set the switch's hostname to {end.device} (NVIDIA's switch OS then reports "
                f"MF0;{end.device}:<model>/U1); an externally managed switch: give ibnetdiscover a node "
                "name map (--node-name-map) with its GUID and this name"
            )
        else:
            info = port_info(plan, end.device, end.port)
            port, rdma, ib_port = end.port, info.os_device or "", "1"
            device_name = info.os_device or f"<RDMA device of port {end.port}>"
            how = f"on {end.device}: echo -n '{end.node}' > /sys/class/infiniband/{device_name}/node_desc" + (
                " (rdma-ndd's default %h %d gives it when the hostname is " + end.device + ")" if info.os_device else ""
            )
        rows[end.node] = (
            network,
            end.device,
            device.role,
            device.rack,
            locate.unit(device),
            port,
            rdma,
            ib_port,
            end.node,
            how,
        )
    return list(rows.values())


def _row_order(row: tuple[str, ...]) -> tuple[str, bool, str, str]:
    """Network, switches first, device, port."""
    return row[0], row[2] != "switch", row[1], row[5]


def _infiniband_planned(plan: Plan, network: str) -> Iterator[PlannedLink]:
    """A network's links with InfiniBand ports at both ends, streamed: what ibnetdiscover sees (a generic port cabled
    to an InfiniBand switch, such as a storage block whose catalog entry names no technology, is not among them)."""
    by_tier = queries(plan).links_by_network_tier.items()
    total = sum(len(members) for (name, _tier), members in by_tier if name == network)
    return (p for p in track(planned_links(plan, network), total, "links") if p.lane)


def _node_descriptions(handle: TextIO, rows: list[tuple[str, ...]]) -> None:
    """Only the port column holds catalog text that could look like a formula (the others are names the planner
    makes, RDMA device names the catalog's pattern limits, and our own sentences)."""
    writer = GuardedCsvWriter(handle, (NODE_DESCRIPTION_COLUMNS.index("port"),))
    writer.writerow(NODE_DESCRIPTION_COLUMNS)
    writer.writerows(rows)


@cycle_collector_paused()  # very many records, no cycles (gpucluster.runtime.collector)
def write(plan: PhysicalPlan, loaded: LoadedDesign, folder: Path) -> None:
    """verify/expected-<network>.net for each InfiniBand network and verify/node-descriptions.csv. One network at a
    time, each file streamed from its template: the compute fabric of 131,072 GPUs is half a million links, too many
    to hold at once with their file's text."""
    networks = infiniband_networks(plan)
    out = folder / FOLDER
    out.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, ...]] = []
    locate = Locator(plan)
    for network in networks:
        records = net_records(plan, _infiniband_planned(plan, network))  # the links streamed: the records hold them
        render_to(out / f"expected-{network}.net", "verify/expected.net.j2", **net_context(plan, network, records))
        rows += _node_rows(plan, network, (record["end"] for record in records), locate)
        del records
    with open(out / "node-descriptions.csv", "w", encoding="utf-8") as handle:
        _node_descriptions(handle, sorted(rows, key=_row_order))
