"""NetBox import files: every column a field of NetBox 4.6's import form for that object and every choice one of its
choice set's values (tests/upstream/netbox/, extracted from netbox-community/netbox v4.6.8); two example designs
imported, file by file in order, into one model of a NetBox that enforces NetBox's uniqueness rules and resolves
every reference as its import forms do (by name, devices within the side's site); interface types, power model,
part numbers and file sizes."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest
import yaml
from conftest import planned

from gpucluster.artifacts import netbox
from gpucluster.plan.model import Plan

FORMS_JSON = Path(__file__).resolve().parent / "upstream" / "netbox" / "netbox-v4.6.8-import-forms.json"
# Which import form reads each file (by its name without a part number).
FORM_OF = {
    "shared/01-manufacturers": "ManufacturerImportForm",
    "00-manufacturers": "ManufacturerImportForm",
    "shared/02-device-roles": "DeviceRoleImportForm",
    "01-sites": "SiteImportForm",
    "02-racks": "RackImportForm",
    "03-power-panels": "PowerPanelImportForm",
    "04-power-feeds": "PowerFeedImportForm",
    "05-devices": "DeviceImportForm",
    "06-cables": "CableImportForm",
    "07-power-cables": "CableImportForm",
}
# The device-type YAML import: the type's own form, and per component list the template form (NetBox
# dcim/views.py DeviceTypeImportView.related_object_forms) with the model field's choice set.
TEMPLATE_FORMS = {
    "interfaces": ("InterfaceTemplateImportForm", {"type": "InterfaceTypeChoices"}),
    "power-ports": ("PowerPortTemplateImportForm", {"type": "PowerPortTypeChoices"}),
    "power-outlets": ("PowerOutletTemplateImportForm", {"type": "PowerOutletTypeChoices"}),
}
# Cable terminations the cable import can name (NetBox CABLE_TERMINATION_MODELS, the kinds used here).
TERMINATIONS = {"dcim.interface", "dcim.powerport", "dcim.poweroutlet", "dcim.powerfeed"}
# Model-field choices the import forms take from the model (DeviceType.airflow, Rack.width in inches).
MODEL_CHOICES = {("DeviceTypeImportForm", "airflow"): "DeviceAirflowChoices"}


@cache
def netbox_forms() -> dict:
    return json.loads(FORMS_JSON.read_text(encoding="utf-8"))


def _form(name: str) -> tuple[list[str], dict[str, str]]:
    """An import form's columns and its choice fields (with its base form's, for DeviceImportForm)."""
    forms = netbox_forms()["forms"]
    choices = dict(forms[name]["choices"])
    if name == "DeviceImportForm":
        choices |= forms["BaseDeviceImportForm"]["choices"]
    return forms[name]["fields"], choices


def _choices(choice_set: str) -> set[str]:
    return set(netbox_forms()["choices"][choice_set])


@cache
def _files(design: str) -> dict[str, str]:
    return netbox.netbox_files(planned(design)[1])


def _tables(files: dict[str, str]) -> dict[str, list[dict[str, str]]]:
    """CSV files by name (parts joined, in order) -> rows."""
    tables: dict[str, list[dict[str, str]]] = defaultdict(list)
    for name in sorted(files):
        if name.endswith(".csv"):
            stem = name.removesuffix(".csv")
            stem = stem.rsplit("-", 1)[0] if stem.rsplit("-", 1)[-1].isdigit() else stem
            tables[stem] += list(csv.DictReader(io.StringIO(files[name])))
    return tables


DESIGNS = ["superpod-h100-1su", "b200-roce-2su"]


@pytest.mark.parametrize("design", DESIGNS)
def test_columns_and_choices_are_netbox_4_6_import_fields(design):
    files = _files(design)
    for stem, rows in _tables(files).items():
        fields, choices = _form(FORM_OF[stem])
        assert rows, stem
        assert set(rows[0]) <= set(fields), (stem, set(rows[0]) - set(fields))
        for column, choice_set in choices.items():
            values = {r[column] for r in rows if column in r} - {""}
            assert values <= _choices(choice_set), (stem, column, values - _choices(choice_set))
        for side in ("side_a_type", "side_b_type"):
            assert {r[side] for r in rows if side in r} <= TERMINATIONS
    for name in ("shared/03-device-types.yaml", "00-device-types.yaml"):
        if name not in files:
            continue
        fields, choices = _form("DeviceTypeImportForm")
        for document in yaml.safe_load_all(files[name]):
            assert set(document) <= set(fields) | set(TEMPLATE_FORMS), set(document) - set(fields)
            assert document.get("airflow", "front-to-rear") in _choices("DeviceAirflowChoices")
            for key, (form, template_choices) in TEMPLATE_FORMS.items():
                template_fields, _ = _form(form)
                for template in document.get(key, []):
                    assert set(template) <= set(template_fields) - {"device_type", "module_type"}, (key, template)
                    for column, choice_set in template_choices.items():
                        if column in template:
                            assert template[column] in _choices(choice_set), (document["model"], template)


def test_the_form_check_knows_netbox_4_6():
    """The extracted forms are 4.6's: cable rows take sites, InfiniBand and flat-top OSFP types exist."""
    assert {"side_a_site", "side_b_site", "profile"} <= set(_form("CableImportForm")[0])
    assert {"infiniband-ndr", "infiniband-xdr", "400gbase-x-osfp-rhs"} <= _choices("InterfaceTypeChoices")
    assert "100gbase-x-qsfp112" not in _choices("InterfaceTypeChoices")  # hence QSFP28's type at 100G


# ---- a model of one NetBox: the import forms' lookups and the models' uniqueness constraints


@dataclass
class NetBox:
    manufacturers: set[str] = field(default_factory=set)
    roles: set[str] = field(default_factory=set)
    slugs: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    device_types: dict[tuple[str, str], dict] = field(default_factory=dict)
    sites: set[str] = field(default_factory=set)
    racks: set[tuple[str, str]] = field(default_factory=set)
    panels: set[tuple[str, str]] = field(default_factory=set)
    feeds: dict[tuple[str, str], str | None] = field(default_factory=dict)  # (site, panel, name) -> cable
    devices: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)  # (site, name) -> type
    components: dict[tuple[str, str, str, str], str | None] = field(default_factory=dict)  # -> cable label

    def _unique(self, kind: str, slug: str) -> None:
        assert slug not in self.slugs[kind], f"{kind} slug {slug} exists"
        self.slugs[kind].add(slug)

    def import_file(self, name: str, text: str) -> None:
        """Import one file as NetBox would: each row through its form; any error fails the file."""
        if name.endswith(".yaml"):
            for document in yaml.safe_load_all(text):
                key = (document["manufacturer"], document["model"])
                assert document["manufacturer"] in self.manufacturers, key
                assert key not in self.device_types, f"device type {key} exists"
                self._unique(f"type:{document['manufacturer']}", document["slug"])
                self.device_types[key] = document
            return
        stem = name.removesuffix(".csv").rsplit("/", 1)[-1]
        for row in csv.DictReader(io.StringIO(text)):
            getattr(self, "_" + stem.split("-", 1)[1].split("-0")[0].replace("-", "_"))(row)

    def _manufacturers(self, row: dict) -> None:
        assert row["name"] not in self.manufacturers, f"manufacturer {row['name']} exists"
        self._unique("manufacturer", row["slug"])
        self.manufacturers.add(row["name"])

    def _device_roles(self, row: dict) -> None:
        assert row["name"] not in self.roles, f"role {row['name']} exists"
        self._unique("role", row["slug"])
        self.roles.add(row["name"])

    def _sites(self, row: dict) -> None:
        assert row["name"] not in self.sites, f"site {row['name']} exists"
        self._unique("site", row["slug"])
        self.sites.add(row["name"])

    def _racks(self, row: dict) -> None:
        key = (row["site"], row["name"])
        assert row["site"] in self.sites and key not in self.racks, key
        self.racks.add(key)

    def _power_panels(self, row: dict) -> None:
        key = (row["site"], row["name"])
        assert row["site"] in self.sites and key not in self.panels, key
        self.panels.add(key)

    def _power_feeds(self, row: dict) -> None:
        key = (row["site"], row["power_panel"], row["name"])
        assert (row["site"], row["power_panel"]) in self.panels and key not in self.feeds, key
        assert not row["rack"] or (row["site"], row["rack"]) in self.racks, key
        self.feeds[key] = None  # type: ignore[index]

    def _devices(self, row: dict) -> None:
        key = (row["site"], row["name"])
        assert key not in self.devices, f"device {key} exists"
        assert row["role"] in self.roles and (row["site"], row["rack"]) in self.racks, key
        device_type = self.device_types[(row["manufacturer"], row["device_type"])]
        self.devices[key] = (row["manufacturer"], row["device_type"])
        for kind, model in (
            ("interfaces", "interface"),
            ("power-ports", "powerport"),
            ("power-outlets", "poweroutlet"),
        ):
            for template in device_type.get(kind, []):  # NetBox instantiates the type's templates
                self.components[(row["site"], row["name"], f"dcim.{model}", template["name"])] = None

    def _end(self, row: dict, side: str) -> tuple:
        site, kind, name = row[f"side_{side}_site"], row[f"side_{side}_type"], row[f"side_{side}_name"]
        if kind == "dcim.powerfeed":
            key = (site, row[f"side_{side}_power_panel"], name)
            assert key in self.feeds, f"{side.upper()} side termination not found: {key}"
            return ("feeds", key)
        device = [k for k in self.devices if k[1] == row[f"side_{side}_device"] and (not site or k[0] == site)]
        assert len(device) == 1, f"side {side}: device {row[f'side_{side}_device']} matches {len(device)} devices"
        key = (*device[0], kind, name)
        assert key in self.components, f"{side.upper()} side termination not found: {key}"
        return ("components", key)

    def _cables(self, row: dict) -> None:
        for table, key in (self._end(row, "a"), self._end(row, "b")):
            store = getattr(self, table)
            assert store[key] is None, f"{key} is already connected"
            store[key] = row["label"] or "cabled"

    _power_cables = _cables


def _import(netbox_: NetBox, files: dict[str, str], shared: bool) -> None:
    names = sorted(n for n in files if n.startswith("shared/") == shared)
    for name in names:
        netbox_.import_file(name, files[name])


def test_two_clusters_import_into_one_netbox():
    """The shared set once, then each design's files in order: no name collides, every reference resolves
    (devices within their site), every planned port and power supply ends up cabled."""
    first, second = (_files(d) for d in DESIGNS)
    shared = {n: t for n, t in first.items() if n.startswith("shared/")}
    assert shared == {n: t for n, t in second.items() if n.startswith("shared/")}, "the shared set differs"
    box = NetBox()
    _import(box, first, shared=True)
    for design, files in zip(DESIGNS, (first, second), strict=True):
        _import(box, files, shared=False)
        plan = planned(design)[1]
        site = netbox.cluster_site(plan)
        cabled = {k for k, v in box.components.items() if v is not None and k[0] == site and k[2] == "dcim.interface"}
        assert len(cabled) == 2 * len(plan.links)
    names = Counter(name for _, name in box.devices)
    assert names["gpu001"] == 2, "both clusters keep their host names, in their own sites"
    with pytest.raises(AssertionError, match="exists"):
        _import(box, first, shared=True)  # once per NetBox: a second import is refused, as NetBox would


def test_a_device_name_without_its_site_is_ambiguous_across_clusters():
    """Why the cable rows name the site: two clusters both have gpu001."""
    box = NetBox()
    first, second = (_files(d) for d in DESIGNS)
    _import(box, first, shared=True)
    _import(box, first, shared=False)
    _import(box, second, shared=False)
    row = next(csv.DictReader(io.StringIO(first["06-cables-01.csv"])))
    with pytest.raises(AssertionError, match="matches 2 devices"):
        box._end({**row, "side_a_site": "", "side_a_device": "gpu001"}, "a")


@pytest.mark.parametrize("design", DESIGNS)
def test_files_import_within_the_request_timeout(design):
    for name, text in _files(design).items():
        if name.endswith(".csv"):
            assert text.count("\n") - 1 <= netbox.ROWS_PER_FILE, name


def _device_type(files: dict[str, str], model: str) -> dict:
    return next(d for d in yaml.safe_load_all(files["shared/03-device-types.yaml"]) if d["model"] == model)


def test_interface_types_follow_technology_cage_and_speed():
    files = _files("superpod-h100-1su")
    dgx = {i["name"]: i["type"] for i in _device_type(files, "DGX H100")["interfaces"]}
    assert dgx["OSFP1P1"] == "infiniband-ndr"  # InfiniBand typed as InfiniBand, not Ethernet
    assert set(dgx.values()) == {"infiniband-ndr", "100gbase-x-qsfp28", "1000base-t"}  # in-band QSFP112 at 100G
    assert netbox.interface_type("ethernet", "qsfp112", 100, host=True) == "100gbase-x-qsfp28"
    assert netbox.interface_type("ethernet", "osfp", 400, host=True) == "400gbase-x-osfp-rhs"
    assert netbox.interface_type("ethernet", "osfp", 400, host=False) == "400gbase-x-osfp"
    assert netbox.interface_type("infiniband-xdr", "osfp", 800, host=True) == "infiniband-xdr"


@pytest.mark.parametrize("design", DESIGNS)
def test_every_power_supply_is_cabled_to_an_outlet_of_its_rack_and_every_pdu_to_a_feed(design):
    plan: Plan = planned(design)[1]
    files = _files(design)
    rows = _tables(files)["07-power-cables"]
    cords = [r for r in rows if r["side_b_type"] == "dcim.poweroutlet"]
    feeds = [r for r in rows if r["side_b_type"] == "dcim.powerfeed"]
    two_feeds = plan.design.site.power_feed.redundancy == "2N"
    expected = 0
    for device in plan.devices.values():
        psus = getattr(plan.part(device.name), "psus", None)
        if not psus:
            continue
        expected += psus.count
        mine = [r for r in cords if r["side_a_device"] == device.name]
        assert sorted(r["side_a_name"] for r in mine) == sorted(f"PSU{n}" for n in range(1, psus.count + 1))
        assert all(plan.devices[r["side_b_device"]].rack == device.rack for r in mine)
        if two_feeds and psus.count > 1:
            assert {r["description"] for r in mine} == {"feed A", "feed B"}
        elif plan.design.site.power_feed.redundancy == "N+1" and psus.count > 1:
            assert len({r["description"] for r in mine}) > 1, mine  # spread over the rack's PDUs, one per feed
        mating = {"C20": "C19", "C14": "C13"}.get(psus.inlet)
        assert all(r["side_b_name"].startswith(mating) for r in mine), mine
    assert len(cords) == expected
    assert len({(r["side_b_device"], r["side_b_name"]) for r in cords}) == len(cords), "an outlet takes one cord"
    assert sorted(r["side_a_device"] for r in feeds) == sorted(d.name for d in plan.devices.values() if d.role == "pdu")


@pytest.mark.parametrize("design", DESIGNS)
def test_cables_carry_lengths_labels_and_orderable_part_numbers(design):
    plan: Plan = planned(design)[1]
    rows = _tables(_files(design))["06-cables"]
    assert len(rows) == len(plan.links)
    by_id = {c.id: c for c in plan.cables}
    labels = [r["label"] for r in rows]
    assert len(labels) == len(set(labels)), "one NetBox cable, one label"
    for row in rows:
        cable = by_id[row["label"].split("/")[0]]
        assert float(row["length"]) == cable.length_m
        assert row["description"].startswith(cable.part_number or cable.cable_part)
        assert cable.cable_part not in row["description"] or cable.part_number is None


def test_mounted_devices_fit_their_racks_without_overlap():
    files = _files("superpod-h100-1su")
    tables = _tables(files)
    heights = {d["model"]: float(d["u_height"]) for d in yaml.safe_load_all(files["shared/03-device-types.yaml"])}
    rack_height = {r["name"]: int(r["u_height"]) for r in tables["02-racks"]}
    used: dict[str, set[int]] = {}
    for d in tables["05-devices"]:
        if d["position"]:
            start, height = int(d["position"]), heights[d["device_type"]]
            units = set(range(start, start + max(int(height), 1)))
            assert max(units) <= rack_height[d["rack"]], d["name"]
            assert not units & used.setdefault(d["rack"], set()), d["name"]
            used[d["rack"]] |= units
