"""Storage as the site has it (issue 32, item 4): several filesystems in one design, each new (bought) or the
site's existing one (cabled over its stated links, not bought); a block that speaks only InfiniBand on an Ethernet
storage network, and a storage link no cable reaches, are errors at the storage entry; a capacity alone sizes the
filesystem by capacity (the RA's H100 throughput level is not imposed on it), and the throughput the chosen boxes
give is shown beside any target; the filesystems are mounted in Slurm's containers and as Kubernetes volumes."""

from __future__ import annotations

import kubernetes_validate
from click.testing import CliRunner
from conftest import planned, write_design

from gpucluster import load_design, plan_design
from gpucluster.analyse.bom import build_bom
from gpucluster.artifacts.kubernetes import kubernetes_manifests
from gpucluster.artifacts.slurm import slurm_files
from gpucluster.artifacts.summary import filesystem_figures, filesystem_rows
from gpucluster.cli import main
from gpucluster.growth.phases import write_lock
from gpucluster.plan.lock import read_design_lock
from gpucluster.training.checkpoint import _checkpoint_paths

B200 = "compute: {server: hgx-b200-spectrum-x, servers: 48}\ncompute_fabric: {technology: roce}\n"


def _plan(tmp_path, text: str):
    return plan_design(load_design(write_design(tmp_path, "name: site\n" + B200 + text)))


def test_500_tb_asked_alone_buys_the_fewest_boxes_that_hold_it(tmp_path) -> None:
    plan = _plan(
        tmp_path, "storage_network: {technology: ethernet}\nparallel_filesystem: {kind: vast, capacity_tb: 500}\n"
    )
    s = plan.settings
    # one VAST box holds 1,195.56 TB (catalog); the RA's 'better' write level (20 GB/s per SU) would have bought 3
    assert s.parallel_filesystem_blocks == 1
    assert s.parallel_filesystem_capacity_tb < 3587
    figures = filesystem_figures(s)
    assert "the appliances deliver 1,196 TB, 51 GB/s read, 12 GB/s write" in figures
    assert "target asked 500 TB, sized by capacity: no throughput target asked" in figures
    assert "RA-11333-001" not in figures


def test_a_stated_throughput_is_the_target_and_nothing_is_added_beside_it(tmp_path) -> None:
    plan = _plan(
        tmp_path,
        "storage_network: {technology: ethernet}\n"
        "parallel_filesystem: {kind: vast, capacity_tb: 500, read_gbytes_per_s: 150}\n",
    )
    s = plan.settings
    assert s.parallel_filesystem_blocks == 3  # 150 / 51 GB/s read per box, rounded up
    asked = s.parallel_filesystem_asked
    assert asked is not None and asked["read_gbytes_per_s"] == 150 and asked["write_gbytes_per_s"] is None
    assert "target asked 500 TB, 150 GB/s read, from the design's figures" in filesystem_figures(s)


def test_a_stated_performance_level_still_sizes_for_the_ras_throughput(tmp_path) -> None:
    plan = _plan(
        tmp_path,
        "storage_network: {technology: ethernet}\n"
        "parallel_filesystem: {kind: vast, capacity_tb: 500, performance_level: better}\n",
    )
    s = plan.settings
    # 'better': 20 GB/s write per SU x 1.56 SUs = 31 GB/s over 12 GB/s per box: 3 boxes
    assert s.parallel_filesystem_blocks == 3
    assert "from the RA's 'better' level" in filesystem_figures(s)


UNIVERSITY = """
storage_network: {technology: ethernet}
parallel_filesystem:
  name: lustre
  kind: lustre
  existing: true
  capacity_tb: 2000
  links: {count: 8, speed_gbps: 200, network: ethernet, run_length_m: 40}
filesystems:
  - {name: home, kind: nfs, capacity_tb: 500}
  - {name: scratch, kind: vast, capacity_tb: 1000, mount: /scratch/fast}
"""


def _validate(tmp_path, text: str):
    return CliRunner().invoke(main, ["validate", str(write_design(tmp_path, "name: site\n" + B200 + text))])


def test_several_filesystems_each_get_their_blocks_and_mount(tmp_path) -> None:
    plan = _plan(tmp_path, UNIVERSITY)
    records = plan.settings.filesystems
    assert records is not None
    assert [(f["name"], f["mount"], f["existing"]) for f in records] == [
        ("lustre", "/lustre", True),
        ("home", "/home", False),
        ("scratch", "/scratch/fast", False),
    ]
    # new filesystems are bought: their blocks are devices on both storage leaves, in the BOM
    for name in ("home", "scratch"):
        blocks = [d for d in plan.devices.values() if d.name.startswith(f"{name}-")]
        assert len(blocks) == 1 and blocks[0].role == "storage" and blocks[0].rack
        on = [link for link in plan.links if link.a_device == blocks[0].name and link.network == "storage"]
        leaves = {link.b_device for link in on}
        assert len(leaves) == 2
    bom = {line.item: line.quantity for line in build_bom(plan).lines}
    assert bom["vast-ceres-df3060-2cnode"] == 2  # home and scratch, one box each


def test_an_existing_filesystem_is_cabled_but_not_bought_nor_powered(tmp_path) -> None:
    plan = _plan(tmp_path, UNIVERSITY)
    (device,) = plan.devices_with("existing-storage")
    assert device.name == "lustre" and device.u_height == 0
    links = [link for link in plan.links if link.a_device == "lustre"]
    assert len(links) == 8 and {link.network for link in links} == {"storage"}
    assert {link.speed_gbps for link in links} == {200}
    assert len({link.b_device for link in links}) == 2  # dual-homed, as every storage host
    cables = [c for c in plan.cables if any(plan.links[i].a_device == "lustre" for i in c.links)]
    assert cables and all(c.run_length_m > 40 for c in cables)  # the stated 40 m run, with the routing slack
    items = {line.item for line in build_bom(plan).lines}
    assert "existing-lustre" not in items
    assert device.name not in plan.racks[device.rack].devices  # not racked: outside the rack's elevation
    assert plan.part(device.name).power_max_w == 0


def test_the_summary_names_each_filesystem_new_and_existing(tmp_path) -> None:
    plan = _plan(tmp_path, UNIVERSITY)
    rows = {title: figures for title, _tb, figures in filesystem_rows(plan.settings)}
    existing = rows["Parallel filesystem"]
    assert "lustre (lustre, mounted at /lustre): the site's existing filesystem, not bought" in existing
    assert "8 x 200G ethernet links (qsfp112, 40 m run)" in existing
    assert "its links' line rate (8 x 200G = 200 GB/s), an upper bound" in existing
    assert "home (nfs, mounted at /home): 1 x vast-ceres-df3060-2cnode" in rows["Filesystem home"]
    assert "sized by capacity: no throughput target asked" in rows["Filesystem home"]


def test_an_infiniband_only_block_on_an_ethernet_storage_network_is_a_located_error(tmp_path) -> None:
    result = _validate(tmp_path, "storage_network: {technology: ethernet}\nparallel_filesystem:\n  kind: lustre\n")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "design.yaml:6:3: parallel_filesystem.kind:" in result.output
    assert "ddn-ai400x2's storage ports (8 x 200G qsfp56) speak infiniband only" in result.output
    assert "What works: storage_network.technology: infiniband-ndr" in result.output
    assert "site" not in result.output.split(":")[3]


def test_an_existing_filesystems_links_of_the_other_network_kind_are_a_located_error(tmp_path) -> None:
    text = UNIVERSITY.replace("network: ethernet, run_length_m: 40", "network: infiniband")
    result = _validate(tmp_path, text)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "parallel_filesystem.links.network: the existing lustre filesystem's links speak infiniband" in result.output


def test_a_storage_link_no_catalog_cable_reaches_points_at_the_storage_entry(tmp_path) -> None:
    text = UNIVERSITY.replace("run_length_m: 40}", "run_length_m: 40, cage_type: qsfp28}")
    result = _validate(tmp_path, text)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "parallel_filesystem.links.cage_type: no catalog cable reaches" in result.output
    assert ": site:" not in result.output


def test_lustre_plans_end_to_end_on_an_infiniband_storage_network(tmp_path) -> None:
    plan = _plan(
        tmp_path,
        "storage_network: {technology: infiniband-ndr}\nparallel_filesystem: {kind: lustre, capacity_tb: 500}\n",
    )
    s = plan.settings
    assert (s.parallel_filesystem_block, s.parallel_filesystem_blocks) == ("ddn-ai400x2", 2)  # 500 / 250 TB
    blocks = plan.devices_with("storage")
    cabled = {plan.links[i].a_device for c in plan.cables for i in c.links if plan.links[i].network == "storage"}
    assert {b.name for b in blocks} <= cabled


def test_further_filesystems_need_unique_names(tmp_path) -> None:
    result = _validate(tmp_path, UNIVERSITY.replace("name: scratch", "name: home"))
    assert result.exit_code == 2 and "filesystems.1.name: 'home' is already the name of filesystems.0" in result.output
    result = _validate(tmp_path, "filesystems:\n  - {kind: nfs, capacity_tb: 100}\n")
    assert result.exit_code == 2 and "a further filesystem needs a name" in result.output


def test_the_example_mounts_its_filesystems_in_slurm_containers() -> None:
    _loaded, plan = planned("university-b200-existing-lustre")
    mounts = slurm_files(plan)["enroot-mounts.fstab"]
    entries = [line.split() for line in mounts.splitlines() if not line.startswith("#")]
    assert entries == [
        ["/lustre", "/lustre", "none", "x-create=dir,bind,nosuid"],
        ["/home", "/home", "none", "x-create=dir,bind,nosuid"],
    ]
    # the example as the brief states it: the existing Lustre is cabled, not bought; the home is one VAST box
    assert "lustre" in plan.devices and not any(line.item == "existing-lustre" for line in build_bom(plan).lines)
    assert plan.settings.filesystems is not None and plan.settings.filesystems[1]["blocks"] == 1


def test_kubernetes_gets_a_persistent_volume_per_filesystem_that_passes_the_strict_schema(tmp_path) -> None:
    plan = _plan(tmp_path, UNIVERSITY + "scheduler: {kind: kubernetes}\n")
    volumes = kubernetes_manifests(plan)["filesystems.yaml"]
    assert [(v["metadata"]["name"], v["spec"]["hostPath"]["path"]) for v in volumes] == [
        ("filesystem-lustre", "/lustre"),
        ("filesystem-home", "/home"),
        ("filesystem-scratch", "/scratch/fast"),
    ]
    assert volumes[0]["spec"]["capacity"] == {"storage": "2000000G"}  # the existing Lustre's stated 2,000 TB
    for volume in volumes:
        kubernetes_validate.validate(volume, "1.30", strict=True)


def test_a_design_without_further_filesystems_writes_no_mounts() -> None:
    _loaded, plan = planned("superpod-h100-1su")
    assert plan.settings.filesystems is None
    assert "enroot-mounts.fstab" not in slurm_files(plan)


def test_checkpoints_go_to_the_parallel_filesystem_not_to_the_other_filesystems(tmp_path) -> None:
    plan = _plan(tmp_path, UNIVERSITY)
    s = plan.settings
    assert s.parallel_filesystem_label() == "the existing lustre filesystem, 8 x 200G links"
    assert s.is_parallel_filesystem_device("lustre", "existing-storage")
    assert not s.is_parallel_filesystem_device("home-01", "storage")
    # the storage network's share for checkpoints counts the Lustre's 8 x 200G links only (not the VAST boxes')
    write, _read = _checkpoint_paths(plan, 48, set())
    network = next(limit for limit in write.limits if limit.name == "storage network")
    assert network.gbytes_per_s == 8 * 200 / 8
    assert "the existing lustre filesystem" in next(x.note for x in write.limits if x.name.endswith("write"))


def test_a_plan_lock_names_the_existing_filesystems_hand_off_and_plans_again_under_it(tmp_path) -> None:
    loaded = load_design(write_design(tmp_path, "name: site\n" + B200 + UNIVERSITY))
    plan = plan_design(loaded)
    path = tmp_path / "site.lock.json"
    write_lock(plan, path)
    lock = read_design_lock(path, loaded)
    again = plan_design(loaded, lock=lock)
    assert again.devices["lustre"].rack == plan.devices["lustre"].rack
    assert [c.id for c in again.cables] == [c.id for c in plan.cables]


def test_an_unknown_block_of_a_further_filesystem_is_a_located_error(tmp_path) -> None:
    result = _validate(tmp_path, "filesystems:\n  - {name: home, kind: nfs, block: nfs-box-9}\n")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "filesystems.0.block: storage building block 'nfs-box-9' is not in the catalog" in result.output


def test_an_existing_infiniband_filesystem_joins_an_infiniband_storage_network(tmp_path) -> None:
    text = (
        "name: ib\ncompute: {server: dgx-h100, servers: 31}\n"
        "parallel_filesystem:\n  kind: lustre\n  existing: true\n  capacity_tb: 900\n"
        "  links: {count: 4, speed_gbps: 400, network: infiniband}\n"
    )
    plan = plan_design(load_design(write_design(tmp_path, text)))
    links = [link for link in plan.links if link.a_device == "lustre"]
    assert len(links) == 4 and {link.speed_gbps for link in links} == {400}
    assert plan.settings.storage_technology == "infiniband-ndr"
    assert not any(d.role == "storage" for d in plan.devices.values())  # nothing bought for it
