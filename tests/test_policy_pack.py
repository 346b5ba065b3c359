"""The CrossGuard policy pack: every design rule, both ways, on the cluster component's real properties.

A plan's root component is registered with the real SDK against mocks; its properties go to the
policies as the protobuf Struct the engine receives, unpacked the way pulumi_policy's analyzer does.
"""

from __future__ import annotations

import dataclasses
import runpy
from collections.abc import Callable

import pulumi_policy
import pytest
import yaml
from conftest import ROOT, planned
from google.protobuf import json_format
from pulumi.runtime import proto
from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResourceOptions,
    ResourceValidationArgs,
)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.policy import _PolicyAnalyzerServicer
from pulumi_policy.proxy import unknown_checking_proxy

from gpucluster import design_from_model, load_design, plan_design
from gpucluster.analyse import rules
from gpucluster.components import CLUSTER_TYPE, Cluster
from gpucluster.components.offline import Registration, run_offline
from gpucluster.components.policy import (
    ADVISORY_SEVERITIES,
    ADVISORY_SUFFIX,
    MANDATORY_SEVERITIES,
    POLICY_PACK_NAME,
    policies,
)
from gpucluster.design.schema import ComputeFabric, ObjectStorage, PowerFeed, Workload
from gpucluster.plan.model import AnalysedPlan, Finding, Link, Plan

PACK = ROOT / "policy-pack"


def _registrations(plan: Plan) -> list[Registration]:
    return run_offline(lambda: Cluster(plan.name, plan, "rack")).resources


def _root(plan: Plan) -> Registration:
    return next(r for r in _registrations(plan) if r.type == CLUSTER_TYPE)


def _args(registration: Registration) -> ResourceValidationArgs:
    """What pulumi_policy's analyzer hands a resource validation: the Struct as JSON, deserialized and
    wrapped in the unknown-checking proxy."""
    props = unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(registration.struct)))
    options = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], registration.parent)
    return ResourceValidationArgs(registration.type, props, registration.urn, registration.name, options, None)


def _violations(registration: Registration) -> dict[str, list[str]]:
    """Policy name -> the messages its validation reported."""
    reported: dict[str, list[str]] = {}
    for policy in policies():
        messages: list[str] = []
        policy.validate(_args(registration), lambda message, _urn=None, m=messages: m.append(message))
        if messages:
            reported[policy.name] = messages
    return reported


# Violating plans: real designs where the planner can produce the violation, otherwise a real plan
# with the one thing changed that the rule is about (the planner never routes storage onto the compute
# fabric, nor packs a rack past its budget).
def _storage_on_the_compute_fabric() -> Plan:
    _loaded, plan = planned("superpod-h100-1su")
    leaf = "compute-leaf-su01-r1"
    stray = [
        Link("compute", 0, "pfs-01", "p9", leaf, "IB1/30/1", 400.0, purpose="storage"),
        Link("storage", 0, "gpu001", "p9", leaf, "IB1/31/1", 400.0, purpose="storage"),
    ]
    return _rules_again(plan, links=[*plan.links, *stray])


def _rules_again(plan: AnalysedPlan, **physical: object) -> AnalysedPlan:
    """A real plan with some of its physical content changed and the design rules run again on it; its other
    analyses are kept (the graph analysis expects what the planner makes, and the rules are what is tested)."""
    changed = dataclasses.replace(plan, **physical)
    facts = rules.rule_facts(changed, plan.checkpoint, plan.burn_in)
    return dataclasses.replace(changed, facts=facts, findings=[*plan.planner_findings, *rules.rule_findings(facts)])


def _first_compute_rack(plan: Plan) -> str:
    return next(name for name, rack in plan.racks.items() if rack.purpose == "compute")


def _rack_short_of_circuits() -> Plan:
    _loaded, plan = planned("superpod-h100-1su")
    racks = dict(plan.racks)
    name = _first_compute_rack(plan)
    racks[name] = dataclasses.replace(racks[name], pdus=racks[name].pdus[:2])  # N+1 on two PDUs: one carries 41 kW
    return _rules_again(plan, racks=racks)


def _rack_over_its_power_budget() -> Plan:
    _loaded, plan = planned("superpod-h100-1su")
    racks = dict(plan.racks)
    name = _first_compute_rack(plan)  # three PDUs, two carry 69 kW: over the budget, not the circuits
    racks[name] = dataclasses.replace(racks[name], power_max_w=50_000.0)  # budget 45 kW, rear-door cooling 60 kW
    return _rules_again(plan, racks=racks)


def _with(name: str, **sections: object) -> Plan:
    loaded, _plan = planned(name)
    return plan_design(design_from_model(loaded.design.model_copy(update=sections)))


def _oversubscribed_fabric() -> Plan:
    return _with("superpod-h100-1su", compute_fabric=ComputeFabric(oversubscription=2.0))


def _air_cooled_dgx_racks() -> Plan:
    loaded, _plan = planned("superpod-h100-1su")
    # four per rack, as the architect sets it: 41 kW on 30 kW of air cooling
    site = loaded.design.site.model_copy(update={"cooling": "air", "servers_per_rack": 4})
    return _with("superpod-h100-1su", site=site)


def _no_spares() -> Plan:
    return planned("lab-4-servers")[1]


def _fibre_ordered_at_30_m_for_a_short_run() -> Plan:
    """A compute fibre ordered at 30 m, as the XDR fibres of runs of a few metres were when the catalog knew only
    3, 30 and 50 m of MFP7E30."""
    plan = _with("superpod-h100-1su")
    index = next(i for i, c in enumerate(plan.cables) if c.network == "compute" and c.run_length_m < 10)
    plan.cables[index] = dataclasses.replace(plan.cables[index], length_m=30.0)
    return _with_facts(plan, overlong_cables=rules.overlong_cables(plan))


def _ndr_ufm_on_an_xdr_fabric() -> Plan:
    """The NDR UFM appliance (ConnectX-7) on Q3400-RA ports, given the XDR modules the fabric cables with."""
    loaded, _plan = planned("b300-xdr-1su")
    fabric = loaded.design.compute_fabric.model_copy(update={"fabric_manager": "ufm-enterprise-ndr"})
    return _with("b300-xdr-1su", compute_fabric=fabric)


def _dgx_on_2n_feeds() -> Plan:
    """DGX PSUs split 3 + 3 over A/B feeds: 3 carry less than the maximum, so a feed loss power-caps them (the RA's
    N+1, 2-2-2 over three PDUs, does not)."""
    loaded, _plan = planned("superpod-h100-1su")
    site = loaded.design.site.model_copy(update={"power_feed": PowerFeed(redundancy="2N")})
    return _with("superpod-h100-1su", site=site)


def _with_facts(plan: Plan, **facts: object) -> Plan:
    """A real plan with some of its facts as another stage might have made them (the burn-in plan,
    the checkpoint figures), and the rule findings of those facts."""
    changed = {**plan.facts, **facts}
    return dataclasses.replace(plan, facts=changed, findings=[*plan.planner_findings, *rules.rule_findings(changed)])


def _checkpoint_longer_than_its_interval() -> Plan:
    plan = _with("superpod-h100-1su", workload=Workload(model_parameters_b=1000, checkpoint_interval_minutes=60))
    checkpoint = {**plan.facts["checkpoint"], "interval_seconds": 120.0}  # the 14 TB take 3.6 min to write
    return _with_facts(plan, checkpoint=checkpoint)


def _checkpoint_stalls_the_gpus() -> Plan:
    return _with("superpod-h100-1su", workload=Workload(model_parameters_b=405, checkpoint_interval_minutes=20))


def _405b_on_512_gpus_in_90_days() -> Plan:
    """The brief of issue 21: 405B on 512 H200 needs over 2,000 days, not 90."""
    return plan_design(load_design(ROOT / "tests" / "designs" / "brief-h200-512.yaml"))


def _70b_just_inside_its_target() -> Plan:
    """25.4 days on the 4-SU SuperPOD against a 27-day target: no room for a slip."""
    return _with(
        "superpod-h200-4su",
        workload=Workload(
            model_parameters_b=70, training_tokens_b=2000, target_days=27, checkpoint_interval_minutes=60
        ),
    )


def _dataset_larger_than_the_filesystem() -> Plan:
    return _with("superpod-h100-1su", workload=Workload(model_parameters_b=8, training_tokens_b=300, dataset_tb=5000))


def _object_storage_at_half_speed() -> Plan:
    """VAST S3 blocks (the brief's): 200G ports on 100G SN4600C in-band leaves, chosen by hand (by default their
    200G ports take SN5600 in-band leaves)."""
    loaded, _plan = planned("superpod-h100-1su")
    return _with(
        "superpod-h100-1su",
        object_storage=ObjectStorage(block="vast-ceres-df3060-2cnode-s3", capacity_tb=1000),
        management=loaded.design.management.model_copy(update={"inband_switch": "sn4600c"}),
    )


def _externally_managed_switches_without_ufm() -> Plan:
    return _with("superpod-h100-1su", compute_fabric=ComputeFabric(switch="qm9790", fabric_manager=None))


def _one_spare_for_127_servers() -> Plan:
    loaded, _plan = planned("superpod-h200-4su")
    return _with("superpod-h200-4su", compute=loaded.design.compute.model_copy(update={"spare_servers": 1}))


def _burn_in_missing_a_server() -> Plan:
    _loaded, plan = planned("superpod-h100-1su")
    burn_in = plan.facts["burn_in_plan"]
    return _with_facts(plan, burn_in_plan={**burn_in, "servers_covered": burn_in["servers_covered"] - 1})


def _no_burn_in_plan() -> Plan:
    return _with_facts(planned("superpod-h100-1su")[1], burn_in_plan=None)  # None does not survive the engine


def _reference_superpod_on_n_feeds() -> Plan:
    """The 4-SU SuperPOD, its racks fed N (no A/B split to lose) and without its object store: every rule passes."""
    loaded, _plan = planned("superpod-h200-4su")
    site = loaded.design.site
    return _with(
        "superpod-h200-4su",
        site=site.model_copy(update={"power_feed": site.power_feed.model_copy(update={"redundancy": "N"})}),
        object_storage=None,
    )


def _nvl72_on_an_air_cooled_site() -> Plan:
    loaded, _plan = planned("gb200-nvl72-1su")
    return _with("gb200-nvl72-1su", site=loaded.design.site.model_copy(update={"cooling": "air"}))


def _gb300_peaks_over_its_redundant_shelves() -> Plan:
    """GB300 NVL72 at NVIDIA's 'up to 142 kW': above the 132 kW its 8 x 33 kW shelves give with N+N."""
    loaded, _plan = planned("gb200-nvl72-1su")
    return _with("gb200-nvl72-1su", compute=loaded.design.compute.model_copy(update={"server": "gb300-nvl72"}))


def _nvl72_on_an_8_kpa_floor() -> Plan:
    """1,360 kg NVL72 racks on 600 x 2,400 mm floor cells load the floor with 9.3 kPa."""
    loaded, _plan = planned("gb200-nvl72-1su")
    return _with("gb200-nvl72-1su", site=loaded.design.site.model_copy(update={"floor_load_kpa": 8.0}))


VIOLATIONS: list[tuple[str, str, Callable[[], Plan]]] = [
    ("floor-loading", "error", _nvl72_on_an_8_kpa_floor),
    ("rack-system-power-and-cooling", "error", _nvl72_on_an_air_cooled_site),
    ("rack-system-power-and-cooling", "warning", _gb300_peaks_over_its_redundant_shelves),
    ("compute-fabric-gpu-only", "error", _storage_on_the_compute_fabric),
    ("compute-fabric-non-blocking", "advisory", _oversubscribed_fabric),
    ("rack-power-and-cooling", "error", _rack_over_its_power_budget),
    ("rack-power-and-cooling", "warning", _air_cooled_dgx_racks),
    ("rack-power-distribution", "error", _rack_short_of_circuits),
    ("rack-power-distribution", "advisory", _dgx_on_2n_feeds),
    ("workload-fits-plan", "error", _405b_on_512_gpus_in_90_days),
    ("workload-fits-plan", "warning", _70b_just_inside_its_target),
    ("workload-fits-plan", "error", _dataset_larger_than_the_filesystem),
    ("host-ports-at-full-speed", "warning", _object_storage_at_half_speed),
    ("cables-near-their-run", "warning", _fibre_ordered_at_30_m_for_a_short_run),
    ("link-ends-compatible", "error", _ndr_ufm_on_an_xdr_fabric),
    ("subnet-manager-present", "error", _externally_managed_switches_without_ufm),
    ("checkpoint-write-time", "error", _checkpoint_longer_than_its_interval),
    ("checkpoint-write-time", "warning", _checkpoint_stalls_the_gpus),
    ("spares-cover-repairs", "advisory", _one_spare_for_127_servers),
    ("burn-in-plan-present", "error", _burn_in_missing_a_server),
    ("burn-in-plan-present", "warning", _no_burn_in_plan),
    ("spare-servers", "warning", _no_spares),
]


def test_every_design_rule_has_a_violating_case_here() -> None:
    assert {rule for rule, _severity, _plan in VIOLATIONS} == {r.name for r in rules.RULES}


@pytest.fixture(scope="module")
def passing_violations() -> dict[str, list[str]]:
    plan = _reference_superpod_on_n_feeds()
    assert all(f.severity == "ok" for f in plan.findings if f.rule.startswith(rules.RULE_PREFIX))
    return _violations(_root(plan))


@pytest.mark.parametrize("rule", [r.name for r in rules.RULES])
def test_every_rule_passes_on_the_reference_superpod(rule: str, passing_violations: dict[str, list[str]]) -> None:
    assert rule not in passing_violations and rule + ADVISORY_SUFFIX not in passing_violations


@pytest.mark.slow
@pytest.mark.parametrize(("rule", "severity", "make_plan"), VIOLATIONS, ids=[f"{r}-{s}" for r, s, _p in VIOLATIONS])
def test_each_rule_reports_its_violation_under_the_policy_of_its_severity(
    rule: str, severity: str, make_plan: Callable[[], Plan]
) -> None:
    plan = make_plan()
    reported = _violations(_root(plan))
    policy, severities = (
        (rule, MANDATORY_SEVERITIES) if severity == "error" else (rule + ADVISORY_SUFFIX, ADVISORY_SEVERITIES)
    )
    findings = [f for f in plan.findings if f.rule == rules.RULE_PREFIX + rule]
    assert severity in {f.severity for f in findings}, "the plan must violate the rule"
    expected = [f.message for f in findings if f.severity in severities]
    assert reported[policy] == expected  # the same words `gpucluster validate` prints
    assert set(reported) <= {policy, *(r.name + ADVISORY_SUFFIX for r in rules.RULES)}


def test_the_analyzer_sends_errors_as_mandatory_and_warnings_as_advisory() -> None:
    """Through pulumi_policy's own analyzer service, as `pulumi preview --policy-pack` calls it."""
    analyzer = _PolicyAnalyzerServicer(POLICY_PACK_NAME, "0.1.0", policies(), EnforcementLevel.ADVISORY)

    def analyze(registration: Registration) -> set[tuple[str, int]]:
        request = proto.AnalyzeRequest(
            type=registration.type, properties=registration.struct, urn=registration.urn, name=registration.name
        )
        return {(d.policyName, d.enforcementLevel) for d in analyzer.Analyze(request, None).diagnostics}

    def expected(plan: Plan) -> set[tuple[str, int]]:
        findings = [f for f in plan.findings if f.rule.startswith(rules.RULE_PREFIX) and f.severity != "ok"]
        return {
            (f.rule.removeprefix(rules.RULE_PREFIX), proto.MANDATORY)
            if f.severity == "error"
            else (f.rule.removeprefix(rules.RULE_PREFIX) + ADVISORY_SUFFIX, proto.ADVISORY)
            for f in findings
        }

    over_budget = _rack_over_its_power_budget()
    registrations = _registrations(over_budget)
    diagnostics = analyze(next(r for r in registrations if r.type == CLUSTER_TYPE))
    assert ("rack-power-and-cooling", proto.MANDATORY) in diagnostics
    assert diagnostics == expected(over_budget)
    assert all(not analyze(r) for r in registrations if r.type != CLUSTER_TYPE)
    air_cooled = _air_cooled_dgx_racks()
    diagnostics = analyze(_root(air_cooled))
    assert ("rack-power-and-cooling-advisory", proto.ADVISORY) in diagnostics
    assert diagnostics == expected(air_cooled)


def test_a_rule_added_to_rules_is_enforced_with_no_change_to_the_pack(monkeypatch: pytest.MonkeyPatch) -> None:
    def spares_for_a_long_run(facts: dict) -> list[Finding]:
        return [Finding("long-run-spares", "error", f"only {facts['spare_servers']} spare servers for a long run")]

    new_rule = rules.Rule("long-run-spares", "Spares for a long run.", spares_for_a_long_run)
    monkeypatch.setattr(rules, "RULES", [*rules.RULES, new_rule])
    names = [p.name for p in policies()]
    assert names[-2:] == ["long-run-spares", "long-run-spares" + ADVISORY_SUFFIX]
    _loaded, plan = planned("superpod-h100-1su")
    assert _violations(_root(plan))["long-run-spares"] == ["only 1 spare servers for a long run"]


def test_policy_pack_program_builds_the_pack_from_the_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    built: dict[str, object] = {}
    monkeypatch.setattr(pulumi_policy, "PolicyPack", lambda **kwargs: built.update(kwargs))
    runpy.run_path(str(PACK / "__main__.py"), run_name="__main__")
    assert built["name"] == POLICY_PACK_NAME
    assert [p.name for p in built["policies"]] == [p.name for p in policies()]  # type: ignore[attr-defined]
    levels = {p.name: p.enforcement_level for p in built["policies"]}  # type: ignore[attr-defined]
    assert levels["rack-power-and-cooling"] == EnforcementLevel.MANDATORY
    assert levels["rack-power-and-cooling" + ADVISORY_SUFFIX] == EnforcementLevel.ADVISORY


def test_policy_pack_project_runs_python_in_the_projects_virtualenv() -> None:
    project = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())
    assert project["runtime"]["name"] == "python" and project["version"]
    assert (PACK / project["runtime"]["options"]["virtualenv"]).resolve() == ROOT / ".venv"
    assert "-e .." in (PACK / "requirements.txt").read_text().splitlines()
