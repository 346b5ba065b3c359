"""JSON input (the verify command's LLDP neighbour files) read within bounds: how deep it nests, how long a
number is, and no NaN or Infinity, each a located error rather than a RecursionError or ValueError."""

from __future__ import annotations

import json
import re
from typing import Any, NoReturn

from gpucluster.errors import DesignError, Problem

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
    index = max(index, 0)
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    raise DesignError([Problem(filename, line, column, "", message)])
