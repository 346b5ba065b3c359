"""The storage network is dual-homed as the RA builds it, and the failure analysis says what a leaf failure costs:
a filesystem whose appliances are cut off is a lost storage service, not a share of bandwidth."""

from __future__ import annotations

import pytest
from conftest import EXAMPLES, planned

from gpucluster.artifacts.report import _worst_leaf
from gpucluster.plan.analysis import worst_leaf_failure


def _storage_leaves(plan, role: str) -> dict[str, set[str]]:
    """Each host's storage leaves; role "gpu-node": every GPU node (GPU servers and compute trays)."""
    hosts = {d.name for d in (plan.gpu_nodes() if role == "gpu-node" else plan.devices_with(role))}
    leaves: dict[str, set[str]] = {h: set() for h in hosts}
    for link in plan.links:
        if link.network == "storage" and link.tier == 0 and link.a_device in hosts:
            leaves[link.a_device].add(link.b_device)
    return leaves


MULTI_LEAF = [n for n in EXAMPLES if n != "lab-4-servers"]


@pytest.mark.parametrize("name", MULTI_LEAF)
def test_every_server_and_storage_appliance_reaches_two_storage_leaves(name: str) -> None:
    _loaded, plan = planned(name)
    for role in ("gpu-node", "storage"):
        leaves = _storage_leaves(plan, role)
        assert leaves, role
        single = sorted(h for h, found in leaves.items() if len(found) < 2)
        assert not single, f"{name}: {role} on one storage leaf: {single[:5]}"


@pytest.mark.parametrize("name", MULTI_LEAF)
def test_no_single_storage_leaf_failure_cuts_a_server_off_or_stops_the_filesystem(name: str) -> None:
    _loaded, plan = planned(name)
    leaves = sorted({link.b_device for link in plan.links if link.network == "storage" and link.tier == 0})
    assert len(leaves) >= 2
    worst = plan.analysis["storage"]["worst_leaf_failure"]
    assert worst["hosts_cut_off"] == 0 and worst["services_lost"] == []
    # the worst case is taken over every leaf: checking each one by hand agrees
    for leaf in leaves:
        hosts = {link.a_device for link in plan.links if link.network == "storage" and link.b_device == leaf}
        for host in hosts:
            assert any(
                link.b_device != leaf for link in plan.links if link.network == "storage" and link.a_device == host
            ), (leaf, host)


def test_a_single_storage_switch_failure_is_reported_as_the_loss_of_the_storage_service() -> None:
    _loaded, plan = planned("lab-4-servers")
    failure = plan.analysis["storage"]["single_switch_failure"]["leaf"]
    assert failure["servers_cut_off"] == 4 and failure["storage_blocks_cut_off"] == 1
    assert failure["services_lost"] == ["parallel filesystem"]
    worst = worst_leaf_failure(plan, "storage")
    assert worst["services_lost"] == ["parallel filesystem"]
    assert "parallel filesystem service is LOST" in _worst_leaf(worst)


def test_the_4su_report_states_that_no_storage_leaf_failure_cuts_a_host_off() -> None:
    _loaded, plan = planned("superpod-h200-4su")
    text = _worst_leaf(plan.analysis["storage"]["worst_leaf_failure"])
    assert "cuts no host off" in text and "LOST" not in text
