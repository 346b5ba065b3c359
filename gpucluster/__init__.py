"""gpucluster: one short YAML design of a GPU training cluster -> one physical plan -> every artifact.

The public API is the pipeline's stages, as verbs::

    loaded = load_design("designs/superpod-h100-1su.yaml")   # validate a design file
    plan = plan_design(loaded)                                # the physical plan
    write_artifacts(plan, loaded, "out/")                     # plan.json, BOM, cabling, configs ...
"""

from gpucluster.artifacts import ARTIFACTS, write_artifacts
from gpucluster.design.load import LoadedDesign, design_from_model, load_design
from gpucluster.design.schema import Design
from gpucluster.errors import DesignError, Problem
from gpucluster.plan import plan_design
from gpucluster.plan.model import Plan

__all__ = [
    "ARTIFACTS",
    "Design",
    "DesignError",
    "LoadedDesign",
    "Plan",
    "Problem",
    "design_from_model",
    "load_design",
    "plan_design",
    "write_artifacts",
]
