"""Loading the parts catalog: the packaged data files plus any catalog files a user adds."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from gpucluster.catalog.schema import AnyPart, CatalogFile, CoolantPart, RackSystem, uncited_fields
from gpucluster.errors import DesignError, Problem
from gpucluster.inputs.yamlsource import Positions, load_yaml_with_positions, locate

PartT = TypeVar("PartT")


@dataclass(frozen=True)
class Catalog:
    """Every part by id, with the citation text of each source tag resolved."""

    parts: dict[str, AnyPart] = field(default_factory=dict)
    source_text: dict[str, str] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)  # part id -> file it came from

    def get(self, part_id: str, kind: type[PartT]) -> PartT:
        part = self.parts.get(part_id)
        if not isinstance(part, kind):
            raise KeyError(part_id)
        return part

    def ids(self, kind: type | tuple[type, ...]) -> list[str]:
        return sorted(pid for pid, part in self.parts.items() if isinstance(part, kind))

    def of_kind(self, kind: type[PartT]) -> list[PartT]:
        return [part for pid in self.ids(kind) if isinstance(part := self.parts[pid], kind)]

    def citation(self, part_id: str, field_name: str) -> str | None:
        """The source of one fact, resolved from its tag to the citation text."""
        tag = source_tag(self.parts[part_id], field_name)
        return None if tag is None else self.source_text.get(f"{self.origin[part_id]}:{tag}", tag)


def source_tag(part: AnyPart, field_name: str) -> str | None:
    """The source a part gives one fact: the field's own, else its nested model's (``gpu`` for ``gpu.tdp_w``)."""
    return part.sources.get(field_name) or part.sources.get(field_name.split(".")[0])


def _packaged_files() -> list[Path]:
    data = resources.files("gpucluster.catalog") / "data"
    return sorted(Path(str(entry)) for entry in data.iterdir() if entry.name.endswith(".yaml"))


def load_catalog(extra_files: Iterable[Path | str] = ()) -> Catalog:
    """The packaged catalog, extended (or overridden part by part) by the user's catalog files."""
    return _load(tuple(_packaged_files()) + tuple(Path(p) for p in extra_files))


@cache
def _load(files: tuple[Path, ...]) -> Catalog:
    catalog = Catalog()
    problems: list[Problem] = []
    located: dict[str, tuple[Path, Positions, int]] = {}  # part id -> (file, its positions, index in parts)
    for path in files:
        data, positions = load_yaml_with_positions(path, "catalog file")
        try:
            parsed = CatalogFile.model_validate(data)
        except ValidationError as exc:
            for error in exc.errors():
                loc = tuple(error["loc"])
                if len(loc) > 2 and loc[0] == "parts":  # drop the part kind pydantic adds (parts.0.gpu_server.model)
                    loc = loc[:2] + loc[3:]
                problems.append(_problem(path, positions, loc, error["msg"]))
            continue
        for key, text in parsed.sources.items():
            catalog.source_text[f"{path.name}:{key}"] = text
        for index, part in enumerate(parsed.parts):
            for name in uncited_fields(part):
                problems.append(_problem(path, positions, ("parts", index, name), "no source cited in 'sources'"))
            for name, tag in part.sources.items():
                if not _cites(tag, parsed.sources):
                    loc = ("parts", index, "sources", name)
                    problems.append(_problem(path, positions, loc, f"unknown source tag {tag!r}"))
            catalog.parts[part.id] = part
            catalog.origin[part.id] = path.name
            located[part.id] = (path, positions, index)
    problems += _coolant_references(catalog, located)
    if problems:
        raise DesignError(sorted(problems, key=lambda p: (p.file, p.line, p.column)))
    return catalog


def _coolant_references(catalog: Catalog, located: dict[str, tuple[Path, Positions, int]]) -> list[Problem]:
    """A rack system's coolant parts must name coolant_part entries of the catalog (the BOM counts them)."""
    problems = []
    known = sorted(p.id for p in catalog.parts.values() if isinstance(p, CoolantPart))
    for part in catalog.parts.values():
        if not isinstance(part, RackSystem):
            continue
        path, positions, index = located[part.id]
        for i, count in enumerate(part.coolant_parts):
            if not isinstance(catalog.parts.get(count.part), CoolantPart):
                loc = ("parts", index, "coolant_parts", i, "part")
                allowed = ", ".join(known) or "none in the catalog"
                message = f"{count.part!r} is not a coolant_part of the catalog; the coolant parts are: {allowed}"
                problems.append(_problem(path, positions, loc, message))
    return problems


def _cites(value: str, tags: dict[str, str]) -> bool:
    """A source is a tag of the file, a URL, or a labelled derivation; several tags may be joined by ';'
    (each may carry a note in parentheses), and a URL or derivation runs to the end of the text."""
    for segment in value.split(";"):
        segment = segment.strip()
        if segment.startswith(("http", "derived:")):
            return True
        if segment.split(" ", 1)[0].split("(", 1)[0] not in tags:
            return False
    return bool(value.strip())


def _problem(path: Path, positions: Positions, loc: tuple[int | str, ...], message: str) -> Problem:
    return Problem(str(path), *locate(positions, loc), ".".join(str(p) for p in loc), message)
