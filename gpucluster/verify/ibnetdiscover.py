"""Read ``ibnetdiscover`` output (infiniband-diags, default topology format; also ibsim's .net files,
which share it): node records (``Switch``/``Ca``/``Rt`` header, then one line per connected port) and the
peer, width and rate of every port.

    Switch  64 "S-b8cef603001bf9de"  # "MF0;leaf-01:MQM9700/U1" enhanced port 0 lid 1 lmc 0
    [1]     "H-946dae0300a3b4c0"[1](946dae0300a3b4c1)  # "gpu001 mlx5_0" lid 5 4xNDR
    Ca      1 "H-946dae0300a3b4c0"  # "gpu001 mlx5_0"
    [1](946dae0300a3b4c1)  "S-b8cef603001bf9de"[1]  # lid 5 lmc 0 "MF0;leaf-01:MQM9700/U1" lid 1 4xNDR

Devices are told apart by node description; a switch running NVIDIA's switch OS reports
``MF0;<hostname>:<model>/U<n>``, reduced here to the hostname.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster.errors import DesignError, Problem
from gpucluster.verify.discovery import Discovery, FoundLink, read_lines

_HEADER = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([^"]+)"\s*(?:#\s*"(.*)")?(.*)$')
_PORT = re.compile(
    r'^\[(\d+)\](?:\([0-9a-fA-F]+\))?\s+"([^"]+)"\[(\d+)\](?:\([0-9a-fA-F]+\))?'
    r"(?:\s+[a-z]=\S+)*\s*(?:#(.*))?$"
)
_RATE = re.compile(r"\b(\d+)x([A-Za-z0-9]+)\s*$")
_SETTING = re.compile(r"^(vendid|devid|sysimgguid|switchguid|caguid|rtguid|hcaguids?)\s*=")
_PEER_DESC = re.compile(r'"(.*)"')
_MAX_LINE = 4096


def switch_hostname(description: str) -> str:
    """``MF0;leaf-01:MQM9700/U1`` -> ``leaf-01``; any other description as it is."""
    if description.startswith("MF0;"):
        rest = description[4:]
        colon = rest.rfind(":")
        return rest[:colon] if colon > 0 else rest
    return description


def parse_ibnetdiscover(path: Path) -> Discovery:
    """Every link in an ibnetdiscover topology file; a line that is not ibnetdiscover output is a
    located error (file:line: what was found, what is expected). The file is read a line at a time and each
    link kept once, so memory grows with the fabric, not with the file."""
    topology = _Topology(str(path))
    for line_no, raw in read_lines(path, _MAX_LINE):
        topology.read(line_no, raw.strip())
    return topology.discovery()


_Port = tuple[str, int]  # node id (S-/H-<guid>), port number
# node id, port, peer id, peer port, width, lane, peer description, line: a link as its first port line says
_Seen = tuple[str, int, str, int, int, str, str, int]


@dataclass
class _Topology:
    """What the comparison needs of an ibnetdiscover file, gathered line by line: each node's description and
    each link from the first of the two port lines that list it (both ends list a link)."""

    source: str
    descriptions: dict[str, str] = field(default_factory=dict)  # node id -> description
    count: dict[str, int] = field(default_factory=dict)  # description -> nodes that have it
    links: dict[tuple[_Port, _Port], _Seen] = field(default_factory=dict)
    node: str | None = None
    node_ports: int = 0
    seen_ports: set[int] = field(default_factory=set)

    def fail(self, line_no: int, message: str) -> DesignError:
        return DesignError([Problem(self.source, line_no, 0, "", message)])

    def read(self, line_no: int, line: str) -> None:
        if not line or line.startswith("#") or _SETTING.match(line):
            return
        header = _HEADER.match(line)
        if header:
            self.header(line_no, *header.groups()[:4])
        elif line.startswith("["):
            self.port(line_no, line)
        else:
            raise self.fail(
                line_no, f"not ibnetdiscover output: {line[:80]!r} (expected a Switch/Ca/Rt node line or a port line)"
            )

    def header(self, line_no: int, kind: str, nports: str, node_id: str, description: str | None) -> None:
        """A node line: the node whose port lines follow, and its description (a switch's hostname)."""
        if node_id in self.descriptions:
            raise self.fail(line_no, f'node "{node_id}" is listed twice')
        description = (description if description is not None else node_id).strip()
        if kind == "Switch":
            description = switch_hostname(description)
        node_id = sys.intern(node_id)
        self.descriptions[node_id] = description
        self.count[description] = self.count.get(description, 0) + 1
        self.node, self.node_ports, self.seen_ports = node_id, int(nports), set()

    def port(self, line_no: int, line: str) -> None:
        """A port line of the current node: its peer, and the width and rate it trained at."""
        match = _PORT.match(line)
        if not match:
            raise self.fail(
                line_no,
                f"cannot read port line {line[:80]!r}: expected '[port] \"peer id\"[peer port] # ... lid N 4xNDR'",
            )
        if self.node is None:
            raise self.fail(line_no, "port line before any Switch/Ca/Rt node line")
        number, peer, peer_port, comment = match.groups()
        port = int(number)
        if port < 1 or port > self.node_ports:
            raise self.fail(line_no, f"port {port} outside 1..{self.node_ports} of node {self.node}")
        if port in self.seen_ports:
            raise self.fail(line_no, f"port {port} of node {self.node} is listed twice")
        self.seen_ports.add(port)
        peer = sys.intern(peer)
        ends = ((self.node, port), (peer, int(peer_port)))
        key = ends if ends[0] <= ends[1] else (ends[1], ends[0])
        if key in self.links:  # the link's other end, already kept
            return
        width, lane, peer_description = 0, "", ""
        if comment:
            rate = _RATE.search(comment)
            if rate:
                width, lane = int(rate.group(1)), sys.intern(rate.group(2).upper())
            desc = _PEER_DESC.search(comment)
            peer_description = sys.intern(desc.group(1)) if desc else ""
        self.links[key] = (self.node, port, peer, int(peer_port), width, lane, peer_description, line_no)

    def discovery(self) -> Discovery:
        """The links by node description; a peer outside the discovered records (a partial discovery) is named
        by what its port line's comment says of it."""
        if not self.descriptions:
            raise self.fail(0, "no Switch or Ca node records: not ibnetdiscover topology output")
        found = Discovery("ibnetdiscover", self.source)
        found.nodes = set(self.descriptions.values())
        found.duplicates = {d: n for d, n in self.count.items() if n > 1}
        for node_id, port, peer, peer_port, width, lane, peer_description, line_no in self.links.values():
            a = (self.descriptions[node_id], str(port))
            peer_name = self.descriptions.get(peer)
            if peer_name is None:
                peer_name = switch_hostname(peer_description) if peer.startswith("S-") else peer_description or peer
            found.links.append(FoundLink(a, (peer_name, str(peer_port)), width, lane, 0.0, f"{self.source}:{line_no}"))
        return found
