"""Slurm configuration in ``slurm/`` for the GPU servers Slurm runs (none when Kubernetes runs them all): slurm.conf,
gres.conf, cgroup.conf, the fabric topology, and with the design's accounts slurmdbd.conf and accounts.sh."""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from pathlib import Path

import hostlist

from gpucluster.analyse.scheduling import (
    SLURM_BLOCK_TOPOLOGY,
    SLURM_TOPOLOGY_YAML,
    FabricTree,
    default_partition,
    fabric_tree,
    nvlink_domains,
    scheduler_split,
    slurm_partitions,
)
from gpucluster.artifacts.mounts import enroot_mounts
from gpucluster.catalog.schema import GpuServer
from gpucluster.design.load import LoadedDesign
from gpucluster.design.names import slurm_cluster_name
from gpucluster.design.schema import SlurmAccount, SlurmSettings
from gpucluster.formats import yamlout
from gpucluster.formats.templating import render
from gpucluster.plan.model import PhysicalPlan, Plan

# switch/nvidia_imex (IMEX channels for multi-node NVLink jobs) arrived in Slurm 24.05 (NVIDIA/SchedMD GB200
# block-scheduling blog, 2026-05-07).
SLURM_NVIDIA_IMEX = (24, 5)
# Slurm 26.05 deprecates the partition option OverSubscribe=EXCLUSIVE for Exclusive=NODE (slurm.conf(5) of 26.05.3,
# "Exclusive": "This replaces the deprecated options OverSubscribe=EXCLUSIVE, ExclusiveUser, and ExclusiveTopo").
SLURM_EXCLUSIVE_NODE = (26, 5)
# Where slurmctld keeps its state when two controllers share it: Base Command Manager's shared tree, which the head
# nodes export to each other (an assumption labelled in the report: BCM's layout, not an RA figure).
SHARED_STATE_SAVE = "/cm/shared/apps/slurm/var/cm/statesave"
LOCAL_STATE_SAVE = "/var/spool/slurmctld"


def write(plan: PhysicalPlan, loaded: LoadedDesign, folder: Path) -> None:
    files = slurm_files(plan)
    if not files:
        return
    out = folder / "slurm"
    out.mkdir()
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")


def slurm_files(plan: Plan, version: str | None = None) -> dict[str, str]:
    """File name -> content of the Slurm configuration, for the design's Slurm version or ``version``."""
    servers = scheduler_split(plan).slurm
    if not servers:
        return {}
    settings = plan.design.scheduler.slurm
    target = version or settings.version
    year, _, month = target.partition(".")
    release = (int(year), int(month))
    server = plan.part_as(servers[0], GpuServer)
    design = plan.name
    domains = nvlink_domains(plan, servers)
    plugin, topology_file, topology = _topology(design, target, release, fabric_tree(plan, servers), domains)
    files = {topology_file: topology}
    devices = [plan.devices[name] for name in servers]
    spares = sum(d.spare for d in devices)
    groups: dict[tuple[int | None, str], list[str]] = defaultdict(list)
    for device in devices:
        groups[(device.su, device.rack)].append(device.name)
    model = _feature(server.id)
    node_lines = [
        {
            "nodes": _hostlist(tuple(names)),
            "features": ",".join(
                f for f in (model, f"su{su:02d}" if su is not None else "", f"rack_{_feature(rack)}") if f
            ),
        }
        for (su, rack), names in groups.items()
    ]
    partitions = slurm_partitions(plan, servers)
    # slurmctld and slurmdbd run on the first two head nodes, primary and backup, as Base Command Manager places them
    # (the head nodes hold the accounting database); further management servers are login nodes
    controllers = [d.name for d in plan.devices_with("management-server")][:2]
    state_save = settings.state_save_location or (SHARED_STATE_SAVE if len(controllers) > 1 else LOCAL_STATE_SAVE)
    files["slurm.conf"] = render(
        "slurm/slurm.conf.j2",
        design=design,
        version=target,
        cluster_name=slurm_cluster_name(plan.design),
        controllers=controllers,
        state_save=state_save,
        pyxis=settings.containers == "pyxis",
        topology_plugin=plugin,
        topology_file=topology_file,
        switch_type="switch/nvidia_imex" if domains and release >= SLURM_NVIDIA_IMEX else "",
        exclusive="Exclusive=NODE" if release >= SLURM_EXCLUSIVE_NODE else "OverSubscribe=EXCLUSIVE",
        server=server,
        cpus_per_gpu=server.threads // server.gpu.count,
        mem_per_gpu_mb=server.usable_memory_mib // server.gpu.count,
        node_lines=node_lines,
        nodes_total=len(devices),
        production=len(devices) - spares,
        spares=spares,
        partitions={name: _hostlist(tuple(nodes)) if nodes else "" for name, nodes in partitions.items()},
        stated=_stated_partitions(settings, partitions),
        accounts=bool(settings.accounts),
    )
    if settings.accounts:
        files["slurmdbd.conf"] = render(
            "slurm/slurmdbd.conf.j2",
            design=design,
            version=target,
            host=controllers[0],
            backup_host=controllers[1] if len(controllers) > 1 else "",
        )
        accounts = accounts_in_order(settings.accounts)
        files["accounts.sh"] = render(
            "slurm/accounts.sh.j2", design=design, cluster_name=slurm_cluster_name(plan.design), accounts=accounts
        )
    files["gres.conf"] = render(
        "slurm/gres.conf.j2",
        design=design,
        lines=_chunks(list(servers)),
        gres_type=server.gpu.gres_type,
        gpus=server.gpu.count,
    )
    files["cgroup.conf"] = render("slurm/cgroup.conf.j2", design=design)
    if settings.containers == "pyxis":
        files["plugstack.conf"] = render("slurm/plugstack.conf.j2", design=design)
        if mounts := enroot_mounts(plan):  # the filesystems the design lists, bound into pyxis containers
            files["enroot-mounts.fstab"] = mounts
    return dict(sorted(files.items()))


def _stated_partitions(settings: SlurmSettings, partitions: dict[str, list[str]]) -> list[dict[str, object]]:
    """The design's partitions as slurm.conf.j2 writes them: servers as a hostlist, which is the default."""
    default = default_partition(settings.partitions)
    return [
        {
            "name": p.name,
            "nodes": _hostlist(tuple(partitions[p.name])),
            "default": p.name == default,
            "max_time": p.max_time,
            "default_time": p.default_time,
            "max_nodes": p.max_nodes,
            "allow_accounts": p.allow_accounts,
        }
        for p in settings.partitions
    ]


def accounts_in_order(accounts: list[SlurmAccount]) -> list[SlurmAccount]:
    """The accounts parents first (sacctmgr adds an account only under one that exists), else in design order."""
    placed: list[SlurmAccount] = []
    names = {"root"}
    waiting = list(accounts)
    while waiting:  # the schema refuses unknown parents and circles, so each pass places at least one
        ready = [a for a in waiting if a.parent in names]
        placed += ready
        names |= {a.name for a in ready}
        waiting = [a for a in waiting if a.name not in names]
    return placed


def _topology(
    design: str, version: str, release: tuple[int, int], tree: FabricTree, domains: list[tuple[str, ...]]
) -> tuple[str, str, str]:
    """(slurm.conf's topology plugin, file name, text): topology.yaml from Slurm 25.05, else topology.conf with the
    block plugin for NVLink domains or the tree plugin."""
    if release >= SLURM_TOPOLOGY_YAML:
        return "", "topology.yaml", _topology_yaml(design, version, tree, domains)
    if domains and release >= SLURM_BLOCK_TOPOLOGY:
        return "topology/block", "topology.conf", _block_conf(design, version, domains)
    return "topology/tree", "topology.conf", _tree_conf(design, version, tree, len(domains))


def _tree_conf(design: str, version: str, tree: FabricTree, domains: int) -> str:
    lines = [
        f"# topology.conf for {design} (topology/tree, Slurm {version}): the compute fabric from the plan.",
        "# A leaf here is the group of the plan's leaves serving the same servers (the rail leaves of a",
        "# scalable unit): Slurm's tree wants one leaf per server, and these servers meet on every rail",
        "# one switch hop apart. Spines and cores keep their plan names.",
    ]
    if domains:
        lines.append(
            f"# NVLink domains ({domains}) need the block plugin of Slurm 23.11 or later; Slurm {version} "
            "gets the fabric tree only."
        )
    for switch in tree.switches:
        if switch.tier == 1:
            if len(switch.members) > 1:
                lines.append(f"# {switch.name}: {_hostlist(switch.members)}")
            lines.append(f"SwitchName={switch.name} Nodes={_hostlist(switch.nodes)}")
        else:
            lines.append(f"SwitchName={switch.name} Switches={_hostlist(switch.children)}")
    return "\n".join(lines) + "\n"


def block_sizes(domains: list[tuple[str, ...]]) -> list[int]:
    """The planning base block (the smallest NVLink domain, so every block has at least that many nodes) and
    each power-of-two multiple up to the whole set, as topology/block wants them."""
    base = min(len(d) for d in domains)
    sizes = [base]
    while sizes[-1] * 2 <= base * len(domains):
        sizes.append(sizes[-1] * 2)
    return sizes


def block_name(index: int) -> str:
    return f"nvl{index:03d}"


def _block_conf(design: str, version: str, domains: list[tuple[str, ...]]) -> str:
    lines = [
        f"# topology.conf for {design} (topology/block, Slurm {version}): one block per NVLink domain",
        "# (servers of one rack that share NVLink switch trays), in plan order, so jobs that fit a domain keep",
        "# their traffic on NVLink and larger jobs take neighbouring domains.",
    ]
    lines += [f"BlockName={block_name(i)} Nodes={_hostlist(d)}" for i, d in enumerate(domains, 1)]
    lines.append("BlockSizes=" + ",".join(str(s) for s in block_sizes(domains)))
    return "\n".join(lines) + "\n"


def _topology_yaml(design: str, version: str, tree: FabricTree, domains: list[tuple[str, ...]]) -> str:
    switches = []
    for switch in tree.switches:
        entry: dict[str, object] = {"switch": switch.name}
        if switch.tier == 1:
            entry["nodes"] = _hostlist(switch.nodes)
        else:
            entry["children"] = _hostlist(switch.children)
        switches.append(entry)
    topologies: list[dict[str, object]] = [
        {"topology": "fabric", "cluster_default": not domains, "tree": {"switches": switches}}
    ]
    if domains:
        topologies.append(
            {
                "topology": "nvlink",
                "cluster_default": True,
                "block": {
                    "block_sizes": block_sizes(domains),
                    "blocks": [{"block": block_name(i), "nodes": _hostlist(d)} for i, d in enumerate(domains, 1)],
                },
            }
        )
    head = (
        f"# topology.yaml for {design} (Slurm {version}): the compute fabric as a tree (leaf = the rail leaves of\n"
        "# a scalable unit; spines and cores by their plan names)"
        + ("; NVLink domains as blocks, the default for partitions.\n" if domains else ".\n")
    )
    return head + yamlout.dump(topologies)


@functools.lru_cache(maxsize=4096)
def _hostlist(names: tuple[str, ...]) -> str:
    """A Slurm hostlist expression. Only a name's trailing number is bracketed: python-hostlist also folds a
    number inside a name (compute-spine-[01-05]-01), which Slurm 22.05 rejects ("Invalid switches"). Remembered:
    a fabric tree lists the same switches many times over, and python-hostlist is slow per list."""
    by_prefix: dict[str, list[str]] = defaultdict(list)
    for name in names:
        by_prefix[re.sub(r"\d+$", "", name)].append(name)
    return ",".join(hostlist.collect_hostlist(group) for group in by_prefix.values())


def _chunks(names: list[str], size: int = 512) -> list[str]:
    """Hostlists of at most ``size`` names, so no config line grows without bound on large clusters."""
    return [_hostlist(tuple(names[i : i + size])) for i in range(0, len(names), size)]


def _feature(text: str) -> str:
    """A Slurm feature name: lower case letters, digits and underscores."""
    return "".join(c if c.isalnum() else "_" for c in text.lower())
