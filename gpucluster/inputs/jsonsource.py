"""JSON input (the verify command's LLDP neighbour files) read within bounds: how deep it nests, how long a
number is, and no NaN or Infinity, each a located error rather than a RecursionError or ValueError."""

from __future__ import annotations

import json
import re
from typing import Any, NoReturn

from gpucluster.errors import DesignError, Problem
from gpucluster.inputs.yamlsource import line_column

MAX_JSON_DEPTH = 64  # arrays and objects nested; lldpd's output nests 6 deep
MAX_NUMBER_CHARS = 40  # the digits of a number; any counter or speed a tool reports fits in 20
_OPENERS_AND_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def parse_json(text: str, filename: str) -> Any:
    """The document of a JSON text; nesting beyond MAX_JSON_DEPTH, numbers of more than MAX_NUMBER_CHARS
    characters, NaN and Infinity are refused at their line and column (the nesting before parsing, so the
    parser's recursion is never reached)."""
    depth = 0
    for token in _OPENERS_AND_STRINGS.finditer(text):
        char = token.group()
        if char in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                _refuse(text, filename, token.start(), f"nests deeper than {MAX_JSON_DEPTH} levels, the most supported")
        elif char in "]}":
            depth -= 1

    def number(kind: type) -> Any:
        def parse(literal: str) -> Any:
            if len(literal) > MAX_NUMBER_CHARS:
                position = text.find(literal)
                _refuse(
                    text, filename, position, f"a number of {len(literal):,} characters; at most {MAX_NUMBER_CHARS}"
                )
            return kind(literal)

        return parse

    def constant(name: str) -> NoReturn:
        _refuse(text, filename, text.find(name), f"{name} is not a JSON number")

    try:
        return json.loads(text, parse_int=number(int), parse_float=number(float), parse_constant=constant)
    except json.JSONDecodeError as error:
        raise DesignError([Problem(filename, error.lineno, error.colno, "", f"not JSON: {error.msg}")]) from None


def _refuse(text: str, filename: str, index: int, message: str) -> NoReturn:
    line, column = line_column(text, max(index, 0))
    raise DesignError([Problem(filename, line, column, "", message)])


def json_position(text: str, path: tuple[str | int, ...]) -> tuple[int, int]:
    """(line, column) of the value at `path` (keys and list indexes) in a JSON text, however it is laid out; the
    deepest part of the path that exists where the rest does not (0, 0 for an unparsable text). Used only to
    place an error, so the lock's fast one-pass parse keeps no positions; this walks the text once with the
    standard library's scanner, skipping every value off the path."""
    index = _skip_space(text, 0)
    decoder = json.JSONDecoder()
    try:
        for step in path:
            index = _step(text, index, step, decoder)
    except (ValueError, IndexError, _NotFound):
        pass
    return line_column(text, index)


class _NotFound(Exception):
    """A step of the path that the document does not hold."""


def _step(text: str, index: int, step: str | int, decoder: json.JSONDecoder) -> int:
    """The index of member `step` of the object or array starting at `index`."""
    opener = text[index]
    if opener not in "[{" or isinstance(step, int) != (opener == "["):
        raise _NotFound
    index = _skip_space(text, index + 1)
    position = 0
    while text[index] not in "]}":
        if opener == "{":
            key, index = json.decoder.scanstring(text, index + 1)  # type: ignore[attr-defined]
            index = _skip_space(text, _skip_space(text, index) + 1)  # past the colon
            found = key == step
        else:
            found = position == step
        if found:
            return index
        _, index = decoder.raw_decode(text, index)
        index = _skip_space(text, index)
        if text[index] == ",":
            index = _skip_space(text, index + 1)
        position += 1
    raise _NotFound


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index
