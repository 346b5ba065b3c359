"""Burn-in: the plan's acceptance tests (gpucluster/analyse/burn_in.py) rendered as Slurm batch scripts (or
Kubernetes Jobs), the expected results and a printable checklist per rack.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, TextIO

import hostlist
import orjson

from gpucluster.analyse.burn_in import (
    DCGM_DIAG_LEVEL,
    GPU_BURN_SECONDS,
    IB_WRITE_BW_ARGS,
    IMEX_COMMAND,
    NCCL_ARGS,
    BurnInTest,
    RailPort,
    discovery_port,
    present_stages,
    server_rail_ports,
)
from gpucluster.analyse.scheduling import scheduler_split
from gpucluster.artifacts.nccl import RENDEZVOUS_PORT
from gpucluster.design.load import LoadedDesign
from gpucluster.formats.tables import GuardedCsvWriter, csv_safe
from gpucluster.formats.templating import environment, render
from gpucluster.plan.model import AnalysedPlan, Plan
from gpucluster.plan.registry import is_gpu_node
from gpucluster.plan.roce import ROCE_QOS
from gpucluster.runtime.collector import cycle_collector_paused
from gpucluster.runtime.progress import track
from gpucluster.verify.expected import infiniband_networks

PARTITION = "burnin"  # Slurm partition holding every GPU server (the scheduler issue's partition names)
IB_WRITE_BW_PORT = 18515  # perftest's default TCP port; each rail adds its number so runs never collide

SCRIPTS = (
    "run-burn-in.sh",
    "check-results.sh",
    "dcgm-diag.sbatch",
    "gpu-burn.sbatch",
    "nccl-all-reduce.sbatch",
    "ib-write-bw.sbatch",
    "imex-check.sbatch",
)
# the stages whose tests run nccl-all-reduce.sbatch on several servers (run-burn-in.sh's generic branch)
MULTI_NODE_NCCL = ("nccl-nvlink-domain", "nccl-rail", "nccl-su", "nccl-fabric")


@cycle_collector_paused()  # very many records, no cycles (gpucluster.runtime.collector)
def write(plan: AnalysedPlan, loaded: LoadedDesign, folder: Path) -> None:
    out = folder / "burn-in"
    (out / "checklists").mkdir(parents=True)
    tests = plan.burn_in
    ports = server_rail_ports(plan)
    split = scheduler_split(plan)
    # each side's servers take their tests as their scheduler runs them: Slurm batch scripts, Kubernetes Jobs
    slurm_tests = tests if not split.kubernetes else _tests_on(tests, split.slurm)
    context = _script_context(plan, slurm_tests if split.slurm else tests, ports)
    # the stages numbered as expected-results.csv numbers them (over every test), the count of every test
    context["stages"] = [s for s in present_stages(tests) if s[1] in {t.test for t in slurm_tests}]
    context["tests"] = len(tests)
    context["slurm"] = bool(split.slurm)
    context["kubernetes"] = _write_jobs(plan, tests, split.kubernetes, ports, context, out)
    for name in SCRIPTS if split.slurm else ("check-results.sh",):
        if name == "imex-check.sbatch" and not context["imex"]:
            continue  # no NVLink domain spans servers
        path = out / name
        path.write_text(render(f"burn_in/{name}.j2", **context), encoding="utf-8")
        path.chmod(0o755)
    with open(out / "expected-results.json", "wb") as handle:
        handle.writelines(expected_results_json(plan, tests))
    with open(out / "expected-results.csv", "w", encoding="utf-8") as text:
        write_expected_results_csv(text, tests)
    (out / "README.md").write_text(render("burn_in/README.md.j2", **context), encoding="utf-8")
    for rack, page in checklists(plan, tests, ports, context["thresholds"]):  # each written as it is made
        (out / "checklists" / f"{rack}.html").write_text(page, encoding="utf-8")


def _tests_on(tests: list[BurnInTest], servers: tuple[str, ...]) -> list[BurnInTest]:
    """The tests of these servers alone (and the cabling checks, which name no server)."""
    ours = set(servers)
    return [t for t in tests if not t.nodes or set(t.nodes) <= ours]


def _write_jobs(
    plan: Plan,
    tests: list[BurnInTest],
    servers: tuple[str, ...],
    ports: dict[str, dict[int, RailPort]],
    context: dict[str, Any],
    out: Path,
) -> dict[str, Any] | None:
    """burn-in/kubernetes/: the Kubernetes side's tests as Jobs, and the README's values (None without that side)."""
    if not servers:
        return None
    from gpucluster.artifacts import burn_in_jobs as jobs
    from gpucluster.artifacts.kubernetes import dump_yaml

    files = jobs.job_files(plan, tests, servers, ports, context)
    (out / "kubernetes").mkdir()
    for name, documents in files.items():
        (out / name).write_text(JOBS_HEADER.format(design=plan.name) + dump_yaml(documents), encoding="utf-8")
    ours = set(servers)
    return {
        "namespace": jobs.NAMESPACE,
        "stage_label": jobs.STAGE_LABEL,
        "rendezvous_port": RENDEZVOUS_PORT,
        "files": [
            (int(name.split("-")[1]), name.split("-", 2)[2].removesuffix(".yaml"), name, len(documents))
            for name, documents in files.items()
            if name.startswith("kubernetes/stage-")
        ],
        "across": sum(bool(t.nodes) and not set(t.nodes) <= ours and bool(set(t.nodes) & ours) for t in tests),
    }


JOBS_HEADER = "# Burn-in of {design} as Kubernetes Jobs, generated by gpucluster; the order: burn-in/README.md\n"


_CSV_COLUMNS = ("order", "stage", "id", "test", "scope", "subject", "nodes", "racks", "metric", "comparison")
_CSV_HEADER = (*_CSV_COLUMNS, "threshold", "unit", "command", "links", "source")
# The columns that may hold text a spreadsheet takes for a formula are the comparison ("==") and what comes from a
# catalog (RDMA device and port names, part numbers in a derivation): _expected_rows guards these as it makes a row
# per test (115,000 at 131,072 GPUs); the others are names the planner makes (device names start with a letter,
# design schema), numbers and our own words.


def write_expected_results_csv(handle: TextIO, tests: list[BurnInTest]) -> None:
    writer = GuardedCsvWriter(handle, ())  # the rows come guarded
    writer.writerow(_CSV_HEADER)
    writer.writerows(_expected_rows(tests))


def _expected_rows(tests: list[BurnInTest]) -> Iterator[tuple[object, ...]]:
    """A row per test, each distinct text guarded once (115,000 tests share a few dozen)."""
    hostlists: dict[tuple[str, ...], str] = {}  # a pair of servers has a link test per rail
    guarded: dict[str, object] = {}

    def guard(text: str) -> object:
        found = guarded[text] = csv_safe(text)
        return found

    for order, t in enumerate(tests, 1):
        nodes = hostlists.get(t.nodes)
        if nodes is None:
            nodes = hostlists[t.nodes] = _hostlist(t.nodes)
        yield (
            order, t.stage, t.id, t.test, t.scope, t.subject, nodes, " ".join(t.racks), t.metric,
            guarded.get(t.comparison) or guard(t.comparison), t.threshold, t.unit,
            guarded.get(t.command) or guard(t.command), csv_safe("; ".join(t.links)),
            guarded.get(t.source) or guard(t.source),
        )  # fmt: skip


@lru_cache(maxsize=1 << 14)
def _hostlist(nodes: tuple[str, ...]) -> str:
    """Slurm's compact form of a node list (gpu[001-031]); remembered, as the scripts and the expected results both
    list the rail, SU and fabric tests' servers."""
    return nodes[0] if len(nodes) == 1 else hostlist.collect_hostlist(list(nodes))


_JSON_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
_TESTS_PER_DUMP = 2048
_EMPTY_TESTS_END = b'"tests": []\n}'


def expected_results_json(plan: Plan, tests: list[BurnInTest]) -> Iterator[bytes]:
    """expected-results.json a batch of tests at a time, the bytes orjson gives the whole document without holding
    it: "tests" sorts last, so each batch, dumped as a list, goes in place of the empty list a level deeper
    (orjson breaks lines only between tokens)."""
    document = _expected_document(plan, tests)
    head = orjson.dumps({**document, "tests": []}, option=_JSON_OPTIONS)
    if not tests or not head.endswith(_EMPTY_TESTS_END):
        yield orjson.dumps(document, option=_JSON_OPTIONS) + b"\n"
        return
    yield head[: -len(b"]\n}")]  # up to '"tests": ['
    between = b""
    for start in range(0, len(tests), _TESTS_PER_DUMP):
        batch = orjson.dumps(tests[start : start + _TESTS_PER_DUMP], option=_JSON_OPTIONS)  # [\n  {...},\n  {...}\n]
        yield between + batch[1:-2].replace(b"\n", b"\n  ")
        between = b","
    yield b"\n  ]\n}\n"


def _expected_document(plan: Plan, tests: list[BurnInTest]) -> dict[str, Any]:
    return {
        "design": plan.name,
        "partition": PARTITION if scheduler_split(plan).slurm else None,  # a Kubernetes-only cluster has none
        "stages": [
            {"stage": number, "test": name, "scope": scope, "description": text}
            for number, name, scope, text in present_stages(tests)
        ],
        "tests": tests,  # in the order to run them; orjson writes each dataclass as an object
    }


def _script_context(plan: Plan, tests: list[BurnInTest], ports: dict[str, dict[int, RailPort]]) -> dict[str, Any]:
    by_name: dict[str, list[BurnInTest]] = {}
    for t in tests:
        by_name.setdefault(t.test, []).append(t)
    rail_ports = next(iter(ports.values()), {})
    pairs = dict.fromkeys(t.nodes for t in by_name.get("ib-write-bw", []))
    roce = plan.settings.compute_fabric == "roce"

    def first(name: str) -> BurnInTest | None:
        return by_name[name][0] if by_name.get(name) else None

    return {
        "design": plan.name,
        "partition": PARTITION,
        "stages": present_stages(tests),
        "servers": [t.subject for t in by_name.get("dcgm-diag", [])],
        "pairs": [f"{client} {server}" for client, server in pairs],
        "rails": [f"{rail}:{port.hca or '-'}:{port.gpu}" for rail, port in sorted(rail_ports.items())],
        "hcas_known": all(p.hca for rails in ports.values() for p in rails.values()),
        "gpus_per_server": plan.settings.gpus_per_server,
        "dcgm_diag_level": DCGM_DIAG_LEVEL,
        "gpu_burn_seconds": GPU_BURN_SECONDS,
        "gpu_burn_hours_limit": GPU_BURN_SECONDS // 3600 + 2,  # the burn plus two hours of start-up and checks
        "nccl_args": NCCL_ARGS,
        # On RoCE the test traffic rides the lossless class the switches run (perftest --tclass: the GRH traffic
        # class, the IP ToS byte on RoCE v2), as NCCL's does (NCCL_IB_TC).
        "ib_write_bw_args": IB_WRITE_BW_ARGS + (f" --tclass={ROCE_QOS.traffic_class}" if roce else ""),
        "ib_write_bw_port": IB_WRITE_BW_PORT,
        # GID index: 0 on InfiniBand (Azure's -x 0); RoCE v2 usually sits at index 3 (check with show_gids)
        "ib_gid_index": 3 if roce else 0,
        "in_server": first("nccl-in-server"),
        "ib_write_bw": first("ib-write-bw"),
        "imex": [{"test": t, "nodes": _hostlist(t.nodes), "count": len(t.nodes)} for t in by_name.get("imex", [])],
        "imex_command": IMEX_COMMAND,
        "multi_node": [
            {
                "test": t,
                "nodes": _hostlist(t.nodes),
                "count": len(t.nodes),
                "gpu": ports[t.nodes[0]][t.rail].gpu if t.rail else "",
                "hca": (ports[t.nodes[0]][t.rail].hca or "-") if t.rail else "",
            }
            for name in MULTI_NODE_NCCL
            for t in by_name.get(name, [])
        ],
        "thresholds": _threshold_table(tests),
        "tests": len(tests),
        "cabling": _cabling_context(plan, by_name.get("cabling", [])),
    }


def _cabling_context(plan: Plan, tests: list[BurnInTest]) -> dict[str, Any]:
    """Stage 0: where ibnetdiscover runs on each InfiniBand network, and the switches whose LLDP is read elsewhere."""
    networks = [t.subject for t in tests]
    infiniband = [n for n in infiniband_networks(plan) if n in networks]
    ethernet = [n for n in networks if n not in infiniband]
    discover = []
    for network in infiniband:
        node, ca = discovery_port(plan, network)
        discover.append({"network": network, "node": node, "ca": ca or ""})
    switches = sorted(d.name for network in ethernet for d in plan.switches(network))
    return {"networks": networks, "infiniband": discover, "switches": switches}


def _threshold_table(tests: list[BurnInTest]) -> list[dict[str, Any]]:
    """A row per distinct threshold of each test kind, for the README and the checklists."""
    rows: dict[tuple[int, float | str, str], dict[str, Any]] = {}  # (stage, threshold, source) -> row
    for t in tests:
        key = (t.stage, t.threshold, t.source)
        row = rows.get(key)
        if row is None:  # a row made for the first test of each: 115,000 tests share a few dozen
            row = rows[key] = {
                "stage": t.stage, "test": t.test, "tests": 0, "command": t.command, "source": t.source,
                "pass": f"{t.metric} {t.comparison} {t.threshold} {t.unit}".strip(),
            }  # fmt: skip
        row["tests"] += 1
    return list(rows.values())


def checklists(
    plan: Plan,
    tests: list[BurnInTest],
    ports: dict[str, dict[int, RailPort]],
    thresholds: list[dict[str, Any]] | None = None,
) -> Iterator[tuple[str, str]]:
    """(rack, HTML checklist of its GPU servers, top first) a rack at a time; `thresholds`: _threshold_table(tests)."""
    by_node: dict[str, list[BurnInTest]] = {}
    link_test: dict[tuple[str, int], BurnInTest] = {}
    for t in tests:
        if t.scope == "link":
            for node in t.nodes:
                link_test.setdefault((node, t.rail or 0), t)
        elif t.scope == "server":
            by_node.setdefault(t.nodes[0], []).append(t)
    shared = [t for t in tests if t.scope in ("rail", "su", "fabric")]
    shared_of: dict[str, list[int]] = {}  # server -> the shared tests it takes part in (indexes into shared)
    for index, t in enumerate(shared):
        for node in t.nodes:
            shared_of.setdefault(node, []).append(index)
    thresholds = _threshold_table(tests) if thresholds is None else thresholds
    # a server's test rows print the same for every server of a part: the template makes them once per distinct key
    server_tests_key = {node: tuple(_row_key(t) for t in node_tests) for node, node_tests in by_node.items()}
    once = _Once()
    template = environment().get_template("burn_in/checklist.html")  # once: each lookup checks the file's time
    for rack in track(sorted(plan.racks.values(), key=lambda r: r.name), len(plan.racks), "racks"):
        servers = sorted(
            (plan.devices[n] for n in rack.devices if is_gpu_node(plan.devices[n].role)), key=lambda d: -d.u_position
        )
        if not servers:
            continue
        rows = [
            {
                "server": server,
                "tests": by_node.get(server.name, []),
                "tests_key": server_tests_key.get(server.name, ()),
                "links": [  # (rail, HCA, link, partners, its test's threshold and unit): plain values for the template
                    (rail, port.hca or "", port.link, _partners(test, server.name), *_pass_when(test))
                    for rail, port in sorted(ports[server.name].items())
                    for test in [link_test.get((server.name, rail))]
                ],
            }
            for server in servers
        ]
        yield (
            rack.name,
            template.render(
                design=plan.name,
                rack=rack,
                rows=rows,
                shared=[shared[i] for i in sorted({i for d in servers for i in shared_of.get(d.name, ())})],
                thresholds=thresholds,
                once=once,
            ),
        )


class _Once:
    """The template's {% call once(key...) %}: a block printed alike on many pages, made once (4,096 racks at
    131,072 GPUs share most rows)."""

    def __init__(self) -> None:
        self.made: dict[tuple[object, ...], str] = {}

    def __call__(self, *key: object, caller: Callable[[], str]) -> str:
        text = self.made.get(key)
        if text is None:
            text = self.made[key] = caller()
        return text


def _row_key(test: BurnInTest) -> tuple[object, ...]:
    """Everything a server test's checklist row prints (the threshold as text: 0 and 0.0 print differently)."""
    return test.stage, test.test, test.command, test.metric, test.comparison, str(test.threshold), test.unit


def _pass_when(test: BurnInTest | None) -> tuple[float | str | None, str]:
    return (None, "") if test is None else (test.threshold, test.unit)


def _partners(test: BurnInTest | None, server: str) -> str:
    """The servers a link test pairs `server` with (all when it names only this one)."""
    if test is None:
        return ""
    return ", ".join([node for node in test.nodes if node != server] or test.nodes)
