"""PDUs under the plan lock: a rack keeps the PDUs the lock has for it while it still holds devices, and every rack
gets the PDUs its load needs, each on the out-of-band network. The case: GB200 NVL72 grown from one SU to two with
no growth reserve, where the central racks are planned afresh and the rack of the out-of-band spines (kept where
the lock has them) once lost both its PDUs to the rack most of its planned rack-mates went to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from conftest import DESIGNS

from gpucluster.cli import main


def _build(tmp_path: Path, design: dict[str, Any]) -> dict[str, Any]:
    """Build the design's plan (under the lock beside it, which the build then updates); returns the lock."""
    path = tmp_path / "gb200.yaml"
    path.write_text(yaml.safe_dump(design, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(main, ["build", str(path), "-o", str(tmp_path / "out"), "--only", "plan"])
    assert result.exit_code == 0, result.output[-3000:]
    lock: dict[str, Any] = json.loads((tmp_path / "gb200.lock.json").read_text(encoding="utf-8"))
    return lock


def _pdus(lock: dict[str, Any]) -> dict[str, set[str]]:
    """Rack -> the PDUs the lock has in it."""
    pdus: dict[str, set[str]] = {}
    for device in lock["devices"]:
        if device["name"].startswith(f"{device['rack']}-pdu-"):
            pdus.setdefault(device["rack"], set()).add(device["name"])
    return pdus


def test_a_locked_rack_keeps_its_pdus_and_every_rack_has_linked_pdus_as_the_cluster_grows(tmp_path: Path) -> None:
    design = yaml.safe_load((DESIGNS / "gb200-nvl72-1su.yaml").read_text(encoding="utf-8"))
    design["compute"]["gpus"] = 576
    before = _build(tmp_path, design)
    design["compute"]["gpus"] = 1152
    after = _build(tmp_path, design)

    kept_racks = {d["rack"] for d in before["devices"] if not d["name"].startswith(f"{d['rack']}-pdu-")}
    kept_racks &= {d["rack"] for d in after["devices"] if not d["name"].startswith(f"{d['rack']}-pdu-")}
    old, new = _pdus(before), _pdus(after)
    # the rack of the out-of-band spines is the one that lost its PDUs
    spines = {d["rack"] for d in after["devices"] if d["name"].startswith("oob-spine-")}
    assert spines and all(new.get(rack) for rack in spines)
    for rack in kept_racks:
        assert old.get(rack, set()) <= new.get(rack, set()), f"rack {rack} lost PDUs {old[rack] - new.get(rack, set())}"
    # every rack of devices that PDUs feed has PDUs (a rack-scale system's rack is fed by its power shelves)
    systems = {d["rack"] for d in after["devices"] if d["name"].startswith("gpu")}
    fed = {d["rack"] for d in after["devices"] if not d["name"].startswith(f"{d['rack']}-pdu-")} - systems
    assert fed and all(new.get(rack) for rack in fed), sorted(r for r in fed if not new.get(r))
    assert not any(len(names) > 6 for names in new.values()), "a rack took the PDUs of others"
    linked = {link["a"][0] for link in after["links"] if link["network"] == "oob"}
    assert set().union(*new.values()) <= linked, "a PDU without its out-of-band link"
