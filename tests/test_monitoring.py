"""Monitoring artifact: checked with the real Prometheus tools (promtool, and the Prometheus server for the
relabelling), and the dashboard against Grafana's dashboard model."""

from __future__ import annotations

import http.server
import json
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from functools import cache
from pathlib import Path

import pytest
import yaml
from conftest import planned
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import Dashboard

from gpucluster.artifacts import monitoring
from gpucluster.artifacts.monitoring.alert_rules import RULES_FILE, alert_rules, alert_table
from gpucluster.artifacts.monitoring.rule_tests import subjects
from gpucluster.artifacts.monitoring.targets import COUNTERS, scrape_targets, server_leaves

pytestmark = [
    pytest.mark.external,
    pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (.ci/install-tools)"),
]


@cache
def written(design: str, folder: Path) -> Path:
    loaded, plan = planned(design)
    monitoring.write(plan, loaded, folder)
    return folder / "monitoring"


@pytest.fixture(scope="module")
def h100(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return written("superpod-h100-1su", tmp_path_factory.mktemp("h100"))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return written("lab-4-servers", tmp_path_factory.mktemp("lab"))


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["promtool", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("design", ["h100", "lab"])
def test_promtool_accepts_the_config_and_the_rules(design: str, request: pytest.FixtureRequest) -> None:
    folder: Path = request.getfixturevalue(design)
    config = promtool("check", "config", "prometheus.yml", cwd=folder)
    assert config.returncode == 0, config.stdout + config.stderr
    assert "2 rule files found" in config.stdout
    rules = promtool("check", "rules", "rules/gpu-alerts.yml", "rules/gpu-recording.yml", cwd=folder)
    assert rules.returncode == 0, rules.stdout + rules.stderr


@pytest.mark.parametrize("design", ["h100", "lab"])
def test_promtool_unit_tests_fire_each_alert_and_stay_quiet_on_healthy_series(
    design: str, request: pytest.FixtureRequest
) -> None:
    folder: Path = request.getfixturevalue(design)
    result = promtool("test", "rules", "tests/gpu-alerts.test.yml", cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr
    alerts = {r["alert"] for r in yaml.safe_load((folder / "rules/gpu-alerts.yml").read_text())["groups"][0]["rules"]}
    tests = yaml.safe_load((folder / "tests/gpu-alerts.test.yml").read_text())["tests"]
    fired = {t["alertname"] for test in tests for t in test.get("alert_rule_test", []) if t["exp_alerts"]}
    quiet = {t["alertname"] for t in tests[-2]["alert_rule_test"] if not t["exp_alerts"]}
    assert fired == alerts and quiet == alerts
    assert {"GpuXidError", "GpuUncorrectableEccError", "GpuRowRemapPending", "GpuNvlinkErrors", "GpuMissing",
            "GpuThermalThrottling", "GpuPowerThrottling", "InfinibandPortErrors", "GpuIdleInJob",
            "GpuTemperatureHigh"} <= alerts  # fmt: skip


@pytest.mark.parametrize("design", ["superpod-h100-1su", "b200-roce-2su", "gb200-nvl72-1su"])
def test_every_alert_rule_record_has_a_source_and_a_sample_that_fires_and_one_that_stays_quiet(design: str) -> None:
    table, _phrases = alert_table()
    assert len({rule.name for rule in table}) == len(table)
    for rule in table:
        assert rule.source.strip() and "facts.md" not in rule.source, rule.name
        assert any(s.firing for s in rule.series) and any(s.healthy for s in rule.series), rule.name
        assert all(s.metric in rule.expr for s in rule.series), rule.name
    _loaded, plan = planned(design)
    leaves = server_leaves(plan)
    samples = subjects(
        plan,
        scrape_targets(plan, plan.gpu_nodes(), leaves),
        scrape_targets(plan, plan.devices_with("management-server"), leaves),
        leaves,
    )
    rules = alert_rules(plan)
    assert {s.subject or rule.subject for rule in rules for s in rule.series} <= samples.keys()
    assert not [rule.name for rule in rules if "${" in rule.expr + rule.summary + rule.source + rule.for_]
    assert "facts.md" not in RULES_FILE.read_text()  # nor in a phrase or a comment
    needs = {"b200-roce-2su": "roce", "gb200-nvl72-1su": "rack-systems"}.get(design)
    assert not needs or any(rule.needs == needs for rule in rules)


def test_unit_tests_fail_when_a_rule_loses_its_threshold(h100: Path, tmp_path: Path) -> None:
    folder = tmp_path / "monitoring"
    shutil.copytree(h100, folder)
    rules = folder / "rules/gpu-alerts.yml"
    rules.write_text(rules.read_text().replace("DCGM_FI_DEV_GPU_TEMP > 80", "DCGM_FI_DEV_GPU_TEMP > 90"))
    result = promtool("test", "rules", "tests/gpu-alerts.test.yml", cwd=folder)
    assert result.returncode != 0
    assert "GpuTemperatureHigh" in result.stdout + result.stderr


def test_the_counters_file_turns_on_every_dcgm_field_the_rules_and_dashboard_read(h100: Path) -> None:
    enabled = {
        line.split(",")[0].strip()
        for line in (h100 / "dcgm-counters.csv").read_text().splitlines()
        if line and not line.startswith("#")
    }
    assert enabled == {name for name, *_ in COUNTERS}
    used = set(re.findall(r"DCGM_FI_[A-Z0-9_]+", (h100 / "rules/gpu-alerts.yml").read_text()))
    used |= set(re.findall(r"DCGM_FI_[A-Z0-9_]+", (h100 / "grafana/gpu-cluster.json").read_text()))
    assert used <= enabled
    for field in ("ECC_DBE_VOL_TOTAL", "ROW_REMAP_PENDING", "NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "XID_ERRORS",
                  "THERMAL_VIOLATION", "POWER_VIOLATION"):  # fmt: skip
        assert f"DCGM_FI_DEV_{field}" in enabled


def test_every_gpu_server_and_management_server_is_a_target_labelled_from_the_plan(h100: Path) -> None:
    _loaded, plan = planned("superpod-h100-1su")
    config = yaml.safe_load((h100 / "prometheus.yml").read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    dcgm = {c["targets"][0]: c["labels"] for c in jobs["dcgm"]["static_configs"]}
    node = {c["targets"][0]: c["labels"] for c in jobs["node"]["static_configs"]}
    servers = plan.gpu_nodes()
    assert set(dcgm) == {f"{d.name}:9400" for d in servers}
    heads = {f"{d.name}:9100" for d in plan.devices_with("management-server")}
    assert set(node) == {f"{d.name}:9100" for d in servers} | heads
    spare = next(d for d in servers if d.spare)
    labels = dcgm[f"{spare.name}:9400"]
    assert labels["rack"] == spare.rack and labels["su"] == str(spare.su) and labels["spare"] == "true"
    assert labels["leaves"].split(",")[0] == f"1={server_leaves(plan)[spare.name][1]}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(text: str) -> http.server.HTTPServer:
    class Exporter(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", _free_port()), Exporter)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus not installed (.ci/install-tools)")
def test_prometheus_labels_each_gpu_and_hca_with_its_rail_and_leaf(h100: Path, tmp_path: Path) -> None:
    """The generated relabelling, run by a real Prometheus on one target of each job served locally."""
    _loaded, plan = planned("superpod-h100-1su")
    node = "gpu005"
    dcgm_lines = [f'DCGM_FI_DEV_GPU_TEMP{{gpu="{i}",UUID="GPU-{i}"}} 40' for i in range(8)]
    ib_lines = [f'node_infiniband_state_id{{device="{hca}",port="1"}} 4' for hca in ("mlx5_3", "mlx5_7")]
    exporters = {"dcgm": _serve("\n".join(dcgm_lines) + "\n"), "node": _serve("\n".join(ib_lines) + "\n")}
    config = yaml.safe_load((h100 / "prometheus.yml").read_text())
    config["scrape_configs"] = [j for j in config["scrape_configs"] if j["job_name"] in exporters]
    for job in config["scrape_configs"]:
        target = next(c for c in job["static_configs"] if c["labels"]["node"] == node)
        job["static_configs"] = [{**target, "targets": [f"127.0.0.1:{exporters[job['job_name']].server_port}"]}]
    config["global"] = {"scrape_interval": "1s"}
    config.pop("rule_files")
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = _free_port()
    server = subprocess.Popen(
        ["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        gpus = _query(port, "DCGM_FI_DEV_GPU_TEMP", want=8)
        hcas = _query(port, "node_infiniband_state_id", want=2)
    finally:
        server.terminate()
        server.wait(timeout=30)
        for exporter in exporters.values():
            exporter.shutdown()
    leaves = server_leaves(plan)[node]
    by_gpu = {s["gpu"]: s for s in gpus}
    for gpu in range(8):
        labels = by_gpu[str(gpu)]
        assert labels["rail"] == str(gpu + 1) and labels["leaf"] == leaves[gpu + 1]
        assert labels["node"] == node and labels["rack"] == plan.devices[node].rack and labels["su"] == "1"
        assert "leaves" not in labels
    by_device = {s["device"]: s for s in hcas}
    assert by_device["mlx5_3"]["rail"] == "2" and by_device["mlx5_3"]["leaf"] == leaves[2]
    assert "rail" not in by_device["mlx5_7"]  # the storage HCA is on no rail


def _query(port: int, expr: str, want: int) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                result = json.load(response)["data"]["result"]
            if len(result) >= want:
                return [r["metric"] for r in result]
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"Prometheus never returned {want} series of {expr}")


def test_lab_without_hca_names_gets_no_hca_rails(lab: Path) -> None:
    config = yaml.safe_load((lab / "prometheus.yml").read_text())
    node_job = next(job for job in config["scrape_configs"] if job["job_name"] == "node")
    assert not any("device" in r.get("source_labels", []) for r in node_job["metric_relabel_configs"])
    rules = (lab / "rules/gpu-alerts.yml").read_text()
    assert "InfinibandPortDegraded" not in rules and 'node_infiniband_state_id{role="gpu-server"}' in rules


def test_dashboard_is_a_grafana_dashboard_grouped_by_su_rack_and_rail(h100: Path, tmp_path: Path) -> None:
    """Checked against Grafana's dashboard model as grafana-foundation-sdk generates it from Grafana's schema
    (models/dashboard.py, Grafana 11.6): decoding and re-encoding keeps every key, so none is unknown."""
    document = json.loads((h100 / "grafana/gpu-cluster.json").read_text())
    again = json.loads(json.dumps(Dashboard.from_json(document), cls=JSONEncoder))
    assert again == document
    assert 8 <= len(document["uid"]) <= 40 and document["schemaVersion"] >= 39
    variables = {v["name"]: v for v in document["templating"]["list"]}
    assert {"datasource", "su", "rack", "rail", "node"} <= set(variables)
    assert variables["rail"]["query"] == "label_values(DCGM_FI_DEV_GPU_TEMP, rail)"
    panels = [p for p in document["panels"] if p["type"] != "row"]
    titles = " ".join(p["title"] for p in panels)
    for word in ("temperature", "power", "utilisation", "XID", "ECC", "NVLink", "InfiniBand"):
        assert word in titles
    cells = set()
    for p in document["panels"]:
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24
        area = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not area & cells, f"{p['title']} overlaps another panel"
        cells |= area
    assert len({p["id"] for p in document["panels"]}) == len(document["panels"])
    # every query is PromQL that promtool accepts, with Grafana's variables filled in
    exprs = [t["expr"] for p in panels for t in p["targets"]]
    assert all(any(v in e for v in ("$su", "$rack")) for e in exprs)
    assert sum('su=~"$su", rack=~"$rack", rail=~"$rail", node=~"$node"' in e for e in exprs) >= 8
    rules = [{"record": f"panel:{i}", "expr": e.replace("$", "")} for i, e in enumerate(exprs)]
    (tmp_path / "panels.yml").write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]}))
    result = promtool("check", "rules", "panels.yml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_monitoring_files_are_the_same_for_the_same_design(h100: Path, tmp_path: Path) -> None:
    again = written("superpod-h100-1su", tmp_path)
    for path in sorted(h100.rglob("*")):
        if path.is_file():
            assert path.read_bytes() == (again / path.relative_to(h100)).read_bytes(), path.name


def test_job_map_scripts_pass_shellcheck(h100: Path) -> None:
    scripts = sorted(str(p) for p in (h100 / "slurm").glob("*.sh"))
    for script in scripts:
        assert subprocess.run(["bash", "-n", script]).returncode == 0
    if shutil.which("shellcheck"):
        result = subprocess.run(["shellcheck", *scripts], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout
