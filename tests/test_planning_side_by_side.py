"""Planning on two processes: the graph analyses run in a forked process while the main one chooses the cables, and
the plan is the same as planned in one process; a failure there fails planning as it would in one process."""

from __future__ import annotations

import os

import pytest
from conftest import DESIGNS

from gpucluster import load_design, pipeline, plan_design
from gpucluster.artifacts.plan_json import plan_document


@pytest.fixture
def forks(monkeypatch):
    """Counts the processes the planner forks (and makes even a small plan run its analyses beside the cabling)."""
    monkeypatch.setattr(pipeline, "ASIDE_MIN_LINKS", 0)
    started: list[int] = []
    real_fork = os.fork

    def fork() -> int:
        pid = real_fork()
        if pid:
            started.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return started


@pytest.mark.parametrize("design", ["superpod-h200-4su", "b300-xdr-1su"])
def test_graph_analyses_beside_the_cabling_give_the_same_plan(forks, design):
    loaded = load_design(DESIGNS / f"{design}.yaml")
    alone = plan_design(loaded)
    assert forks == []
    beside = plan_design(loaded, jobs=2)
    assert len(forks) == 1
    assert beside.analysis == alone.analysis
    assert not beside.graphs_built()  # the forked process walked its own: these are built when a view first reads them
    for network, graph in alone.graphs.items():
        built = beside.graphs[network]
        assert list(built.nodes(data=True)) == list(graph.nodes(data=True))
        assert list(built.edges(data=True)) == list(graph.edges(data=True))
    assert plan_document(beside, loaded) == plan_document(alone, loaded)


def test_a_small_plan_or_one_process_plans_without_forking(monkeypatch):
    def no_fork() -> int:
        raise AssertionError("the planner forked")

    monkeypatch.setattr(os, "fork", no_fork)
    loaded = load_design(DESIGNS / "lab-4-servers.yaml")
    assert plan_design(loaded, jobs=2).analysis  # a few links: a fork would cost more than it saves
    monkeypatch.setattr(pipeline, "ASIDE_MIN_LINKS", 0)
    assert plan_design(loaded, jobs=1).analysis


def test_an_error_in_the_analyses_beside_the_cabling_is_raised_by_planning(forks, monkeypatch):
    def broken(plan):
        raise KeyError("leaf-missing")

    monkeypatch.setattr(pipeline, "analyse", broken)
    with pytest.raises(KeyError, match="leaf-missing"):
        plan_design(load_design(DESIGNS / "lab-4-servers.yaml"), jobs=2)
    assert len(forks) == 1
    with pytest.raises(ChildProcessError):  # reaped: no process left behind
        os.waitpid(forks[0], os.WNOHANG)
