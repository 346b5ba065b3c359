"""The input rules of issue 30's second half, one behaviour per test: YAML 1.1-only forms, invisible
characters, names for Slurm and Kubernetes, name templates and number bounds."""

from __future__ import annotations

import pytest

from gpucluster.design.names import DEFAULT_TEAM, kubernetes_object_names, slurm_cluster_name
from gpucluster.design.schema import Design
from gpucluster.errors import DesignError
from gpucluster.inputs.limits import format_template, invisible_character
from gpucluster.inputs.yamlsource import parse_yaml_with_positions


@pytest.mark.parametrize(
    ("text", "value"),
    [("10", 10), ("-3", -3), ("0", 0), ("0x1F", 31), ("1.5", 1.5), ("1e3", 1000.0), ("true", True), ("FALSE", False)],
)
def test_numbers_and_booleans_yaml_1_2_reads_alike_are_read(text, value):
    data, _ = parse_yaml_with_positions(f"v: {text}\n", "t.yaml")
    assert data["v"] == value and type(data["v"]) is type(value)


@pytest.mark.parametrize(
    "text", ["010", "00", "1:20", "2:1", "190:20:30.15", "0b101", "1_000", "1_0.5", "+0x10", "yes", "No", "on", "OFF"]
)
def test_yaml_1_1_only_numbers_and_booleans_are_refused_with_the_text_as_written(text):
    with pytest.raises(DesignError) as caught:
        parse_yaml_with_positions(f"name: x\nv: {text}\n", "t.yaml")
    problem = caught.value.problems[0]
    assert (problem.line, problem.column, problem.field) == (2, 4, "v")
    assert repr(text) in problem.message and "quote it" in problem.message


@pytest.mark.parametrize("text", ["'010'", '"1:20"', "'yes'"])
def test_quoted_yaml_1_1_forms_are_text(text):
    data, _ = parse_yaml_with_positions(f"v: {text}\n", "t.yaml")
    assert data["v"] == text[1:-1]


@pytest.mark.parametrize(
    "char",
    ["\u202e", "\u2066", "\u2069", "\u200b", "\u200f", "\ufeff", "\u00ad", "\n", "\x85", "\u2028", "\u2029", "\ue000"],
)
def test_invisible_and_bidi_characters_are_found(char):
    assert invisible_character(f"ab{char}c") is not None
    assert invisible_character(f"ab{char}c")[0] == 2  # type: ignore[index]


@pytest.mark.parametrize("text", ["plain", "Müller GmbH", "東京 DC", "1/2 U", "naïve – dash", "emoji 🚀"])
def test_visible_text_of_any_script_is_accepted(text):
    assert invisible_character(text) is None


def test_invisible_character_in_a_nested_list_field_is_refused():
    with pytest.raises(ValueError, match="U\\+200B"):
        Design.model_validate({"name": "x", "compute": {"servers": 4}, "catalog": ["a\u200b.yaml"]})


def test_default_slurm_cluster_name_follows_the_design_name():
    design = Design.model_validate({"name": "9-lab", "compute": {"servers": 4}})
    assert slurm_cluster_name(design) == "c_9_lab"


def test_kubernetes_names_cover_the_default_team_when_none_is_given():
    design = Design.model_validate({"name": "lab", "compute": {"servers": 4}, "scheduler": {"kind": "kubernetes"}})
    kinds = {(kind, name) for kind, name, _ in kubernetes_object_names(design, "dgx-h100")}
    assert ("Cohort", "lab") in kinds and ("ResourceFlavor", "dgx-h100") in kinds
    assert {("Namespace", DEFAULT_TEAM), ("ClusterQueue", DEFAULT_TEAM), ("LocalQueue", DEFAULT_TEAM)} <= kinds


@pytest.mark.parametrize(
    ("template", "samples", "expected"),
    [
        ("CBL-{length_m:d}", {"length_m": 1.5}, "does not fit"),
        ("p{cage:.1d}", {"cage": 1}, "does not fit"),
        ("p{cage.real}", {"cage": 1}, "cannot be substituted"),
        ("p{cage:>999999}", {"cage": 1}, "is not allowed"),
    ],
)
def test_name_templates_that_would_fail_in_a_writer_are_refused(template, samples, expected):
    with pytest.raises(ValueError, match=expected):
        format_template(template, samples)


@pytest.mark.parametrize(
    ("section", "field", "value"),
    [
        ("workload", "mfu", 5e-324),
        ("workload", "target_days", 5e-324),
        ("workload", "global_batch_tokens_m", 5e-324),
        ("workload", "model_parameters_b", 5e-324),
        ("workload", "spare_confidence", 0.9999999999999999),
        ("site", "air_temperature_rise_k", 5e-324),
    ],
)
def test_numbers_whose_arithmetic_would_not_stay_finite_are_refused(section, field, value):
    body = {"model_parameters_b": 70} if section == "workload" else {}
    with pytest.raises(ValueError, match=field):
        Design.model_validate({"name": "x", "compute": {"servers": 4}, section: {**body, field: value}})
