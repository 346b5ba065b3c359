"""The burn-in plan: the acceptance tests of every GPU server, compute link, rail and scalable unit, each
with its pass threshold and that threshold's source, computed once per plan (``plan.burn_in``) so the
design rule and the burn-in artifact (gpucluster/artifacts/burn_in.py, which renders it) read the same tests.

The tests run from the smallest scope to the largest, so that a failure names one server or one link
before a fabric-wide test involves it. Every threshold carries its source (Azure's
node-acceptance checks, NVIDIA DCGM, nccl-tests, gpu-burn) or its derivation from the plan's fabric.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import fields
from operator import attrgetter
from typing import Any, NamedTuple

from gpucluster.analyse.scheduling import scheduler_split
from gpucluster.catalog.ports import port_details
from gpucluster.catalog.schema import Gpu, GpuServer
from gpucluster.plan.facts import BurnInFacts
from gpucluster.plan.facts import BurnInTest as BurnInTest
from gpucluster.plan.memo import per_plan
from gpucluster.plan.model import Link, PhysicalPlan, Plan
from gpucluster.plan.queries import queries
from gpucluster.plan.registry import is_gpu_node
from gpucluster.verify.expected import ethernet_networks, infiniband_networks, port_info

# --- Thresholds and their sources ---------------------------------------------------------------------------
_AZURE = "Azure/azurehpc-health-checks"
_AZURE_H100 = f"{_AZURE} conf/nd96isr_h100_v5.conf"
_AZURE_H200 = f"{_AZURE} conf/nd96isr_h200_v5.conf"

# dcgmi diag -r 3: "approximately 15 minutes", the long level with targeted stress, power and memory
# bandwidth (NVIDIA DCGM dcgmi diag reference).
DCGM_DIAG_LEVEL = 3
DCGM_DIAG_SOURCE = (
    "NVIDIA DCGM 'dcgmi diag' reference: level 3 = long, ~15 min "
    "(https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html)"
)

# Sustained load "typically 24-72 hours" to flush infant mortality (leviathansystems.co glossary);
# we take the low end. gpu-burn publishes no threshold; "the usual criterion is
# zero errors and no throttling" (wilicc/gpu-burn README).
GPU_BURN_SECONDS = 24 * 3600
GPU_BURN_SOURCE = (
    "wilicc/gpu-burn README: zero errors; 24 h = low end of the usual 24-72 h burn-in (leviathansystems.co glossary); "
    f"no clock-throttle reason but GPU idle and SW power cap, as {_AZURE} customTests/azure_gpu_clock_throttling.nhc"
)

# In-server NCCL all_reduce busbw, 16 GiB message ("-b 16G -e 16G -f 2 -c 1", the "Avg bus bandwidth"
# line), per GPU type: Azure's node-acceptance thresholds (Azure/azurehpc-health-checks conf/).
_NVLINK_ALL_REDUCE_GBYTES_PER_S: dict[str, tuple[float, str]] = {
    "h100": (460.0, f"{_AZURE_H100}: check_nccl_allreduce 460.0 ... 16G"),
    "h200": (431.0, f"{_AZURE_H200}: check_nccl_allreduce 431.0 ... 16G"),
}
_NVLINK_REFERENCE = "h100"  # scale other GPU types from this one by their NVLink bandwidth (catalog)
_NVLINK_REFERENCE_PART = "dgx-h100"  # the catalog part whose GPU is the reference

# ib_write_bw with GPUDirect, 8 MiB messages, per HCA: Azure's thresholds as a fraction of the 400 Gb/s
# line rate they were set for (Azure/azurehpc-health-checks conf/): H100 375/400, H200 (and GB200) 360/400.
_IB_WRITE_BW_FRACTION: dict[str, tuple[float, str]] = {
    "h100": (375 / 400, f"{_AZURE_H100}: check_ib_bw_gdr 375 (Gb/s at 400 Gb/s line rate = 93.75 %)"),
    "h200": (360 / 400, f"{_AZURE_H200}: check_ib_bw_gdr 360 (Gb/s at 400 Gb/s line rate = 90 %)"),
}
_IB_WRITE_BW_DEFAULT = (
    360 / 400,
    f"{_AZURE} conf/nd96isr_h200_v5.conf and nd128isr_ndr_gb200_v6.conf: check_ib_bw_gdr 360 at 400 Gb/s "
    "(90 %, the least strict of Azure's published figures)",
)

# NCCL over the network reaches this fraction of the HCA line rate: Azure's all_reduce over IB loopback
# passes at >= 40 GB/s on one 400 Gb/s (= 50 GB/s) HCA (ND H100 v5, Azure/azurehpc-health-checks).
NCCL_NETWORK_EFFICIENCY = 40 / 50
NCCL_EFFICIENCY_SOURCE = (
    f"{_AZURE_H100}: check_nccl_allreduce_ib_loopback 40.0 GB/s on one 400 Gb/s (50 GB/s) HCA = 80 % efficiency"
)
NCCL_BUSBW_SOURCE = (
    "NVIDIA/nccl-tests doc/PERFORMANCE.md: busbw reflects the hardware bottleneck "
    "(https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md)"
)

NCCL_ARGS = "-b 16G -e 16G -f 2 -c 1"  # the message size Azure's thresholds were measured at
IB_WRITE_BW_ARGS = "-s 8388608 -F --report_gbits"  # Azure's ib_write_bw GPUDirect flags (aznhc conf/*.conf)

# Order: the cabling first (a miswired or degraded cable would fail every bandwidth test it carries), then the
# smallest scope first, so a failure names one server or one link before a larger test involves
# it; the long stress before the performance measurements, so the figures are of hardware that survived.
# A plan numbers the stages it has 0, 1, 2 ... in this order (present_stages); the NVLink-domain stages exist only
# where servers share an NVLink domain (rack-scale systems), and run before any test of the compute fabric.
STAGES: tuple[tuple[int, str, str, str], ...] = (
    (0, "cabling", "network", "Cabling check: discover each network (ibnetdiscover, LLDP), compare it with the plan"),
    (1, "dcgm-diag", "server", "DCGM diagnostics (quick check of every GPU before hours of load)"),
    (2, "gpu-burn", "server", "GPU stress: sustained load on every GPU, no errors, no thermal throttling"),
    (3, "nccl-in-server", "server", "NVLink all-reduce across the GPUs inside each server"),
    (4, "imex", "nvlink-domain", "IMEX: every server of each NVLink domain has joined its IMEX domain"),
    (5, "nccl-nvlink-domain", "nvlink-domain", "NVLink all-reduce across every GPU of each NVLink domain"),
    (6, "ib-write-bw", "link", "RDMA write bandwidth of every compute HCA and its link, pair by pair"),
    (7, "nccl-rail", "rail", "NCCL all-reduce along each rail (one GPU per server, one HCA each)"),
    (8, "nccl-su", "su", "NCCL all-reduce across each scalable unit (every GPU, every rail)"),
    (9, "nccl-fabric", "fabric", "NCCL all-reduce across the whole compute fabric"),
)
# IMEX: `nvidia-imex-ctl -N` "Gets the full status of the entire IMEX domain" (NVIDIA IMEX Service for NVLink
# Networks guide, "IMEX Service Command Service", https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/
# cmdservice.html); the domain is whole when every node reports READY. NCCL over multi-node NVLink needs it.
IMEX_COMMAND = "nvidia-imex-ctl -N -H"
IMEX_SOURCE = (
    "NVIDIA IMEX guide, IMEX Service Command Service (nvidia-imex-ctl -N: full status of the IMEX domain); every "
    "server of the NVLink domain (plan) READY"
)


def present_stages(tests: Iterable[BurnInTest]) -> list[tuple[int, str, str, str]]:
    """The stages a plan's tests use, numbered on from the first (0, the cabling check) in the order to run them."""
    names = {t.test for t in tests}
    present = [stage for stage in STAGES if stage[1] in names]
    first = present[0][0] if present else 1
    return [(number, name, scope, text) for number, (_n, name, scope, text) in enumerate(present, first)]


_STAGE = {stage[0]: stage for stage in STAGES}
CABLING_SOURCE = (
    "the plan's links, cable labels and node descriptions (gpucluster verify; verify/expected-<network>.net, "
    "verify/node-descriptions.csv): no miswired, swapped, missing, unexpected or degraded link"
)


class RailPort(NamedTuple):
    """A GPU server's compute port on one rail (a named tuple: a 131,072-GPU plan has 131,072 of them, and a frozen
    dataclass is slower to build)."""

    rail: int
    gpu: int  # CUDA device index: rail - 1 (catalog convention: rail = GPU index + 1)
    hca: str | None  # RDMA device, when the catalog names it
    link: str  # "server port -> leaf port (cable)"
    leaf: str
    speed_gbps: float


_VALUES = attrgetter(*(f.name for f in fields(BurnInTest)))  # every field's value, in order: id, stage, ...


def _numbered(test: BurnInTest, stage: int) -> BurnInTest:
    """The test under its stage's number in this plan (dataclasses.replace, done directly: faster,
    and a 131,072-GPU plan renumbers some 115,000 tests)."""
    test_id, _stage, *rest = _VALUES(test)
    return BurnInTest(test_id, stage, *rest)


def rail_links(plan: Plan) -> dict[str, dict[int, int]]:
    """server -> rail -> index into plan.links of its tier-0 compute link on that rail (plan queries)."""
    return queries(plan).rail_links


def burn_in_plan(plan: PhysicalPlan) -> list[BurnInTest]:
    """Every burn-in test of the plan, in the order to run them."""
    servers = sorted(d.name for d in plan.gpu_nodes())
    if not servers:
        return []
    ports = server_rail_ports(plan)
    gpu = plan.part_as(servers[0], GpuServer).gpu
    rack_of = {name: plan.devices[name].rack for name in servers}

    texts: dict[str, str] = {}  # each distinct source and command text once: 115,000 tests share a few dozen

    def test(stage: int, subject: str, nodes: Iterable[str], **fields: Any) -> BurnInTest:
        name, scope = _STAGE[stage][1:3]
        nodes = tuple(nodes)
        key = subject.replace(" ", "")
        racks = tuple(sorted({rack_of[n] for n in nodes}))
        for text in ("source", "command"):
            fields[text] = texts.setdefault(fields[text], fields[text])
        return BurnInTest(
            id=f"{name}:{key}", stage=stage, test=name, scope=scope, subject=subject, nodes=nodes, racks=racks, **fields
        )

    tests = [
        test(
            0,
            network,
            [],
            metric="findings",
            comparison="==",
            threshold=0,
            unit="findings",
            source=CABLING_SOURCE,
            command=_cabling_command(plan, network),
        )
        for network in cabling_networks(plan)
    ]
    reference_gpu = plan.catalog_part(_NVLINK_REFERENCE_PART, GpuServer).gpu
    nvlink_gbytes, nvlink_source = nvlink_all_reduce_threshold(gpu, reference_gpu.nvlink_bandwidth_gbytes_per_s)
    tests += _single_node_tests(servers, gpu, (nvlink_gbytes, nvlink_source), test)
    for side, label in scheduler_sides(plan, servers):  # a test's servers are all under one scheduler
        tests += _ib_write_bw_tests(side, ports, gpu, test)
        if len(side) > 1:
            tests += _multi_node_tests(plan, side, ports, gpu, nvlink_gbytes, test, label)
    tests += _nvlink_domain_tests(plan, servers, gpu, nvlink_gbytes, nvlink_source, test)
    tests.sort(key=lambda t: t.stage)  # stable: each stage keeps its order
    numbers = {name: number for number, name, _scope, _text in present_stages(tests)}
    return [t if t.stage == numbers[t.test] else _numbered(t, numbers[t.test]) for t in tests]


def scheduler_sides(plan: Plan, servers: list[str]) -> list[tuple[list[str], str]]:
    """(servers, label) per scheduler that runs tests across servers: every server unlabelled when one scheduler runs
    them all; with both, Slurm's and Kubernetes' servers apart (each side's jobs run under its own scheduler), their
    tests' subjects prefixed with the side's name."""
    split = scheduler_split(plan)
    if not (split.slurm and split.kubernetes):
        return [(servers, "")]
    return [(sorted(split.slurm), "slurm"), (sorted(split.kubernetes), "kubernetes")]


def nccl_launcher(plan: Plan, label: str, per_node: int) -> str:
    """How an NCCL test across servers starts its ranks, as the expected results name it: srun under Slurm, torchrun
    in the Kubernetes Jobs (gpucluster/artifacts/burn_in_jobs.py) on servers Kubernetes runs."""
    kubernetes = label == "kubernetes" or (not label and plan.design.scheduler.kind == "kubernetes")
    if kubernetes:
        return f"torchrun --nproc-per-node={per_node} nccl-all-reduce.py (all_reduce_perf {NCCL_ARGS}'s message)"
    return f"srun --ntasks-per-node={per_node} all_reduce_perf {NCCL_ARGS} -g 1"


def _single_node_tests(
    servers: list[str], gpu: Gpu, nvlink: tuple[float, str], test: Callable[..., BurnInTest]
) -> list[BurnInTest]:
    """Each server on its own: DCGM diagnostics, gpu_burn, and NCCL all-reduce over its NVLink (nvlink: the
    threshold in GB/s and where it comes from)."""
    nvlink_gbytes, nvlink_source = nvlink
    tests: list[BurnInTest] = []
    tests += [
        test(
            1,
            node,
            [node],
            metric="result",
            comparison="==",
            threshold="Pass",
            unit="",
            source=DCGM_DIAG_SOURCE,
            command=f"dcgmi diag -r {DCGM_DIAG_LEVEL}",
        )
        for node in servers
    ]
    tests += [
        test(
            2,
            node,
            [node],
            metric="faulty_gpus",
            comparison="==",
            threshold=0,
            unit="GPUs",
            source=GPU_BURN_SOURCE,
            command=f"gpu_burn -tc {GPU_BURN_SECONDS}",
        )
        for node in servers
    ]
    tests += [
        test(
            3,
            node,
            [node],
            metric="busbw",
            comparison=">=",
            threshold=nvlink_gbytes,
            unit="GB/s",
            source=nvlink_source,
            command=f"all_reduce_perf {NCCL_ARGS} -g {gpu.count}",
        )
        for node in servers
    ]
    return tests


def _ib_write_bw_tests(
    servers: list[str], ports: dict[str, dict[int, RailPort]], gpu: Gpu, test: Callable[..., BurnInTest]
) -> list[BurnInTest]:
    """ib_write_bw between pairs of servers, rail by rail, against a share of each rail link's speed."""
    tests: list[BurnInTest] = []
    fraction, ib_source = _IB_WRITE_BW_FRACTION.get(gpu.gres_type, _IB_WRITE_BW_DEFAULT)
    for client, server in ib_write_bw_pairs(servers, ports):
        for rail, mine in sorted(ports[client].items()):
            theirs = ports[server].get(rail)
            if theirs is None:
                continue
            gbits = round(mine.speed_gbps * fraction, 1)
            tests.append(
                test(
                    6,
                    f"{client}-{server}:rail{rail}",
                    [client, server],
                    metric="bw_average",
                    comparison=">=",
                    threshold=gbits,
                    unit="Gb/s",
                    rail=rail,
                    links=(mine.link, theirs.link),
                    source=f"{ib_source}; x {mine.speed_gbps:g} Gb/s link (plan) = {gbits:g} Gb/s",
                    command=f"ib_write_bw -d {mine.hca or '<rail HCA>'} {IB_WRITE_BW_ARGS} --use_cuda={mine.gpu}",
                )
            )
    return tests


def _nvlink_domain_tests(
    plan: Plan,
    servers: list[str],
    gpu: Gpu,
    nvlink_gbytes: float,
    nvlink_source: str,
    test: Callable[..., BurnInTest],
) -> list[BurnInTest]:
    """Per NVLink domain that spans servers (a rack-scale system's rack): its IMEX domain whole, then an all-reduce
    across all its GPUs over the NVLink switch trays, before any compute-fabric test."""
    domains: dict[str, list[str]] = {}
    for name in servers:
        domain = plan.devices[name].nvlink_domain
        if domain:
            domains.setdefault(domain, []).append(name)
    tests = []
    per_node = gpu.count
    for domain, nodes in sorted(domains.items()):
        if len(nodes) < 2:
            continue
        tests.append(
            test(4, domain, nodes, metric="ready_nodes", comparison=">=", threshold=len(nodes), unit="nodes",
                 source=IMEX_SOURCE, command=IMEX_COMMAND)
        )  # fmt: skip
        tests.append(
            test(
                5,
                domain,
                nodes,
                metric="busbw",
                comparison=">=",
                threshold=nvlink_gbytes,
                unit="GB/s",
                source=f"{nvlink_source}; every GPU of the domain has the same NVLink bandwidth to the switch trays "
                "as inside a tray (catalog nvlink_bandwidth_gbytes_per_s), so the in-server threshold holds across it",
                command=f"NCCL_MNNVL_ENABLE=1 srun --ntasks-per-node={per_node} all_reduce_perf {NCCL_ARGS} -g 1",
            )
        )
    return tests


def cabling_networks(plan: Plan) -> list[str]:
    """The networks the cabling check discovers: every network with links, InfiniBand ones first."""
    infiniband = infiniband_networks(plan)
    return infiniband + [n for n in ethernet_networks(plan) if n not in infiniband]


def discovery_port(plan: Plan, network: str) -> tuple[str, str | None]:
    """(GPU server, RDMA device) ibnetdiscover runs from on an InfiniBand network: the first server's port on it."""
    for link in queries(plan).links(network):
        if is_gpu_node(plan.devices[link.a_device].role):
            return link.a_device, port_info(plan, link.a_device, link.a_port).os_device
    return "", None


def _cabling_command(plan: Plan, network: str) -> str:
    if network in infiniband_networks(plan):
        node, ca = discovery_port(plan, network)
        option = f" -C {ca} -P 1" if ca else ""
        return f"ibnetdiscover{option} (on {node}) > discovery/ibnetdiscover-{network}.txt; gpucluster verify"
    return "lldpcli show neighbors -f json (on every switch) > discovery/lldp/<switch>.json; gpucluster verify"


def nvlink_all_reduce_threshold(gpu: Gpu, reference_nvlink_gbytes_per_s: float) -> tuple[float, str]:
    """In-server all_reduce busbw threshold (GB/s) for a GPU type, with its source or derivation; GPU
    types without a published figure scale the H100's by NVLink bandwidth (the reference's, from the
    catalog)."""
    gres = gpu.gres_type
    if gres in _NVLINK_ALL_REDUCE_GBYTES_PER_S:
        return _NVLINK_ALL_REDUCE_GBYTES_PER_S[gres]
    reference, source = _NVLINK_ALL_REDUCE_GBYTES_PER_S[_NVLINK_REFERENCE]
    nvlink = gpu.nvlink_bandwidth_gbytes_per_s
    value = round(reference * nvlink / reference_nvlink_gbytes_per_s, 1)
    return value, (
        f"derived: {reference:g} GB/s for H100 ({source}) x NVLink {nvlink:g} / {reference_nvlink_gbytes_per_s:g} GB/s "
        f"per GPU (catalog) = {value:g} GB/s; busbw scales with the NVLink bottleneck ({NCCL_BUSBW_SOURCE})"
    )


def ib_write_bw_pairs(servers: list[str], ports: dict[str, dict[int, RailPort]]) -> list[tuple[str, str]]:
    """Pairs of servers whose HCAs test each other, neighbours under the same leaves where possible;
    an odd server out pairs with the first server (whose links are then measured twice)."""
    ordered = sorted(servers, key=lambda s: (tuple(p.leaf for _r, p in sorted(ports[s].items())), s))
    pairs = [(ordered[i], ordered[i + 1]) for i in range(0, len(ordered) - 1, 2)]
    if len(ordered) % 2 and len(ordered) > 1:
        pairs.append((ordered[-1], ordered[0]))
    return pairs


def _multi_node_tests(
    plan: Plan,
    servers: list[str],
    ports: dict[str, dict[int, RailPort]],
    gpu: Gpu,
    nvlink_gbytes: float,
    test: Callable[..., BurnInTest],
    label: str = "",
) -> list[BurnInTest]:
    """NCCL all-reduce per rail, per SU and across the fabric (the servers of one scheduler, `label` prefixed to the
    subjects where both share the cluster), each with its threshold from the fabric."""
    side = f"{label}-" if label else ""
    speed = min(p.speed_gbps for rails in ports.values() for p in rails.values())
    rails = sorted({rail for node_ports in ports.values() for rail in node_ports})
    oversubscription = max(
        (t.oversubscription for t in plan.tiers if t.network == "compute" and t.up_gbps), default=1.0
    )

    def busbw(nodes: list[str], nics_per_server: int) -> tuple[float, str]:
        """Each server's share of the network bottleneck, at the efficiency NCCL reaches over an HCA."""
        line = nics_per_server * speed / 8
        crosses = _more_leaves_than(nodes, ports, len(rails))  # > 1 leaf on a rail: crosses uplinks
        factor = oversubscription if crosses else 1.0
        value = round(NCCL_NETWORK_EFFICIENCY * line / factor, 1)
        text = (
            f"derived: {NCCL_NETWORK_EFFICIENCY:.0%} ({NCCL_EFFICIENCY_SOURCE}) x {nics_per_server} HCA x "
            f"{speed:g} Gb/s / 8 = {line:g} GB/s per server, the network bottleneck ({NCCL_BUSBW_SOURCE})"
        )
        if factor > 1:
            text += f" / {factor:g} compute-fabric oversubscription (plan)"
        if value > nvlink_gbytes:
            return (
                nvlink_gbytes,
                f"{text} = {value:g} GB/s, above the in-server NVLink threshold {nvlink_gbytes:g} GB/s",
            )
        return value, f"{text} = {value:g} GB/s"

    def nccl(stage: int, subject: str, nodes: list[str], nics: int, command: str, **extra: object) -> BurnInTest:
        value, source = busbw(nodes, nics)
        return test(stage, subject, nodes, metric="busbw", comparison=">=", threshold=value, unit="GB/s",
                    source=source, command=command, **extra)  # fmt: skip

    tests = []
    for rail in rails:
        nodes = [n for n in servers if rail in ports[n]]
        port = ports[nodes[0]][rail]
        command = (
            f"CUDA_VISIBLE_DEVICES={port.gpu} NCCL_IB_HCA=={port.hca or '<rail HCA>'} {nccl_launcher(plan, label, 1)}"
        )
        if len(nodes) > 1:
            tests.append(nccl(7, f"{side}rail{rail}", nodes, 1, command, rail=rail))
    by_su: dict[int, list[str]] = {}
    for node in servers:
        by_su.setdefault(plan.devices[node].su or 1, []).append(node)
    command = nccl_launcher(plan, label, gpu.count)
    tests += [
        nccl(8, f"{side}su{su}", nodes, len(rails), command) for su, nodes in sorted(by_su.items()) if len(nodes) > 1
    ]
    if len(by_su) > 1:
        tests.append(nccl(9, f"{side}all", servers, len(rails), command))
    return tests


def _more_leaves_than(nodes: list[str], ports: dict[str, dict[int, RailPort]], limit: int) -> bool:
    """Whether the nodes' rail ports land on more than `limit` leaves: the walk stops once they do (a rail's or the
    whole fabric's test names every server, and its leaves pass the limit within the first scalable units)."""
    leaves: set[str] = set()
    for node in nodes:
        leaves.update(port.leaf for port in ports[node].values())
        if len(leaves) > limit:
            return True
    return False


def rail_ports(plan: Plan, servers: list[str]) -> dict[str, dict[int, RailPort]]:
    """server -> rail -> its compute port, HCA, leaf and cable."""
    found_in = queries(plan)
    links = found_in.rail_links
    ports: dict[str, dict[int, RailPort]] = {}
    hcas: dict[str, dict[int, str | None]] = {}
    for node in servers:
        part_id = plan.devices[node].part
        if part_id not in hcas:
            hcas[part_id] = {d.rail: d.os_device for d in port_details(plan.part(node), "compute") if d.rail}
        ports[node] = {
            rail: _rail_port(rail, hcas[part_id].get(rail), plan.links[index], found_in.cable_id(index))
            for rail, index in links.get(node, {}).items()
        }
    return ports


@per_plan
def server_rail_ports(plan: Plan) -> dict[str, dict[int, RailPort]]:
    """rail_ports of every GPU server, made once per plan (memo.per_plan: the burn-in plan and its artifact read it:
    131,072 ports at 131,072 GPUs); a table to read, not to change."""
    return rail_ports(plan, sorted(d.name for d in plan.gpu_nodes()))


def _rail_port(rail: int, hca: str | None, link: Link, cable: str | None) -> RailPort:
    text = f"{link.a_device} {link.a_port} -> {link.b_device} {link.b_port}" + (f" ({cable})" if cable else "")
    return RailPort(rail, rail - 1, hca, text, link.b_device, link.speed_gbps)


def burn_in_facts(plan: Plan, tests: list[BurnInTest]) -> BurnInFacts:
    """What the design rule "burn-in plan present" reads of the plan's burn-in tests: plain JSON."""
    servers = {d.name for d in plan.gpu_nodes()}
    per_server = {"dcgm-diag", "gpu-burn", "nccl-in-server"}
    covered = {
        kind: {t.subject for t in tests if t.test == kind} & servers for kind in per_server
    }  # every per-server test must reach every server
    measured = {link for t in tests if t.test == "ib-write-bw" for link in t.links}
    host_links = sum(len(rails) for rails in rail_links(plan).values())
    return {
        "tests": len(tests),
        "stages": len({t.stage for t in tests}),
        "servers": len(servers),
        "servers_covered": len(set.intersection(*covered.values())) if servers else 0,
        "compute_host_links": host_links,
        "links_covered": len(measured),
    }
