"""json_position places an error at the value a path names, however the JSON text is laid out."""

from __future__ import annotations

from gpucluster.inputs.jsonsource import json_position

PRETTY = (
    '{\n  "racks": [\n    {"name": "A01"},\n    {\n      "name": "A02",\n      "position": 0\n    }\n  ],\n  "x": 1\n}'
)


def test_a_value_in_a_pretty_printed_document_is_found_at_its_line_and_column() -> None:
    assert json_position(PRETTY, ("racks", 1, "position")) == (6, 19)
    assert json_position(PRETTY, ("racks", 0, "name")) == (3, 14)
    assert json_position(PRETTY, ("x",)) == (9, 8)


def test_a_path_the_document_does_not_hold_points_at_its_deepest_existing_part() -> None:
    assert json_position(PRETTY, ("racks", 5, "name")) == (2, 12)
    assert json_position(PRETTY, ("racks", 1, "missing")) == (4, 5)
    assert json_position(PRETTY, ("x", 0)) == (9, 8)


def test_an_unparsable_text_gives_the_furthest_position_reached_without_raising() -> None:
    assert json_position('{"a": [1, 2', ("a", 5)) == (1, 7)
    assert json_position("", ("a",)) == (1, 1)
