"""YAML loading that remembers where every value stands, so errors can point at file:line:column."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpucluster.errors import DesignError, Problem

Positions = dict[tuple, tuple[int, int]]

# libyaml's parser where PyYAML was built with it (the same nodes and marks, much faster)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CONSTRUCTOR = yaml.SafeLoader("")  # turns one scalar node into its Python value (bool, int, float, str ...)


def load_yaml_with_positions(path: Path | str) -> tuple[Any, Positions]:
    """Parse a YAML file into plain data plus a map from each value's path to its (line, column)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DesignError([Problem(str(path), 0, 0, "", f"cannot read file: {exc.strerror}")]) from None
    except UnicodeDecodeError:
        raise DesignError([Problem(str(path), 0, 0, "", "not UTF-8 text")]) from None
    return parse_yaml_with_positions(text, str(path))


def parse_yaml_with_positions(text: str, filename: str) -> tuple[Any, Positions]:
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        raise DesignError([Problem(filename, line, col, "", f"YAML syntax: {exc.problem}")]) from None
    positions: Positions = {}
    problems: list[Problem] = []
    try:
        data = _build(node, (), positions, problems, filename) if node is not None else None
    finally:
        _CONSTRUCTOR.constructed_objects.clear()  # the constructor remembers every node it built
    if problems:
        raise DesignError(problems)
    return data, positions


def _build(node: yaml.Node, path: tuple, positions: Positions, problems: list[Problem], filename: str) -> Any:
    positions[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _scalar(key_node)
            if key in result:
                line, col = key_node.start_mark.line + 1, key_node.start_mark.column + 1
                problems.append(Problem(filename, line, col, _dotted((*path, key)), "duplicate key"))
                continue
            result[key] = _build(value_node, (*path, key), positions, problems, filename)
            # a field is reported at its key, not at its value
            positions[(*path, key)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, (*path, i), positions, problems, filename) for i, item in enumerate(node.value)]
    return _scalar(node)


def _scalar(node: yaml.Node) -> Any:
    return _CONSTRUCTOR.construct_object(node, deep=True)


def locate(positions: Positions, loc: tuple) -> tuple[int, int]:
    """The position of the deepest part of `loc` that the file has (a missing field points at its parent)."""
    loc = tuple(loc)
    while loc:
        if loc in positions:
            return positions[loc]
        loc = loc[:-1]
    return positions.get((), (1, 1))


def _dotted(path: tuple) -> str:
    return ".".join(str(p) for p in path)
