"""What discovery found, in one shape for InfiniBand and Ethernet: the links seen between (node, port)
pairs, with the width and rate they trained at where the tool reports it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpucluster.errors import DesignError, Problem

MAX_DISCOVERY_BYTES = 512 * 1024 * 1024  # far above a 131,072-GPU fabric's ibnetdiscover output (~150 MB)

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
    """A discovery file's text; unreadable, oversized or binary input is a located error."""
    try:
        size = path.stat().st_size
        if size > limit_bytes:
            message = f"{size:,} bytes: larger than {limit_bytes:,}, not a discovery file"
            raise DesignError([Problem(str(path), 0, 0, "", message)])
        data = path.read_bytes()
    except OSError as error:
        raise DesignError([Problem(str(path), 0, 0, "", f"cannot read: {error.strerror}")]) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise DesignError([Problem(str(path), line, 0, "", "not UTF-8 text; expected discovery output")]) from None
