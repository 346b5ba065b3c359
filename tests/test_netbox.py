"""NetBox bulk-import CSVs: NetBox's own columns and choices, and every reference resolvable in
import order (what NetBox's import forms would look up by name)."""

from __future__ import annotations

import csv

import pytest
from conftest import planned

from gpucluster.artifacts import netbox

# The import forms' Meta.fields, netbox-community/netbox netbox/dcim/forms/bulk_import.py (commit 016a5335).
FORM_FIELDS = {
    "01-sites.csv": "name slug status region group tenant facility time_zone description physical_address "
    "shipping_address latitude longitude comments tags",
    "02-manufacturers.csv": "name slug description tags",
    "03-device-roles.csv": "name slug color vm_role config_template description tags",
    "04-device-types.csv": "manufacturer default_platform model slug part_number u_height exclude_from_utilization "
    "is_full_depth subdevice_role airflow description weight weight_unit comments tags",
    "05-racks.csv": "site location name facility_id tenant status role form_factor serial asset_tag width u_height "
    "desc_units outer_width outer_depth outer_unit mounting_depth airflow weight max_weight weight_unit description "
    "comments tags",
    "06-devices.csv": "name role tenant manufacturer device_type platform serial asset_tag status site location rack "
    "position face latitude longitude parent device_bay airflow virtual_chassis vc_position vc_priority cluster "
    "description config_template comments tags",
    "07-interfaces.csv": "device name label parent bridge lag type speed duplex enabled mark_connected wwn vdcs mtu "
    "mgmt_only description poe_mode poe_type mode vrf rf_role rf_channel rf_channel_frequency rf_channel_width "
    "tx_power tags",
    "08-cables.csv": "side_a_device side_a_type side_a_name side_b_device side_b_type side_b_name type status tenant "
    "label color length length_unit description comments tags",
}
# Choice slugs from netbox/dcim/choices.py (CableTypeChoices, InterfaceTypeChoices, DeviceAirflowChoices).
CABLE_TYPES = {"cat6", "dac-active", "dac-passive", "aoc", "mmf-om4", "smf-os2"}
INTERFACE_TYPES = {
    "1000base-t",
    "25gbase-x-sfp28",
    "100gbase-x-qsfp28",
    "200gbase-x-qsfp56",
    "400gbase-x-qsfp112",
    "400gbase-x-osfp",
    "800gbase-x-osfp",
}


@pytest.fixture(scope="module", params=["superpod-h100-1su", "b200-roce-2su"])
def tables(request, tmp_path_factory):
    loaded, plan = planned(request.param)
    folder = tmp_path_factory.mktemp("netbox")
    netbox.write(plan, loaded, folder)
    out = {}
    for name in FORM_FIELDS:
        with open(folder / "netbox" / name, newline="", encoding="utf-8") as handle:
            out[name] = list(csv.DictReader(handle))
    return plan, out


def test_columns_are_netbox_import_fields(tables):
    _plan, out = tables
    for name, rows in out.items():
        assert rows, name
        assert set(rows[0]) <= set(FORM_FIELDS[name].split()), name


def test_every_reference_resolves_in_import_order(tables):
    plan, out = tables
    sites = {r["name"] for r in out["01-sites.csv"]}
    manufacturers = {r["name"] for r in out["02-manufacturers.csv"]}
    roles = {r["name"] for r in out["03-device-roles.csv"]}
    types = {(r["manufacturer"], r["model"]) for r in out["04-device-types.csv"]}
    assert len(types) == len(out["04-device-types.csv"]), "device types are unique per manufacturer and model"
    assert {r["manufacturer"] for r in out["04-device-types.csv"]} <= manufacturers
    racks = {r["name"]: r for r in out["05-racks.csv"]}
    assert {r["site"] for r in racks.values()} <= sites
    devices = {r["name"]: r for r in out["06-devices.csv"]}
    assert len(devices) == len(plan.devices)
    for d in devices.values():
        assert d["role"] in roles and (d["manufacturer"], d["device_type"]) in types
        assert d["rack"] in racks and d["site"] in sites
        assert (d["position"] == "") == (d["face"] == "")
    interfaces = {(r["device"], r["name"]) for r in out["07-interfaces.csv"]}
    assert {device for device, _ in interfaces} <= set(devices)
    assert all(r["type"] in INTERFACE_TYPES for r in out["07-interfaces.csv"])
    for c in out["08-cables.csv"]:
        assert (c["side_a_device"], c["side_a_name"]) in interfaces
        assert (c["side_b_device"], c["side_b_name"]) in interfaces
        assert c["side_a_type"] == c["side_b_type"] == "dcim.interface"
        assert c["type"] in CABLE_TYPES and c["length_unit"] == "m"


def test_one_netbox_cable_per_link_labelled_with_the_schedule_cable_id(tables):
    plan, out = tables
    rows = out["08-cables.csv"]
    assert len(rows) == len(plan.links)
    ends = [(r["side_a_device"], r["side_a_name"]) for r in rows] + [
        (r["side_b_device"], r["side_b_name"]) for r in rows
    ]
    assert len(ends) == len(set(ends)), "an interface takes one cable"
    by_id = {c.id: c for c in plan.cables}
    for row in rows:
        assert float(row["length"]) == by_id[row["label"]].length_m


def test_mounted_devices_fit_their_racks_without_overlap(tables):
    _plan, out = tables
    heights = {r["model"]: float(r["u_height"]) for r in out["04-device-types.csv"]}
    rack_height = {r["name"]: int(r["u_height"]) for r in out["05-racks.csv"]}
    used: dict[str, set[int]] = {}
    for d in out["06-devices.csv"]:
        if d["position"]:
            start, height = int(d["position"]), heights[d["device_type"]]
            units = set(range(start, start + max(int(height), 1)))
            assert max(units) <= rack_height[d["rack"]], d["name"]
            assert not units & used.setdefault(d["rack"], set()), d["name"]
            used[d["rack"]] |= units
