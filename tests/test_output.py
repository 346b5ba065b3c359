"""Output is deterministic (same design, same bytes) and written atomically; the CLI follows conventions."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner
from conftest import DESIGNS, ROOT

import gpucluster.artifacts as artifacts
from gpucluster import load_design, plan_design, write_artifacts
from gpucluster.artifacts import Artifact, output_folder
from gpucluster.artifacts.plan_json import plan_document
from gpucluster.cli import main
from gpucluster.design.schema import Design
from gpucluster.plan.model import AnalysedPlan


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_the_same_design_gives_byte_identical_output(tmp_path):
    design = DESIGNS / "superpod-h100-1su.yaml"
    first = write_artifacts(plan_design(load_design(design)), load_design(design), tmp_path / "a")
    second = write_artifacts(plan_design(load_design(design)), load_design(design), tmp_path / "b")
    assert _files(first) == _files(second)


@pytest.mark.slow
def test_a_failed_build_leaves_the_previous_output_as_it_was(tmp_path, monkeypatch):
    loaded = load_design(DESIGNS / "lab-4-servers.yaml")
    plan = plan_design(loaded)
    folder = write_artifacts(plan, loaded, tmp_path)
    before = _files(folder)

    def broken(plan, loaded, staging):
        (staging / "half-written.txt").write_text("partial")
        raise RuntimeError("disk full")

    monkeypatch.setitem(artifacts.ARTIFACTS, "broken", Artifact(broken, AnalysedPlan))
    with pytest.raises(RuntimeError):
        write_artifacts(plan, loaded, tmp_path)
    assert _files(folder) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder.name]  # no staging folder left behind


@pytest.mark.slow
def test_an_interrupted_swap_is_recovered_on_the_next_build(tmp_path):
    loaded = load_design(DESIGNS / "lab-4-servers.yaml")
    plan = plan_design(loaded)
    folder = write_artifacts(plan, loaded, tmp_path)
    before = _files(folder)
    folder.rename(folder.with_name(f".{folder.name}.old"))  # as if stopped between the two renames
    output_folder.recover(folder)
    assert _files(folder) == before


def test_validate_prints_ok_and_a_one_screen_summary():
    result = CliRunner().invoke(main, ["validate", str(DESIGNS / "superpod-h200-4su.yaml")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "ok"
    assert "984 GPUs on 123 dgx-h200 servers + 4 spare" in lines[1]
    assert any("compute" in line and "32 leaf, 16 spine" in line for line in lines)
    assert len(lines) <= 24


def test_build_writes_plan_json_under_the_design_name(tmp_path):
    result = CliRunner().invoke(
        main, ["build", str(DESIGNS / "lab-4-servers.yaml"), "-o", str(tmp_path), "--only", "plan"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads((tmp_path / "lab-4-servers" / "plan.json").read_text())
    assert document["schema_version"] == 1
    assert document["totals"]["gpus"] == 32
    assert {"racks", "devices", "links", "cables", "totals", "tiers", "analysis", "findings"} <= set(document)


@pytest.mark.parametrize("command", [[], ["validate"], ["build"], ["schema"]])
def test_every_command_has_help(command):
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output


def test_the_committed_design_schema_is_current():
    committed = json.loads((DESIGNS / "schema.json").read_text())
    assert committed == Design.model_json_schema(), "run: gpucluster schema -o designs/schema.json"


def test_plan_json_links_and_cables_refer_to_each_other(h100_1su):
    loaded, plan = h100_1su
    document = plan_document(plan, loaded)
    cables = {c["id"]: c for c in document["cables"]}
    for link in document["links"]:
        assert link["id"] in cables[link["cable"]]["links"]
    names = {d["name"] for d in document["devices"]}
    assert all(link["a"]["device"] in names and link["b"]["device"] in names for link in document["links"])
    assert str(ROOT)  # plan.json holds no machine paths
    assert str(ROOT) not in json.dumps(document)


# A build as `gpucluster build`, optionally with WeasyPrint's fontTools subsetting (what it falls back to where the
# HarfBuzz subsetting library is missing), which stamped each embedded font with the clock.
BUILD_WITH = {
    "harfbuzz": "from gpucluster.cli import main; main()",
    "fonttools": "import weasyprint.pdf.fonts as f; f.harfbuzz_subset = None; from gpucluster.cli import main; main()",
}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("design", "subsetter", "only"),
    [
        ("superpod-h100-1su", "harfbuzz", []),
        ("superpod-h100-1su", "fonttools", []),
        ("h100-16k-3tier", "fonttools", ["--only", "report"]),  # where report.pdf was seen to differ
    ],
)
def test_separate_processes_with_different_hash_seeds_and_jobs_write_the_same_bytes(tmp_path, design, subsetter, only):
    """Set and dict-of-set iteration must never leak into the output (Python randomises string hashes), nor the
    writers' scheduling, nor the time of day: every file, the PDFs included, is compared."""
    import subprocess
    import sys

    outputs = []
    for seed, jobs in (("1", "1"), ("2", "2")):
        out = tmp_path / seed
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONWARNINGS": "ignore"}
        env.pop("SOURCE_DATE_EPOCH", None)
        command = [sys.executable, "-c", BUILD_WITH[subsetter], "build", str(DESIGNS / f"{design}.yaml")]
        command += ["-o", str(out), "-j", jobs, "--no-progress", *only]
        command += ["--lock", str(tmp_path / f"{seed}.lock.json")]  # a lock of its own: none beside the example
        subprocess.run(command, check=True, env=env, capture_output=True)
        outputs.append(_files(out / design))
    assert any(name.endswith(".pdf") for name in outputs[0])
    assert sorted(outputs[0]) == sorted(outputs[1])
    assert [name for name in outputs[0] if outputs[0][name] != outputs[1][name]] == []
    assert (tmp_path / "1.lock.json").read_bytes() == (tmp_path / "2.lock.json").read_bytes()


def test_a_pdf_subset_by_fonttools_carries_no_clock_time(tmp_path, monkeypatch):
    """fontTools stamps a subset font's head.modified with the clock unless SOURCE_DATE_EPOCH says otherwise."""
    import time
    import types

    import weasyprint.pdf.fonts
    from fontTools.misc import timeTools

    from gpucluster.artifacts._pdf import write_pdf

    monkeypatch.setattr(weasyprint.pdf.fonts, "harfbuzz_subset", None)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    html = "<p style='font-family: DejaVu Sans'>Rack A01 <code>port 1/1</code></p>"
    write_pdf(html, tmp_path / "now.pdf")
    tomorrow = time.time() + 86_400
    monkeypatch.setattr(timeTools, "time", types.SimpleNamespace(time=lambda: tomorrow))
    write_pdf(html, tmp_path / "tomorrow.pdf")
    assert (tmp_path / "now.pdf").read_bytes() == (tmp_path / "tomorrow.pdf").read_bytes()
    assert "SOURCE_DATE_EPOCH" not in os.environ  # pinned only while the PDF is written


def test_a_missing_pdf_library_is_one_clear_error_not_a_traceback(tmp_path, monkeypatch):
    """WeasyPrint loads Pango through cffi at import; without it the build says which packages to install."""
    import builtins

    real_import = builtins.__import__

    def no_pango(name, *args, **kwargs):
        if name.startswith("weasyprint"):
            raise OSError("cannot load library 'libpango-1.0-0'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pango)
    design = str(DESIGNS / "lab-4-servers.yaml")
    result = CliRunner().invoke(main, ["build", design, "-o", str(tmp_path), "--only", "plan", "--only", "report"])
    assert result.exit_code == 1, result.output
    assert "needs the Pango library" in result.output and "apt-get install libpango-1.0-0" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "lab-4-servers").exists()


@pytest.mark.parametrize("blocks", [False, True])
def test_yaml_of_one_line_text_mappings_is_what_pyyamls_own_representer_writes(blocks):
    """yamlout makes a mapping of one-line text keys and values directly (prometheus.yml's 260,000 target labels at
    131,072 GPUs); the text is PyYAML's own, quoting included, and any other mapping takes PyYAML's path."""
    import yaml

    from gpucluster.formats import yamlout

    document = {
        "targets": [{"labels": {"node": "gpu0001", "spare": "false", "su": "1", "empty": "", "colon": "a: b"}}],
        "mixed": {"count": 3, "text": "two\nlines", "yes": "yes", "flag": True},
        "nested": {"inner": {"x": "-1", "y": "#not a comment"}},
    }
    dumper = yamlout.BlockDumper if blocks else yamlout.Dumper

    class Reference(dumper):
        pass

    Reference.add_representer(dict, yaml.SafeDumper.represent_dict)
    expected = yaml.dump(document, Dumper=Reference, sort_keys=False, width=1 << 20)
    assert yamlout.dump(document, blocks=blocks, width=1 << 20) == expected
    assert yaml.safe_load(expected) == document


def test_the_cycle_collector_is_paused_only_while_a_writer_runs():
    import gc

    from gpucluster.runtime.collector import cycle_collector_paused

    assert gc.isenabled()
    with cycle_collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), cycle_collector_paused():
        raise ValueError("a writer's error")
    assert gc.isenabled()


# -- a build replaces output and lock together, or neither -----------------------------------------------------------


def _lab_build(tmp_path, *extra):
    """A copy of lab-4-servers built once (plan and summary, -j 1), its output folder and lock as they are after."""
    design = tmp_path / "lab.yaml"
    design.write_text((DESIGNS / "lab-4-servers.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    args = ["build", str(design), "-o", str(tmp_path / "out"), "-j", "1", "--no-progress", "--only", "plan", *extra]
    return design, args


def _state(tmp_path):
    return _files(tmp_path / "out"), (tmp_path / "lab.lock.json").read_bytes(), sorted(os.listdir(tmp_path))


def test_a_lock_that_cannot_be_written_leaves_the_previous_output_and_lock(tmp_path, monkeypatch):
    import errno

    import gpucluster.growth.phases

    _design, args = _lab_build(tmp_path)
    assert CliRunner().invoke(main, args).exit_code == 0
    before = _state(tmp_path)

    def read_only(plan, path):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    monkeypatch.setattr(gpucluster.growth.phases, "write_lock", read_only)
    result = CliRunner().invoke(main, [*args, "--only", "summary"])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: {tmp_path / 'lab.lock.json'}: cannot write the lock: Read-only file system"]
    assert _state(tmp_path) == before  # plan.json alone, the old lock, no debris


def test_a_full_disk_leaves_the_previous_output_and_lock_with_one_located_line(tmp_path, monkeypatch):
    import errno

    _design, args = _lab_build(tmp_path)
    assert CliRunner().invoke(main, args).exit_code == 0
    before = _state(tmp_path)

    def full(plan, loaded, staging):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setitem(artifacts.ARTIFACTS, "summary", Artifact(full, AnalysedPlan))
    result = CliRunner().invoke(main, [*args, "--only", "summary"])
    assert result.exit_code == 2, result.output
    assert (
        result.output.splitlines()[-1] == f"error: {tmp_path / 'out'}: cannot write the output: No space left on device"
    )
    assert "Traceback" not in result.output
    assert _state(tmp_path) == before


def test_debris_of_a_killed_build_is_removed_by_the_next_and_never_read(tmp_path):
    _design, args = _lab_build(tmp_path)
    assert CliRunner().invoke(main, args).exit_code == 0
    expected = _state(tmp_path)
    # what SIGKILL leaves: a staging folder, the lock's new file and its temporary
    (tmp_path / "out" / ".lab-4-servers.x1y2z3.tmp").mkdir()
    (tmp_path / "out" / ".lab-4-servers.x1y2z3.tmp" / "plan.json").write_text("{}")
    (tmp_path / ".lab.lock.json.new").write_text("{not a lock")
    (tmp_path / "..lab.lock.json.new.tmp").write_text("{not a lock")
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert _state(tmp_path) == expected


def test_a_rename_beside_the_swap_that_fails_puts_the_previous_output_back(tmp_path):
    final, staging = tmp_path / "lab", tmp_path / ".lab.abc.tmp"
    final.mkdir()
    (final / "plan.json").write_text("old")
    staging.mkdir()
    (staging / "plan.json").write_text("new")
    with pytest.raises(FileNotFoundError):
        output_folder.swap(staging, final, (tmp_path / "missing.new", tmp_path / "lab.lock.json"))
    assert (final / "plan.json").read_text() == "old"
    assert not (tmp_path / ".lab.old").exists()
