"""What the schedulers see of the plan: which GPU servers each scheduler runs, the compute fabric as a
scheduler's switch tree, and the NVLink domains. Slurm's and Kubernetes' configs (and anything else that
places jobs) read these, so both sides agree on one view of the fabric.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import networkx as nx

from gpucluster.catalog.schema import GpuServer
from gpucluster.design.load import LoadedDesign
from gpucluster.design.schema import SlurmPartition
from gpucluster.errors import DesignError, Problem
from gpucluster.plan.analysis import graphs
from gpucluster.plan.memo import per_plan
from gpucluster.plan.model import Plan
from gpucluster.plan.registry import is_gpu_node

# Slurm releases that brought what the configs use (NVIDIA/SchedMD blog "Achieving peak system and workload
# efficiency on GB200 NVL72 with Slurm block scheduling", 2026-05-07: topology/block in 23.11, topology.yaml
# in 25.05).
SLURM_BLOCK_TOPOLOGY = (23, 11)
SLURM_TOPOLOGY_YAML = (25, 5)


@dataclass(frozen=True)
class SchedulerSplit:
    """The GPU servers each scheduler runs, in plan order."""

    slurm: tuple[str, ...]
    kubernetes: tuple[str, ...]


@dataclass(frozen=True)
class FabricSwitch:
    """One switch of the scheduler's view of the compute fabric.

    A leaf is the group of the plan's leaves that serve the same servers (in a rail-optimized fabric, the
    rail leaves of a scalable unit): a scheduler's tree has one leaf per server, and the servers under one
    such group reach each other through a single switch hop on every rail. Switches above the leaves keep
    their plan names.
    """

    name: str
    tier: int  # 1 = leaf, 2 = spine, ...
    nodes: tuple[str, ...] = ()  # leaves: the servers under it
    children: tuple[str, ...] = ()  # upper tiers: the switches under it
    members: tuple[str, ...] = ()  # the plan's switches it stands for


@dataclass(frozen=True)
class FabricTree:
    """The compute fabric restricted to some servers: switches bottom-up, and each server's path up the
    tiers as (tier name -> group name), the values of the Kubernetes topology labels."""

    switches: tuple[FabricSwitch, ...]
    tier_names: dict[int, str]  # 1 -> "leaf", 2 -> "spine", ...
    paths: dict[str, dict[str, str]]


def scheduler_split(plan: Plan) -> SchedulerSplit:
    """Kubernetes takes ``kubernetes_servers`` production servers on as few scalable units as it can, whole
    units where the count allows (:func:`kubernetes_units`), so each side's jobs stay under their own leaves;
    each hot spare stays with the side that runs most of its scalable unit's production servers, so a spare
    replaces a server of its own fabric neighbourhood."""
    scheduler = plan.design.scheduler
    servers = plan.gpu_nodes()
    names = [d.name for d in servers]
    if scheduler.kind == "slurm":
        return SchedulerSplit(tuple(names), ())
    if scheduler.kind == "kubernetes":
        return SchedulerSplit((), tuple(names))
    production = [d for d in servers if not d.spare]
    by_su: dict[int, list[str]] = defaultdict(list)
    for device in production:
        by_su[device.su or 1].append(device.name)
    kubernetes = set(kubernetes_units(by_su, scheduler.kubernetes_servers or 0))
    for spare in (d for d in servers if d.spare):
        unit = [d for d in production if d.su == spare.su]
        if unit and sum(d.name in kubernetes for d in unit) * 2 > len(unit):
            kubernetes.add(spare.name)
    return SchedulerSplit(tuple(n for n in names if n not in kubernetes), tuple(n for n in names if n in kubernetes))


def kubernetes_units(by_su: dict[int, list[str]], count: int) -> list[str]:
    """``count`` servers on the fewest scalable units: a count one unit holds comes from that unit alone (one
    it fills exactly, else the last that holds it); a larger count takes whole units, largest first, and the
    rest from the one unit that holds it with the fewest servers left over. Servers are taken from the end of
    a unit, so Slurm keeps the first servers of a shared unit."""
    order = sorted(by_su, reverse=True)  # later units first: Slurm keeps SU 1 with the fabric managers

    def tail(su: int, n: int) -> list[str]:
        return by_su[su][len(by_su[su]) - n :] if n else []

    holding = [su for su in order if len(by_su[su]) >= count]
    if holding:
        best = min(holding, key=lambda su: (len(by_su[su]) != count, order.index(su)))
        return tail(best, count)
    taken: list[str] = []
    left = count
    for su in sorted(order, key=lambda su: (-len(by_su[su]), order.index(su))):
        if len(by_su[su]) <= left:
            taken += by_su[su]
            left -= len(by_su[su])
        if left == 0:
            return taken
    rest = [su for su in order if by_su[su][0] not in taken and len(by_su[su]) >= left]
    if rest:
        best = min(rest, key=lambda su: (len(by_su[su]) - left, order.index(su)))
        return taken + tail(best, left)
    for su in order:  # no unit holds the rest: take from the end of each unit not yet taken
        if by_su[su][0] in taken:
            continue
        part = tail(su, min(left, len(by_su[su])))
        taken += part
        left -= len(part)
        if left == 0:
            break
    return taken


@dataclass(frozen=True)
class Queue:
    """A Slurm partition or a Kueue ClusterQueue, as the review reads it."""

    name: str
    what: str  # its servers (a partition) or its quota (a team's ClusterQueue)


@dataclass(frozen=True)
class SchedulerSide:
    """The servers one scheduler runs and where they sit on the compute fabric."""

    scheduler: str  # "Slurm" or "Kubernetes"
    servers: tuple[str, ...]
    production: int
    spares: int
    gpus: int  # production GPUs
    units: tuple[int, ...]  # scalable units it has servers on
    leaf_groups: tuple[str, ...]  # the scheduler's leaves (plan leaves serving the same servers, merged)
    largest_group: int  # most of its servers under one leaf group: a job that size needs no spine
    queues: tuple[Queue, ...]


def slurm_partitions(plan: Plan, servers: tuple[str, ...] | list[str]) -> dict[str, list[str]]:
    """Slurm's partitions: the design's (``scheduler.slurm.partitions``) or else ``gpu`` (every production
    server), then ``spares`` (hot spares) and ``burnin`` (all)."""
    production = [n for n in servers if not plan.devices[n].spare]
    spares = [n for n in servers if plan.devices[n].spare]
    stated = plan.design.scheduler.slurm.partitions
    first = {p.name: nodes for p, nodes in zip(stated, _stated_nodes(stated, production), strict=True)} or {
        "gpu": production
    }
    return {**first, "spares": spares, "burnin": list(servers)}


def default_partition(partitions: Sequence[SlurmPartition]) -> str:
    """The partition jobs go to when they name none: the one marked default, else the first (``gpu`` when the
    design states none)."""
    return next((p.name for p in partitions if p.default), partitions[0].name if partitions else "gpu")


def _stated_nodes(partitions: Sequence[SlurmPartition], production: list[str]) -> list[list[str]]:
    """Each stated partition's servers: a count takes the next servers in plan order (partitions with counts
    share none), 'all' every production server, a list its names."""
    taken = 0
    nodes = []
    for partition in partitions:
        if partition.node_list is not None:
            nodes.append(list(partition.node_list))
        elif partition.nodes == "all":
            nodes.append(list(production))
        else:
            count = int(partition.nodes or 0)
            nodes.append(production[taken : taken + count])
            taken += count
    return nodes


def check_slurm_partitions(loaded: LoadedDesign, plan: Plan) -> None:
    """The stated partitions fit the servers Slurm runs: counts (together) within its production servers, names
    among them. A located error for each that does not."""
    partitions = loaded.design.scheduler.slurm.partitions
    if not partitions:
        return
    servers = scheduler_split(plan).slurm
    production = [n for n in servers if not plan.devices[n].spare]
    known = set(production)
    problems = []
    taken = 0
    for index, partition in enumerate(partitions):
        loc: tuple[str | int, ...] = ("scheduler", "slurm", "partitions", index)
        if isinstance(partition.nodes, int):
            taken += partition.nodes
            if taken > len(production):
                before = taken - partition.nodes
                message = (
                    f"partition {partition.name!r} asks for {partition.nodes} servers; Slurm runs {len(production)} "
                    "production servers"
                    + (f" and the partitions before it take {before}" if before else "")
                    + " (partitions with counts take disjoint servers; use 'all' or node_list for shared ones)"
                )
                problems.append(Problem(*loaded.where(*loc, "nodes"), _dotted((*loc, "nodes")), message))
        for position, name in enumerate(partition.node_list or []):
            if name not in known:
                where = (*loc, "node_list", position)
                hint = "a hot spare (partition spares)" if name in servers else "not a production server Slurm runs"
                example = f" ({_hostlist_text(production)})" if production else ""
                problems.append(Problem(*loaded.where(*where), _dotted(where), f"{name!r} is {hint}{example}"))
    if problems:
        raise DesignError(problems)


def _dotted(loc: tuple[str | int, ...]) -> str:
    return ".".join(str(part) for part in loc)


def _hostlist_text(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"


def scheduler_sides(plan: Plan) -> list[SchedulerSide]:
    """Each scheduler's servers, partitions or team queues, and their scalable units and leaf groups."""
    split = scheduler_split(plan)
    scheduler = plan.design.scheduler
    gpus_per_server = int(plan.settings.gpus_per_server)
    sides = []
    for name, servers in (("Slurm", split.slurm), ("Kubernetes", split.kubernetes)):
        if not servers:
            continue
        production = [n for n in servers if not plan.devices[n].spare]
        gpus = len(production) * gpus_per_server
        tree = fabric_tree(plan, servers)
        leaves = [s for s in tree.switches if s.tier == 1]
        if name == "Slurm":
            default = default_partition(scheduler.slurm.partitions)
            queues = tuple(
                Queue(partition, f"{len(nodes)} servers" + (", the default" if partition == default else ""))
                for partition, nodes in slurm_partitions(plan, servers).items()
                if nodes
            )
        else:
            teams = list(scheduler.kubernetes.teams)
            queues = tuple(
                Queue(
                    team.name,
                    f"{team.gpus} GPUs guaranteed ({team.gpus / gpus_per_server:g} servers)"
                    + (f", borrows up to {team.borrowing_limit_gpus}" if team.borrowing_limit_gpus is not None else "")
                    + (f", lends up to {team.lending_limit_gpus}" if team.lending_limit_gpus is not None else ""),
                )
                for team in teams
            )
            unassigned = gpus - sum(team.gpus for team in teams)
            if not teams:
                queues = (Queue("one ClusterQueue", f"all {gpus} GPUs (scheduler.kubernetes.teams sets team quotas)"),)
            elif unassigned:
                queues += (Queue("unassigned", f"{unassigned} GPUs no team is guaranteed, borrowed in the cohort"),)
        sides.append(
            SchedulerSide(
                scheduler=name,
                servers=tuple(servers),
                production=len(production),
                spares=len(servers) - len(production),
                gpus=gpus,
                units=tuple(sorted({plan.devices[n].su or 1 for n in servers})),
                leaf_groups=tuple(s.name for s in leaves),
                largest_group=max((len(s.nodes) for s in leaves), default=0),
                queues=queues,
            )
        )
    return sides


@dataclass(frozen=True)
class _Fabric:
    """The compute fabric as every scheduler view reads it, whichever servers it schedules: each leaf's GPU nodes, the
    merged leaf groups, and per upper tier the switches with what is below each (plan switches, or leaf groups)."""

    tier_names: dict[int, str]
    leaf_nodes: dict[str, set[str]]
    groups: list[tuple[str, list[str]]]
    below: dict[int, dict[str, set[str]]]  # tier -> upper switch -> the leaf groups and switches right below it


@per_plan
def _fabric(plan: Plan) -> _Fabric:
    """The plan's _Fabric, made once per plan (memo.per_plan): Slurm, Kubernetes, NCCL, the summary and the report
    each read it, and at 131,072 GPUs it is a pass over half a million edges."""
    parents: dict[str, set[str]] = defaultdict(set)
    leaf_nodes: dict[str, set[str]] = defaultdict(set)
    graph = graphs(plan)["compute"]  # the fabric's topology: one edge per pair of devices, with its link tier
    role = nx.get_node_attributes(graph, "role")
    switch_tier = nx.get_node_attributes(graph, "tier")
    edges: Iterable[tuple[str, str, int | None]] = graph.edges(data="tier")
    for a, b, tier in edges:
        if tier == 0:
            host, leaf = (a, b) if role[b] == "switch" else (b, a)
            if is_gpu_node(role[host]):
                leaf_nodes[leaf].add(host)
        else:
            lower, upper = (a, b) if (switch_tier[a] or 0) < (switch_tier[b] or 0) else (b, a)
            parents[lower].add(upper)
    groups = _leaf_groups(plan, leaf_nodes)
    group_of = {member: name for name, members in groups for member in members}  # plan leaf -> its group
    below: dict[int, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for child, ups in parents.items():
        name = group_of.get(child, child)
        for up in ups:
            below[plan.devices[up].tier or 0][up].add(name)
    return _Fabric(
        {t.tier: t.name for t in plan.tiers if t.network == "compute"},
        dict(leaf_nodes),
        groups,
        {tier: dict(ups) for tier, ups in below.items()},
    )


def fabric_tree(plan: Plan, servers: tuple[str, ...] | list[str]) -> FabricTree:
    """The compute fabric above ``servers``: merged leaf groups with their servers, the plan's upper switches
    with the groups or switches under them, and each server's group per tier (for topology labels)."""
    wanted = set(servers)
    fabric = _fabric(plan)
    tier_names, leaf_nodes = fabric.tier_names, fabric.leaf_nodes

    switches: list[FabricSwitch] = []
    for name, members in fabric.groups:
        nodes = sorted(set().union(*(leaf_nodes[m] for m in members)) & wanted)
        if nodes:
            switches.append(FabricSwitch(name, 1, nodes=tuple(nodes), members=tuple(members)))
    present = {s.name for s in switches}
    top = max(tier_names, default=1)
    for tier in range(2, top + 1):
        children = {up: names & present for up, names in fabric.below.get(tier, {}).items()}
        for name in sorted(up for up, names in children.items() if names):
            switches.append(FabricSwitch(name, tier, children=tuple(sorted(children[name])), members=(name,)))
            present.add(name)

    paths: dict[str, dict[str, str]] = {}
    up_of: dict[str, set[str]] = defaultdict(set)
    for switch in switches:
        for child in switch.children:
            up_of[child].add(switch.name)
    names_by_set: dict[int, dict[frozenset[str], str]] = defaultdict(dict)
    for switch in (s for s in switches if s.tier == 1):
        level = {switch.name}
        for node in switch.nodes:
            paths.setdefault(node, {})[tier_names.get(1, "leaf")] = switch.name
        for tier in range(2, top + 1):
            level = set().union(*(up_of[s] for s in level)) if level else set()
            if not level:
                break
            key = frozenset(level)
            label = names_by_set[tier].get(key) or _group_name(plan, tier_names.get(tier, f"tier{tier}"), key, tier)
            names_by_set[tier][key] = label
            for node in switch.nodes:
                paths[node][tier_names.get(tier, f"tier{tier}")] = label
    return FabricTree(tuple(switches), tier_names, paths)


def _leaf_groups(plan: Plan, leaf_nodes: dict[str, set[str]]) -> list[tuple[str, list[str]]]:
    """Leaves that share servers, merged (union-find), each group named for its scalable unit: a single
    leaf keeps its own name."""
    parent = {leaf: leaf for leaf in leaf_nodes}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    first_leaf: dict[str, str] = {}
    for leaf in sorted(leaf_nodes):
        for node in leaf_nodes[leaf]:
            if node in first_leaf:
                parent[find(leaf)] = find(first_leaf[node])
            else:
                first_leaf[node] = leaf
    components: dict[str, list[str]] = defaultdict(list)
    for leaf in sorted(leaf_nodes):
        components[find(leaf)].append(leaf)
    order = {name: i for i, name in enumerate(plan.devices)}  # plan order, once (not once per group)
    ordered = sorted(components.values(), key=lambda members: min(_server_order(order, leaf_nodes, members)))
    per_su: dict[int | None, int] = defaultdict(int)
    for members in ordered:
        per_su[_common(plan, members, "su")] += 1
    seen: dict[int | None, int] = defaultdict(int)
    named = []
    for members in ordered:
        su = _common(plan, members, "su")
        seen[su] += 1
        if len(members) == 1:
            name = members[0]
        elif su is not None:
            name = f"compute-leaf-su{su:02d}" + (f"-{seen[su]}" if per_su[su] > 1 else "")
        else:
            name = f"compute-leaf-group{seen[su]:02d}"
        named.append((name, members))
    return named


def _server_order(order: dict[str, int], leaf_nodes: dict[str, set[str]], members: list[str]) -> list[int]:
    return [order[n] for m in members for n in leaf_nodes[m]] or [0]


def _common(plan: Plan, switches: list[str] | frozenset[str], attribute: str) -> int | None:
    values = {getattr(plan.devices[s], attribute) for s in switches}
    return values.pop() if len(values) == 1 else None


def _group_name(plan: Plan, tier_name: str, switches: frozenset[str], tier: int) -> str:
    """A label value for the set of switches above a leaf group at one tier: the switch itself, the pod it
    serves, or the whole tier."""
    if len(switches) == 1:
        return next(iter(switches))
    pod = _common(plan, switches, "pod")
    if pod is not None:
        return f"compute-{tier_name}-pod{pod:02d}"
    whole = {d.name for d in plan.switches("compute", tier)}
    if switches == whole:
        return f"compute-{tier_name}-all"
    return f"{min(switches)}-group"


def nvlink_domains(plan: Plan, servers: tuple[str, ...] | list[str]) -> list[tuple[str, ...]]:
    """Servers that share one NVLink domain (Device.nvlink_domain, set by the planner), in plan order.
    Empty when every server is its own NVLink domain (HGX 8-GPU boards)."""
    domains: dict[str, list[str]] = defaultdict(list)
    for name in servers:
        domain = plan.devices[name].nvlink_domain
        if domain is not None:
            domains[domain].append(name)
    return [tuple(members) for members in domains.values()]


def domain_servers(server: GpuServer) -> int:
    """Servers (trays) one NVLink domain spans: 1 for an HGX board, 18 for an NVL72 rack's compute trays."""
    return max(1, server.gpu.nvlink_domain_gpus // server.gpu.count)


# A job's segment leaves this many servers of each NVLink domain free: NVIDIA recommends --segment=16 on NVL72
# (18 trays) for large jobs, so a domain still takes a segment with two trays down
# (NVIDIA/SchedMD GB200 block-scheduling blog, 2026-05-07; sbatch(1) --segment).
SEGMENT_SPARE_SERVERS = 2


def slurm_segment(domain: int) -> int | None:
    """The --segment of a multi-node NVLink job: the domain less two spare servers (16 of 18), or None."""
    if domain <= 1:
        return None
    return max(1, domain - SEGMENT_SPARE_SERVERS)
