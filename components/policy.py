"""The design rules as CrossGuard policies: each rule of :data:`gpucluster.analyse.rules.RULES`, run on the
facts the root cluster component carries, so `pulumi preview --policy-pack policy-pack` enforces the
same single definition `gpucluster validate` checks.

A policy has one enforcement level, and one rule can find both errors and warnings (a rack over its
power budget; a rack beyond its cooling), so each rule gives two policies: ``<rule>`` (mandatory)
reports its errors, ``<rule>-advisory`` (advisory) its warnings and advisories.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import cast

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from gpucluster.analyse import rules
from gpucluster.plan.facts import RuleFacts

from .cluster import CLUSTER_TYPE, FACTS_PROP

POLICY_PACK_NAME = "gpu-cluster-design-rules"

# Finding severity -> the policy that reports it.
MANDATORY_SEVERITIES = frozenset({"error"})
ADVISORY_SEVERITIES = frozenset({"warning", "advisory"})
ADVISORY_SUFFIX = "-advisory"


class _Facts(dict):
    """Facts as they arrive through the engine: a None-valued key may have been dropped on the way, and
    a rule reads it as None, as it would from the plan."""

    def __missing__(self, key: str) -> None:
        return None


def facts_from_props(props: Mapping[str, object]) -> RuleFacts | None:
    """The design-rule facts in a cluster's properties, as plain data again: protobuf carries every
    number as a float, so whole numbers become ints (a rule's message reads "3 links", not "3.0")."""
    facts = props.get(FACTS_PROP)
    plain = _plain(facts) if isinstance(facts, Mapping) else None
    # the facts rules.rule_facts built, back from protobuf (a key it left out reads as None)
    return cast(RuleFacts, plain) if isinstance(plain, dict) else None


def _plain(value: object) -> object:
    if isinstance(value, Mapping):
        return _Facts({key: _plain(value[key]) for key in value})
    if isinstance(value, str | bytes):
        return value
    if isinstance(value, Sequence):
        return [_plain(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def validation(
    rule: rules.Rule, severities: frozenset[str]
) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    """A validation callback that runs `rule` on a cluster's facts and reports its findings of `severities`."""

    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if args.resource_type != CLUSTER_TYPE:
            return
        facts = facts_from_props(args.props)
        if facts is None:
            report_violation(f"the cluster has no '{FACTS_PROP}' property to check the design rules on", None)
            return
        for finding in rule.check(facts):
            if finding.severity in severities:
                report_violation(finding.message, None)

    return validate


def policies(rule_list: Sequence[rules.Rule] | None = None) -> list[ResourceValidationPolicy]:
    """Two policies per design rule (default: every rule in :data:`gpucluster.analyse.rules.RULES`, read when
    called, so a rule added there is enforced with no change here)."""
    levels = (
        ("", MANDATORY_SEVERITIES, EnforcementLevel.MANDATORY),
        (ADVISORY_SUFFIX, ADVISORY_SEVERITIES, EnforcementLevel.ADVISORY),
    )
    return [
        ResourceValidationPolicy(
            name=rule.name + suffix,
            description=rule.description,
            validate=validation(rule, severities),
            enforcement_level=level,
        )
        for rule in (rules.RULES if rule_list is None else rule_list)
        for suffix, severities, level in levels
    ]
