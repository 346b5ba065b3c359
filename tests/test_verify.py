"""gpucluster verify: the planned fabric simulated by the real ibsim with injected faults and discovered by the
real ibnetdiscover; lldpd JSON of the Ethernet switches in both of its shapes; findings by cable label, rack,
U and port; bad input."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DESIGNS, planned
from ibsim_tools import DOWN, UP, discover, needs_ibsim, one_generation, set_port_rate
from lldpd_tools import Lab, needs_lldpd

from gpucluster.artifacts.verify_expected import ibsim_port_options, net_context, net_records, node_description_rows
from gpucluster.cli import main
from gpucluster.errors import DesignError
from gpucluster.formats.templating import render
from gpucluster.plan.model import Plan
from gpucluster.plan.queries import links_on
from gpucluster.verify.check import verify
from gpucluster.verify.discovery import MAX_DISCOVERY_BYTES
from gpucluster.verify.expected import PlannedLink, ethernet_networks, infiniband_networks, planned_links
from gpucluster.verify.ibnetdiscover import parse_ibnetdiscover
from gpucluster.verify.lldp import mau_speed_gbps, parse_lldp
from gpucluster.verify.report import findings_csv, findings_html, summary_lines

H100_1SU = DESIGNS / "superpod-h100-1su.yaml"


def expected_net(plan: Plan, network: str) -> str:
    records = net_records(plan, planned_links(plan, network))
    return render("verify/expected.net.j2", **net_context(plan, network, records))


def _host_link(plan: Plan, server: str, rail: int) -> PlannedLink:
    return next(p for p in planned_links(plan, "compute") if p.a.device == server and plan.links[p.link].rail == rail)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _findings(results) -> list:
    return [f for r in results for f in r.findings]


# --- InfiniBand: the real ibsim and ibnetdiscover -----------------------------------------------------------


@pytest.mark.external
@needs_ibsim
def test_clean_simulated_fabric_matches_the_plan(tmp_path):
    _loaded, plan = planned("superpod-h100-1su")
    found = discover(one_generation(expected_net(plan, "compute"), DOWN), tmp_path / "sim")
    path = _write(tmp_path, "ibnetdiscover.txt", one_generation(found, UP))
    (result,) = verify(plan, [path], [])
    assert result.network == "compute"
    # every compute link; the UFM pair's four on split ports only to the switch (how a switch numbers a split port's
    # halves is not in NVIDIA's documents), and the summary says so
    assert result.checked_links == result.planned_links == len(links_on(plan, "compute"))
    assert result.findings == []
    assert result.unknown_nodes == []
    assert sorted(p.a.device for p in result.split_unchecked) == ["ufm-01", "ufm-01", "ufm-02", "ufm-02"]
    assert any(
        "4 link(s) on 2 split switch port(s)" in line and "NOT to the switch port" in line
        for line in summary_lines([result])
    )


@pytest.mark.external
@needs_ibsim
def test_injected_faults_are_reported_exactly_by_cable_label(tmp_path):
    """Two cables swapped at a leaf, one unplugged, one at 1x: verify names exactly these, by cable label."""
    _loaded, plan = planned("superpod-h100-1su")
    first, second = _host_link(plan, "gpu001", 1), _host_link(plan, "gpu002", 1)  # both on leaf r1
    unplugged = _host_link(plan, "gpu010", 3)
    narrow = _host_link(plan, "gpu005", 6)
    assert first.b.device == second.b.device
    records = {r["description"]: r["id"] for r in net_records(plan, list(planned_links(plan, "compute")))}
    net = one_generation(expected_net(plan, "compute"), DOWN)
    net = set_port_rate(net, records[narrow.b.node], int(narrow.b.node_port), "1xHDR")
    leaf = records[first.b.node]
    commands = [
        f'Unlink "{records[first.a.node]}"[1]',
        f'Unlink "{records[second.a.node]}"[1]',
        f'Link "{records[first.a.node]}"[1] "{leaf}"[{second.b.node_port}]',
        f'Link "{records[second.a.node]}"[1] "{leaf}"[{first.b.node_port}]',
        f'Unlink "{records[unplugged.a.node]}"[1]',
    ]
    found = discover(net, tmp_path / "sim", commands)
    path = _write(tmp_path, "ibnetdiscover.txt", one_generation(found, UP))
    (result,) = verify(plan, [path], [])
    by_kind = {f.kind: f for f in result.findings}
    assert sorted(f.kind for f in result.findings) == ["missing", "swapped", "wrong-width"]
    swapped = by_kind["swapped"]
    assert swapped.cable == f"{first.cable} + {second.cable}"
    assert swapped.a_device == "gpu001 + gpu002"
    assert swapped.b_port == f"{first.b.port} + {second.b.port}"
    rack = plan.devices["gpu001"].rack
    assert swapped.a_rack.startswith(rack) and swapped.a_label.startswith(f"DC1.{rack}-")
    assert by_kind["missing"].cable == unplugged.cable and by_kind["missing"].a_port == unplugged.a.port
    wrong = by_kind["wrong-width"]
    assert (wrong.cable, wrong.found) == (narrow.cable, "1xNDR") and wrong.expected.startswith("4xNDR")
    assert wrong.b_u == f"{plan.devices[narrow.b.device].u_position:02d}"


@pytest.mark.external
@needs_ibsim
def test_split_port_legs_are_checked_to_their_switch_and_the_rest_is_said(tmp_path):
    """A UFM's splitter leg moved to the other leaf is miswired, one unplugged is missing; how a switch numbers a
    split port's halves is not documented, so the output says which links were not checked to their port."""
    _loaded, plan = planned("superpod-h100-1su")
    legs = [p for p in planned_links(plan, "compute") if p.split]
    assert [(p.a.device, p.b.device, p.b.port) for p in legs] == [
        ("ufm-01", "compute-leaf-su01-r1", "IB1/16/2/1"),
        ("ufm-02", "compute-leaf-su01-r1", "IB1/16/2/2"),
        ("ufm-01", "compute-leaf-su01-r2", "IB1/16/2/1"),
        ("ufm-02", "compute-leaf-su01-r2", "IB1/16/2/2"),
    ]
    moved, unplugged = legs[0], legs[3]
    records = {r["description"]: r["id"] for r in net_records(plan, list(planned_links(plan, "compute")))}
    other_leaf = records["compute-leaf-su01-r2"]
    commands = [
        f'Unlink "{records[moved.a.node]}"[1]',
        f'Unlink "{records[unplugged.a.node]}"[1]',
        f'Link "{records[moved.a.node]}"[1] "{other_leaf}"[{unplugged.b.node_port}]',
    ]
    found = discover(one_generation(expected_net(plan, "compute"), DOWN), tmp_path / "sim", commands)
    (result,) = verify(plan, [_write(tmp_path, "found.txt", one_generation(found, UP))], [])
    assert sorted((f.kind, f.cable, f.a_device, f.a_port) for f in result.findings) == [
        ("missing", unplugged.cable, "ufm-02", "ib2"),
        ("miswired", moved.cable, "ufm-01", "ib1"),
    ]
    miswired = next(f for f in result.findings if f.kind == "miswired")
    assert "compute-leaf-su01-r2" in miswired.found and "IB1/16/2" in miswired.action
    assert len(result.split_unchecked) == 4 and result.checked_links == result.planned_links
    notice = next(line for line in summary_lines([result]) if "split switch port" in line)
    assert "4 link(s) on 2 split switch port(s)" in notice and "NOT to the switch port" in notice
    html = findings_html([result], plan.name)
    assert "NOT to the switch port" in html


@pytest.mark.external
@needs_ibsim
def test_cli_exit_status_and_outputs_on_a_simulated_fabric(tmp_path):
    _loaded, plan = planned("superpod-h100-1su")
    unplugged = _host_link(plan, "gpu003", 2)
    records = {r["description"]: r["id"] for r in net_records(plan, list(planned_links(plan, "compute")))}
    net = one_generation(expected_net(plan, "compute"), DOWN)
    found = discover(net, tmp_path / "sim", [f'Unlink "{records[unplugged.a.node]}"[1]'])
    path = _write(tmp_path, "found.txt", one_generation(found, UP))
    result = CliRunner().invoke(main, ["verify", str(H100_1SU), "--ibnetdiscover", str(path), "-o", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert unplugged.cable in result.output and "missing" in result.output
    folder = tmp_path / f"{plan.name}-verify"
    rows = list(csv.DictReader(io.StringIO((folder / "findings.csv").read_text())))
    assert [(r["kind"], r["cable"], r["a_device"], r["a_port"]) for r in rows] == [
        ("missing", unplugged.cable, "gpu003", unplugged.a.port)
    ]
    assert unplugged.cable in (folder / "findings.html").read_text()


@pytest.mark.external
@needs_ibsim
def test_four_su_fabric_fits_ibsim_and_matches(tmp_path):
    _loaded, plan = planned("superpod-h200-4su")
    found = discover(one_generation(expected_net(plan, "compute"), DOWN), tmp_path / "sim")
    (result,) = verify(plan, [_write(tmp_path, "found.txt", one_generation(found, UP))], [])
    assert result.findings == [] and result.checked_links == len(links_on(plan, "compute"))
    assert len(result.split_unchecked) == 4


# --- InfiniBand: discovery files edited by hand ------------------------------------------------------------


def test_every_expected_net_reads_back_as_a_matching_fabric(tmp_path, h100_1su):
    _loaded, plan = h100_1su
    paths = [_write(tmp_path, f"{n}.net", expected_net(plan, n)) for n in infiniband_networks(plan)]
    results = verify(plan, paths, [])
    assert [r.network for r in results] == ["compute", "storage"]
    assert _findings(results) == []


def test_switch_os_descriptions_and_host_domains_are_recognised(tmp_path, h100_1su):
    _loaded, plan = h100_1su
    net = expected_net(plan, "compute")
    net = net.replace('# "compute-leaf-su01-r1" enhanced', '# "MF0;compute-leaf-su01-r1:MQM9700/U1" enhanced')
    net = net.replace('# "gpu001 mlx5_0"\n', '# "gpu001.cluster.example mlx5_0"\n')
    (result,) = verify(plan, [_write(tmp_path, "found.txt", net)], [])
    assert result.findings == [] and result.unknown_nodes == []


def test_cable_moved_to_an_unused_port_is_miswired_with_both_peers(tmp_path, h100_1su):
    _loaded, plan = h100_1su
    link = _host_link(plan, "gpu004", 4)
    leaf_id = "S-" + link.b.node
    net = expected_net(plan, "compute")
    # the host's cable lands on the leaf's port 60 instead (a port the plan leaves free on this leaf? choose one)
    used = {int(p.b.node_port) for p in planned_links(plan, "compute") if p.b.node == link.b.node}
    used |= {int(p.a.node_port) for p in planned_links(plan, "compute") if p.a.node == link.b.node}
    free = next(n for n in range(1, 65) if n not in used)
    host_id = f"H-{link.a.node.replace(' ', '-')}"
    net = net.replace(f'[{link.b.node_port}]\t"{host_id}"[1]', f'[{free}]\t"{host_id}"[1]')
    net = net.replace(f'"{leaf_id}"[{link.b.node_port}]', f'"{leaf_id}"[{free}]')
    (result,) = verify(plan, [_write(tmp_path, "found.txt", net)], [])
    (finding,) = result.findings
    assert finding.kind == "miswired" and finding.cable == link.cable
    assert f"{link.b.device} {link.b.port}" in finding.expected
    assert f"port {free})" in finding.found and "not a planned port" in finding.found
    assert "B -> nothing (port dark)" in finding.found


def test_unknown_node_on_a_free_port_is_an_unexpected_link_escaped_in_html(tmp_path, h100_1su):
    _loaded, plan = h100_1su
    net = expected_net(plan, "compute")
    leaf = "compute-leaf-su01-r5"
    used = {int(p.b.node_port) for p in planned_links(plan, "compute") if p.b.node == leaf}
    used |= {int(p.a.node_port) for p in planned_links(plan, "compute") if p.a.node == leaf}
    free = next(n for n in range(1, 65) if n not in used)
    hostile = "=HYPERLINK(1) <script>alert(1)</script>"
    net = net.replace(
        f'# "{leaf}" enhanced port 0 lid 0 lmc 0\n',
        f'# "{leaf}" enhanced port 0 lid 0 lmc 0\n[{free}]\t"H-intruder"[1]\t\t# "{hostile}" lid 0 4xNDR\n',
    )
    net += f'\nCa\t1 "H-intruder"\t\t# "{hostile}"\n[1]\t"S-{leaf}"[{free}]\t\t# lid 0 lmc 0 "x" lid 0 4xNDR\n'
    results = verify(plan, [_write(tmp_path, "found.txt", net)], [])
    (finding,) = _findings(results)
    assert finding.kind == "unexpected" and finding.a_device == leaf
    assert results[0].unknown_nodes == [hostile]
    html = findings_html(results, plan.name)
    assert "<script>" not in html and "&lt;script&gt;" in html
    rows = list(csv.reader(io.StringIO(findings_csv(results))))
    assert all(not cell.startswith(("=", "+", "-", "@")) for row in rows[1:] for cell in row)


def test_malformed_discovery_file_is_bad_input_with_its_line(tmp_path, h100_1su):
    _loaded, plan = h100_1su
    lines = expected_net(plan, "compute").splitlines()
    lines[20] = "[1 garbage"
    path = _write(tmp_path, "found.txt", "\n".join(lines))
    result = CliRunner().invoke(main, ["verify", str(H100_1SU), "--ibnetdiscover", str(path), "-o", str(tmp_path)])
    assert result.exit_code == 2
    assert f"{path}:21:" in result.output and "cannot read port line" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / f"{plan.name}-verify").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no Switch or Ca node records"),
        ("hello world\n", "not ibnetdiscover output"),
        ('Ca\t1 "H-x"\t# "nobody mlx5_0"\n[1]\t"S-y"[1]\t# lid 0 lmc 0 "y" lid 0 4xNDR\n', "none of its"),
        ('Ca\t1 "H-x"\t# "a"\n[2]\t"S-y"[1]\n', "port 2 outside 1..1"),
    ],
)
def test_discovery_files_that_are_not_the_fabric_exit_2(tmp_path, text, message):
    path = _write(tmp_path, "found.txt", text)
    result = CliRunner().invoke(main, ["verify", str(H100_1SU), "--ibnetdiscover", str(path), "-o", str(tmp_path)])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_verify_without_discovery_output_exits_2(tmp_path):
    result = CliRunner().invoke(main, ["verify", str(H100_1SU), "-o", str(tmp_path)])
    assert result.exit_code == 2 and "--ibnetdiscover" in result.output


def test_node_descriptions_name_every_hca_and_switch(h100_1su):
    _loaded, plan = h100_1su
    rows = node_description_rows(plan, infiniband_networks(plan))
    compute = [r for r in rows if r[0] == "compute"]
    switches = [r for r in compute if r[2] == "switch"]
    assert len(switches) == len(plan.switches("compute"))
    hcas = {r[8] for r in compute if r[2] == "gpu-server"}
    assert len(hcas) == 8 * len(plan.gpu_nodes())
    assert "gpu001 mlx5_0" in hcas
    row = next(r for r in compute if r[8] == "gpu001 mlx5_0")
    assert row[6] == "mlx5_0" and "/sys/class/infiniband/mlx5_0/node_desc" in row[9]


# --- Ethernet: lldpd's JSON ------------------------------------------------------------------------------


def _lldp_neighbour(remote: PlannedLink, local_end, remote_end, speed_gbps: float, json0: bool) -> tuple[str, dict]:
    """One neighbour record as lldpd's json (or json0) writer prints it."""
    port_id = remote_end.node_port if remote_end.switch else "aa:bb:cc:00:00:01"
    kind = "ifname" if remote_end.switch else "mac"
    mau = f"{speed_gbps:g}GbaseCR4 - 100GBASE-R PCS/PMA over 4 lane shielded copper" if speed_gbps >= 1 else ""
    if json0:
        port = {"id": [{"type": kind, "value": port_id}], "descr": [{"value": remote_end.node_port}]}
        if mau:
            port["auto-negotiation"] = [{"supported": False, "enabled": False, "current": [{"value": mau}]}]
        return local_end.node_port, {
            "name": local_end.node_port,
            "via": "LLDP",
            "rid": "1",
            "chassis": [{"id": [{"type": "mac", "value": "aa:bb:cc:00:00:02"}], "name": [{"value": remote_end.node}]}],
            "port": port,
        }
    port = {"id": {"type": kind, "value": port_id}, "descr": remote_end.node_port, "ttl": "120"}
    if mau:
        port["auto-negotiation"] = {"supported": False, "enabled": False, "current": mau}
    return local_end.node_port, {
        "via": "LLDP",
        "rid": "1",
        "age": "0 day, 00:01:00",
        "chassis": {remote_end.node: {"id": {"type": "mac", "value": "aa:bb:cc:00:00:02"}, "descr": "Linux"}},
        "port": port,
    }


def lldp_folder(plan: Plan, network: str, folder: Path, json0: bool = False, edit=None) -> Path:
    """`lldpcli show neighbors -f json` of every switch of a network, from the plan; `edit` may change the
    neighbour list of each switch (switch name, [(local port, remote end, link)]) before it is written."""
    folder.mkdir(parents=True, exist_ok=True)
    neighbours: dict[str, list] = {}
    for p in planned_links(plan, network):
        for near, far in ((p.a, p.b), (p.b, p.a)):
            if near.switch:
                neighbours.setdefault(near.device, []).append([near, far, p])
    for switch in plan.switches(network):
        entries = neighbours.get(switch.name, [])
        if edit is not None:
            entries = edit(switch.name, entries)
        records = [_lldp_neighbour(p, near, far, p.speed_gbps, json0) for near, far, p in entries]
        if json0:
            document = {"lldp": [{"interface": [record for _local, record in records]}]}
        elif len(records) == 1:  # lldpd's quirk: one neighbour is an object, not a list
            document = {"lldp": {"interface": {records[0][0]: records[0][1]}}}
        else:
            document = {"lldp": {"interface": [{local: record} for local, record in records]}}
        (folder / f"{switch.name}.json").write_text(json.dumps(document, indent=2), encoding="utf-8")
    return folder


@pytest.mark.parametrize("json0", [False, True], ids=["json", "json0"])
def test_clean_lldp_matches_the_plan(tmp_path, h100_1su, json0):
    _loaded, plan = h100_1su
    assert ethernet_networks(plan) == ["inband", "oob"]
    folder = lldp_folder(plan, "inband", tmp_path / "lldp", json0)
    lldp_folder(plan, "oob", folder, json0)
    results = verify(plan, [], [folder])
    assert [r.network for r in results] == ["inband", "oob"]
    assert _findings(results) == []
    assert results[0].checked_links == len(links_on(plan, "inband"))


def test_single_neighbour_object_quirk_is_read(tmp_path, h100_1su):
    _loaded, plan = h100_1su
    switch = plan.switches("oob")[0].name

    def only_first(name, entries):
        return entries[:1] if name == switch else entries

    folder = lldp_folder(plan, "oob", tmp_path / "lldp", edit=only_first)
    document = json.loads((folder / f"{switch}.json").read_text())
    assert isinstance(document["lldp"]["interface"], dict)
    results = verify(plan, [], [folder])
    kept = json.loads((folder / f"{switch}.json").read_text())["lldp"]["interface"]
    (kept_port,) = kept
    # every link of the switch is missing but the one it still reports, and its uplinks (the spines report them)
    reporters = {s.name for s in plan.switches("oob")}
    expected = {
        p.cable
        for p in planned_links(plan, "oob")
        if switch in (p.a.device, p.b.device)
        and not {p.a.device, p.b.device} <= reporters
        and kept_port not in (p.a.node_port if p.a.device == switch else p.b.node_port,)
    }
    assert {f.kind for f in _findings(results)} == {"missing"}
    assert {f.cable for f in _findings(results)} == expected


def test_lldp_faults_swapped_unplugged_and_slow_are_reported_by_cable(tmp_path, h100_1su):
    _loaded, plan = h100_1su
    leaf = "inband-leaf-a-1"
    host_links = [p for p in planned_links(plan, "inband") if p.b.device == leaf and not p.a.switch]
    first, second, unplugged, slow = host_links[0], host_links[1], host_links[5], host_links[7]

    def faults(name, entries):
        if name != leaf:
            return entries
        out = []
        for near, far, p in entries:
            if p is first or p.link == first.link:
                far = second.a
            elif p.link == second.link:
                far = first.a
            elif p.link == unplugged.link:
                continue
            out.append([near, far, p])
        return out

    folder = lldp_folder(plan, "inband", tmp_path / "lldp", edit=faults)
    text = (folder / f"{leaf}.json").read_text()
    slow_port = slow.b.node_port
    document = json.loads(text)
    for item in document["lldp"]["interface"]:
        if slow_port in item:
            item[slow_port]["port"]["auto-negotiation"]["current"] = "40GbaseCR4 - 40GBASE-R PCS/PMA"
    (folder / f"{leaf}.json").write_text(json.dumps(document), encoding="utf-8")
    (result,) = verify(plan, [], [folder])
    kinds = sorted((f.kind, f.cable) for f in result.findings)
    assert kinds == sorted(
        [("swapped", f"{first.cable} + {second.cable}"), ("missing", unplugged.cable), ("wrong-speed", slow.cable)]
    )
    wrong = next(f for f in result.findings if f.kind == "wrong-speed")
    assert wrong.found == "40 Gb/s" and wrong.expected.startswith("100 Gb/s")


def test_lldp_file_named_after_no_switch_is_bad_input(tmp_path):
    path = _write(tmp_path, "not-a-switch.json", '{"lldp": {}}')
    result = CliRunner().invoke(main, ["verify", str(H100_1SU), "--lldp", str(path), "-o", str(tmp_path)])
    assert result.exit_code == 2 and "not-a-switch" in result.output


def test_lldp_file_that_is_not_json_names_line_and_column(tmp_path):
    path = _write(tmp_path, "inband-leaf-a-1.json", '{"lldp": {\n  "interface": [,]\n}}')
    result = CliRunner().invoke(main, ["verify", str(H100_1SU), "--lldp", str(path), "-o", str(tmp_path)])
    assert result.exit_code == 2 and f"{path}:2:" in result.output and "not JSON" in result.output


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"lldp": ' + "[" * 100_000 + "]" * 100_000 + "}", "nests deeper than 64 levels"),
        ('{"lldp": {"interface": ' + "9" * 5_000 + "}}", "a number of 5,000 characters"),
        ('{"lldp": {"interface": NaN}}', "NaN is not a JSON number"),
    ],
    ids=["deep-nesting", "5000-digit-integer", "nan"],
)
def test_lldp_json_beyond_the_reader_bounds_is_a_located_error(tmp_path, text, expected):
    path = _write(tmp_path, "inband-leaf-a-1.json", text)
    result = CliRunner().invoke(main, ["verify", str(H100_1SU), "--lldp", str(path), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2 and f"{path}:1:" in result.output and expected in result.output, result.output
    assert not (tmp_path / "out").exists()


def test_ibnetdiscover_file_over_the_size_cap_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "huge.net"
    with path.open("wb") as handle:
        handle.truncate(MAX_DISCOVERY_BYTES + 1)  # sparse: refused by its size, never read
    result = CliRunner().invoke(main, ["verify", str(H100_1SU), "--ibnetdiscover", str(path), "-o", str(tmp_path)])
    assert result.exit_code == 2 and "larger than 262,144 KiB" in result.output and str(path) in result.output


def test_ibnetdiscover_from_a_pipe_is_refused_not_read_without_end(tmp_path):
    path = tmp_path / "pipe.net"
    os.mkfifo(path)
    result = CliRunner().invoke(main, ["verify", str(H100_1SU), "--ibnetdiscover", str(path), "-o", str(tmp_path)])
    assert result.exit_code == 2 and "not a regular file" in result.output


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [(b"# " + b"x" * 5000, "a line of more than 4,096 bytes"), (b"# caf\xe9", "not UTF-8 text")],
)
def test_an_ibnetdiscover_line_too_long_or_not_utf8_is_refused_at_its_line(tmp_path, bad_line, message):
    path = tmp_path / "found.net"
    path.write_bytes(b'Ca\t1 "H-x"\t# "a"\n\n' + bad_line + b"\n")
    with pytest.raises(DesignError) as error:
        parse_ibnetdiscover(path)
    (problem,) = error.value.problems
    assert (problem.file, problem.line) == (str(path), 3) and message in problem.message


def test_ibnetdiscover_memory_grows_with_the_links_not_with_the_file(tmp_path, h100_1su):
    """20 MB of comment lines before a small fabric: the file is read a line at a time, never held whole."""
    _loaded, plan = h100_1su
    path = tmp_path / "found.net"
    with path.open("w", encoding="utf-8") as handle:
        handle.write(("# " + "x" * 98 + "\n") * 200_000)
        handle.write(expected_net(plan, "compute"))
    tracemalloc.start()
    try:
        found = parse_ibnetdiscover(path)
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found.links and peak_bytes < 5_000_000


# --- the build ------------------------------------------------------------------------------------------


def test_build_writes_the_verify_files(tmp_path):
    result = CliRunner().invoke(
        main, ["build", str(H100_1SU), "-o", str(tmp_path), "--only", "verify", "--only", "report"]
    )
    assert result.exit_code == 0, result.output
    folder = tmp_path / "superpod-h100-1su" / "verify"
    report = (tmp_path / "superpod-h100-1su" / "report.html").read_text()
    for name in ("expected-compute.net", "expected-storage.net", "node-descriptions.csv"):
        assert f'href="verify/{name}"' in report
    assert sorted(p.name for p in folder.iterdir()) == [
        "expected-compute.net",
        "expected-storage.net",
        "node-descriptions.csv",
    ]
    args = ["verify", str(H100_1SU), "--ibnetdiscover", str(folder / "expected-compute.net"), "-o", str(tmp_path)]
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output


# --- the burn-in plan's first stage ------------------------------------------------------------------------


def test_burn_in_stage_0_discovers_verifies_and_checks(tmp_path):
    """run-burn-in.sh 0 with srun and ssh stubbed to return the planned fabric: the real gpucluster verify
    passes it, and check-results.sh 0 reads a PASS for every network; one unplugged cable fails its network."""
    import os
    import shutil
    import subprocess
    import sys

    _loaded, plan = planned("superpod-h100-1su")
    build = CliRunner().invoke(main, ["build", str(H100_1SU), "-o", str(tmp_path), "--only", "burn-in"])
    assert build.exit_code == 0, build.output
    burn_in = tmp_path / plan.name / "burn-in"
    fabric = tmp_path / "fabric"
    fabric.mkdir()
    for network in infiniband_networks(plan):
        _write(fabric, f"{network}.net", expected_net(plan, network))
    lldp = tmp_path / "lldp-source"
    for network in ethernet_networks(plan):
        lldp_folder(plan, network, lldp)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(
        "#!/usr/bin/env bash\n"
        f'case "$*" in *"-C mlx5_0 "*) cat {fabric}/compute.net ;; *) cat {fabric}/storage.net ;; esac\n'
    )
    (bin_dir / "ssh").write_text(f'#!/usr/bin/env bash\ncat "{lldp}/$1.json"\n')
    for stub in ("srun", "ssh"):
        (bin_dir / stub).chmod(0o755)
    gpucluster = shutil.which("gpucluster", path=str(Path(sys.executable).parent))
    assert gpucluster
    env = dict(
        os.environ, PATH=f"{bin_dir}:{Path(gpucluster).parent}:{os.environ['PATH']}", GPUCLUSTER_DESIGN=str(H100_1SU)
    )

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(args, cwd=burn_in, env=env, capture_output=True, text=True, timeout=300, check=False)

    stage = run("./run-burn-in.sh", "0")
    assert stage.returncode == 0, stage.stdout + stage.stderr
    check = run("./check-results.sh", "0")
    assert check.returncode == 0 and "stage 0: 4 passed, 0 failed" in check.stdout, check.stdout

    gone = _host_link(plan, "gpu007", 5)
    text = (fabric / "compute.net").read_text()
    _write(fabric, "compute.net", text.replace(f'\t"S-{gone.b.node}"[{gone.b.node_port}]\t', '\t"S-nowhere"[1]\t'))
    stage = run("./run-burn-in.sh", "0")
    assert stage.returncode == 0 and gone.cable in stage.stdout, stage.stdout + stage.stderr
    check = run("./check-results.sh", "0")
    assert check.returncode == 1 and "stage 0: 3 passed, 1 failed" in check.stdout, check.stdout


def test_empty_lldp_folder_is_bad_input(tmp_path):
    (tmp_path / "lldp").mkdir()
    result = CliRunner().invoke(main, ["verify", str(H100_1SU), "--lldp", str(tmp_path / "lldp"), "-o", str(tmp_path)])
    assert result.exit_code == 2 and "no <switch>.json files" in result.output


@pytest.mark.parametrize(
    ("rate", "options"),
    [("4xNDR", "w=2 s=7 e=8"), ("4xHDR", "w=2 s=7 e=4"), ("2xNDR", "w=16 s=7 e=8"), ("4xQDR", "w=2 s=7"), ("400G", "")],
)
def test_ibsim_port_options_enable_exactly_the_planned_width_and_rate(rate, options):
    assert ibsim_port_options(rate) == options


def test_every_port_line_of_the_expected_net_carries_its_rate_as_ibsim_options():
    _loaded, plan = planned("superpod-h100-1su")
    ports = [line for line in expected_net(plan, "compute").splitlines() if line.startswith("[")]
    assert len(ports) == 2 * len(links_on(plan, "compute"))
    assert all(f"]\t{ibsim_port_options(line.rsplit(' ', 1)[1])}\t#" in line for line in ports)
    assert Counter(line.rsplit(" ", 1)[1] for line in ports) == {"4xNDR": 1008, "2xNDR": 8}


@pytest.mark.external
@needs_ibsim
def test_ibsim_brings_links_up_at_the_rate_of_the_port_options_alone(tmp_path):
    """ibsim before 0.12 reads no NDR from a port line's comment and brings such a link up at SDR: the options
    must carry the rate. With the comments' rates taken out, every link still comes up at the planned width and
    rate (one generation down on Debian's ibsim 0.10, whose rates end at HDR)."""
    _loaded, plan = planned("superpod-h100-1su")
    net = one_generation(expected_net(plan, "compute"), DOWN)
    net = re.sub(r" lid 0 (\d+x[A-Z]+)$", " lid 0", net, flags=re.MULTILINE)
    found = discover(net, tmp_path / "sim")
    rates = Counter(re.findall(r" lid \d+ (\d+x[A-Z]+)$", found, flags=re.MULTILINE))
    assert rates == {"4xHDR": 1008, "2xHDR": 8}


@pytest.mark.external
@needs_ibsim
def test_link_trained_at_a_lower_rate_is_wrong_speed(tmp_path):
    """One port enabled only up to one generation below the plan (an HDR optic on an NDR link): verify reports
    the link at the wrong speed by its cable, and nothing else."""
    _loaded, plan = planned("superpod-h100-1su")
    slow = _host_link(plan, "gpu020", 8)
    records = {r["description"]: r["id"] for r in net_records(plan, list(planned_links(plan, "compute")))}
    net = one_generation(expected_net(plan, "compute"), DOWN)
    net = set_port_rate(net, records[slow.a.node], 1, "4x" + DOWN[DOWN["NDR"]])
    found = discover(net, tmp_path / "sim")
    (result,) = verify(plan, [_write(tmp_path, "found.txt", one_generation(found, UP))], [])
    (finding,) = result.findings
    assert (finding.kind, finding.cable, finding.found) == ("wrong-speed", slow.cable, "4xHDR")
    assert finding.a_device == "gpu020" and finding.a_port == slow.a.port


# --- Ethernet: the real lldpd in network namespaces ---------------------------------------------------------


def _interface_names(plan: Plan, links: list[PlannedLink], faults: dict[int, str]) -> list[tuple[str, str, str, str]]:
    """(a device, a interface, b device, b interface) of every cable to lay: an end's port id where it is a
    valid interface name, else e<n> on that device (the catalog gives no interface name for it)."""
    used: dict[str, int] = {}

    def name(end) -> str:
        ok = len(end.node_port) <= 15 and all(c.isalnum() or c in "-_." for c in end.node_port)
        if ok:
            return end.node_port
        used[end.device] = used.get(end.device, 0) + 1
        return f"e{used[end.device]}"

    return [(p.a.device, name(p.a), p.b.device, name(p.b)) for p in links if faults.get(p.link) != "unplug"]


@pytest.mark.external
@needs_lldpd
def test_real_lldpd_neighbours_match_and_name_the_faults(tmp_path):
    """The lab design's in-band and out-of-band networks built of namespaces with the real lldpd: clean, verify
    finds nothing; with two host cables crossed at a leaf and one BMC cable unplugged, exactly those."""

    _loaded, plan = planned("lab-4-servers")
    links = [p for n in ethernet_networks(plan) for p in planned_links(plan, n)]
    leaf = next(s.name for s in plan.switches("inband") if s.tier == 1)
    crossed = [p for p in links if p.network == "inband" and leaf in (p.a.device, p.b.device) and not p.a.switch][:2]
    unplugged = next(p for p in links if p.network == "oob" and p.a.port in ("BMC", "iDRAC", "XCC"))
    for faults in ({}, {crossed[0].link: "cross", crossed[1].link: "cross", unplugged.link: "unplug"}):
        lab = Lab(tmp_path / ("faults" if faults else "clean"))
        lab.folder.mkdir()
        try:
            cables = _interface_names(plan, links, faults)
            if faults:  # the two hosts' cables land on each other's leaf ports
                i, j = (next(k for k, c in enumerate(cables) if c[0] == p.a.device and c[2] == p.b.device and
                        c[3] == p.b.node_port) for p in crossed)  # fmt: skip
                (a1, i1, b1, p1), (a2, i2, b2, p2) = cables[i], cables[j]
                cables[i], cables[j] = (a1, i1, b2, p2), (a2, i2, b1, p1)
            for cable in cables:
                lab.cable(*cable)
            lab.start()
            switches = {d for n in ethernet_networks(plan) for d in (s.name for s in plan.switches(n))}
            ends = Counter(device for a, _ai, b, _bi in cables for device in (a, b))
            single = min(d for d, n in ends.items() if n == 1)  # a device with one cable: one neighbour
            outputs = lab.wait_for({d: n for d, n in ends.items() if d in switches or d == single})
        finally:
            lab.close()
        folder = tmp_path / ("lldp-faults" if faults else "lldp-clean")
        folder.mkdir()
        single_text = outputs.pop(single)
        for switch, text in outputs.items():
            _write(folder, f"{switch}.json", text)
        results = verify(plan, [], [folder])
        found = sorted((f.kind, f.cable) for f in _findings(results))
        if not faults:
            assert found == []
            assert all(isinstance(json.loads(t)["lldp"]["interface"], list) for t in outputs.values())  # several
            assert isinstance(json.loads(single_text)["lldp"]["interface"], dict)  # lldpd's one-neighbour shape
            (link,) = parse_lldp(_write(tmp_path, "single.json", single_text), single)
            (planned_link,) = [p for p in links if single in (p.a.device, p.b.device)]
            switch_end = planned_link.b if planned_link.a.device == single else planned_link.a
            assert link.b == (switch_end.device, switch_end.port)
        else:
            first, second = sorted(crossed, key=lambda p: p.cable)
            assert found == [("missing", unplugged.cable), ("swapped", f"{first.cable} + {second.cable}")]


@pytest.mark.parametrize(
    ("mau", "gbps"),
    [
        ("100GbaseCR4 - 100GBASE-R PCS/PMA over 4 lane shielded copper", 100),
        ("400GbaseDR4 - 400GBASE-R PCS/PMA over 4-lane single-mode fiber", 400),
        ("10GigBaseSR - R fiber over 850 nm optics", 10),
        ("1000BaseTFD - Four-pair Category 5 UTP, full duplex mode", 1),
        ("2p5GbaseX - 2.5GBASE-X PMD", 2.5),
        ("5GigT - 5GBASE-T", 5),
        ("10G1GbasePRXD1 - one single-mode fiber EPON", 0),
        ("", 0),
    ],
)
def test_lldpd_mau_types_give_the_neighbour_speed(mau, gbps):
    assert mau_speed_gbps(mau) == gbps
