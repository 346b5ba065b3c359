"""The cable schedule (cabling.csv / cabling-<network>.xlsx) against the plan and the hardware's rules."""

from __future__ import annotations

import csv
import dataclasses
from collections import Counter, defaultdict
from pathlib import Path

import openpyxl
import pytest
import yaml
from conftest import planned, write_design

import gpucluster
from gpucluster import load_design, plan_design
from gpucluster.analyse.rules import ORDERED_LENGTH_MAX_RATIO
from gpucluster.artifacts import cabling
from gpucluster.artifacts.cabling import COLUMNS, XLSX_COLUMNS, cable_rows
from gpucluster.catalog.ports import port_details
from gpucluster.pipeline import analyse_plan
from gpucluster.plan.labels import JOIN, SEPARATOR
from gpucluster.plan.model import NETWORKS, RULE_PREFIX, Plan
from gpucluster.plan.queries import links_on

DESIGNS = [
    "lab-4-servers",
    "superpod-h100-1su",
    "b200-roce-2su",
    pytest.param("h100-16k-3tier", marks=pytest.mark.slow),
]


def _connectors(devices: str, ports: str) -> list[tuple[str, list[str]]]:
    """A row's end as (device, ports) per plug: plugs joined by ' + ', ports of one plug by '+'."""
    return [(d, p.split("+")) for d, p in zip(devices.split(JOIN), ports.split(JOIN), strict=True)]


def _row_links(row: dict[str, str]) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """The (A port, B port) pairs a schedule row carries, in order."""
    (a_device, a_ports), *_ = _connectors(row["a_device"], row["a_port"])
    b_ports = [(device, port) for device, ports in _connectors(row["b_device"], row["b_port"]) for port in ports]
    assert len(a_ports) == len(b_ports) == int(row["links"]), row
    return [((a_device, a), b) for a, b in zip(a_ports, b_ports, strict=True)]


def _rows(plan: Plan) -> list[dict[str, str]]:
    return [dict(zip(COLUMNS, (str(v) for v in row), strict=True)) for row in cable_rows(plan)]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    loaded, plan = planned("superpod-h100-1su")
    folder = tmp_path_factory.mktemp("cabling")
    cabling.write(plan, loaded, folder)
    return plan, folder / "cabling"


@pytest.mark.parametrize("name", DESIGNS)
def test_every_linked_port_appears_in_exactly_one_cable_row(name):
    _loaded, plan = planned(name)
    seen = Counter(port for row in _rows(plan) for link in _row_links(row) for port in link)
    linked = {port for link in plan.links for port in ((link.a_device, link.a_port), (link.b_device, link.b_port))}
    assert set(seen) == linked
    assert max(seen.values()) == 1


@pytest.mark.parametrize("name", DESIGNS)
def test_cables_of_each_network_carry_exactly_its_links(name):
    _loaded, plan = planned(name)
    carried = defaultdict(set)
    for row in _rows(plan):
        carried[row["network"]] |= {frozenset(link) for link in _row_links(row)}
    for network in NETWORKS:
        links = {frozenset(((k.a_device, k.a_port), (k.b_device, k.b_port))) for k in links_on(plan, network)}
        assert carried[network] == links, network


@pytest.mark.parametrize("name", DESIGNS)
def test_every_length_covers_the_distance_between_the_racks_and_the_route(name):
    _loaded, plan = planned(name)
    racks = plan.racks
    for row in _rows(plan):
        length = float(row["length_m"])
        assert length >= float(row["run_length_m"]), row["cable_id"]
        a = racks[row["a_rack"]]
        for b_name in row["b_rack"].split(JOIN):
            b = racks[b_name]
            assert length >= (abs(a.x_mm - b.x_mm) + abs(a.y_mm - b.y_mm)) / 1000, row["cable_id"]


@pytest.mark.parametrize("name", DESIGNS)
def test_no_run_exceeds_the_reach_of_its_cable_or_optics(name):
    _loaded, plan = planned(name)
    parts = plan.catalog_parts
    for cable in plan.cables:
        assert cable.length_m <= parts[cable.cable_part].reach_m, cable.id
        for optic in (cable.a_transceiver, cable.b_transceiver):
            if optic:
                assert parts[optic].reach_m >= cable.length_m, cable.id
                assert parts[optic].media == cable.media, cable.id
        assert (cable.a_transceiver is None) == (cable.media not in ("mmf", "smf")), cable.id


def test_media_is_the_first_that_reaches_copper_before_fibre():
    """Inside a rack, switch-to-switch twin-port cages get passive copper; far links get fibre."""
    _loaded, plan = planned("superpod-h100-1su")
    by_part = Counter((c.media, c.cable_part) for c in plan.cables)
    assert by_part[("dac", "mcp4y10-dac-ndr")] > 0
    for cable in plan.cables:
        if cable.media in ("mmf", "smf"):
            assert cable.run_length_m > 2, cable  # within 2 m the twin-port DAC would have reached


def _cage_modules(plan: Plan) -> dict[tuple[str, int], set[str]]:
    """The transceiver modules each twin-port cage was given, over all its cables."""
    twin = {}
    for part_id in {d.part for d in plan.devices.values()}:
        part = plan.catalog_parts[part_id]
        twin[part_id] = {
            d.name for g in getattr(part, "ports", []) if g.ports_per_cage == 2 for d in port_details(part, g.role)
        }
    modules = defaultdict(set)
    for cable in plan.cables:
        for i in cable.links:
            link = plan.links[i]
            for device, port, cage, optic in (
                (link.a_device, link.a_port, link.a_cage, cable.a_transceiver),
                (link.b_device, link.b_port, link.b_cage, cable.b_transceiver),
            ):
                if port in twin[plan.devices[device].part]:
                    modules[(device, cage)].add(optic or cable.cable_part)
    return modules


@pytest.mark.parametrize("name", DESIGNS)
def test_every_twin_port_cage_holds_one_transceiver_module(name):
    """A twin-port OSFP module serves both ports with one media and reach (SR8 or DR8)."""
    _loaded, plan = planned(name)
    modules = _cage_modules(plan)
    assert modules
    assert all(len(m) == 1 for m in modules.values()), [k for k, m in modules.items() if len(m) > 1][:5]


def test_a_cage_that_no_single_mode_optic_can_serve_is_a_planning_warning(tmp_path):
    """A UFM moved 60 m from its SU-1 leaf (the planner stands it beside them) shares a leaf cage with a
    near DGX: the cage must go single-mode, and the catalog has no flat-top twin-port single-mode module
    for the DGX, so the plan says which link keeps the cage mixed (every other cage holds one module)."""
    from gpucluster.plan.cables import add_cables

    # a UFM whose port runs at 400G (QM97x0 manual: "UFM 3.5 side: 1 port in 400 Gb/s"), so it takes a whole leaf
    # port beside a DGX link rather than half of a split port (MFP7E20 splitters are multimode only, 50 m)
    appliances = yaml.safe_load((Path(gpucluster.__file__).parent / "catalog/data/appliances.yaml").read_text())
    ufm = next(p for p in appliances["parts"] if p["id"] == "ufm-enterprise-ndr")
    ufm["ports"][0].update(speed_gbps=400, cages=1)
    (tmp_path / "ufm400.yaml").write_text(yaml.safe_dump({"sources": appliances["sources"], "parts": [ufm]}))
    path = write_design(
        tmp_path,
        "name: far-rows\nsite: {racks_per_row: 4, row_pitch_mm: 10000}\ncompute: {server: dgx-h100, servers: 127}\n"
        "catalog: [ufm400.yaml]\n",
    )
    loaded = load_design(path)
    plan = plan_design(loaded)
    leaf = plan.racks[plan.devices["compute-leaf-su01-r1"].rack]
    far = next(r for r in plan.racks.values() if 55_000 <= abs(r.x_mm - leaf.x_mm) + abs(r.y_mm - leaf.y_mm) <= 70_000)
    for ufm in plan.devices_with("fabric-manager"):
        ufm.rack = far.name
    plan.cables.clear()
    plan.findings.clear()
    add_cables(plan, loaded.catalog, loaded.design.site.cabling)
    warnings = [f for f in plan.findings if "no single-mode optic for it" in f.message]
    assert warnings and all(f.severity == "warning" for f in warnings)
    mixed = {key for key, modules in _cage_modules(plan).items() if len(modules) > 1}
    assert mixed
    named = {part for f in warnings for part in f.message.replace(" - ", " ").split()}
    assert all(any(device in part for part in named) for device, _cage in mixed)
    for cable in plan.cables:  # a multimode cable never carries a single-mode optic, and the other way round
        for optic in (cable.a_transceiver, cable.b_transceiver):
            if optic:
                assert plan.catalog_parts[optic].media == cable.media, cable.id


def test_labels_name_both_ends_near_end_first_and_are_unique(written):
    plan, folder = written
    with open(folder / "cabling.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(plan.cables)
    site = plan.design.site.name
    labels = [r["a_label"] for r in rows] + [label for r in rows for label in r["b_label"].split(JOIN)]
    assert len(labels) == len(set(labels))
    for row in rows:
        near, far = row["a_label"].split(SEPARATOR)[0], row["b_label"].split(JOIN)[0].split(SEPARATOR)[0]
        assert near.startswith(f"{site}.{row['a_rack']}-") and near.endswith(row["a_port"])
        assert far.startswith(f"{site}.{row['b_rack'].split(JOIN)[0]}-")
        assert row["a_label"] == near + SEPARATOR + JOIN.join(b.split(SEPARATOR)[0] for b in row["b_label"].split(JOIN))
    gpu = next(r for r in rows if r["a_device"] == "gpu001" and r["network"] == "compute")
    u = plan.devices["gpu001"].u_position
    assert gpu["a_label"].startswith(f"{site}.{plan.devices['gpu001'].rack}-{u:02d}:{gpu['a_port']}{SEPARATOR}")


def test_each_network_has_a_filtered_workbook_with_the_installers_columns_matching_the_csv(written):
    plan, folder = written
    with open(folder / "cabling.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    networks = [n for n in NETWORKS if links_on(plan, n)]
    assert sorted(p.name for p in folder.glob("*.xlsx")) == sorted(f"cabling-{n}.xlsx" for n in networks)
    columns = [name for name, _width in XLSX_COLUMNS]
    assert set(columns) < set(COLUMNS) and len(columns) < len(COLUMNS)  # the CSV keeps every column
    for network in networks:
        book = openpyxl.load_workbook(folder / f"cabling-{network}.xlsx", read_only=False)
        assert book.sheetnames == [network]
        sheet = book.worksheets[0]
        values = list(sheet.iter_rows(values_only=True))
        assert list(values[0]) == columns
        assert sheet.auto_filter.ref == f"A1:{openpyxl.utils.get_column_letter(len(columns))}{len(values)}"
        assert sheet.freeze_panes == "A2" and sheet.print_title_rows == "$1:$1"
        expected = [r for r in rows if r["network"] == network]
        assert [v[0] for v in values[1:]] == [r["cable_id"] for r in expected]
        for got, want in zip(values[1:], expected, strict=True):
            cells = dict(zip(columns, got, strict=True))
            assert cells["length_m"] == float(want["length_m"])
            for name in columns:
                if name != "length_m":
                    assert (cells[name] or "") == want[name], (network, name)


def test_a_network_above_the_workbook_size_is_split_by_rows_of_racks_in_cable_order(h200_4su, tmp_path):
    """Above max_rows cables a network gets a workbook per range of whole rows (by each cable's A-end rack), named
    by its rows; together they hold the network's cables once each, each in schedule order."""
    _loaded, plan = h200_4su
    compute = list(cable_rows(plan, "compute"))
    parts = [p for p in cabling.workbook_parts(plan, max_rows=len(compute) // 2 + 1) if p.network == "compute"]
    assert len(parts) == 2
    row_of = {rack.name: rack.row for rack in plan.racks.values()}
    letter = {rack.row: rack.name.rstrip("0123456789") for rack in plan.racks.values()}
    columns = [name for name, _width in XLSX_COLUMNS]
    held: list[str] = []
    for part in parts:
        assert part.rows is not None
        first, last = letter[min(part.rows)], letter[max(part.rows)]
        assert part.name == (f"compute-row-{first}" if first == last else f"compute-rows-{first}-{last}")
        path = tmp_path / cabling.workbook_name(part.name)
        cabling.write_workbook(plan, part, path)
        values = list(openpyxl.load_workbook(path).worksheets[0].iter_rows(values_only=True))
        assert list(values[0]) == columns and len(values) == part.cables + 1
        ids = [v[0] for v in values[1:]]
        assert ids == [row.cable_id for row in compute if row_of[row.a_rack] in part.rows]
        held += ids
    assert sorted(held) == sorted(row.cable_id for row in compute)
    assert "compute" in cabling.parts(plan)  # at the default size the 4-SU plan keeps one workbook per network


def test_a_networks_or_rows_schedule_is_the_whole_schedules_rows_for_them_in_the_same_order(h200_4su):
    """cable_rows for one network, or for the cables whose A end stands in some rows of racks, gives exactly the
    whole schedule's rows for those cables (the same values, splitters included), in cable order."""
    _loaded, plan = h200_4su
    every = list(cable_rows(plan))
    assert len(every) == len(plan.cables) and any(row.links > 1 for row in every)
    row_of = {rack.name: rack.row for rack in plan.racks.values()}
    rows = frozenset(sorted({rack.row for rack in plan.racks.values()})[::2])
    for network in NETWORKS:
        assert list(cable_rows(plan, network)) == [row for row in every if row.network == network]
        picked = [row for row in every if row.network == network and row_of[row.a_rack] in rows]
        assert list(cable_rows(plan, network, rows)) == picked
    assert list(cable_rows(plan, None, rows)) == [row for row in every if row_of[row.a_rack] in rows]


def test_splitter_rows_list_both_host_plugs(written):
    plan, folder = written
    with open(folder / "cabling.csv", newline="", encoding="utf-8") as handle:
        splitters = [r for r in csv.DictReader(handle) if plan.catalog_parts[r["cable_part"]].split == 2]
    assert splitters
    for row in splitters:
        assert "+" in row["a_port"] and JOIN not in row["a_device"]
        assert len(row["b_port"].split(JOIN)) == 2 and len(row["b_label"].split(JOIN)) == 2


def test_racks_stand_at_the_ra_rack_width_and_cable_runs_follow_that_pitch(tmp_path):
    """The RA's rack (NVIDIA's recommended DGX envelope, 700 x 1200 mm) sets the pitch of a row, and a wider
    rack_pitch_mm moves the racks and lengthens the runs between them."""
    _loaded, plan = planned("superpod-h100-1su")
    rack = plan.catalog_parts["legrand-nvidpd13"]
    assert (rack.width_mm, rack.depth_mm) == (700, 1200)  # type: ignore[attr-defined]
    assert all(r.x_mm == 700 * r.position for r in plan.racks.values())
    wide = plan_design(
        load_design(
            write_design(
                tmp_path,
                "name: superpod-h100-1su\nsite: {rack_pitch_mm: 800}\ncompute: {servers: 30, spare_servers: 1}\n",
            )
        )
    )
    assert all(r.x_mm == 800 * r.position for r in wide.racks.values())
    # the compute fabric's cables, the same in both (the example's object store puts its in-band on SN5600 leaves)
    runs = {c.id: c.run_length_m for c in plan.cables if c.network == "compute"}
    between = [c for c in wide.cables if c.id in runs and len({wide.devices[d].rack for d in _ends(wide, c)}) > 1]
    assert between and all(c.run_length_m > runs[c.id] for c in between)


def _ends(plan: Plan, cable) -> set[str]:
    return {name for i in cable.links for name in (plan.links[i].a_device, plan.links[i].b_device)}


def test_no_gb300_compute_fibre_is_ordered_at_more_than_twice_its_run() -> None:
    """Issue 31: the GB300 XDR compute runs of 4-15 m were ordered at 30 m when the catalog knew only 3, 30 and
    50 m of MFP7E30; at the family's real steps each run takes the next length up."""
    _loaded, plan = planned("gb300-nvl72-4su")
    compute = [c for c in plan.cables if c.network == "compute"]
    assert compute
    assert max(c.length_m / c.run_length_m for c in compute) <= ORDERED_LENGTH_MAX_RATIO
    assert not [g for g in plan.facts["overlong_cables"] if g["network"] == "compute"]


def test_a_cable_ordered_at_over_twice_its_run_is_a_warning_naming_the_part() -> None:
    loaded, _plan = planned("superpod-h100-1su")
    plan = plan_design(loaded)
    assert plan.facts["overlong_cables"] == []
    index = next(i for i, c in enumerate(plan.cables) if c.network == "compute" and c.run_length_m < 10)
    cables = list(plan.cables)
    cable = cables[index] = dataclasses.replace(plan.cables[index], length_m=30.0)
    plan = analyse_plan(dataclasses.replace(plan.made_from, cables=cables))
    (finding,) = [f for f in plan.findings if f.rule == RULE_PREFIX + "cables-near-their-run"]
    assert finding.severity == "warning"
    assert finding.subject == cable.cable_part
    assert f"{cable.id}: a {cable.run_length_m:g} m run ordered at 30 m" in finding.message
