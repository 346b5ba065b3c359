"""Reading a design file: YAML -> typed Design, with every problem located at file:line:column."""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeGuard

from pydantic import BaseModel, ValidationError

from gpucluster.catalog.load import Catalog, load_catalog
from gpucluster.catalog.schema import Appliance, Cdu, GpuServer, Pdu, Rack, RackSystem, StorageBlock, Switch
from gpucluster.design.names import name_problems
from gpucluster.design.schema import Design
from gpucluster.errors import DesignError, Problem
from gpucluster.inputs.prices import load_price_list
from gpucluster.inputs.yamlsource import Positions, load_yaml_with_positions, locate


@dataclass(frozen=True)
class LoadedDesign:
    """A validated design with the catalog it was checked against and where it came from."""

    design: Design
    catalog: Catalog
    path: Path
    positions: Positions

    def where(self, *loc: str | int) -> tuple[str, int, int]:
        line, column = locate(self.positions, loc)
        return str(self.path), line, column


def load_design(path: Path | str, data_dirs: Sequence[Path | str] = ()) -> LoadedDesign:
    """Read and validate a design file; raises DesignError listing every located problem. The catalog files and
    price list it names are read from its own folder, or from one of `data_dirs` (folders the user named on the
    command line), and from nowhere else."""
    path = Path(path)
    data, positions = load_yaml_with_positions(path, "design")
    if not isinstance(data, dict):
        raise DesignError([Problem(str(path), 1, 1, "", "a design is a YAML mapping (name:, compute:, ...)")])
    try:
        design = Design.model_validate(data)
    except ValidationError as exc:
        raise DesignError([_problem(str(path), positions, error) for error in exc.errors()]) from None
    folders = (path.parent, *(Path(d) for d in data_dirs))
    catalog_files = [
        _side_file(path, positions, folders, ("catalog", index), extra, (".yaml", ".yml"))
        for index, extra in enumerate(design.catalog)
    ]
    if design.bom.price_list is not None:
        prices = _side_file(path, positions, folders, ("bom", "price_list"), design.bom.price_list, (".csv",))
        load_price_list(prices)  # its own located errors, before anything is planned
    return check_references(LoadedDesign(design, load_catalog(catalog_files), path, positions))


def design_from_model(design: Design, catalog: Catalog | None = None) -> LoadedDesign:
    """Wrap a Design built in Python (design as code) so it can be planned like a loaded file."""
    return check_references(LoadedDesign(design, catalog or load_catalog(), Path(f"<{design.name}>"), {}))


def _side_file(
    design: Path,
    positions: Positions,
    folders: tuple[Path, ...],
    loc: tuple[int | str, ...],
    value: str,
    suffixes: tuple[str, ...],
) -> Path:
    """A catalog or price-list file the design names: relative to the design's folder (or a --data-dir folder),
    inside one of them once links are followed, with the expected suffix. A path that leads elsewhere is refused
    before the file is opened, so nothing of a foreign file is read or quoted."""
    line, col = locate(positions, loc)
    field = ".".join(str(p) for p in loc)

    def refuse(message: str) -> NoReturn:
        raise DesignError([Problem(str(design), line, col, field, message)])

    if not value.lower().endswith(suffixes):
        refuse(f"{value!r} is not a {' or '.join(suffixes)} file")
    roots = [folder.resolve() for folder in folders]
    candidates = [Path(value)] if Path(value).is_absolute() else [folder / value for folder in folders]
    inside = [c for c in candidates if any(c.resolve().is_relative_to(root) for root in roots)]
    if not inside:
        where = ", ".join(str(folder) for folder in folders)
        refuse(
            f"{value!r} leads outside the design's folder; catalog files and price lists are read only from "
            f"{where} (name another folder with --data-dir)"
        )
    for candidate in inside:
        if candidate.is_file():
            return candidate
    refuse(f"no such file: {inside[0]}")


_REFERENCES: list[tuple[tuple[str, ...], type | tuple[type, ...], str]] = [
    (("site", "rack"), Rack, "rack"),
    (("site", "pdu"), Pdu, "PDU"),
    (("site", "cdu"), Cdu, "coolant distribution unit"),
    (("compute", "server"), (GpuServer, RackSystem), "GPU server or rack-scale system"),
    (("compute_fabric", "switch"), Switch, "switch"),
    (("compute_fabric", "fabric_manager"), Appliance, "fabric-manager appliance"),
    (("storage_network", "switch"), Switch, "switch"),
    (("parallel_filesystem", "block"), StorageBlock, "storage building block"),
    (("object_storage", "block"), StorageBlock, "storage building block"),
    (("management", "inband_switch"), Switch, "switch"),
    (("management", "oob_switch"), Switch, "switch"),
    (("management", "oob_aggregation_switch"), Switch, "switch"),
    (("management", "management_server"), Appliance, "management server"),
]


def check_references(loaded: LoadedDesign) -> LoadedDesign:
    """Every catalog id a design names exists and is of the right kind, and every name the design gives Slurm
    and Kubernetes objects is one they accept; else a DesignError."""
    problems = _unknown_references(loaded)
    if not problems:
        part = loaded.catalog.parts.get(loaded.design.compute.server)
        server_id = part.compute_tray if isinstance(part, RackSystem) else loaded.design.compute.server
        problems = name_problems(loaded.design, server_id, loaded.where)
    if problems:
        raise DesignError(problems)
    return loaded


def _unknown_references(loaded: LoadedDesign) -> list[Problem]:
    problems = []
    for loc, kind, noun in _REFERENCES:
        value: object = loaded.design
        for name in loc:
            value = getattr(value, name, None) if value is not None else None
        if value is None or value == "auto":
            continue
        if not isinstance(loaded.catalog.parts.get(str(value)), kind):
            choices = loaded.catalog.ids(kind)
            message = f"unknown {noun} {_shown(value)}{_did_you_mean(str(value), choices)}; the catalog has: "
            problems.append(Problem(*loaded.where(*loc), ".".join(loc), message + ", ".join(choices)))
    return problems


def _problem(filename: str, positions: Positions, error: Mapping[str, Any]) -> Problem:
    loc = tuple(error["loc"])
    line, col = locate(positions, loc)
    field = ".".join(str(p) for p in loc)
    kind = error["type"]
    value = error.get("input")
    ctx = error.get("ctx", {})
    if kind == "extra_forbidden":
        allowed = _allowed_fields(Design, loc[:-1])
        hint = _did_you_mean(str(loc[-1]), allowed)
        message = f"unknown field{hint}; allowed here: {', '.join(allowed)}"
    elif isinstance(value, bool) and kind in ("int_type", "float_type", "literal_error"):
        message = f"expected a number, not the boolean {str(value).lower()} (YAML reads yes/no/on/off as booleans)"
    elif kind == "literal_error":
        message = f"{_shown(value)} is not allowed; expected {ctx['expected']}"
    elif kind == "missing":
        message = "required field is missing"
    elif kind == "less_than_equal":
        message = f"{_shown(value)} is more than {_number(ctx['le'])}, the largest supported value"
    elif kind == "greater_than_equal":
        message = f"{_shown(value)} is less than {_number(ctx['ge'])}, the smallest allowed value"
    elif kind == "too_long":
        message = f"{ctx['actual_length']:,} entries; at most {ctx['max_length']:,} are supported"
    elif kind == "string_too_long":
        message = f"text of {len(str(value)):,} characters; at most {ctx['max_length']:,} are allowed"
    else:
        message = error["msg"]
        if "input" in error and not isinstance(value, (dict, list)):
            message += f" (got {_shown(value)})"
    return Problem(filename, line, col, field, message)


def _shown(value: object) -> str:
    """A value as the user wrote it, cut short: an error message never echoes a long text back."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,g}" if isinstance(value, float) else str(value)


def _did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _allowed_fields(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The field names a mapping at `loc` accepts, found by walking the schema."""
    current: object = model
    for part in loc:
        if isinstance(part, int):
            continue
        current = _model_of(current.model_fields[part].annotation) if _is_model(current) else None
        if current is None:
            return []
    return sorted(current.model_fields) if _is_model(current) else []


def _is_model(obj: object) -> TypeGuard[type[BaseModel]]:
    return isinstance(obj, type) and issubclass(obj, BaseModel)


def _model_of(annotation: object) -> type[BaseModel] | None:
    if _is_model(annotation):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) in (typing.Union, list):
        for arg in typing.get_args(annotation):
            found = _model_of(arg)
            if found is not None:
                return found
    return None
