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
from pathlib import Path

from gpucluster.errors import DesignError, Problem
from gpucluster.verify.discovery import Discovery, FoundLink, read_text

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
    located error (file:line: what was found, what is expected)."""
    text = read_text(path)
    source = str(path)
    found = Discovery("ibnetdiscover", source)
    descriptions: dict[str, str] = {}  # node id (S-/H-<guid>) -> description
    # node id, port, peer id, peer port, width, lane, peer description, line
    ports: list[tuple[str, int, str, int, int, str, str, int]] = []
    node: str | None = None
    node_ports = 0
    seen_ports: set[int] = set()
    count: dict[str, int] = {}

    def fail(line_no: int, message: str) -> DesignError:
        return DesignError([Problem(source, line_no, 0, "", message)])

    for line_no, raw in enumerate(text.splitlines(), 1):
        if len(raw) > _MAX_LINE:
            raise fail(line_no, f"line of {len(raw):,} characters; ibnetdiscover lines are short")
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if _SETTING.match(line):
            continue
        header = _HEADER.match(line)
        if header:
            kind, nports, node_id, description, _rest = header.groups()
            if node_id in descriptions:
                raise fail(line_no, f'node "{node_id}" is listed twice')
            description = (description if description is not None else node_id).strip()
            if kind == "Switch":
                description = switch_hostname(description)
            descriptions[node_id] = description
            count[description] = count.get(description, 0) + 1
            node, node_ports, seen_ports = node_id, int(nports), set()
            continue
        if line.startswith("["):
            match = _PORT.match(line)
            if not match:
                raise fail(
                    line_no,
                    f"cannot read port line {line[:80]!r}: expected '[port] \"peer id\"[peer port] # ... lid N 4xNDR'",
                )
            if node is None:
                raise fail(line_no, "port line before any Switch/Ca/Rt node line")
            number, peer, peer_port, comment = match.groups()
            port = int(number)
            if port < 1 or port > node_ports:
                raise fail(line_no, f"port {port} outside 1..{node_ports} of node {node}")
            if port in seen_ports:
                raise fail(line_no, f"port {port} of node {node} is listed twice")
            seen_ports.add(port)
            width, lane = 0, ""
            peer_description = ""
            if comment:
                rate = _RATE.search(comment)
                if rate:
                    width, lane = int(rate.group(1)), rate.group(2).upper()
                desc = _PEER_DESC.search(comment)
                peer_description = desc.group(1) if desc else ""
            ports.append((node, port, peer, int(peer_port), width, lane, peer_description, line_no))
            continue
        raise fail(
            line_no, f"not ibnetdiscover output: {line[:80]!r} (expected a Switch/Ca/Rt node line or a port line)"
        )
    if not descriptions:
        raise fail(0, "no Switch or Ca node records: not ibnetdiscover topology output")

    found.nodes = set(descriptions.values())
    found.duplicates = {d: n for d, n in count.items() if n > 1}
    seen: set[tuple[tuple[str, int], tuple[str, int]]] = set()
    for node_id, port, peer, peer_port, width, lane, peer_description, line_no in ports:
        ends = ((node_id, port), (peer, peer_port))
        key = ends if ends[0] <= ends[1] else (ends[1], ends[0])
        if key in seen:  # each link is listed from both of its ends
            continue
        seen.add(key)
        a = (descriptions[node_id], str(port))
        peer_name = descriptions.get(peer)
        if peer_name is None:  # a peer outside the discovered records (a partial discovery)
            peer_name = switch_hostname(peer_description) if peer.startswith("S-") else peer_description or peer
        b = (peer_name, str(peer_port))
        found.links.append(FoundLink(a, b, width, lane, 0.0, f"{source}:{line_no}"))
    return found
