"""YAML loading that remembers where every value stands, so errors can point at file:line:column.

A design or catalog comes from a user, so the loader bounds what a file can make it do before any of it is
built: the file's size, how deep collections nest, how many aliases it uses and how many values those aliases
expand to (an alias bomb or a quadratic chain is refused at the alias that crosses the limit, after building at
most the limit). It builds the data from the parser's event stream in one pass, so every problem it finds (a
control character, bytes that are not UTF-8, a list or mapping used as a key, a duplicate key, a tab where
YAML wants spaces) is reported with its line and column.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, NoReturn, cast

import yaml

from gpucluster.errors import DesignError, Problem

# a value's path: mapping keys (any scalar YAML reads) and sequence indices, from the root
YamlPath = tuple[object, ...]
Positions = dict[YamlPath, tuple[int, int]]

MAX_FILE_BYTES = 1 << 20  # 1 MiB: a design is a few kB, the largest packaged catalog file 34 kB
MAX_DEPTH = 32  # nested collections; a design nests 4 deep, a catalog 5
MAX_ALIASES = 100  # alias uses per file
MAX_VALUES = 100_000  # values in the file once its aliases are expanded

# libyaml's parser where PyYAML was built with it (the same events and marks, much faster)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CONSTRUCTOR = yaml.SafeLoader("")  # resolves and constructs one scalar (bool, int, float, str ...)
# its resolver, typed (types-PyYAML leaves BaseResolver.resolve untyped): the tag a scalar's text is read as
_resolve_tag: Callable[[type[yaml.Node], str, tuple[bool, bool]], str] = _CONSTRUCTOR.resolve
_STR_TAG, _FLOAT_TAG = "tag:yaml.org,2002:str", "tag:yaml.org,2002:float"
_FLOAT_1_2 = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)[eE][-+]?[0-9]+")
# The plain numbers and booleans YAML 1.1 and 1.2 (its core schema) read alike. PyYAML resolves YAML 1.1, which
# also reads 010 as octal 8, 1:20 as sexagesimal 80, 0b101 and 1_000 as numbers and yes/no/on/off as booleans,
# where YAML 1.2 (what the README promises) reads 10, text, text, text and text: such a value is refused.
_SAME_IN_1_2 = {
    "tag:yaml.org,2002:int": re.compile(r"[-+]?(0|[1-9][0-9]*)|0x[0-9a-fA-F]+"),
    _FLOAT_TAG: re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)"),
    "tag:yaml.org,2002:bool": re.compile(r"true|True|TRUE|false|False|FALSE"),
}
# Characters YAML 1.1 does not allow in a stream (its c-printable set, section 5.1), found before parsing so
# they are reported at their line and column rather than as a reader error.
_NOT_PRINTABLE = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def read_limited(path: Path, what: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file no larger than `limit`; anything else (a folder, a device, a pipe, a file
    too large) is a located error that quotes nothing of the file. A file whose size is over the limit is not
    read at all; one that grows while read is read no further than the limit."""
    with open_limited(path, what, limit) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise DesignError([Problem(str(path), 0, 0, "", f"cannot read the {what}: {exc.strerror}")]) from None
    if len(data) > limit:
        raise too_large(path, what, limit)
    return data


def open_limited(path: Path, what: str, limit: int) -> BinaryIO:
    """A regular file no larger than `limit`, opened for reading bytes; anything else is a located error. The
    reader bounds what it reads to `limit` too, for a file that grows while read."""
    try:
        if not path.is_file():
            reason = "no such file" if not path.exists() else "not a regular file"
            raise DesignError([Problem(str(path), 0, 0, "", f"cannot read the {what}: {reason}")])
        if path.stat().st_size > limit:
            raise too_large(path, what, limit)
        return path.open("rb")
    except OSError as exc:
        raise DesignError([Problem(str(path), 0, 0, "", f"cannot read the {what}: {exc.strerror}")]) from None


def too_large(path: Path, what: str, limit: int) -> DesignError:
    return DesignError(
        [Problem(str(path), 0, 0, "", f"the {what} is larger than {limit // 1024:,} KiB, the largest supported")]
    )


def decode_utf8(data: bytes, filename: str) -> str:
    """UTF-8 text (a leading byte-order mark dropped); bytes that are not UTF-8 are reported at their line and
    column."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        message = f"not UTF-8 text: byte 0x{data[exc.start]:02x} cannot start or continue a character"
        raise DesignError([Problem(filename, line, column, "", message)]) from None


def load_yaml_with_positions(path: Path | str, what: str = "file") -> tuple[Any, Positions]:
    """Parse a YAML file into plain data plus a map from each value's path to its (line, column)."""
    path = Path(path)
    return parse_yaml_with_positions(decode_utf8(read_limited(path, what), str(path)), str(path))


def parse_yaml_with_positions(text: str, filename: str) -> tuple[Any, Positions]:
    bad = _NOT_PRINTABLE.search(text)
    if bad:
        line, column = line_column(text, bad.start())
        message = f"control character U+{ord(bad.group()):04X} is not allowed in YAML; remove it"
        raise DesignError([Problem(filename, line, column, "", message)])
    builder = _Builder(filename)
    try:
        for event in yaml.parse(text, Loader=_LOADER):
            builder.add(event)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        message = f"YAML syntax: {exc.problem or exc.context}"
        if mark is not None and _char_at(text, mark.line, mark.column) == "\t":
            message += " (a tab cannot indent YAML; use spaces)"
        raise DesignError([Problem(filename, line, col, "", message)]) from None
    except yaml.YAMLError as exc:  # a reader or emitter error without a mark
        raise DesignError([Problem(filename, 0, 0, "", f"YAML: {type(exc).__name__}")]) from None
    except _Stop:
        pass
    finally:
        _CONSTRUCTOR.constructed_objects.clear()  # the constructor remembers every node it built
    if builder.problems:
        raise DesignError(builder.problems)
    return builder.result, builder.positions


class _Stop(Exception):
    """A limit was crossed: the problem is recorded, the rest of the file is not read."""


class _Frame:
    __slots__ = ("anchor", "key", "key_mark", "path", "start_count", "value")

    def __init__(self, path: YamlPath, value: dict[object, Any] | list[Any], anchor: str | None, start_count: int):
        self.path = path
        self.value = value
        self.key: object = _NO_KEY
        self.key_mark: tuple[int, int] = (0, 0)
        self.anchor = anchor
        self.start_count = start_count


_NO_KEY = object()


class _Builder:
    """Plain data from a stream of parser events, with each value's position, within the limits above."""

    def __init__(self, filename: str):
        self.filename = filename
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Any, int]] = {}  # anchor -> (value, values it holds)
        self.aliases = 0
        self.count = 0
        self.documents = 0
        self.result: Any = None
        self.positions: Positions = {}
        self.problems: list[Problem] = []

    def add(self, event: yaml.Event) -> None:
        if isinstance(event, yaml.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                self._stop(event, "", "a design or catalog file holds one YAML document; remove the second '---'")
        elif isinstance(event, yaml.ScalarEvent):
            self._count(event, 1)
            value = self._scalar(event)
            if event.anchor:
                self.anchors[event.anchor] = (value, 1)
            self._attach(value, _mark(event), collection=False)
        elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if len(self.stack) >= MAX_DEPTH:
                self._stop(event, self._where(), f"collections nest more than {MAX_DEPTH} deep, the most supported")
            self._count(event, 1)
            path = self._child_path(event)
            self.positions.setdefault(path, _mark(event))
            container: dict[object, Any] | list[Any] = {} if isinstance(event, yaml.MappingStartEvent) else []
            self.stack.append(_Frame(path, container, event.anchor, self.count))
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            frame = self.stack.pop()
            if frame.anchor:
                self.anchors[frame.anchor] = (frame.value, self.count - frame.start_count + 1)
            self._attach(frame.value, self.positions[frame.path], collection=True)
        elif isinstance(event, yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                self._stop(event, self._where(), f"more than {MAX_ALIASES} aliases, the most supported")
            if event.anchor not in self.anchors:
                message = f"alias *{event.anchor} names no anchor defined before it (or its own, which would recurse)"
                self._stop(event, self._where(), message)
            value, size = self.anchors[event.anchor]
            self._count(event, size)
            self._attach(value, _mark(event), collection=isinstance(value, (dict, list)))

    def _count(self, event: yaml.Event, size: int) -> None:
        self.count += size
        if self.count > MAX_VALUES:
            message = f"more than {MAX_VALUES:,} values once aliases are expanded, the most supported"
            self._stop(event, self._where(), message)

    def _scalar(self, event: yaml.ScalarEvent) -> Any:
        tag = event.tag
        if tag is None or tag == "!":
            tag = _resolve_tag(yaml.ScalarNode, event.value, event.implicit)
            if tag == _STR_TAG and event.implicit[0] and _FLOAT_1_2.fullmatch(event.value):
                tag = _FLOAT_TAG  # YAML 1.2 reads 1e15 as a number; YAML 1.1 wanted 1.0e+15
        if tag == "tag:yaml.org,2002:merge":
            self._stop(event, self._where(), "merge keys (<<) are not supported; write the fields out")
        same = _SAME_IN_1_2.get(tag)
        if same is not None and not same.fullmatch(event.value):
            self._problem(event, self._where(), _yaml_1_1_form(event.value, tag))
            return event.value
        # libyaml's events carry yaml._yaml.Mark, which the stubs do not accept for a node (it has the same fields)
        start, end = cast(yaml.Mark | None, event.start_mark), cast(yaml.Mark | None, event.end_mark)
        node = yaml.ScalarNode(tag, event.value, start, end, event.style)
        try:
            return _CONSTRUCTOR.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            self._stop(event, self._where(), f"cannot read this value: {getattr(exc, 'problem', None) or exc}")
        except ValueError:  # e.g. an integer of more digits than Python converts
            self._stop(event, self._where(), f"cannot read this value (tag {tag}); it is too long or malformed")

    def _child_path(self, event: yaml.Event) -> YamlPath:
        if not self.stack:
            return ()
        frame = self.stack[-1]
        if isinstance(frame.value, list):
            return (*frame.path, len(frame.value))
        if frame.key is _NO_KEY:
            return (*frame.path, "<key>")
        return (*frame.path, frame.key)

    def _attach(self, value: Any, mark: tuple[int, int], collection: bool) -> None:
        if not self.stack:
            self.result = value
            self.positions.setdefault((), mark)
            return
        frame = self.stack[-1]
        if isinstance(frame.value, list):
            self.positions.setdefault((*frame.path, len(frame.value)), mark)
            frame.value.append(value)
            return
        if frame.key is _NO_KEY:  # this value is a key
            where = self._where()
            if collection:
                message = "a key must be a plain name, not a list or mapping ('? [a, b]' or '? {a: 1}')"
                self.problems.append(Problem(self.filename, *mark, where, message))
                raise _Stop
            if not isinstance(value, str):
                shown = "null" if value is None else str(value).lower() if isinstance(value, bool) else repr(value)
                message = f"a key must be text, not {type(value).__name__} {shown}; quote it if it is meant as text"
                self.problems.append(Problem(self.filename, *mark, where, message))
                frame.key, frame.key_mark = None, mark
                return
            frame.key, frame.key_mark = value, mark
            return
        key, frame.key = frame.key, _NO_KEY
        if key is None:  # the key was refused
            return
        if key in frame.value:
            line, column = frame.key_mark
            self.problems.append(Problem(self.filename, line, column, _dotted((*frame.path, key)), "duplicate key"))
            return
        frame.value[key] = value
        # a field is reported at its key, not at its value
        self.positions[(*frame.path, key)] = frame.key_mark

    def _where(self) -> str:
        if not self.stack:
            return ""
        frame = self.stack[-1]
        if isinstance(frame.value, list):
            return _dotted((*frame.path, len(frame.value)))
        return _dotted(frame.path if frame.key is _NO_KEY or frame.key is None else (*frame.path, frame.key))

    def _problem(self, event: yaml.Event, field: str, message: str) -> None:
        self.problems.append(Problem(self.filename, *_mark(event), field, message))

    def _stop(self, event: yaml.Event, field: str, message: str) -> NoReturn:
        self._problem(event, field, message)
        raise _Stop


def _yaml_1_1_form(text: str, tag: str) -> str:
    """Why a plain scalar only YAML 1.1 reads as a number or boolean is refused, with the text as written."""
    shown = text if len(text) <= 40 else text[:37] + "..."
    kind = tag.rsplit(":", 1)[-1]
    if kind == "bool":
        return (
            f"{shown!r} is a boolean only in YAML 1.1 (text in YAML 1.2, which this tool reads); "
            f'write true or false, or quote it ("{shown}") if it is meant as text'
        )
    if ":" in text:
        form = "a sexagesimal (base-60) number"
    elif re.fullmatch(r"[-+]?0[0-9_]+", text):
        form = "an octal number"
    elif "_" in text:
        form = "a number with '_' separators"
    else:
        form = "a number"
    return (
        f"{shown!r} is {form} only in YAML 1.1 (YAML 1.2, which this tool reads, differs); "
        f'quote it ("{shown}") if it is meant as text or a ratio, or write the number in decimal without leading '
        "zeros or '_'"
    )


def _mark(event: yaml.Event) -> tuple[int, int]:
    mark = event.start_mark
    return (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)


def line_column(text: str, index: int) -> tuple[int, int]:
    """The 1-based line and column of a character of `text` (the end of the text for an index past it)."""
    index = min(index, len(text))
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


def _char_at(text: str, line: int, column: int) -> str:
    lines = text.split("\n", line + 1)
    return lines[line][column : column + 1] if line < len(lines) else ""


def locate(positions: Positions, loc: YamlPath) -> tuple[int, int]:
    """The position of the deepest part of `loc` that the file has (a missing field points at its parent)."""
    loc = tuple(loc)
    while loc:
        if loc in positions:
            return positions[loc]
        loc = loc[:-1]
    return positions.get((), (1, 1))


def _dotted(path: YamlPath) -> str:
    return ".".join(str(p) for p in path)
