"""Generated Kubernetes objects checked against the real upstream definitions in tests/upstream/ (copied from the
projects' release tags; SOURCES.md there): each custom resource against the openAPIV3Schema of the CRD version its
apiVersion names, as the API server would check it on create (defaults applied first; a key the schema does not list
rejected where the schema lists properties, as the server's strict field validation does; every CEL rule
(x-kubernetes-validations) run with the cel-python interpreter, transition rules on oldSelf excepted since a create
has no old object), and Helm values against the chart's own values.yaml."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import celpy
import jsonschema
import yaml

UPSTREAM = Path(__file__).resolve().parent / "upstream"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the CRDs are megabytes of YAML
_SCHEMA_KEYWORDS = (
    "enum",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "required",
    "uniqueItems",
    "multipleOf",
)


@dataclass(frozen=True)
class Crd:
    """One served version of a CustomResourceDefinition, from an upstream file."""

    group: str
    version: str
    kind: str
    served: bool
    deprecated: bool
    schema: dict
    source: str  # the file's "# source:" line


@cache
def crds() -> dict[tuple[str, str], Crd]:
    """(apiVersion, kind) -> the CRD version, for every CRD file under tests/upstream/."""
    found: dict[tuple[str, str], Crd] = {}
    for path in sorted(UPSTREAM.rglob("*.yaml")):
        if "templates" in path.parts:  # Helm templates, not CRDs
            continue
        text = path.read_text(encoding="utf-8")
        for document in yaml.load_all(text, Loader=_LOADER):
            if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
                continue
            spec = document["spec"]
            for version in spec["versions"]:
                key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
                found[key] = Crd(
                    spec["group"],
                    version["name"],
                    spec["names"]["kind"],
                    bool(version.get("served")),
                    bool(version.get("deprecated")),
                    version["schema"]["openAPIV3Schema"],
                    text.splitlines()[0],
                )
    return found


def json_schema(node: dict) -> dict:
    """A Kubernetes structural OpenAPI v3 schema as JSON Schema: int-or-string, nullable, and objects that list
    their properties closed to other keys unless they preserve unknown fields."""
    out: dict = {}
    if node.get("x-kubernetes-int-or-string"):
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    elif "type" in node:
        out["type"] = [node["type"], "null"] if node.get("nullable") else node["type"]
    for keyword in _SCHEMA_KEYWORDS:
        if keyword in node:
            out[keyword] = node[keyword]
    if "properties" in node:
        out["properties"] = {name: json_schema(child) for name, child in node["properties"].items()}
        if not node.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = json_schema(node["additionalProperties"])
    if "items" in node:
        out["items"] = json_schema(node["items"])
    for combinator in ("allOf", "anyOf", "oneOf"):
        if combinator in node:
            out.setdefault("allOf", []).append({combinator: [json_schema(n) for n in node[combinator]]})
    if "not" in node:
        out["not"] = json_schema(node["not"])
    return out


def with_defaults(node: dict, value: object) -> object:
    """The value as the API server stores it: each absent property that has a default gets it (where its parent
    object is present), recursively."""
    value = copy.deepcopy(value)
    _default(node, value)
    return value


def _default(node: dict, value: object) -> None:
    if isinstance(value, dict):
        for name, child in node.get("properties", {}).items():
            if name not in value and "default" in child:
                value[name] = copy.deepcopy(child["default"])
            if name in value:
                _default(child, value[name])
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            for name in value:
                if name not in node.get("properties", {}):
                    _default(extra, value[name])
    elif isinstance(value, list) and "items" in node:
        for item in value:
            _default(node["items"], item)


@dataclass
class CelReport:
    """CEL rules met while walking an object: failures, rules run, and rules not run (with why)."""

    failures: list[str] = field(default_factory=list)
    run: int = 0
    transition: int = 0  # rules on oldSelf: not evaluated on create
    unsupported: list[str] = field(default_factory=list)


def _rules(node: dict, value: object, path: str) -> Iterator[tuple[str, dict, object]]:
    for rule in node.get("x-kubernetes-validations", []):
        yield path, rule, value
    if isinstance(value, dict):
        properties = node.get("properties", {})
        for name, item in value.items():
            if name in properties:
                yield from _rules(properties[name], item, f"{path}.{name}")
            elif isinstance(node.get("additionalProperties"), dict):
                yield from _rules(node["additionalProperties"], item, f"{path}.{name}")
    elif isinstance(value, list) and "items" in node:
        for index, item in enumerate(value):
            yield from _rules(node["items"], item, f"{path}[{index}]")


@cache
def _program(rule: str) -> celpy.Runner:
    environment = celpy.Environment()
    return environment.program(environment.compile(rule))


def run_cel(node: dict, value: object, path: str = "") -> CelReport:
    """Every x-kubernetes-validations rule on the value's path, evaluated with ``self`` bound to its node."""
    report = CelReport()
    for where, rule, item in _rules(node, value, path):
        text = rule["rule"]
        if "oldSelf" in text and not rule.get("optionalOldSelf"):
            report.transition += 1
            continue
        try:
            program = _program(text)
        except Exception as error:  # a rule the interpreter cannot compile (a Kubernetes-only function)
            report.unsupported.append(f"{where}: {text}: {error}")
            continue
        report.run += 1
        try:
            result = program.evaluate({"self": celpy.json_to_cel(item)})
        except celpy.CELEvalError as error:  # the API server rejects an object whose rule errs (a missing key)
            report.failures.append(f"{where}: {rule.get('message') or text} (error: {error.args[0]})")
            continue
        if isinstance(result, celpy.CELEvalError):
            report.failures.append(f"{where}: {rule.get('message') or text} (error: {result.args[0]})")
        elif not bool(result):
            report.failures.append(f"{where}: {rule.get('message') or text}")
    return report


@dataclass(frozen=True)
class Checked:
    """What validating one object found."""

    crd: Crd
    schema_errors: list[str]
    cel: CelReport


def check_custom_resource(document: dict) -> Checked:
    """Validate a custom resource against the upstream CRD version its apiVersion names (KeyError when no upstream
    CRD defines it: the object's kind or version does not exist)."""
    crd = crds()[(document["apiVersion"], document["kind"])]
    stored = with_defaults(crd.schema, document)
    validator = jsonschema.Draft202012Validator(json_schema(crd.schema))
    errors = [f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}" for e in validator.iter_errors(stored)]
    return Checked(crd, errors, run_cel(crd.schema, stored))


@cache
def chart_values(chart: str) -> dict:
    """A chart's values.yaml from tests/upstream/ (chart: 'gpu-operator', 'network-operator' or 'dra-driver-gpu')."""
    (path,) = (UPSTREAM / chart).glob("*.values.yaml")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@cache
def chart_reads(chart: str) -> frozenset[str]:
    """Every ``.Values.a.b.c`` path the chart's templates read: keys a chart documents only in a comment of its
    values.yaml (the GPU Operator's dcgmExporter.config) are still its keys."""
    paths: set[str] = set()
    for template in (UPSTREAM / chart / "templates").iterdir():
        paths |= set(re.findall(r"\.Values\.([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)", template.read_text("utf-8")))
    return frozenset(paths)


def values_problems(values: dict, chart: str) -> list[str]:
    """Keys of generated Helm values that are neither in the chart's values.yaml nor read by its templates, and
    values of another kind than the chart's default (a map where the chart has a scalar, a string where it has a
    boolean). A map that is empty by default ({}) takes any key."""
    return _values_problems(values, chart_values(chart), chart_reads(chart), "")


def _values_problems(values: dict, defaults: dict | None, reads: frozenset[str], path: str) -> list[str]:
    problems = []
    for key, value in values.items():
        where = f"{path}{key}"
        if defaults is None or key not in defaults:
            read = where in reads if not isinstance(value, dict) else any(r.startswith(where + ".") for r in reads)
            if not read:
                problems.append(f"{where}: not a key of the chart's values")
            elif isinstance(value, dict):
                problems += _values_problems(value, None, reads, where + ".")
            continue
        default = defaults[key]
        if isinstance(default, dict):
            if not isinstance(value, dict):
                problems.append(f"{where}: the chart has a map here")
            elif default:
                problems += _values_problems(value, default, reads, where + ".")
        elif isinstance(default, bool) and not isinstance(value, bool):
            problems.append(f"{where}: the chart has a boolean here")
        elif isinstance(default, list) and not isinstance(value, list):
            problems.append(f"{where}: the chart has a list here")
        elif isinstance(value, dict) and default is not None:
            problems.append(f"{where}: the chart has a {type(default).__name__} here")
    return problems


@cache
def webhook_schema(name: str) -> dict:
    """One of the Network Operator admission webhook's JSON schemas for device-plugin configs."""
    (path,) = (UPSTREAM / "network-operator").glob(f"webhook-schemas-*/{name}.json")
    return json.loads(path.read_text(encoding="utf-8"))


# Kueue's PodSet topology annotations (kueue v0.19.2 apis/kueue/v1beta2/topology_types.go), and the rules its job
# webhook and scheduler apply to them: pkg/controller/jobframework/tas_validation.go (ValidateTASPodSetRequest,
# ValidateSliceSizeAnnotationUpperBound) and pkg/cache/scheduler/tas_flavor_snapshot.go (a PodSet's count a whole
# number of slices). Not a CRD schema: Kueue checks annotations in Go, so the rules are restated here.
KUEUE_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
KUEUE_UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
KUEUE_SLICE_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
KUEUE_SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
KUEUE_GROUP = "kueue.x-k8s.io/podset-group-name"


def kueue_podset_problems(annotations: dict[str, str], count: int, levels: list[str]) -> list[str]:
    """What Kueue would refuse in one PodSet's topology annotations (count: its pods; levels: the Topology's)."""
    problems = []
    found = [a for a in (KUEUE_REQUIRED, KUEUE_PREFERRED, KUEUE_UNCONSTRAINED) if a in annotations]
    if len(found) > 1:
        problems.append(f"more than one topology annotation: {found}")
    for key in (KUEUE_REQUIRED, KUEUE_PREFERRED, KUEUE_SLICE_TOPOLOGY):
        if key in annotations and annotations[key] not in levels:
            problems.append(f"{key}: {annotations[key]} is not a level of the Topology {levels}")
    slice_level, size = annotations.get(KUEUE_SLICE_TOPOLOGY), annotations.get(KUEUE_SLICE_SIZE)
    if (slice_level is None) != (size is None):
        problems.append(f"{KUEUE_SLICE_TOPOLOGY} and {KUEUE_SLICE_SIZE} go together")
    if size is not None:
        if not size.isdigit() or int(size) < 1:
            problems.append(f"{KUEUE_SLICE_SIZE}: {size!r} is not a number of at least 1")
        elif int(size) > count or count % int(size):
            problems.append(f"{KUEUE_SLICE_SIZE}: {count} pods are not a whole number of slices of {size}")
    if KUEUE_GROUP in annotations:
        if size is not None or slice_level is not None:
            problems.append(f"{KUEUE_GROUP} may not be set with slices")
        if KUEUE_REQUIRED not in annotations and KUEUE_PREFERRED not in annotations:
            problems.append(f"{KUEUE_GROUP} needs a required or preferred topology")
        if annotations[KUEUE_GROUP].isdigit():
            problems.append(f"{KUEUE_GROUP} must not be a number")
    if slice_level is not None:
        outer = annotations.get(KUEUE_REQUIRED) or annotations.get(KUEUE_PREFERRED)
        if outer in levels and slice_level in levels and levels.index(slice_level) < levels.index(outer):
            problems.append(f"slices at {slice_level} are above the PodSet's level {outer}")
    return problems
