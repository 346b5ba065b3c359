"""What discovery found, in one shape for InfiniBand and Ethernet: the links seen between (node, port)
pairs, with the width and rate they trained at where the tool reports it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster.errors import DesignError, Problem
from gpucluster.inputs.yamlsource import open_limited, read_limited, too_large

# The largest supported fabric (131,072 GPUs, three tiers) gives about 150 MB of ibnetdiscover output; the cap
# leaves room for long node descriptions and stops there, before a file costs more time and memory than any
# supported fabric's would.
MAX_DISCOVERY_BYTES = 256 * 1024 * 1024

PortKey = tuple[str, str]  # (node description or system name, port number or port id)


@dataclass(frozen=True, slots=True)
class FoundLink:
    """One link discovery saw, from the node that reported it (a) to its peer (b)."""

    a: PortKey
    b: PortKey
    width: int = 0  # InfiniBand lanes it trained at; 0 when the tool does not say
    lane: str = ""  # InfiniBand lane rate (NDR); "" when the tool does not say
    speed_gbps: float = 0.0  # Ethernet: the speed the neighbour reports; 0 when it does not
    where: str = ""  # file:line it was read from


@dataclass
class Discovery:
    """The links one discovery file (or folder of LLDP files) holds."""

    kind: str  # "ibnetdiscover" | "lldp"
    source: str
    links: list[FoundLink] = field(default_factory=list)
    nodes: set[str] = field(default_factory=set)  # every node description / system name seen
    # LLDP: the switches whose neighbours were collected; a link is checked only from a reporting switch.
    # InfiniBand: empty (ibnetdiscover walks the whole fabric).
    reporters: set[str] = field(default_factory=set)
    # node descriptions that two or more nodes carry (so their ports cannot be told apart)
    duplicates: dict[str, int] = field(default_factory=dict)


def read_text(path: Path, limit_bytes: int = MAX_DISCOVERY_BYTES) -> str:
    """A discovery file's text; unreadable, oversized (read no further than the limit, so a pipe or a device
    cannot stream without end) or binary input is a located error."""
    data = read_limited(path, "discovery file", limit_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise DesignError([Problem(str(path), line, 0, "", "not UTF-8 text; expected discovery output")]) from None


def read_lines(path: Path, max_line: int, limit_bytes: int = MAX_DISCOVERY_BYTES) -> Iterator[tuple[int, str]]:
    """A discovery file's lines (numbered from 1, line ends removed) one at a time, so a large file is never
    held whole; an oversized file, a line longer than `max_line` bytes or one that is not UTF-8 is a located
    error."""
    source = str(path)
    with open_limited(path, "discovery file", limit_bytes) as handle:
        total = 0
        for line_no, raw in enumerate(iter(lambda: handle.readline(max_line + 2), b""), 1):
            total += len(raw)
            if total > limit_bytes:
                raise too_large(path, "discovery file", limit_bytes)
            content = raw.rstrip(b"\r\n")
            if len(content) > max_line:
                message = f"a line of more than {max_line:,} bytes; discovery output lines are short"
                raise DesignError([Problem(source, line_no, 0, "", message)])
            try:
                text = content.decode("utf-8")
            except UnicodeDecodeError:
                message = "not UTF-8 text; expected discovery output"
                raise DesignError([Problem(source, line_no, 0, "", message)]) from None
            yield line_no, text
