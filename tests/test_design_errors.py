"""Bad designs get located errors (file:line:column, field, what is allowed), exit status 2, and no output."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import write_design

from gpucluster import DesignError, load_design, plan_design
from gpucluster.cli import main


def _problems(tmp_path, text: str) -> list[str]:
    path = write_design(tmp_path, text)
    with pytest.raises(DesignError) as caught:
        plan_design(load_design(path))
    return [str(p) for p in caught.value.problems]


def test_unknown_key_is_located_with_did_you_mean(tmp_path):
    [problem] = _problems(tmp_path, "name: x\ncompute:\n  server: dgx-h100\n  servers: 4\n  sparee_servers: 1\n")
    assert "design.yaml:5:3: compute.sparee_servers: unknown field (did you mean 'spare_servers'?)" in problem
    assert "allowed here:" in problem and "gpus" in problem


def test_duplicate_key_is_reported_at_the_second_occurrence(tmp_path):
    [problem] = _problems(tmp_path, "name: x\ncompute:\n  server: dgx-h100\n  server: dgx-h200\n  servers: 4\n")
    assert "design.yaml:4:3: compute.server: duplicate key" in problem


def test_wrong_choice_lists_what_is_allowed(tmp_path):
    [problem] = _problems(tmp_path, "name: x\nsite:\n  cooling: water\ncompute:\n  servers: 4\n")
    assert "design.yaml:3:3: site.cooling: 'water' is not allowed; expected 'air', 'rear-door' or 'liquid'" in problem


def test_wrong_type_names_the_value(tmp_path):
    [problem] = _problems(tmp_path, "name: x\ncompute:\n  servers: lots\n")
    assert "design.yaml:3:3: compute.servers:" in problem and "'lots'" in problem


def test_missing_required_section_points_at_the_document(tmp_path):
    [problem] = _problems(tmp_path, "name: x\n")
    assert "design.yaml:1:1: compute: required field is missing" in problem


def test_unknown_catalog_part_suggests_the_nearest_and_lists_the_catalog(tmp_path):
    [problem] = _problems(tmp_path, "name: x\ncompute:\n  server: dgx-h10\n  servers: 4\n")
    assert (
        "design.yaml:3:3: compute.server: unknown GPU server or rack-scale system 'dgx-h10' (did you mean 'dgx-h100'?)"
        in problem
    )
    assert "dgx-b200" in problem


def test_gpus_that_are_not_whole_servers_suggest_the_nearest_counts(tmp_path):
    [problem] = _problems(tmp_path, "name: x\ncompute:\n  server: dgx-h100\n  gpus: 100\n")
    assert "design.yaml:4:3: compute.gpus:" in problem and "use 96 or 104" in problem


def test_gpus_and_servers_together_are_refused(tmp_path):
    [problem] = _problems(tmp_path, "name: x\ncompute:\n  gpus: 8\n  servers: 1\n")
    assert "compute: " in problem and "not both" in problem


def test_yaml_syntax_error_is_located(tmp_path):
    [problem] = _problems(tmp_path, "name: x\ncompute: [servers: 4\n")
    assert "design.yaml:3:1: YAML syntax" in problem


def test_oversubscription_accepts_a_ratio_and_rejects_nonsense(tmp_path):
    path = write_design(tmp_path, "name: x\ncompute: {servers: 64}\ncompute_fabric: {oversubscription: '2:1'}\n")
    assert load_design(path).design.compute_fabric.oversubscription == 2.0
    [problem] = _problems(tmp_path, "name: x\ncompute: {servers: 4}\ncompute_fabric: {oversubscription: 'a:b'}\n")
    assert "compute_fabric.oversubscription" in problem and "'down:up'" in problem


def test_a_server_too_big_for_the_rack_budget_names_the_budget(tmp_path):
    [problem] = _problems(tmp_path, "name: x\nsite: {rack_power_budget_kw: 8}\ncompute: {servers: 4}\n")
    assert "site.rack_power_budget_kw" in problem and "10.2 kW" in problem


def test_a_feed_no_catalog_pdu_takes_is_reported_at_the_feed(tmp_path):
    text = "name: x\nsite:\n  power_feed: {voltage_v: 480, phases: 3, breaker_a: 100}\ncompute: {servers: 4}\n"
    [problem] = _problems(tmp_path, text)
    assert "design.yaml:3:3: site.power_feed: no PDU in the catalog takes a 480 V 3-phase 100 A feed" in problem


def test_user_catalog_file_that_does_not_exist_is_reported(tmp_path):
    [problem] = _problems(tmp_path, "name: x\ncatalog: [mine.yaml]\ncompute: {servers: 4}\n")
    assert "design.yaml:2:11: catalog.0: no such file" in problem


def test_bad_design_exits_2_prints_every_problem_and_writes_nothing(tmp_path):
    path = write_design(tmp_path, "name: x\ncompute:\n  servres: 4\n  hostname_prefix: GPU\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["build", str(path), "-o", str(out)])
    assert result.exit_code == 2
    assert "compute.servres: unknown field (did you mean 'servers'?)" in result.output
    assert "compute.hostname_prefix" in result.output
    assert "Traceback" not in result.output
    assert not out.exists() or not any(out.iterdir())


def test_missing_design_file_exits_2_without_traceback(tmp_path):
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "nope.yaml: cannot read the design: no such file" in result.output
    assert "Traceback" not in result.output


def test_a_nearly_empty_last_scalable_unit_is_a_warning_with_its_cost(tmp_path):
    path = write_design(
        tmp_path, "name: x\ncompute: {servers: 64, spare_servers: 2}\ncompute_fabric: {fabric_manager: null}\n"
    )
    plan = plan_design(load_design(path))
    [warning] = [f for f in plan.findings if f.rule == "planning"]
    assert warning.severity == "warning"
    assert "scalable unit 3 holds 2 of 32 servers but needs its own 8 leaves" in warning.message


def test_a_design_that_fails_a_design_rule_exits_2_names_the_rule_and_writes_nothing(tmp_path, monkeypatch):
    """The planner keeps most rules by construction, so a rule that fails stands in for one."""
    from gpucluster.analyse import rules
    from gpucluster.plan.model import Finding

    failing = rules.Rule("no-gpus-on-mars", "test rule", lambda facts: [Finding("no-gpus-on-mars", "error", "on Mars")])
    monkeypatch.setattr(rules, "RULES", [*rules.RULES, failing])
    path = write_design(tmp_path, "name: x\ncompute: {servers: 4}\n")
    out = tmp_path / "out"
    for command in (["validate", str(path)], ["build", str(path), "-o", str(out)]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2, result.output
        assert "error: x: rule:no-gpus-on-mars: on Mars" in result.output
        assert not result.output.startswith("ok")
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize(
    "command",
    [
        ["schema", "-o", "{missing}/schema.json"],
        ["size", "--parameters-b", "70", "--tokens-b", "2000", "--days", "30", "-o", "{missing}/new.yaml"],
    ],
)
def test_an_output_file_in_a_missing_folder_exits_2_without_traceback(tmp_path, command):
    missing = tmp_path / "no-such-folder"
    result = CliRunner().invoke(main, [part.replace("{missing}", str(missing)) for part in command])
    assert result.exit_code == 2, result.output
    assert "cannot write" in result.output and "Traceback" not in result.output
