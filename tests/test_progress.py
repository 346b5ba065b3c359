"""Progress within long stages and writers: counts reach the display (from worker processes too), bars only on a
terminal, one line per stage when asked for on a pipe."""

from __future__ import annotations

import io

import pytest
from click.testing import CliRunner
from conftest import DESIGNS
from rich.console import Console

from gpucluster import load_design, plan_design, write_artifacts
from gpucluster.cli import main
from gpucluster.runtime import progress


class Recorder:
    def __init__(self):
        self.stages, self.updates = [], []

    def __call__(self, stage):
        self.stages.append(stage)

    def update(self, done, total, unit):
        self.updates.append((self.stages[-1] if self.stages else "", done, total, unit))

    def update_stage(self, stage, done, total, unit):
        self.updates.append((stage, done, total, unit))


@pytest.fixture
def recorder():
    recorder = Recorder()
    previous = progress.install(recorder)
    yield recorder
    progress.install(previous)


def test_track_reports_the_count_of_items_and_the_end(recorder, monkeypatch):
    monkeypatch.setattr(progress, "_INTERVAL_S", 0.0)
    assert list(progress.track(range(2000), 2000, "rows")) == list(range(2000))
    assert recorder.updates[0] == ("", 0, 2000, "rows")
    assert recorder.updates[-1] == ("", 2000, 2000, "rows")
    assert [done for _stage, done, _total, _unit in recorder.updates] == [0, 512, 1024, 1536, 2000]


def test_track_without_a_display_only_passes_the_items_through():
    progress.install(None)
    assert list(progress.track(iter("abc"), None, "letters")) == ["a", "b", "c"]


def test_planning_reports_the_cables_it_makes(recorder):
    loaded = load_design(DESIGNS / "lab-4-servers.yaml")
    plan = plan_design(loaded, recorder)
    # the cables made column by column: all but those of split ports (made one by one before them)
    made = [cable for cable in plan.cables if not plan.links[cable.links[0]].b_half]
    assert made
    assert ("cables", len(made), len(made), "cables") in recorder.updates


def test_a_writer_in_a_worker_reports_its_rows_to_the_main_process(recorder, tmp_path):
    loaded = load_design(DESIGNS / "lab-4-servers.yaml")
    plan = plan_design(loaded)
    recorder.updates.clear()
    write_artifacts(plan, loaded, tmp_path, ["cabling", "plan"], progress=recorder, jobs=2)
    assert ("cabling:csv", len(plan.cables), len(plan.cables), "cables") in recorder.updates
    compute = sum(1 for cable in plan.cables if cable.network == "compute")
    assert ("cabling:compute", compute, compute, "cables") in recorder.updates
    assert ("plan", len(plan.cables), len(plan.cables), "cables") in recorder.updates
    assert {"cabling:csv", "cabling:compute", "plan"} <= set(recorder.stages)


def test_the_verify_files_and_the_report_show_their_progress(recorder, tmp_path):
    loaded = load_design(DESIGNS / "lab-4-servers.yaml")
    plan = plan_design(loaded)
    recorder.updates.clear()
    write_artifacts(plan, loaded, tmp_path, ["verify", "report", "plan"], progress=recorder, jobs=2)
    assert any(stage == "verify" and unit == "links" and done == total for stage, done, total, unit in recorder.updates)
    assert [(done, total) for stage, done, total, unit in recorder.updates if stage == "report"] == [
        (0, 3),
        (1, 3),
        (2, 3),
        (3, 3),
    ]


def test_the_last_planning_stage_stops_its_clock_when_the_writers_start(tmp_path):
    loaded = load_design(DESIGNS / "lab-4-servers.yaml")
    plan = plan_design(loaded)
    screen = io.StringIO()
    with progress.Bars(Console(file=screen, force_terminal=True, width=200)) as bars:
        bars("graph analyses")
        write_artifacts(plan, loaded, tmp_path, ["plan", "summary"], progress=bars, jobs=2)
        analyses = bars.progress.tasks[bars.progress.task_ids.index(bars.tasks["graph analyses"])]
        assert analyses.finished and analyses.stop_time is not None
        assert bars.running_in_main == ""


def test_bars_show_count_rate_and_time_left_on_a_terminal():
    screen = io.StringIO()
    with progress.Bars(Console(file=screen, force_terminal=True, width=200)) as bars:
        bars("cabling")
        bars.update(0, 1000, "cables")
        bars.update(500, 1000, "cables")
        bars.refresh(force=True)
        bars.update_stage("netbox", 10, 40, "racks")
    text = screen.getvalue()
    assert "cabling" in text and "500/1000" in text and "cables" in text and "/s" in text
    assert "netbox" in text and "10/40" in text
    assert "left" in text


def test_build_on_a_pipe_shows_no_progress_unless_asked(tmp_path):
    design = str(DESIGNS / "lab-4-servers.yaml")
    quiet = CliRunner().invoke(main, ["build", design, "-o", str(tmp_path), "--only", "plan"])
    assert quiet.exit_code == 0 and quiet.stderr == ""
    lines = CliRunner().invoke(main, ["build", design, "-o", str(tmp_path), "--only", "plan", "--progress"])
    assert lines.exit_code == 0
    stages = [line.split("] ", 1)[1] for line in lines.stderr.splitlines()]
    assert stages[0] == "load design" and "cables" in stages and stages[-1] == "plan"
    assert stages.index("cables") < stages.index("analyses and design rules") < stages.index("plan")
