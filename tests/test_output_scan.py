"""No text from a design, catalog or price list reaches an output live: a marker that is markup, a spreadsheet
formula and a shell command at once goes into every free-text field of a design, a user catalog (every
packaged part overridden) and a price list; every artifact is built, and every generated file is scanned for
live markup, formulas and broken-out lines (and nccl.env is sourced by bash, which must run nothing)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from functools import cache
from importlib import resources
from pathlib import Path

import openpyxl
import pytest
import yaml

from gpucluster import load_design, plan_design, write_artifacts

pytestmark = pytest.mark.slow  # builds every artifact of a design whose every text field is hostile

TAG = "x-mk"
# starts like a formula; holds an element, an entity, quotes and a command substitution
MARK = f'=HYPERLINK("http://mk")<{TAG} a=\'1\'>&amp;"`touch mk-tick`$(touch mk-dollar)</{TAG}>'
CATALOG_TEXT = ("vendor", "model", "description", "part_number")
NESTED_TEXT = {"gpu": ("model",), "cpu": ("model",), "psus": ("redundancy",)}
MARKUP = {".html", ".htm", ".svg", ".xml"}
SHELL = {".sh", ".env", ".sbatch", ".bash"}
BINARY = {".pdf", ".png", ".xlsx"}
PRICED_PART_NUMBER = "920-9B210-00FN-0M0"  # the QM9700's ordering number, priced in the scan's price list


def _marked(value: str) -> str:
    return f"{MARK} {value}"


def _marked_catalog(folder: Path) -> list[str]:
    """Every packaged catalog file again, each part's free text and each citation text behind the marker."""
    names = []
    data_dir = resources.files("gpucluster.catalog") / "data"
    for entry in sorted(data_dir.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yaml"):
            continue
        data = yaml.safe_load(entry.read_text(encoding="utf-8"))
        data["sources"] = {tag: _marked(text) for tag, text in data.get("sources", {}).items()}
        for part in data.get("parts", []):
            for field in CATALOG_TEXT:
                if isinstance(part.get(field), str):
                    part[field] = _marked(part[field])
            for nested, fields in NESTED_TEXT.items():
                for field in fields:
                    if isinstance(part.get(nested, {}).get(field), str):
                        part[nested][field] = _marked(part[nested][field])
        name = f"marked-{entry.name}"
        (folder / name).write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
        names.append(name)
    return names


@cache
def _built(folder: Path) -> Path:
    catalogs = _marked_catalog(folder)
    prices = io.StringIO()
    writer = csv.writer(prices, lineterminator="\n")
    writer.writerow(["part_number", "unit_price", "currency", "note"])
    writer.writerow([_marked(PRICED_PART_NUMBER), "28500", "USD", _marked("quote")])
    (folder / "prices.csv").write_text(prices.getvalue(), encoding="utf-8")
    design = {
        "name": "marked",
        "description": _marked("a design whose free text is hostile"),
        "catalog": catalogs,
        "site": {"rack_power_budget_kw": 50},
        "compute": {"server": "dgx-h100", "servers": 4, "spare_servers": 1},
        "management": {"management_servers": 3},
        "object_storage": {"capacity_tb": 100},
        "scheduler": {"kind": "both", "kubernetes_servers": 2, "kubernetes": {"teams": [{"name": "a", "gpus": 8}]}},
        "workload": {"model_parameters_b": 70, "training_tokens_b": 2000, "target_days": 30},
        "bom": {"price_list": "prices.csv"},
    }
    path = folder / "marked.yaml"
    path.write_text(yaml.safe_dump(design, sort_keys=False), encoding="utf-8")
    loaded = load_design(path)
    return write_artifacts(plan_design(loaded), loaded, folder / "out")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _built(tmp_path_factory.mktemp("scan"))


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def test_the_marker_reaches_the_outputs_so_the_scan_means_something(built: Path):
    reached = [p for p in _files(built) if p.suffix not in BINARY and TAG in p.read_text(encoding="utf-8")]
    kinds = {p.suffix for p in reached}
    assert {".html", ".svg", ".csv"} <= kinds, kinds
    workbooks = [p for p in _files(built) if p.suffix == ".xlsx" and _marked_cells(p)]
    assert workbooks, "no workbook holds a marked cell"


def test_no_generated_markup_holds_a_live_element_from_the_input(built: Path):
    for path in _files(built):
        if path.suffix in MARKUP or path.suffix == ".md":
            text = path.read_text(encoding="utf-8")
            assert f"<{TAG}" not in text and f"</{TAG}" not in text, f"{path.relative_to(built)}: live markup"


def test_no_csv_cell_from_the_input_opens_as_a_formula(built: Path):
    for path in _files(built):
        if path.suffix != ".csv":
            continue
        for row in csv.reader(io.StringIO(path.read_text(encoding="utf-8"))):
            for cell in row:
                if TAG in cell:
                    assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), f"{path.name}: {cell[:40]}"


def _marked_cells(path: Path) -> list:
    book = openpyxl.load_workbook(path)
    return [
        cell
        for sheet in book.worksheets
        for row in sheet.iter_rows()
        for cell in row
        if isinstance(cell.value, str) and TAG in cell.value
    ]


def test_no_workbook_cell_from_the_input_is_a_formula(built: Path):
    for path in _files(built):
        if path.suffix != ".xlsx":
            continue
        for cell in _marked_cells(path):
            where = f"{path.name}!{cell.coordinate}"
            assert cell.data_type != "f", f"{where} is a formula"
            if cell.value.startswith("="):
                assert cell.quotePrefix, f"{where} is text that turns into a formula when edited"


def test_no_config_or_script_line_carries_input_text_outside_a_comment(built: Path):
    for path in _files(built):
        if path.suffix in BINARY | MARKUP | {".csv", ".md", ".json"}:
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix in (".yaml", ".yml"):
            list(yaml.safe_load_all(text))  # still parses: the text sits inside a quoted scalar
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if TAG in line:
                assert line.lstrip().startswith("#"), f"{path.relative_to(built)}:{number}: {line[:80]}"


def test_json_outputs_parse(built: Path):
    for path in _files(built):
        if path.suffix == ".json":
            json.loads(path.read_text(encoding="utf-8"))


def test_sourcing_nccl_env_runs_nothing(built: Path, tmp_path: Path):
    [env] = [p for p in _files(built) if p.name == "nccl.env"]
    subprocess.run(["bash", "-c", f"set -e; . {env}"], cwd=tmp_path, check=True, timeout=30)
    assert not list(tmp_path.iterdir()), "sourcing nccl.env ran a command from the input"
    for script in (p for p in _files(built) if p.suffix in SHELL):
        subprocess.run(["bash", "-n", str(script)], check=True, timeout=30)
