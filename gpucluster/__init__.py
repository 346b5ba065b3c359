"""gpucluster: one short YAML design of a GPU training cluster -> one physical plan -> every artifact.

The public API is the pipeline's stages, as verbs::

    loaded = load_design("designs/superpod-h100-1su.yaml")   # validate a design file
    plan = plan_design(loaded)                                # the analysed plan (AnalysedPlan)
    write_artifacts(plan, loaded, "out/")                     # plan.json, BOM, cabling, configs ...

The names are imported on first use, so that importing one module of the package (``gpucluster.plan.model``)
loads that module and what it imports, not every stage and view (tests/test_imports.py).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpucluster.artifacts import ARTIFACTS, write_artifacts
    from gpucluster.design.load import LoadedDesign, design_from_model, load_design
    from gpucluster.design.schema import Design
    from gpucluster.errors import DesignError, Problem
    from gpucluster.pipeline import plan_design
    from gpucluster.plan.model import AnalysedPlan, PhysicalPlan, Plan

_HOME = {
    "ARTIFACTS": "gpucluster.artifacts",
    "write_artifacts": "gpucluster.artifacts",
    "LoadedDesign": "gpucluster.design.load",
    "design_from_model": "gpucluster.design.load",
    "load_design": "gpucluster.design.load",
    "Design": "gpucluster.design.schema",
    "DesignError": "gpucluster.errors",
    "Problem": "gpucluster.errors",
    "plan_design": "gpucluster.pipeline",
    "Plan": "gpucluster.plan.model",
    "PhysicalPlan": "gpucluster.plan.model",
    "AnalysedPlan": "gpucluster.plan.model",
}

__all__ = [
    "ARTIFACTS",
    "AnalysedPlan",
    "Design",
    "DesignError",
    "LoadedDesign",
    "PhysicalPlan",
    "Plan",
    "Problem",
    "design_from_model",
    "load_design",
    "plan_design",
    "write_artifacts",
]


def __getattr__(name: str) -> object:
    """The public names, from the stage that defines them (PEP 562)."""
    if name not in _HOME:
        raise AttributeError(f"module 'gpucluster' has no attribute {name!r}")
    value = getattr(import_module(_HOME[name]), name)
    globals()[name] = value
    return value
