"""What a design, catalog or price list may hold: the largest counts and sizes the tool plans, and the shapes of
free text, checked when the input is read so that nothing absurd is ever allocated or written.

Every count and size in the input schemas is bounded by one of these figures, so an error names the field and
the largest supported value. Free text is one line without control characters (it reaches comment lines of
configuration files and scripts, labels and spreadsheet cells); names that reach a configuration value or a
shell command unquoted (device names, port names) are restricted to the characters such names use.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

# The largest cluster the tool plans: the 131,072-GPU build is the one the benchmarks (bench/) hold to their
# time and memory figures; beyond it nothing is measured, so nothing is promised.
MAX_GPUS = 131_072
MAX_SERVERS = MAX_GPUS  # a one-GPU server; the design check also bounds servers x GPUs per server by MAX_GPUS
MAX_STORAGE_BLOCKS = 4_096  # building blocks of one filesystem or object store
MAX_CAPACITY_TB = 10_000_000  # 10 EB
MAX_THROUGHPUT_GBYTES_PER_S = 1_000_000  # 1 PB/s
# The smallest storage figures planned: below them a figure is a typo or an attack (1e-300 TB), and times derived
# from them (a checkpoint's write, a dataset's staging) stop being finite.
MIN_CAPACITY_TB = 0.001  # 1 GB
MIN_THROUGHPUT_GBYTES_PER_S = 0.01  # 10 MB/s, a single disk
MAX_TEXT_CHARS = 2_000  # a description or a citation
MAX_NAME_CHARS = 200  # a vendor, model or part number
MAX_LIST_ITEMS = 1_000  # entries in a list the schema allows to grow (teams, lengths, devices)
MAX_CATALOG_FILES = 32
MAX_FILESYSTEMS = 16  # filesystems of one design beside the parallel filesystem
MAX_PORTS_PER_DEVICE = 1_024  # logical ports across a device's port groups (the largest switch has 144)

# Unicode categories no name or free text may hold: controls (Cc: newline, escape ...), format characters (Cf:
# bidi overrides and isolates U+202A-202E and U+2066-2069, zero-width U+200B-200F, U+FEFF, soft hyphen U+00AD),
# private-use (Co) and surrogates (Cs), line and paragraph separators (Zl, Zp). A newline could end a comment
# line of a generated config or script and start a command; a bidi or invisible character makes a name in
# slurm.conf, nccl.env (sourced by bash), a workbook, CSV, HTML or SVG read differently from what it is.
INVISIBLE_CATEGORIES = {
    "Cc": "control character",
    "Cf": "invisible formatting (bidi or zero-width) character",
    "Co": "private-use character",
    "Cs": "surrogate",
    "Zl": "line separator",
    "Zp": "paragraph separator",
}


def invisible_character(text: str) -> tuple[int, str] | None:
    """The first control, formatting (bidi, zero-width), private-use, surrogate or separator character of
    `text` as (0-based index, what it is), or None."""
    if text.isascii() and text.isprintable():
        return None
    for index, char in enumerate(text):
        kind = INVISIBLE_CATEGORIES.get(unicodedata.category(char))
        if kind is not None:
            name = unicodedata.name(char, "")
            return index, f"the {kind} U+{ord(char):04X}" + (f" ({name})" if name else "")
    return None


def visible_text(text: str) -> str:
    """The one rule for every name and free text an input holds: one line of visible characters."""
    found = invisible_character(text)
    if found:
        index, shown = found
        raise ValueError(f"must be one line of visible text; found {shown} at character {index + 1}")
    return text


def visible_strings(value: Any) -> Any:
    """Apply visible_text to every string in a field's value (lists and mappings too, keys included): the
    input schemas' base classes run it on every field, so no string field can be left out."""
    if isinstance(value, str):
        visible_text(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            visible_strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            visible_strings(key)
            visible_strings(item)
    return value


Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS), AfterValidator(visible_text)]
"""A description or citation: one line, at most MAX_TEXT_CHARS characters."""

Name = Annotated[str, Field(max_length=MAX_NAME_CHARS), AfterValidator(visible_text)]
"""A vendor, model, part number or similar short label: one line, at most MAX_NAME_CHARS characters."""

DEVICE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"
DeviceName = Annotated[str, Field(pattern=DEVICE_NAME_PATTERN)]
"""An operating-system device or interface name (mlx5_0, ibp12s0, eth0): it is written unquoted into
NCCL_IB_HCA and into test commands, so only the characters such names use."""

PORT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _./:-]{0,63}$")


def format_template(template: str, samples: Mapping[str, float]) -> str:
    """A name template (str.format) that substitutes only the given plain fields with a short numeric format:
    no attribute or index access ({cage.__class__}), no conversion, no width that could allocate without
    bound ({cage:>999999999}), and a format each field's type takes (`samples` holds a value of each field,
    so {length_m:d} on a float length or {cage:.1d} is refused here rather than failing in a writer)."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"not a valid name template: {exc}") from None
    for _, field_name, spec, conversion in parts:
        if field_name is None:
            continue
        if field_name not in samples:
            allowed = ", ".join("{" + f + "}" for f in sorted(samples))
            raise ValueError(f"{{{field_name}}} cannot be substituted; allowed: {allowed}")
        if conversion or not re.fullmatch(r"0?[1-9]?(\.[0-9])?[df]?", spec or ""):
            raise ValueError(f"format {{{field_name}:{spec}}} is not allowed; use a short number format like :03.0f")
        try:
            format(samples[field_name], spec or "")
        except ValueError:
            kind = type(samples[field_name]).__name__
            raise ValueError(
                f"format {{{field_name}:{spec}}} does not fit {{{field_name}}}, a number ({kind})"
            ) from None
    return template


def _not_bool(value: Any) -> Any:
    """A YAML `yes`, `no`, `true` or `on` is a boolean, refused where a number is chosen from a list (a number
    field refuses it in strict mode, but a choice of numbers would take `true` as 1)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, not the boolean {str(value).lower()}")
    return value


Phases = Annotated[Literal[1, 3], BeforeValidator(_not_bool)]
"""Single- or three-phase power."""
