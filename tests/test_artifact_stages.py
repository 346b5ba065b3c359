"""The plan's stages as types: each writer reads the stage the one registry declares for it (artifacts/registry.py),
its functions say the same in their annotations (so mypy holds it to that stage), and it is handed that stage."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import textwrap
from pathlib import Path

import pytest
from conftest import planned

import gpucluster.artifacts as artifacts
from gpucluster import plan_design, write_artifacts
from gpucluster.artifacts import Artifact, registry
from gpucluster.plan.model import AnalysedPlan, PhysicalPlan

STAGE_FUNCTIONS = ("write", "parts", "part_needs", "write_part", "prepare")  # what the registry calls of a module
REPO = Path(__file__).resolve().parent.parent


def _plan_annotation(function: object) -> str:
    parameters = inspect.signature(function).parameters  # type: ignore[arg-type]
    return str(parameters["plan"].annotation)


@pytest.mark.parametrize("name", sorted(registry.ARTIFACTS))
def test_each_writers_functions_read_the_stage_the_registry_declares(name: str) -> None:
    artifact = registry.ARTIFACTS[name]
    assert artifact.reads in (PhysicalPlan, AnalysedPlan)
    module = importlib.import_module(str(artifact.writer))
    functions = [getattr(module, f) for f in STAGE_FUNCTIONS if hasattr(module, f)]
    assert functions[0] is module.write
    assert {f.__name__: _plan_annotation(f) for f in functions} == dict.fromkeys(
        (f.__name__ for f in functions), artifact.reads.__name__
    )


def test_a_physical_plan_writer_is_handed_the_physical_plan(tmp_path, monkeypatch) -> None:
    loaded, plan = planned("lab-4-servers")
    seen: dict[str, object] = {}

    def physical(stage: PhysicalPlan, _loaded: object, _folder: Path) -> None:
        seen["physical"] = stage

    def analysed(stage: AnalysedPlan, _loaded: object, _folder: Path) -> None:
        seen["analysed"] = stage

    monkeypatch.setitem(artifacts.ARTIFACTS, "physical", Artifact(physical, PhysicalPlan))
    monkeypatch.setitem(artifacts.ARTIFACTS, "analysed", Artifact(analysed, AnalysedPlan))
    write_artifacts(plan, loaded, tmp_path, ["physical", "analysed"])
    assert type(seen["physical"]) is PhysicalPlan and seen["physical"] is plan.made_from
    assert seen["analysed"] is plan
    changed = dataclasses.replace(plan, racks=dict(plan.racks))  # not the physical plan it was made from
    write_artifacts(changed, loaded, tmp_path / "changed", ["physical"])
    assert seen["physical"] is changed


def test_stages_are_frozen_and_the_analysed_plan_extends_the_physical_one() -> None:
    loaded, plan = planned("lab-4-servers")
    physical = plan.made_from
    with pytest.raises(dataclasses.FrozenInstanceError):
        physical.links = []  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.findings = []  # type: ignore[misc]
    assert all(getattr(plan, f.name) is getattr(physical, f.name) for f in dataclasses.fields(PhysicalPlan))
    assert not hasattr(physical, "analysis") and not hasattr(physical, "findings")
    assert plan.findings[: len(physical.planner_findings)] == physical.planner_findings
    assert len(plan.findings) > len(physical.planner_findings)  # the design rules' findings follow
    assert "checkpoint" not in {f.name for f in dataclasses.fields(plan.settings)}
    again = plan_design(loaded)
    assert again.facts == plan.facts and again.findings == plan.findings


@pytest.mark.slow
def test_mypy_refuses_a_physical_plan_writer_that_reads_the_analyses(tmp_path) -> None:
    mypy = pytest.importorskip("mypy.api")
    writer = tmp_path / "reads_too_much.py"
    writer.write_text(
        textwrap.dedent("""\
        from pathlib import Path

        from gpucluster.design.load import LoadedDesign
        from gpucluster.plan.model import AnalysedPlan, PhysicalPlan


        def write(plan: PhysicalPlan, loaded: LoadedDesign, folder: Path) -> None:
            (folder / "x.txt").write_text(str(plan.analysis))


        def write_analysed(plan: AnalysedPlan, loaded: LoadedDesign, folder: Path) -> None:
            (folder / "x.txt").write_text(str(plan.analysis))
        """)
    )
    out, _err, status = mypy.run(
        [str(writer), "--config-file", str(REPO / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache")]
    )
    assert status == 1
    assert 'reads_too_much.py:8: error: "PhysicalPlan" has no attribute "analysis"' in out
    assert "Found 1 error" in out


def test_the_planners_draft_stays_inside_plan() -> None:
    outside = [
        path.relative_to(REPO).as_posix()
        for folder in ("gpucluster", "components", "bench", "policy-pack")
        for path in (REPO / folder).rglob("*.py")
        if "PlanDraft" in path.read_text(encoding="utf-8") and not path.is_relative_to(REPO / "gpucluster" / "plan")
    ]
    assert outside == []
