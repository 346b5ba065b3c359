"""The training job on a plan: sizing from a workload, checkpoint sizing and write time, the failure model,
Young's and Daly's intervals, and a Monte Carlo simulation of the run.

    analysis = analyse_checkpoints(plan)              # figures every checkpoint view prints
    results = compare_intervals(analysis, runs=1000)  # Daly's model and the simulation, per interval
"""

from typing import TYPE_CHECKING

from gpucluster.training.checkpoint import CheckpointAnalysis, analyse_checkpoints, checkpoint_facts
from gpucluster.training.sizing import Sizing, size, sizing_lines, starter_design

if TYPE_CHECKING:
    from gpucluster.training.intervals import IntervalResult, compare_intervals
    from gpucluster.training.report import comparison_lines

# The simulator needs numpy; planning (which reads the checkpoint facts) does not, so it loads on first use.
_SIMULATION = {
    "IntervalResult": "gpucluster.training.intervals",
    "compare_intervals": "gpucluster.training.intervals",
    "comparison_lines": "gpucluster.training.report",
}


def __getattr__(name: str) -> object:
    if name in _SIMULATION:
        import importlib

        return getattr(importlib.import_module(_SIMULATION[name]), name)
    raise AttributeError(name)


__all__ = [
    "CheckpointAnalysis",
    "IntervalResult",
    "Sizing",
    "analyse_checkpoints",
    "checkpoint_facts",
    "compare_intervals",
    "comparison_lines",
    "size",
    "sizing_lines",
    "starter_design",
]
