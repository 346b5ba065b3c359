"""Shared fixtures: the example designs, planned once per test process."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from gpucluster import LoadedDesign, Plan, load_design, plan_design

ROOT = Path(__file__).resolve().parents[1]
DESIGNS = ROOT / "designs"
EXAMPLES = sorted(p.stem for p in DESIGNS.glob("*.yaml"))


@cache
def planned(name: str) -> tuple[LoadedDesign, Plan]:
    """An example design (designs/<name>.yaml) loaded and planned; cached, so treat it as read-only."""
    loaded = load_design(DESIGNS / f"{name}.yaml")
    return loaded, plan_design(loaded)


@pytest.fixture(scope="session")
def h100_1su() -> tuple[LoadedDesign, Plan]:
    return planned("superpod-h100-1su")


@pytest.fixture(scope="session")
def h200_4su() -> tuple[LoadedDesign, Plan]:
    return planned("superpod-h200-4su")


def write_design(tmp_path: Path, text: str, name: str = "design.yaml") -> Path:
    """A design file in a scratch folder, for tests of user input."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path
