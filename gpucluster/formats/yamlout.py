"""Writing YAML: one dumper for every writer (Kubernetes and launch manifests, monitoring, NetBox device types,
Slurm's topology.yaml, the starter designs `gpucluster size` writes).

Safe YAML only, keys in the order written, and no anchors: a repeated object (one pod template for master and
workers) is written out in full, as the tools that read these files expect. libyaml's emitter when PyYAML has
it (it is the fast one at 131,072 GPUs), else PyYAML's own; both write the same text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:  # the type checker sees the pure-Python dumper; at run time libyaml's where PyYAML has it
    _Base = yaml.SafeDumper
else:
    _Base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class Dumper(_Base):
    """Safe YAML without anchors."""

    def ignore_aliases(self, data: object) -> bool:
        return True

    def resolve(self, kind: type[yaml.Node], value: object, implicit: tuple[bool, bool]) -> str:
        """The tag a scalar would be read as (the emitter asks it twice of each scalar, to choose between plain and
        quoted), remembered per text: the resolver tries its patterns on every one, and a file of 260,000 label values
        (prometheus.yml at 131,072 GPUs) repeats most of them. Our dumpers have no path resolvers."""
        if kind is not yaml.ScalarNode:
            return _base_resolve(self, kind, value, implicit)
        key = (value, implicit)
        tag = _SCALAR_TAGS.get(key)
        if tag is None:
            tag = _base_resolve(self, kind, value, implicit)
            if len(_SCALAR_TAGS) < _SCALAR_TAGS_KEPT:
                _SCALAR_TAGS[key] = tag
        return tag


# The resolver Dumper.resolve extends, typed (types-PyYAML leaves BaseResolver.resolve untyped): a node kind's tag
_base_resolve: Callable[[yaml.SafeDumper, type[yaml.Node], object, tuple[bool, bool]], str] = _Base.resolve

# (text, implicit) -> tag, for the resolvers Dumper and BlockDumper share (add_implicit_resolver would change them)
_SCALAR_TAGS: dict[tuple[object, tuple[bool, bool]], str] = {}
_SCALAR_TAGS_KEPT = 65_536


_TEXT, _MAPPING = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map"


def _mapping(dumper: yaml.SafeDumper, data: dict[object, object]) -> yaml.Node:
    """A mapping; one of one-line text keys and values (a scrape target's labels: prometheus.yml has 260,000 at
    131,072 GPUs) made directly, as represent_dict makes it, without a representer call per key and value."""
    if dumper.sort_keys or dumper.default_style is not None or not _one_line_text(data):
        return dumper.represent_dict(data)
    pairs = [(yaml.ScalarNode(_TEXT, key), yaml.ScalarNode(_TEXT, value)) for key, value in data.items()]
    # represent_mapping's choice: the dump's flow style, else flow where every key and value is a plain scalar
    flow = dumper.default_flow_style
    return yaml.MappingNode(_MAPPING, pairs, flow_style=True if flow is None else flow)


def _one_line_text(data: dict[object, object]) -> bool:
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
    text: str = yaml.dump(document, **_options(blocks, width, allow_unicode))
    return text


def dump_to(
    path: Path, document: object, *, blocks: bool = False, width: int | None = None, allow_unicode: bool = False
) -> None:
    """dump() into a file (UTF-8) as the emitter writes it, without holding the text and its encoding (prometheus.yml
    is 11 MB at 131,072 GPUs)."""
    with open(path, "w", encoding="utf-8") as handle:
        yaml.dump(document, handle, **_options(blocks, width, allow_unicode))


def dump_all(
    documents: Iterable[object],
    *,
    width: int | None = None,
    allow_unicode: bool = False,
    explicit_start: bool = False,
) -> str:
    """Several YAML documents in one text, keys in the order written."""
    text: str = yaml.dump_all(documents, explicit_start=explicit_start, **_options(False, width, allow_unicode))
    return text


def _options(blocks: bool, width: int | None, allow_unicode: bool) -> dict[str, Any]:
    dumper = BlockDumper if blocks else Dumper
    return {"Dumper": dumper, "sort_keys": False, "width": width, "allow_unicode": allow_unicode}
