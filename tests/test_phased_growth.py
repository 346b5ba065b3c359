"""Phased growth: independent changes stay independent, a plan lock keeps what is built, a growth reserve
sizes the fabric for its final size, and the diff of a phase is pure additions."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import DESIGNS, write_design

from gpucluster import load_design, plan_design
from gpucluster.artifacts.cabling import cable_rows
from gpucluster.artifacts.plan_json import plan_chunks
from gpucluster.artifacts.summary import summary_lines
from gpucluster.cli import main
from gpucluster.components.offline import run_offline
from gpucluster.errors import DesignError
from gpucluster.growth.phases import lock_changes, lock_text, write_lock
from gpucluster.plan.lock import Lock, read_lock
from gpucluster.plan.model import Plan


def _variant(tmp_path: Path, example: str, name: str, **sections: dict) -> Path:
    """An example design with some sections replaced or edited (dotted keys edit one field)."""
    design = yaml.safe_load((DESIGNS / f"{example}.yaml").read_text(encoding="utf-8"))
    for key, value in sections.items():
        section, _, field = key.partition("__")
        if field:
            design.setdefault(section, {})[field] = value
        else:
            design[section] = value
    return write_design(tmp_path, yaml.safe_dump(design, sort_keys=False), f"{name}.yaml")


def _plan(path: Path) -> Plan:
    return plan_design(load_design(path))


def _network_view(plan: Plan, network: str) -> tuple[set, dict, dict]:
    """A network's links (ports), its cables (id -> media, part, length, labels) and its switches' places."""
    links = {
        (link.a_device, link.a_port, link.b_device, link.b_port, link.speed_gbps)
        for link in plan.links
        if link.network == network
    }
    cables = {
        row.cable_id: (row.media, row.cable_part, row.length_m, row.a_label, row.b_label)
        for row in cable_rows(plan, network)
    }
    places = {d.name: (d.rack, d.u_position) for d in plan.devices.values() if d.network == network}
    return links, cables, places


def test_a_filesystem_swap_changes_no_compute_link_port_cable_or_label(tmp_path: Path) -> None:
    vast = _variant(tmp_path, "h200-512-two-teams", "vast")
    weka = _variant(
        tmp_path,
        "h200-512-two-teams",
        "weka",
        parallel_filesystem={"kind": "weka", "capacity_tb": 2000},
        object_storage={"capacity_tb": 5000},
    )
    before, after = _plan(vast), _plan(weka)
    assert {d.part for d in before.devices_with("storage")} != {d.part for d in after.devices_with("storage")}
    assert _network_view(before, "compute") == _network_view(after, "compute")
    servers = {d.name: (d.rack, d.u_position) for d in before.devices_with("gpu-server")}
    assert servers == {d.name: (d.rack, d.u_position) for d in after.devices_with("gpu-server")}


def test_compute_racks_and_central_fabric_racks_do_not_shift_with_the_central_racks_size(tmp_path: Path) -> None:
    """More storage racks in the middle of the hall move no scalable unit's rack and no compute spine."""
    small = _plan(_variant(tmp_path, "superpod-h200-4su", "lustre"))
    large = _plan(
        _variant(tmp_path, "superpod-h200-4su", "big", parallel_filesystem={"kind": "lustre", "capacity_tb": 12000})
    )
    assert len(large.devices_with("storage")) > len(small.devices_with("storage"))
    assert len(large.racks) > len(small.racks)  # within the central row
    su_racks = {r.name: (r.su, r.devices) for r in small.racks.values() if r.su is not None}
    assert su_racks == {r.name: (r.su, r.devices) for r in large.racks.values() if r.su is not None}
    assert _network_view(small, "compute") == _network_view(large, "compute")


def test_cable_ids_are_numbered_per_network_and_rack(tmp_path: Path) -> None:
    """Growing by a scalable unit renumbers no cable of the racks that were there: ids count per rack."""
    plan = _plan(DESIGNS / "superpod-h100-1su.yaml")
    for cable in plan.cables:
        link = plan.links[cable.links[0]]
        _prefix, rack, number = cable.id.split("-")
        # the rack of the cable's A end: a 1:2 splitter fibre carrying two hosts has its switch cage there
        a_end = link.b_device if link.b_half and len(cable.links) == 2 else link.a_device
        assert rack == plan.devices[a_end].rack and len(number) == 4
    assert len({c.id for c in plan.cables}) == len(plan.cables)


# -- the plan lock ---------------------------------------------------------------------------------------------


def _locked(plan: Plan, path: Path) -> Lock:
    write_lock(plan, path)
    return read_lock(path, plan.name, plan.catalog_parts)


def _key(link: object) -> tuple:
    return tuple(getattr(link, name) for name in ("network", "a_device", "a_port", "b_device", "b_port"))


def _placements(plan: Plan) -> dict[str, tuple[str, int]]:
    return {d.name: (d.rack, d.u_position) for d in plan.devices.values()}


def _cables(plan: Plan) -> dict[str, tuple]:
    """Cable id -> its links' ports and its labels as printed."""
    rows = {row.cable_id: (row.a_label, row.b_label) for row in cable_rows(plan)}
    return {
        cable.id: (
            sorted(
                (plan.links[i].a_device, plan.links[i].a_port, plan.links[i].b_device, plan.links[i].b_port)
                for i in cable.links
            ),
            rows[cable.id],
        )
        for cable in plan.cables
    }


@pytest.fixture(scope="module")
def phases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Plan, Lock, Plan, Path]:
    """h200-512-two-teams planned for 4 SUs (512 GPUs fill 3), locked, then grown to 768 GPUs under the lock."""
    folder = tmp_path_factory.mktemp("phases")
    reserve = {"compute_fabric__final_scalable_units": 4}
    first = _plan(_variant(folder, "h200-512-two-teams", "phase1", **reserve))
    lock = _locked(first, folder / "phase1.lock.json")
    second = plan_design(
        load_design(_variant(folder, "h200-512-two-teams", "phase2", **reserve, compute__gpus=768)), lock=lock
    )
    return first, lock, second, folder


def test_growing_512_to_768_gpus_under_a_lock_moves_nothing_and_only_adds(phases) -> None:
    first, lock, second, _folder = phases
    assert (first.totals.production_gpus, second.totals.production_gpus) == (512, 768)
    before, after = _placements(first), _placements(second)
    assert all(after[name] == place for name, place in before.items()), "a built device moved"
    old_cables, new_cables = _cables(first), _cables(second)
    assert all(new_cables.get(cable_id) == value for cable_id, value in old_cables.items()), "a cable changed"
    assert {_key(link) for link in first.links} <= {_key(link) for link in second.links}
    changes = lock_changes(lock, second)
    assert changes.pure_growth and not changes.moves and not changes.removed_cables
    assert changes.kept_devices == len(first.devices) and changes.added_devices and changes.added_racks
    assert len(changes.added_cables) == len(second.cables) - len(first.cables)


def test_a_plan_built_under_its_own_lock_is_the_same_plan(tmp_path: Path) -> None:
    path = DESIGNS / "superpod-h100-1su.yaml"
    plan = _plan(path)
    lock = _locked(plan, tmp_path / "lock.json")
    again = plan_design(load_design(path), lock=lock)
    assert _placements(again) == _placements(plan) and _cables(again) == _cables(plan)
    assert lock_text(again) == lock_text(plan) == (tmp_path / "lock.json").read_text(encoding="utf-8")
    loaded = load_design(path)
    assert b"".join(plan_chunks(again, loaded)) == b"".join(plan_chunks(plan, loaded))  # plan.json, byte for byte
    assert lock_changes(lock, again).pure_growth


def test_the_lock_is_sorted_one_record_per_line(tmp_path: Path) -> None:
    plan = _plan(DESIGNS / "lab-4-servers.yaml")
    lines = lock_text(plan).splitlines()
    records = [json.loads(line.rstrip(",")) for line in lines if line.startswith('{"')]
    assert len(records) == len(plan.racks) + len(plan.devices) + len(plan.links) + len(plan.cables)
    devices = [r["name"] for r in records if set(r) == {"name", "part", "rack", "u"}]
    assert devices == sorted(devices)
    assert json.loads(lock_text(plan))["schema"] == "gpucluster-lock/1"


def test_removed_equipment_is_listed_and_new_equipment_takes_free_space(tmp_path: Path) -> None:
    big = _plan(DESIGNS / "superpod-h100-1su.yaml")
    lock = _locked(big, tmp_path / "lock.json")
    smaller = plan_design(
        load_design(_variant(tmp_path, "superpod-h100-1su", "fewer", management__management_servers=2)), lock=lock
    )
    changes = lock_changes(lock, smaller)
    # the lighter rack needs fewer PDUs: the plan says which can go (the lock does not keep a PDU the load
    # no longer needs)
    assert [n for n in changes.removed_devices if "-pdu-" not in n] == ["head-03", "head-04"]
    assert not changes.moves
    more = plan_design(
        load_design(_variant(tmp_path, "superpod-h100-1su", "more", management__management_servers=6)), lock=lock
    )
    changes = lock_changes(lock, more)
    # two more head nodes (and the PDU the heavier rack may need)
    assert [n for n in changes.added_devices if "-pdu-" not in n] == ["head-05", "head-06"] and not changes.moves
    head = {d.rack for d in big.devices_with("management-server")}
    assert {more.devices["head-05"].rack, more.devices["head-06"].rack} <= head  # beside the others, in free U


def test_growing_2_to_4_sus_with_a_growth_reserve_adds_only_leaf_and_su_cables(tmp_path: Path) -> None:
    """The RA's way: spines sized for 4 SUs from the start, so SUs 3 and 4 bring their leaves and leaf-spine
    cables and no port of the first two SUs' fabric changes (no lock needed for the compute fabric)."""
    reserve = {"compute_fabric__final_scalable_units": 4}
    two = _plan(
        _variant(tmp_path, "superpod-h200-4su", "two", compute__servers=61, compute__spare_servers=2, **reserve)
    )
    four = _plan(_variant(tmp_path, "superpod-h200-4su", "four", **reserve))
    assert (two.settings.scalable_units, four.settings.scalable_units) == (2, 4)
    assert two.totals.switches["compute"]["spine"] == four.totals.switches["compute"]["spine"] == 16
    old_links, old_cables, old_places = _network_view(two, "compute")
    new_links, new_cables, new_places = _network_view(four, "compute")
    assert old_links <= new_links
    assert all(new_cables[cable_id] == value for cable_id, value in old_cables.items())
    assert all(new_places[name] == place for name, place in old_places.items())
    added = {d.name for d in four.devices.values()} - {d.name for d in two.devices.values()}
    assert all(link[0] in added or link[2] in added for link in new_links - old_links)
    new_leaves = {d.name for d in four.switches("compute", 1)} - {d.name for d in two.switches("compute", 1)}
    assert new_leaves and {d.su for d in four.devices.values() if d.name in new_leaves} == {3, 4}
    # without the reserve, 2 SUs take 8 spines and growing re-cables every leaf-spine link
    bare = _plan(_variant(tmp_path, "superpod-h200-4su", "bare", compute__servers=61, compute__spare_servers=2))
    assert bare.totals.switches["compute"]["spine"] == 8


def test_growing_the_ra_2_to_4_sus_keeps_every_in_band_and_out_of_band_core_port(tmp_path: Path) -> None:
    """The in-band leaf pairs are packed across the SUs (RA Table 7), yet a growth reserve sizes the in-band core
    for the final SUs: the grown cluster adds a leaf pair and access switches, and every leaf-core and
    access-core link of the first phase stays on its ports (the out-of-band uplinks on the core's last ports)."""
    ra = Path(__file__).parent / "designs" / "ra-h100-4su.yaml"
    design = yaml.safe_load(ra.read_text(encoding="utf-8"))
    design["compute_fabric"]["final_scalable_units"] = 4
    four = _plan(write_design(tmp_path, yaml.safe_dump(design, sort_keys=False), "four.yaml"))
    design["compute"]["servers"] = 63
    two = _plan(write_design(tmp_path, yaml.safe_dump(design, sort_keys=False), "two.yaml"))
    assert (two.settings.scalable_units, four.settings.scalable_units) == (2, 4)
    assert two.totals.switches["inband"]["spine"] == four.totals.switches["inband"]["spine"] == 2
    assert (two.totals.switches["inband"]["leaf"], four.totals.switches["inband"]["leaf"]) == (4, 6)

    def core_links(plan: Plan) -> set[tuple]:
        return {_key(link) for link in plan.links if link.network in ("inband", "oob") and link.tier >= 1}

    assert core_links(two) < core_links(four)
    oob_core = {link.b_device for link in four.links if link.network == "oob" and link.tier == 1}
    assert oob_core == {"inband-spine-01", "inband-spine-02"}


def test_growing_the_ra_2_to_16_sus_under_a_reserve_keeps_every_out_of_band_core_port(tmp_path: Path) -> None:
    """The out-of-band network's growth reserve: at 16 SUs the in-band cores have no ports left for the access
    switches' uplinks, so without planning for that size a 2-SU phase put them on the cores and the 16-SU plan moved
    all of them to an aggregation pair. Planned for the final size, the first phase already has the aggregation pair
    at its final rack positions, and growing keeps every access-to-core link on its ports."""
    ra = Path(__file__).parent / "designs" / "ra-h100-4su.yaml"
    design = yaml.safe_load(ra.read_text(encoding="utf-8"))
    design["compute_fabric"]["final_scalable_units"] = 16
    design["compute"]["servers"] = 63
    two = _plan(write_design(tmp_path, yaml.safe_dump(design, sort_keys=False), "two.yaml"))
    design["compute"]["servers"] = 16 * 32 - 5
    sixteen = _plan(write_design(tmp_path, yaml.safe_dump(design, sort_keys=False), "sixteen.yaml"))
    assert (two.settings.scalable_units, sixteen.settings.scalable_units) == (2, 16)

    def core_links(plan: Plan) -> set[tuple]:
        return {_key(link) for link in plan.links if link.network == "oob" and link.tier >= 1}

    def aggregation(plan: Plan) -> dict[str, tuple]:
        return {d.name: (d.rack, d.u_position) for d in plan.switches("oob") if (d.tier or 0) > 1}

    def su_links(plan: Plan) -> set[tuple]:  # the access switches of the SUs (not of the central or spine racks)
        return {k for k in core_links(plan) if plan.devices[k[1]].su is not None}

    assert su_links(two) and su_links(two) < su_links(sixteen)
    assert len(aggregation(two)) == len(aggregation(sixteen)) == 2
    assert {k[3] for k in core_links(two)} == {k[3] for k in core_links(sixteen)} == set(aggregation(sixteen))
    # the central racks' access switches took core ports after those the SUs to come take now
    central_ports = {(k[3], k[4]) for k in core_links(two) - su_links(two)}
    assert central_ports and not central_ports & {(k[3], k[4]) for k in su_links(sixteen)}


def test_a_growth_reserve_below_the_current_size_is_a_located_error(tmp_path: Path) -> None:
    path = _variant(tmp_path, "superpod-h200-4su", "shrunk", compute_fabric={"final_scalable_units": 2})
    with pytest.raises(DesignError) as error:
        load_and_plan(path)
    problem = error.value.problems[0]
    assert problem.field == "compute_fabric.final_scalable_units" and problem.line > 0
    assert "fewer than the 4 scalable units" in problem.message


def load_and_plan(path: Path) -> Plan:
    return plan_design(load_design(path))


def test_the_summary_shows_the_growth_reserve(tmp_path: Path) -> None:
    plan = _plan(
        _variant(
            tmp_path,
            "superpod-h200-4su",
            "two",
            compute__servers=61,
            compute__spare_servers=2,
            compute_fabric__final_scalable_units=4,
        )
    )
    text = "\n".join(summary_lines(plan))
    assert "growth reserve: planned for 4 scalable units, 2 built" in text


# -- the command line --------------------------------------------------------------------------------------------


def test_build_writes_the_lock_beside_the_design_and_keeps_it(tmp_path: Path) -> None:
    design = _variant(tmp_path, "lab-4-servers", "lab")
    first = CliRunner().invoke(
        main, ["build", str(design), "-o", str(tmp_path / "out"), "--only", "plan"], catch_exceptions=False
    )
    assert first.exit_code == 0, first.output
    lock = tmp_path / "lab.lock.json"
    assert lock.exists() and f"wrote {lock}" in first.output
    text = lock.read_text(encoding="utf-8")
    second = CliRunner().invoke(main, ["build", str(design), "-o", str(tmp_path / "out"), "--only", "plan"])
    assert second.exit_code == 0 and "lock: kept" in second.output
    assert lock.read_text(encoding="utf-8") == text


def _lock_json(cluster: str = "lab-4-servers", device: str = "", **extra: object) -> str:
    """A lock's text with one device record (given as its JSON) on a line of its own."""
    head = {"schema": "gpucluster-lock/1", "cluster": cluster, "racks": [], "links": [], "cables": [], **extra}
    return json.dumps(head)[:-1] + f', "devices": [\n{device}\n]}}'


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"schema": "gpucluster-lock/1",\n"cluster": "lab-4-servers",\n"racks": [\n', "not JSON"),
        ('{"schema": "terraform-state"}', "not a plan lock of this tool"),
        ("[1, 2, 3]", "not a plan lock of this tool"),
        (_lock_json("other"), "the cluster 'other'"),
        (_lock_json(x=1), "unknown field"),
        (_lock_json(device='{"name": "gpu1", "part": "p", "rack": "A01", "u": "7"}'), ":2:51: devices[0].u"),
        (_lock_json(device='{"name": "gpu1", "part": "p", "rack": "A01", "u": 7}'), "a rack the lock does not list"),
        (_lock_json(device='{"name": "gpu1\\n$(rm)", "part": "p", "rack": "A01", "u": 7}'), "devices[0].name"),
        ("[" * 100_000, "not"),
    ],
)
def test_a_corrupted_or_foreign_lock_is_a_located_error_and_nothing_is_written(
    tmp_path: Path, content: str, expected: str
) -> None:
    design = _variant(tmp_path, "lab-4-servers", "lab")
    lock = tmp_path / "lab.lock.json"
    lock.write_text(content, encoding="utf-8")
    result = CliRunner().invoke(main, ["build", str(design), "-o", str(tmp_path / "out"), "--only", "plan"])
    assert result.exit_code == 2, result.output
    assert expected in result.output and str(lock) in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists() and lock.read_text(encoding="utf-8") == content


def test_a_lock_above_the_size_bound_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpucluster.plan.lock as lock_module

    plan = _plan(DESIGNS / "lab-4-servers.yaml")
    path = tmp_path / "lab.lock.json"
    write_lock(plan, path)
    monkeypatch.setattr(lock_module, "MAX_LOCK_BYTES", 1000)
    with pytest.raises(DesignError, match="a lock is at most"):
        read_lock(path, plan.name, plan.catalog_parts)


def test_relock_plans_afresh(tmp_path: Path) -> None:
    design = _variant(tmp_path, "lab-4-servers", "lab")
    (tmp_path / "lab.lock.json").write_text("not a lock", encoding="utf-8")
    result = CliRunner().invoke(main, ["build", str(design), "-o", str(tmp_path / "out"), "--only", "plan", "--relock"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "lab.lock.json").read_text(encoding="utf-8"))["cluster"] == "lab-4-servers"


@pytest.mark.slow
def test_diff_under_the_lock_lists_the_additions_and_refuses_moves(tmp_path: Path) -> None:
    old = _variant(tmp_path, "superpod-h100-1su", "old")
    CliRunner().invoke(main, ["build", str(old), "-o", str(tmp_path / "out"), "--only", "plan"], catch_exceptions=False)
    grown = _variant(tmp_path, "superpod-h100-1su", "grown", management__management_servers=6)
    result = CliRunner().invoke(main, ["diff", str(old), str(grown), "-o", str(tmp_path / "d"), "--no-files"])
    assert result.exit_code == 0, result.output
    assert "lock: added " in result.output and "head-[05-06]" in result.output
    folder = tmp_path / "d" / "superpod-h100-1su-vs-superpod-h100-1su"
    review = (folder / "review.html").read_text(encoding="utf-8")
    assert "Phase against the plan lock" in review and "pure growth" in review
    assert sorted(p.name for p in (folder / "racks").glob("*.html"))  # the printouts of the racks that change
    # growing 1 SU to 2 without a growth reserve takes 8 spines instead of 4: every leaf-spine link is re-cabled
    two = _variant(tmp_path, "superpod-h100-1su", "two", compute__servers=61, compute__spare_servers=2)
    refused = CliRunner().invoke(main, ["diff", str(old), str(two), "-o", str(tmp_path / "e"), "--no-files"])
    assert refused.exit_code == 1 and "--allow-moves" in refused.output
    assert "link re-cabled: compute: compute-leaf-su01-r1" in refused.output
    allowed = CliRunner().invoke(
        main, ["diff", str(old), str(two), "-o", str(tmp_path / "e"), "--no-files", "--allow-moves"]
    )
    assert allowed.exit_code == 0, allowed.output


def test_diff_no_lock_compares_alternatives_without_reading_the_lock(tmp_path: Path) -> None:
    old = _variant(tmp_path, "superpod-h100-1su", "old")
    (tmp_path / "old.lock.json").write_text("not a lock", encoding="utf-8")  # read, it would be an error
    two = _variant(tmp_path, "superpod-h100-1su", "two", compute__servers=61, compute__spare_servers=2)
    command = ["diff", str(old), str(two), "-o", str(tmp_path / "d"), "--no-files", "--no-lock"]
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 0, result.output
    assert "lock:" not in result.output and "re-cabled" not in result.output
    review = (tmp_path / "d" / "superpod-h100-1su-vs-superpod-h100-1su" / "review.html").read_text(encoding="utf-8")
    assert "Phase against the plan lock" not in review
    both = CliRunner().invoke(
        main, ["diff", str(old), str(two), "-o", str(tmp_path / "e"), "--no-lock", "--lock", str(tmp_path / "x.json")]
    )
    assert both.exit_code == 2 and "not both" in both.output and not (tmp_path / "e").exists()


# -- the Pulumi tree -------------------------------------------------------------------------------------------------


def test_the_pulumi_tree_of_a_phase_keeps_every_kept_devices_resource(tmp_path: Path) -> None:
    """Under the SDK's mocks: phase 2 (under phase 1's lock) registers every resource of phase 1 again, by the same
    name, type and parent (so `pulumi preview --diff` replaces and deletes nothing), and a GPU server or leaf that
    gained no cable has the same properties (no update either)."""
    reserve = {"compute_fabric__final_scalable_units": 4}
    one = _variant(tmp_path, "superpod-h200-4su", "one", compute__servers=61, compute__spare_servers=2, **reserve)
    two = _variant(tmp_path, "superpod-h200-4su", "two", **reserve)
    lock = tmp_path / "one.lock.json"
    write_lock(_plan(one), lock)
    program = Path(__file__).resolve().parents[1] / "__main__.py"
    before = run_offline(program, {"design": str(one), "lock": str(lock)})
    after = run_offline(program, {"design": str(two), "lock": str(lock)})
    old = {r.urn: r for r in before.resources}
    new = {r.urn: r for r in after.resources}
    assert set(old) < set(new), "a resource of phase 1 would be replaced or deleted"
    servers = [urn for urn, r in old.items() if r.type == "gpu-cluster:compute:GpuServer"]
    assert len(servers) == 63 and all(new[urn].inputs == old[urn].inputs for urn in servers)
    leaves = [urn for urn, r in old.items() if r.type == "gpu-cluster:network:Switch" and "-leaf-su01" in r.name]
    assert leaves and all(new[urn].inputs == old[urn].inputs for urn in leaves if "compute" in urn)
    added = {new[urn].name for urn in set(new) - set(old)}
    assert "superpod-h200-4su-gpu127" in added and "superpod-h200-4su-compute-leaf-su04-r8" in added


def test_a_lock_that_stacks_two_devices_in_one_unit_is_refused(tmp_path: Path) -> None:
    plan = _plan(DESIGNS / "lab-4-servers.yaml")
    path = tmp_path / "lab.lock.json"
    write_lock(plan, path)
    data = json.loads(path.read_text(encoding="utf-8"))
    servers = [d for d in data["devices"] if d["name"].startswith("gpu")]
    servers[1]["u"] = servers[0]["u"]  # two servers in the same rack units
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DesignError, match=r"the plan lock puts gpu.* taken by another device of the lock"):
        plan_design(load_design(DESIGNS / "lab-4-servers.yaml"), lock=read_lock(path, plan.name, plan.catalog_parts))


def _lock_with(tmp_path: Path, record: str, edit: Callable[[str], str]) -> Path:
    """lab-4-servers' lock with the second record of a list (`record` starts each of its lines) edited."""
    plan = plan_design(load_design(DESIGNS / "lab-4-servers.yaml"))
    path = tmp_path / "lab.lock.json"
    write_lock(plan, path)
    lines = path.read_text(encoding="utf-8").split("\n")
    second = [i for i, line in enumerate(lines) if line.startswith(record)][1]
    lines[second] = edit(lines[second])
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def test_two_racks_at_one_floor_position_in_a_lock_are_refused_at_its_line(tmp_path: Path) -> None:
    path = _lock_with(tmp_path, '{"height_u"', lambda line: re.sub(r'"position":\d+', '"position":0', line))
    with pytest.raises(DesignError) as error:
        read_lock(path, "lab-4-servers", load_design(DESIGNS / "lab-4-servers.yaml").catalog.parts)
    assert [str(p) for p in error.value.problems] == [
        f"{path}:6:66: racks[1].position: rack A02 at row 0 position 0, where rack A01 stands"
    ]


def test_a_cable_id_listed_twice_in_a_lock_is_refused_not_renumbered(tmp_path: Path) -> None:
    path = _lock_with(tmp_path, '{"a_label"', lambda line: re.sub(r'"id":"[^"]+"', '"id":"C-A01-0001"', line))
    with pytest.raises(DesignError) as error:
        read_lock(path, "lab-4-servers", load_design(DESIGNS / "lab-4-servers.yaml").catalog.parts)
    (problem,) = error.value.problems
    assert str(problem).startswith(f"{path}:") and "cables[1].id: cable id C-A01-0001 listed twice" in str(problem)


def _lab_parts() -> dict:
    return load_design(DESIGNS / "lab-4-servers.yaml").catalog.parts


def test_a_lock_link_to_a_port_its_device_does_not_have_is_the_locks_error(tmp_path: Path) -> None:
    path = _lock_with(
        tmp_path, '{"a":', lambda line: re.sub(r'"a":\["([^"]+)","[^"]+"\]', r'"a":["\1","port99"]', line)
    )
    with pytest.raises(DesignError) as error:
        read_lock(path, "lab-4-servers", _lab_parts())
    (problem,) = error.value.problems
    assert re.fullmatch(
        rf"{re.escape(str(path))}:\d+:\d+: links\[1\]\.a\[1\]: \S+ \(part \S+\) has no port 'port99'", str(problem)
    )


def test_a_lock_device_of_a_part_the_catalog_does_not_hold_is_the_locks_error(tmp_path: Path) -> None:
    path = _lock_with(tmp_path, '{"name"', lambda line: re.sub(r'"part":"[^"]+"', '"part":"no-such-part"', line))
    with pytest.raises(DesignError) as error:
        read_lock(path, "lab-4-servers", _lab_parts())
    (problem,) = error.value.problems
    assert "devices[1].part: part 'no-such-part' is not in the catalog" in str(problem)


def test_an_error_in_a_pretty_printed_lock_is_placed_at_its_value(tmp_path: Path) -> None:
    plan = plan_design(load_design(DESIGNS / "lab-4-servers.yaml"))
    path = tmp_path / "lab.lock.json"
    write_lock(plan, path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["racks"][1]["position"] = data["racks"][0]["position"]
    text = json.dumps(data, indent=2)
    path.write_text(text, encoding="utf-8")
    lines = text.split("\n")
    second_rack = next(i for i, line in enumerate(lines) if line.strip() == '"name": "A02",')
    line = next(i for i in range(second_rack, len(lines)) if '"position"' in lines[i]) + 1  # after "name"
    with pytest.raises(DesignError) as error:
        read_lock(path, "lab-4-servers", plan.catalog_parts)
    (problem,) = error.value.problems
    assert (problem.line, problem.field) == (line, "racks[1].position")
    assert problem.column == lines[line - 1].index(": ") + 3


def test_a_rack_scale_lock_keeps_its_backplane_ports_and_refuses_one_beyond_the_switch_chips(tmp_path: Path) -> None:
    """The catalog lists no NVLink backplane ports: a lock's are checked by the names the plan gives them."""
    loaded = load_design(DESIGNS / "gb200-nvl72-1su.yaml")
    path = tmp_path / "gb200.lock.json"
    write_lock(plan_design(loaded), path)
    assert read_lock(path, loaded.design.name, loaded.catalog.parts).links
    text = path.read_text(encoding="utf-8")
    path.write_text(re.sub(r'"chip1-acp(\d+)"', r'"chip99-acp\1"', text, count=1), encoding="utf-8")
    with pytest.raises(DesignError) as error:
        read_lock(path, loaded.design.name, loaded.catalog.parts)
    (problem,) = error.value.problems
    assert "has no port 'chip99-acp" in problem.message and problem.line > 1
