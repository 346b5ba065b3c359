"""Names the design gives to objects of other systems (Slurm's cluster, Kubernetes objects), checked against
those systems' own rules when the design is read, so a build never writes a name the system refuses; the writers
take the names from here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from gpucluster.design.schema import DNS1123_LABEL_RE, SLURM_CLUSTER_NAME_MAX_CHARS, Design
from gpucluster.errors import Problem

# Kubernetes' name rules (k8s.io/apimachinery/pkg/util/validation): a DNS-1123 label (namespaces, most
# built-in objects' names), a DNS-1123 subdomain (custom resources' metadata.name, Kueue's cohortName and
# clusterQueue references) and a label value.
DNS1123_LABEL = re.compile(DNS1123_LABEL_RE)
DNS1123_SUBDOMAIN = re.compile(r"(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_VALUE = re.compile(r"(?=.{0,63}$)([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
NAME_RULES = {
    "label": (
        DNS1123_LABEL,
        "a DNS-1123 label: 1-63 lower-case letters, digits and '-', starting and ending with a letter or digit",
    ),
    "subdomain": (
        DNS1123_SUBDOMAIN,
        "a DNS-1123 subdomain: at most 253 characters of dot-separated labels of "
        "lower-case letters, digits and '-', each starting and ending with a letter or digit",
    ),
    "label value": (
        LABEL_VALUE,
        "a label value: at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit",
    ),
}
# Which rule each generated name follows, by the kind of object (or field) it names.
KIND_RULE = {
    "Namespace": "label",
    "Cohort": "subdomain",
    "ClusterQueue": "subdomain",
    "LocalQueue": "subdomain",
    "ResourceFlavor": "subdomain",
    "node label value": "label value",
}
# Namespaces Kubernetes keeps for itself: kube-system, kube-public, kube-node-lease and any future kube-*;
# default holds whatever is created without a namespace.
RESERVED_NAMESPACE = re.compile(r"kube-.*|default")
DEFAULT_TEAM = "training"  # the one queue of a design without teams


def slurm_cluster_name(design: Design) -> str:
    """Slurm's ClusterName: the one given, else the design name with '_' for '-' (slurmdbd keys its tables by
    cluster name, which takes no hyphens)."""
    given = design.scheduler.slurm.cluster_name
    if given is not None:
        return given
    name = design.name.replace("-", "_")
    return name if name[0].isalpha() else f"c_{name}"


def kubernetes_object_names(design: Design, server_id: str) -> Iterator[tuple[str, str, tuple[str | int, ...]]]:
    """(kind, name, design field it comes from) of every object name the Kubernetes writer generates from the
    design: the cluster's Cohort, the server model's ResourceFlavor and node label, and per team its Namespace,
    ClusterQueue and LocalQueue."""
    yield "Cohort", design.name, ("name",)
    yield "ResourceFlavor", server_id, ("compute", "server")
    yield "node label value", server_id, ("compute", "server")
    teams: list[tuple[str, tuple[str | int, ...]]] = [
        (team.name, ("scheduler", "kubernetes", "teams", i, "name"))
        for i, team in enumerate(design.scheduler.kubernetes.teams)
    ]
    for name, loc in teams or [(DEFAULT_TEAM, ("scheduler", "kubernetes"))]:
        for kind in ("Namespace", "ClusterQueue", "LocalQueue"):
            yield kind, name, loc


Where = Callable[..., tuple[str, int, int]]  # design field path -> (file, line, column)


def name_problems(design: Design, server_id: str, where: Where) -> list[Problem]:
    """Names the design makes for Slurm and Kubernetes that those systems would refuse, located at the field
    they come from."""
    problems = []
    if design.scheduler.kind in ("slurm", "both"):
        cluster = slurm_cluster_name(design)
        if len(cluster) > SLURM_CLUSTER_NAME_MAX_CHARS:
            message = (
                f"gives the Slurm ClusterName {cluster!r} of {len(cluster)} characters; slurmdbd takes at most "
                f"{SLURM_CLUSTER_NAME_MAX_CHARS} (its tables are named <cluster>_assoc_usage_month_table and MySQL "
                "names are at most 64 characters): shorten the name or set scheduler.slurm.cluster_name"
            )
            problems.append(Problem(*where("name"), "name", message))
    if design.scheduler.kind not in ("kubernetes", "both"):
        return problems
    seen: set[tuple[str, str]] = set()
    for kind, name, loc in kubernetes_object_names(design, server_id):
        pattern, rule = NAME_RULES[KIND_RULE[kind]]
        if (kind, name) in seen:
            continue
        seen.add((kind, name))
        field = ".".join(str(part) for part in loc)
        if not pattern.fullmatch(name):
            problems.append(
                Problem(*where(*loc), field, f"gives the Kubernetes {kind} {name[:80]!r}; it must be {rule}")
            )
        elif kind == "Namespace" and RESERVED_NAMESPACE.fullmatch(name):
            message = f"{name!r} is a namespace Kubernetes reserves (kube-*, default); choose another team name"
            problems.append(Problem(*where(*loc), field, message))
    return problems
