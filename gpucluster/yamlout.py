"""Writing YAML: one dumper for every writer (Kubernetes and launch manifests, monitoring, NetBox device types,
Slurm's topology.yaml, the starter designs `gpucluster size` writes).

Safe YAML only, keys in the order written, and no anchors: a repeated object (one pod template for master and
workers) is written out in full, as the tools that read these files expect. libyaml's emitter when PyYAML has
it (it is the fast one at 131,072 GPUs), else PyYAML's own; both write the same text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:  # the type checker sees the pure-Python dumper; at run time libyaml's where PyYAML has it
    _Base = yaml.SafeDumper
else:
    _Base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class Dumper(_Base):
    """Safe YAML without anchors."""

    def ignore_aliases(self, data: object) -> bool:
        return True


_TEXT, _MAPPING = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map"


def _mapping(dumper: yaml.SafeDumper, data: dict) -> yaml.Node:
    """A mapping; one of one-line text keys and values (a scrape target's labels: prometheus.yml has 260,000 at
    131,072 GPUs) made directly, as represent_dict makes it, without a representer call per key and value."""
    if dumper.sort_keys or dumper.default_style is not None or not _one_line_text(data):
        return dumper.represent_dict(data)
    pairs = [(yaml.ScalarNode(_TEXT, key), yaml.ScalarNode(_TEXT, value)) for key, value in data.items()]
    # represent_mapping's choice: the dump's flow style, else flow where every key and value is a plain scalar
    flow = dumper.default_flow_style
    return yaml.MappingNode(_MAPPING, pairs, flow_style=True if flow is None else flow)


def _one_line_text(data: dict) -> bool:
    return all(type(key) is str and type(value) is str and "\n" not in value for key, value in data.items())


Dumper.add_representer(dict, _mapping)


class BlockDumper(Dumper):
    """As Dumper, with multi-line strings as literal blocks (PromQL and scripts stay readable)."""


def _literal_block(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


BlockDumper.add_representer(str, _literal_block)


def dump(document: object, *, blocks: bool = False, width: int | None = None, allow_unicode: bool = False) -> str:
    """One YAML document, keys in the order written (``blocks``: multi-line strings as literal blocks)."""
    return yaml.dump(
        document, Dumper=BlockDumper if blocks else Dumper, sort_keys=False, width=width, allow_unicode=allow_unicode
    )


def dump_all(
    documents: Iterable[object],
    *,
    width: int | None = None,
    allow_unicode: bool = False,
    explicit_start: bool = False,
) -> str:
    """Several YAML documents in one text, keys in the order written."""
    return yaml.dump_all(
        documents,
        Dumper=Dumper,
        sort_keys=False,
        width=width,
        allow_unicode=allow_unicode,
        explicit_start=explicit_start,
    )
