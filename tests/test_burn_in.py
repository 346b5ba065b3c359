"""Burn-in artifact: coverage, thresholds and their derivations, the order, the scripts (bash -n,
shellcheck, and run against stand-ins that print the real tools' output formats), the checklists and
the design rule."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

import orjson
import pytest
from conftest import planned, write_design

from gpucluster import load_design, plan_design
from gpucluster.analyse.burn_in import burn_in_facts, burn_in_plan
from gpucluster.analyse.rules import RULES, check_rules
from gpucluster.artifacts import burn_in


@cache
def written(design: str, folder: Path) -> Path:
    loaded, plan = planned(design)
    burn_in.write(plan, loaded, folder)
    return folder / "burn-in"


@pytest.fixture(scope="module")
def h100(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return written("superpod-h100-1su", tmp_path_factory.mktemp("h100"))


def test_every_gpu_server_and_compute_link_is_tested() -> None:
    for design in ("superpod-h100-1su", "lab-4-servers", "b200-roce-2su"):
        _loaded, plan = planned(design)
        facts = burn_in_facts(plan, plan.burn_in)
        assert facts["servers_covered"] == facts["servers"] == len(plan.gpu_nodes())
        gpu_links = sum(1 for link in plan.links if link.network == "compute" and link.tier == 0 and link.rail)
        assert facts["links_covered"] == facts["compute_host_links"] == gpu_links
        assert gpu_links == len(plan.gpu_nodes()) * plan.settings.gpus_per_server
        assert plan.facts["burn_in_plan"] == facts


def test_stages_run_from_the_smallest_scope_to_the_whole_fabric() -> None:
    _loaded, plan = planned("superpod-h200-4su")
    tests = burn_in_plan(plan)
    stages = [t.stage for t in tests]
    assert stages == sorted(stages)
    order = list(dict.fromkeys(t.test for t in tests))
    assert order == [
        "cabling",
        "dcgm-diag",
        "gpu-burn",
        "nccl-in-server",
        "ib-write-bw",
        "nccl-rail",
        "nccl-su",
        "nccl-fabric",
    ]
    assert len([t for t in tests if t.test == "nccl-su"]) == 4
    fabric = next(t for t in tests if t.test == "nccl-fabric")
    assert len(fabric.nodes) == len(plan.gpu_nodes())


def _threshold(tests: list, kind: str) -> float:
    return next(t.threshold for t in tests if t.test == kind)


def test_thresholds_follow_the_gpu_type_and_the_fabric() -> None:
    h100 = burn_in_plan(planned("superpod-h100-1su")[1])
    h200 = burn_in_plan(planned("superpod-h200-4su")[1])
    b200 = burn_in_plan(planned("b200-roce-2su")[1])
    # Azure's published thresholds (Azure/azurehpc-health-checks conf/)
    assert _threshold(h100, "nccl-in-server") == 460 and _threshold(h200, "nccl-in-server") == 431
    assert _threshold(h100, "ib-write-bw") == 375 and _threshold(h200, "ib-write-bw") == 360
    # B200: no published figure; H100's scaled by NVLink bandwidth 1800 / 900 GB/s
    b200_nvlink = next(t for t in b200 if t.test == "nccl-in-server")
    assert b200_nvlink.threshold == 920 and b200_nvlink.source.startswith("derived:")
    # multi-node: 80 % (Azure's NCCL over one 400G HCA, 40 of 50 GB/s) of each server's network bandwidth
    assert _threshold(h100, "nccl-rail") == 40 and _threshold(h100, "nccl-su") == 320
    assert all(t.source for t in h100 + h200 + b200)


def test_an_oversubscribed_fabric_lowers_the_thresholds_of_tests_that_cross_it(tmp_path: Path) -> None:
    path = write_design(
        tmp_path,
        "name: h100-2su-oversubscribed\ncompute: {server: dgx-h100, servers: 60, spare_servers: 0}\n"
        'compute_fabric: {oversubscription: "2:1"}\n',
    )
    plan = plan_design(load_design(path))
    tests = burn_in_plan(plan)
    su = next(t for t in tests if t.test == "nccl-su")
    fabric = next(t for t in tests if t.test == "nccl-fabric")
    assert su.threshold == 320  # one leaf per rail in an SU: nothing crosses the oversubscribed uplinks
    ratio = max(t.oversubscription for t in plan.tiers if t.network == "compute" and t.up_gbps)
    assert ratio > 1.5 and fabric.threshold == round(320 / ratio, 1) and "oversubscription" in fabric.source


def test_expected_results_json_and_csv_list_the_same_tests(h100: Path) -> None:
    document = json.loads((h100 / "expected-results.json").read_text())
    with open(h100 / "expected-results.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [t["id"] for t in document["tests"]] == [r["id"] for r in rows]
    assert len(set(r["id"] for r in rows)) == len(rows)
    assert document["partition"] == "burnin" and [s["stage"] for s in document["stages"]] == [0, 1, 2, 3, 4, 5, 6]
    link = next(r for r in rows if r["test"] == "ib-write-bw")
    assert link["links"].count("->") == 2 and "(C" in link["links"]


def test_expected_results_json_written_a_batch_at_a_time_is_the_whole_documents_dump(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _loaded, plan = planned("superpod-h100-1su")
    tests = plan.burn_in
    whole = orjson.dumps(burn_in._expected_document(plan, tests), option=burn_in._JSON_OPTIONS) + b"\n"
    for batch in (1, 7, len(tests), len(tests) + 5):
        monkeypatch.setattr(burn_in, "_TESTS_PER_DUMP", batch)
        assert b"".join(burn_in.expected_results_json(plan, tests)) == whole
    assert b"".join(burn_in.expected_results_json(plan, [])) == (
        orjson.dumps(burn_in._expected_document(plan, []), option=burn_in._JSON_OPTIONS) + b"\n"
    )


@pytest.mark.external
def test_scripts_pass_bash_and_shellcheck(h100: Path) -> None:
    scripts = sorted(str(p) for p in h100.iterdir() if p.suffix in (".sh", ".sbatch"))
    assert len(scripts) == 6
    for script in scripts:
        assert subprocess.run(["bash", "-n", script]).returncode == 0, script
        assert os.access(script, os.X_OK)
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck not installed (.ci/install-tools)")
    result = subprocess.run(["shellcheck", "-s", "bash", *scripts], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


_STAND_INS = {
    # the tools' output formats: dcgmi diag's table, gpu-burn's summary, nccl-tests' closing lines,
    # perftest's result row (#bytes #iterations BW-peak BW-average MsgRate)
    "dcgmi": 'echo "| Diagnostic | Result |"; echo "| Memory     | ${FAKE_DIAG:-Pass} |"',
    "gpu_burn": 'sleep 1; echo "Tested 8 GPUs:"; for i in 0 1 2 3 4 5 6; do printf "\\tGPU %d: OK\\n" $i; done; '
    'printf "\\tGPU 7: %s\\n" "${FAKE_GPU7:-OK}"',
    "nvidia-smi": 'for i in 0 1 2 3 4 5 6 7; do echo "$i, ${FAKE_REASONS:-0x0000000000000004}"; done',
    "all_reduce_perf": 'echo "# Out of bounds values : 0 OK"; echo "# Avg bus bandwidth    : ${FAKE_BUSBW:-470.5} "',
    "srun": 'while [[ $1 == -* ]]; do shift; done; exec "$@"',
    "ib_write_bw": 'if [[ ${!#} == gpu* ]]; then echo " 8388608    5000   392.10   ${FAKE_BW:-380.25}   0.005666"; fi',
}


@pytest.fixture
def tools(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in _STAND_INS.items():
        path = bin_dir / name
        path.write_text(f"#!/usr/bin/env bash\n{body}\n")
        path.chmod(0o755)
    return {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "GPU_BURN_DIR": str(bin_dir),
        "SAMPLE_SECONDS": "0.2",
        "LISTEN_SECONDS": "0",
    }


def _run(folder: Path, env: dict[str, str], *args: str) -> tuple[int, str]:
    result = subprocess.run(
        ["bash", *args], cwd=folder, env={**os.environ, **env}, capture_output=True, text=True, timeout=60
    )
    results = [line for line in result.stdout.splitlines() if line.startswith("BURNIN_RESULT")]
    return result.returncode, "\n".join(results)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "args", "fault"),
    [
        ("dcgm-diag.sbatch", ["dcgm-diag:gpu001", "3"], {"FAKE_DIAG": "Fail"}),
        ("gpu-burn.sbatch", ["gpu-burn:gpu001", "60", "8"], {"FAKE_GPU7": "FAULTY"}),
        ("gpu-burn.sbatch", ["gpu-burn:gpu001", "60", "8"], {"FAKE_REASONS": "0x0000000000000040"}),  # HW thermal
        ("nccl-all-reduce.sbatch", ["nccl-in-server:gpu001", "460.0", "8"], {"FAKE_BUSBW": "455.1"}),
        ("nccl-all-reduce.sbatch", ["nccl-rail:rail1", "40.0", "1", "0", "mlx5_0"], {"FAKE_BUSBW": "31"}),
        ("ib-write-bw.sbatch", ["gpu001", "gpu002", "375.0", "0", "1:mlx5_0:0"], {"FAKE_BW": "301.5"}),
    ],
)
def test_scripts_pass_healthy_output_and_fail_below_threshold(
    h100: Path, tools: dict[str, str], script: str, args: list[str], fault: dict[str, str]
) -> None:
    env = {**tools, "SLURM_JOB_NUM_NODES": "2" if "rail" in args[0] else "1"}
    status, line = _run(h100, env, script, *args)
    assert status == 0 and "verdict=PASS" in line, line
    status, line = _run(h100, {**env, **fault}, script, *args)
    assert status != 0 and "verdict=FAIL" in line, line


def test_check_results_reports_failed_and_missing_tests(h100: Path, tmp_path: Path) -> None:
    folder = tmp_path / "burn-in"
    shutil.copytree(h100, folder)
    (folder / "logs").mkdir()
    servers = [f"gpu{i:03d}" for i in range(1, 32)]
    for job, node in enumerate(servers, 10):
        verdict = "FAIL" if node == "gpu007" else "PASS"
        (folder / "logs" / f"dcgm-diag:{node}.{job}.out").write_text(
            f"BURNIN_RESULT id=dcgm-diag:{node} node={node} value=x threshold=Pass verdict={verdict}\n"
        )
    status, _ = _run(folder, {}, "check-results.sh", "1")
    result = subprocess.run(["bash", "check-results.sh", "1"], cwd=folder, capture_output=True, text=True)
    assert status == 1 and "FAIL    BURNIN_RESULT id=dcgm-diag:gpu007" in result.stdout
    assert "stage 1: 30 passed, 1 failed, 0 without a result" in result.stdout
    (folder / "logs" / "dcgm-diag:gpu007.99.out").write_text(
        "BURNIN_RESULT id=dcgm-diag:gpu007 node=gpu007 value=Pass threshold=Pass verdict=PASS\n"
    )  # a re-run after the repair counts, being the later job
    assert subprocess.run(["bash", "check-results.sh", "1"], cwd=folder, capture_output=True).returncode == 0
    result = subprocess.run(["bash", "check-results.sh", "2"], cwd=folder, capture_output=True, text=True)
    assert result.returncode == 1 and "31 without a result" in result.stdout


def test_run_burn_in_submits_each_stage_to_the_burnin_partition(h100: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "sbatch.log"
    (bin_dir / "sbatch").write_text(f'#!/usr/bin/env bash\necho "$*" >> {log}\necho 1\n')
    (bin_dir / "sbatch").chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    counts = {}
    for stage in range(1, 7):
        log.write_text("")
        status, _ = _run(h100, env, "run-burn-in.sh", str(stage))
        assert status == 0
        lines = log.read_text().splitlines()
        assert all("--partition=burnin" in line for line in lines)
        counts[stage] = len(lines)
    assert counts == {1: 31, 2: 31, 3: 31, 4: 16, 5: 8, 6: 1}
    log.write_text("")
    assert _run(h100, env, "run-burn-in.sh", "2", "gpu007")[0] == 0
    assert log.read_text().count("--nodelist=gpu007 gpu-burn.sbatch gpu-burn:gpu007 86400 8") == 1
    assert _run(h100, env, "run-burn-in.sh", "9")[0] == 2


def test_each_compute_rack_gets_a_checklist_of_its_servers_and_cables(h100: Path) -> None:
    _loaded, plan = planned("superpod-h100-1su")
    compute_racks = {d.rack for d in plan.gpu_nodes()}
    pages = {p.stem: p.read_text() for p in (h100 / "checklists").glob("*.html")}
    assert set(pages) == compute_racks
    rack = sorted(compute_racks)[0]
    for name in plan.racks[rack].devices:
        if plan.devices[name].role == "gpu-server":
            assert f"<h2>{name}: U{plan.devices[name].u_position}" in pages[rack]
    first = next(n for n in plan.racks[rack].devices if plan.devices[n].role == "gpu-server")
    cable = next(
        c.id for c in plan.cables if c.network == "compute" and any(plan.links[i].a_device == first for i in c.links)
    )
    assert cable in pages[rack] and "Thresholds and their sources" in pages[rack]


def test_rule_burn_in_plan_present() -> None:
    rule = next(r for r in RULES if r.name == "burn-in-plan-present")
    _loaded, plan = planned("superpod-h100-1su")
    assert [f.severity for f in rule.check(plan.facts)] == ["ok"]
    assert [f.severity for f in rule.check({**plan.facts, "burn_in_plan": None})] == ["warning"]
    short = {**plan.facts["burn_in_plan"], "links_covered": 200}
    findings = rule.check({**plan.facts, "burn_in_plan": short})
    assert findings[0].severity == "error" and "48 compute links" in findings[0].message
    assert any(f.rule == "burn-in-plan-present" for f in check_rules(plan.facts))


def test_a_rack_checklist_prints_with_weasyprint(h100: Path) -> None:
    weasyprint = pytest.importorskip("weasyprint")
    page = sorted((h100 / "checklists").glob("*.html"))[0]
    document = weasyprint.HTML(str(page)).render()
    assert len(document.pages) >= 1
    assert document.pages[0].width > document.pages[0].height  # A4 landscape, as the page style asks


def test_a_one_server_design_passes_the_burn_in_rule_with_its_links_reported_unmeasurable(tmp_path):
    """ib_write_bw needs a peer server on the same rail: a lone server's links cannot be missing from the plan."""
    design = tmp_path / "one.yaml"
    design.write_text("name: one\ncompute: {servers: 1, spare_servers: 0}\n", encoding="utf-8")
    plan = plan_design(load_design(design))
    findings = [f for f in check_rules(plan.facts) if f.rule == "burn-in-plan-present"]
    assert [f.severity for f in findings] == ["ok"], findings
    assert "no peer server" in findings[0].message
