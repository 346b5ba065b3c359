"""The training job on a plan: sizing from a workload, checkpoint sizing and write time, the failure model,
Young's and Daly's intervals, and a Monte Carlo simulation of the run.

    analysis = analyse_checkpoints(plan)              # figures every checkpoint view prints
    results = compare_intervals(analysis, runs=1000)  # Daly's model and the simulation, per interval
"""

from gpucluster.training.checkpoint import CheckpointAnalysis, analyse_checkpoints, checkpoint_facts
from gpucluster.training.intervals import IntervalResult, compare_intervals
from gpucluster.training.report import comparison_lines
from gpucluster.training.sizing import Sizing, size, sizing_lines, starter_design

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
