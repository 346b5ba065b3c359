"""Growth that holds for every fabric kind: a design states its final size (compute_fabric.final_scalable_units),
and each phase from the first up to that size, built under the previous phase's lock as a user builds it, only
adds: `gpucluster diff` of each phase exits 0 and every record of the previous lock (rack, device and its place,
link and its ports, cable and its labels) is in the next one unchanged. The tests count no switches (another
change may redraw a fabric's leaves), they compare each phase with the one before."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import DESIGNS

from gpucluster.cli import main

MOVES = ("device moved", "rack moved", "link re-cabled", "cable relabelled", "cable replaced")


def _design(example: str, final: int, edits: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """An example design with its final size stated and some sections' fields edited."""
    design: dict[str, Any] = yaml.safe_load((DESIGNS / f"{example}.yaml").read_text(encoding="utf-8"))
    design.setdefault("compute_fabric", {})["final_scalable_units"] = final
    for section, fields in edits.items():
        design.setdefault(section, {}).update(fields)
    return design


def _records(lock: Path) -> set[str]:
    """A lock's records (racks, devices, links, cables), one per line."""
    return {line.rstrip(",") for line in lock.read_text(encoding="utf-8").splitlines() if line.startswith('{"')}


def _top_switches(lock: Path, network: str) -> set[str]:
    """The network's switches above the leaves, by name, as a lock lists them."""
    records = [json.loads(line) for line in _records(lock)]
    return {
        r["name"]
        for r in records
        if set(r) == {"name", "part", "rack", "u"} and r["name"].startswith(f"{network}-") and "-leaf-" not in r["name"]
    }


def _grow(tmp_path: Path, example: str, final: int, phases: list[dict[str, Any]], edits: dict) -> list[Path]:
    """Build each phase of the design (its compute section edited) as a user does: the design file revised in
    place, `diff` of the previous revision against it under the lock, then `build` (which updates the lock).
    Returns the lock of each phase."""
    design = tmp_path / f"{example}.yaml"
    lock = tmp_path / f"{example}.lock.json"
    locks = []
    runner = CliRunner()
    for index, compute in enumerate(phases):
        text = yaml.safe_dump(_design(example, final, {**edits, "compute": compute}), sort_keys=False)
        if index:
            previous = tmp_path / f"phase{index}.yaml"
            previous.write_text(design.read_text(encoding="utf-8"), encoding="utf-8")
            design.write_text(text, encoding="utf-8")
            command = ["diff", str(previous), str(design), "--lock", str(lock), "-o", str(tmp_path / f"d{index}")]
            review = runner.invoke(main, [*command, "--no-files"])
            assert review.exit_code == 0, f"phase {index + 1}: {review.output[-3000:]}"
            assert not [line for line in review.output.splitlines() if line.strip().startswith(MOVES)]
        else:
            design.write_text(text, encoding="utf-8")
        built = runner.invoke(main, ["build", str(design), "-o", str(tmp_path / "out"), "--only", "plan"])
        assert built.exit_code == 0, built.output[-3000:]
        kept = tmp_path / f"phase{index + 1}.lock.json"
        kept.write_text(lock.read_text(encoding="utf-8"), encoding="utf-8")
        locks.append(kept)
    return locks


def _assert_only_additions(locks: list[Path]) -> None:
    for index, (before, after) in enumerate(pairwise(locks), start=2):
        old, new = _records(before), _records(after)
        changed = sorted(old - new)
        assert not changed, f"phase {index} changed or removed {len(changed)} records, e.g. {changed[:3]}"
        assert len(new) > len(old), f"phase {index} added nothing"


KINDS = {
    # rail-optimized InfiniBand, two tiers: one SU of DGX H100 grown to four
    "infiniband-2-tier": ("superpod-h100-1su", 4, [{"servers": n, "spare_servers": 1} for n in (30, 62, 126)], {}),
    # a first phase below half an SU (where a network without a reserve would take one switch): 8 DGX H100 to 2 SUs
    "infiniband-small-first-phase": (
        "superpod-h100-1su",
        2,
        [{"servers": n, "spare_servers": 1} for n in (7, 15, 29, 61)],
        {},
    ),
    # DGX B300 on Quantum-X800 XDR: one SU of 72 grown to three
    "infiniband-xdr": ("b300-xdr-1su", 3, [{"servers": n, "spare_servers": 1} for n in (70, 142, 214)], {}),
    # Spectrum-X RoCE (two planes, rail groups of two SUs on one leaf): two SUs grown to four, one at a time
    "spectrum-x": ("b200-roce-2su", 4, [{"servers": n, "spare_servers": 2} for n in (30, 62, 94, 126)], {}),
    # rack-scale GB300 NVL72, the case: 4 racks (half an SU) grown to 16 racks (2 SUs), 4 racks a phase
    "rack-scale-gb300": (
        "gb300-nvl72-4su",
        2,
        [{"server": "gb300-nvl72", "gpus": n} for n in (288, 576, 864, 1152)],
        {"scheduler": {"kubernetes_servers": 18}},
    ),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_phase_up_to_the_final_size_only_adds(tmp_path: Path, kind: str) -> None:
    example, final, phases, edits = KINDS[kind]
    locks = _grow(tmp_path, example, final, phases, edits)
    _assert_only_additions(locks)
    # the switches above the leaves are there from the first phase, sized for the final one
    assert _top_switches(locks[0], "compute") == _top_switches(locks[-1], "compute")


@pytest.mark.xfail(
    strict=True,
    reason="limit left (docs/growth.md): a phase that ends on an odd server inside an SU leaves its last server's "
    "in-band 1:2 splitter with one leg, cabled host to switch; the next phase's second leg makes it a two-leg cable "
    "from the switch cage, with another id and labels (a replaced cable). Keeping the first phase's id and labels "
    "needs the cable's printed labels kept in the plan (plan/model.py Cable), beyond this change's files",
)
def test_growth_by_an_odd_number_of_servers_only_adds(tmp_path: Path) -> None:
    # 8 DGX H100 and a spare (9 servers, odd) grown by one: the last in-band splitter gets its second leg
    phases = [{"servers": n, "spare_servers": 1} for n in (8, 9)]
    _assert_only_additions(_grow(tmp_path, "superpod-h100-1su", 2, phases, {}))


SLOW_KINDS = {
    # rack-scale GB200 NVL72: one SU of 8 racks grown to three, the filesystem's throughput stated for the final size
    "rack-scale-gb200": (
        "gb200-nvl72-1su",
        3,
        [{"server": "gb200-nvl72", "gpus": n} for n in (576, 1152, 1728)],
        {"parallel_filesystem": {"read_gbytes_per_s": 120, "write_gbytes_per_s": 60}},
    ),
    # rail-optimized InfiniBand, three tiers (twelve SUs of DGX H100 need pods of spines under cores): the
    # filesystem's throughput stated for the final size, so its blocks and their leaves are there from the start
    "infiniband-3-tier": (
        "superpod-h100-1su",
        12,
        [{"servers": n, "spare_servers": 1} for n in (30, 126, 382)],
        {"parallel_filesystem": {"read_gbytes_per_s": 400, "write_gbytes_per_s": 200}},
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(SLOW_KINDS))
def test_every_phase_of_a_large_fabric_up_to_the_final_size_only_adds(tmp_path: Path, kind: str) -> None:
    example, final, phases, edits = SLOW_KINDS[kind]
    locks = _grow(tmp_path, example, final, phases, edits)
    _assert_only_additions(locks)
    assert _top_switches(locks[0], "compute") <= _top_switches(locks[-1], "compute")


def test_a_final_size_beyond_the_largest_cluster_is_an_error_at_its_field_naming_the_largest(tmp_path: Path) -> None:
    design = tmp_path / "huge.yaml"
    design.write_text(yaml.safe_dump(_design("superpod-h100-1su", 600, {}), sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", str(design)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    line = next(i for i, text in enumerate(design.read_text().splitlines(), 1) if "final_scalable_units" in text)
    # 32 DGX H100 of 8 GPUs per SU: 131,072 GPUs are 512 SUs
    assert f"huge.yaml:{line}:" in result.output and "compute_fabric.final_scalable_units" in result.output
    assert "at most 512 scalable units" in result.output
