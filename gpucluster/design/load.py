"""Reading a design file: YAML -> typed Design, with every problem located at file:line:column."""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ValidationError

from gpucluster.catalog.load import Catalog, load_catalog
from gpucluster.catalog.schema import Appliance, Cdu, GpuServer, Pdu, Rack, RackSystem, StorageBlock, Switch
from gpucluster.design.schema import Design
from gpucluster.errors import DesignError, Problem
from gpucluster.prices import load_price_list
from gpucluster.yamlsource import Positions, load_yaml_with_positions, locate


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


def load_design(path: Path | str) -> LoadedDesign:
    """Read and validate a design file; raises DesignError listing every located problem."""
    path = Path(path)
    data, positions = load_yaml_with_positions(path)
    if not isinstance(data, dict):
        raise DesignError([Problem(str(path), 1, 1, "", "a design is a YAML mapping (name:, compute:, ...)")])
    try:
        design = Design.model_validate(data)
    except ValidationError as exc:
        raise DesignError([_problem(str(path), positions, error) for error in exc.errors()]) from None
    catalog_files = [(path.parent / extra) for extra in design.catalog]
    for index, extra in enumerate(catalog_files):
        if not extra.is_file():
            line, col = locate(positions, ("catalog", index))
            raise DesignError([Problem(str(path), line, col, f"catalog.{index}", f"no such file: {extra}")])
    if design.bom.price_list is not None:
        prices = path.parent / design.bom.price_list
        if not prices.is_file():
            line, col = locate(positions, ("bom", "price_list"))
            raise DesignError([Problem(str(path), line, col, "bom.price_list", f"no such file: {prices}")])
        load_price_list(prices)  # its own located errors, before anything is planned
    catalog = load_catalog(catalog_files)
    loaded = LoadedDesign(design, catalog, path, positions)
    problems = check_references(loaded)
    if problems:
        raise DesignError(problems)
    return loaded


def design_from_model(design: Design, catalog: Catalog | None = None) -> LoadedDesign:
    """Wrap a Design built in Python (design as code) so it can be planned like a loaded file."""
    loaded = LoadedDesign(design, catalog or load_catalog(), Path(f"<{design.name}>"), {})
    problems = check_references(loaded)
    if problems:
        raise DesignError(problems)
    return loaded


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


def check_references(loaded: LoadedDesign) -> list[Problem]:
    """Every catalog id a design names exists and is of the right kind."""
    problems = []
    for loc, kind, noun in _REFERENCES:
        value: object = loaded.design
        for name in loc:
            value = getattr(value, name, None) if value is not None else None
        if value is None or value == "auto":
            continue
        if not isinstance(loaded.catalog.parts.get(str(value)), kind):
            choices = loaded.catalog.ids(kind)
            hint = _did_you_mean(str(value), choices)
            problems.append(
                Problem(
                    *loaded.where(*loc),
                    ".".join(loc),
                    f"unknown {noun} {value!r}{hint}; the catalog has: {', '.join(choices)}",
                )
            )
    return problems


def _problem(filename: str, positions: Positions, error: dict) -> Problem:
    loc = tuple(error["loc"])
    line, col = locate(positions, loc)
    field = ".".join(str(p) for p in loc)
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = _allowed_fields(Design, loc[:-1])
        hint = _did_you_mean(str(loc[-1]), allowed)
        message = f"unknown field{hint}; allowed here: {', '.join(allowed)}"
    elif kind == "literal_error":
        message = f"{error['input']!r} is not allowed; expected {error['ctx']['expected']}"
    elif kind == "missing":
        message = "required field is missing"
    else:
        message = error["msg"]
        if "input" in error and not isinstance(error["input"], (dict, list)):
            message += f" (got {error['input']!r})"
    return Problem(filename, line, col, field, message)


def _did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _allowed_fields(model: type[BaseModel], loc: tuple) -> list[str]:
    """The field names a mapping at `loc` accepts, found by walking the schema."""
    current: object = model
    for part in loc:
        if isinstance(part, int):
            continue
        current = _model_of(current.model_fields[part].annotation) if _is_model(current) else None
        if current is None:
            return []
    return sorted(current.model_fields) if _is_model(current) else []


def _is_model(obj: object) -> bool:
    return isinstance(obj, type) and issubclass(obj, BaseModel)


def _model_of(annotation: object) -> type[BaseModel] | None:
    if _is_model(annotation):
        return annotation  # type: ignore[return-value]
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) in (typing.Union, list):
        for arg in typing.get_args(annotation):
            found = _model_of(arg)
            if found is not None:
                return found
    return None
