"""`gpucluster compare`: alternatives side by side, each planned afresh (no plan lock), as one table and one page of
figures with each design's value and its delta against the first."""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
from pathlib import Path

import openpyxl
import pypdf
import pytest
from click.testing import CliRunner, Result
from conftest import DESIGNS, chromium_page, needs_chromium, planned, write_design
from PIL import Image

from gpucluster.analyse.bom import bom_for
from gpucluster.analyse.budget import kept_power_budget
from gpucluster.cli import main
from gpucluster.growth.compare import NO_PRICE_LIST, Alternative, Comparison, Row, compare_alternatives
from gpucluster.plan.lock import default_lock_path
from gpucluster.training import analyse_checkpoints


def alternative(name: str) -> Alternative:
    loaded, plan = planned(name)
    return Alternative(
        str(loaded.path),
        plan,
        bom_for(plan, loaded),
        kept_power_budget(plan),
        analyse_checkpoints(plan),
    )


@pytest.fixture(scope="module")
def compared() -> Comparison:
    return compare_alternatives([alternative("superpod-h100-1su"), alternative("lab-4-servers")])


def rows(comparison: Comparison) -> dict[tuple[str, str], Row]:
    return {(row.section, row.name): row for row in comparison.rows}


def test_each_figure_is_the_plans_own_with_its_delta_against_the_first(compared: Comparison) -> None:
    (_l1, h100), (_l2, lab) = planned("superpod-h100-1su"), planned("lab-4-servers")
    by_name = rows(compared)
    gpus = by_name[("Systems and GPUs", "GPUs")]
    assert gpus.values == (float(h100.totals.gpus), float(lab.totals.gpus))
    assert gpus.deltas == (None, float(lab.totals.gpus - h100.totals.gpus)) and gpus.differs
    peak = by_name[("Power and cooling", "IT power, peak")]
    assert peak.values == (h100.totals.it_power_max_kw, lab.totals.it_power_max_kw) and peak.unit == "kW"
    bisection = by_name[("Bisection and oversubscription", "Compute fabric: bisection bandwidth")]
    assert bisection.values[0] == h100.analysis_of("compute")["bisection_bandwidth_gbps"] / 1000
    goodput = by_name[("Failure analysis", "Goodput")]
    assert goodput.values[0] == 100 * analyse_checkpoints(h100).goodput
    assert by_name[("Systems and GPUs", "GPU server")].deltas[1] == "differs"
    assert by_name[("Floor space", "Racks")].values == (float(h100.totals.racks), float(lab.totals.racks))


def test_switches_per_model_are_the_boms_lines_and_zero_where_a_design_has_none(compared: Comparison) -> None:
    boms = [alternative(name).bom for name in ("superpod-h100-1su", "lab-4-servers")]
    per_model = {row.name: row.values for row in compared.rows if row.section == "Switches" and row.name.endswith(")")}
    for name, values in per_model.items():
        for bom, value in zip(boms, values, strict=True):
            assert value == sum(
                line.quantity for line in bom.lines if line.kind == "switch" and name.endswith(f"({line.item})")
            )
    assert per_model["Quantum-2 QM9700 (MQM9700-NS2F) (qm9700)"][0] == 18.0  # 12 compute, 6 storage: the 1-SU RA
    only_one = [values for values in per_model.values() if 0.0 in values]
    assert only_one, "the lab and the RA share every switch model"


def test_designs_without_a_price_list_say_so(compared: Comparison) -> None:
    row = rows(compared)[("Bill of materials", "Price list")]
    assert row.values == (NO_PRICE_LIST, NO_PRICE_LIST) and not row.differs
    assert not any(r.name == "Price" for r in compared.rows)


def test_one_design_is_no_comparison() -> None:
    with pytest.raises(ValueError, match="two or more"):
        compare_alternatives([alternative("lab-4-servers")])


LAB = (DESIGNS / "lab-4-servers.yaml").read_text(encoding="utf-8")
LAB6 = LAB.replace("servers: 4\n", "servers: 6\n").replace("name: lab-4-servers", "name: lab-6-servers")
PRICES = "part_number,unit_price,currency,note\n920-9B210-00FN-0M0,28500,USD,quote Q-1\nhgx-h100-oem,250000,USD,\n"


def two_labs(folder: Path) -> list[Path]:
    """lab-4-servers and the same lab with six servers, as files of a scratch folder."""
    folder.mkdir(parents=True, exist_ok=True)
    return [write_design(folder, LAB, "lab4.yaml"), write_design(folder, LAB6, "lab6.yaml")]


def run(*args: object) -> Result:
    return CliRunner().invoke(main, ["compare", *(str(a) for a in args)])


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("compare")
    result = run(*two_labs(tmp / "designs"), "-o", tmp / "out")
    assert result.exit_code == 0, result.output
    return tmp / "out" / "compare-lab-4-servers-vs-lab-6-servers"


def test_compare_writes_the_table_and_the_page(written: Path) -> None:
    assert sorted(p.name for p in written.iterdir()) == ["compare.csv", "compare.html", "compare.pdf", "compare.xlsx"]
    table = list(csv.reader((written / "compare.csv").open(encoding="utf-8")))
    assert table[0] == ["Section", "Figure", "Unit", "lab-4-servers", "lab-6-servers", "lab-6-servers vs lab-4-servers"]
    gpus = next(row for row in table if row[1] == "GPUs")
    assert gpus[3:] == ["32", "48", "16"]
    price = next(row for row in table if row[1] == "Price list")
    assert price[3:] == ["no price list", "no price list", "same"]


def test_the_workbook_reads_back_as_the_csv(written: Path) -> None:
    sheet = openpyxl.load_workbook(written / "compare.xlsx")["Compare"]
    cells = [["" if v is None else v for v in row] for row in sheet.iter_rows(values_only=True)]
    table = list(csv.reader((written / "compare.csv").open(encoding="utf-8")))
    assert len(cells) == len(table)
    for read, row in zip(cells, table, strict=True):
        assert [str(v) if not isinstance(v, float) else f"{v:g}" for v in read] == [
            f"{float(c):g}" if _is_number(c) else c for c in row
        ]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_the_pdf_renders_every_section(written: Path) -> None:
    reader = pypdf.PdfReader(written / "compare.pdf")
    text = " ".join(page.extract_text() for page in reader.pages)
    for section in ("Systems and GPUs", "Switches", "Cables and optics", "Power and cooling", "Failure analysis"):
        assert section in text
    assert "lab-6-servers" in text


def test_same_designs_give_the_same_bytes(written: Path, tmp_path: Path) -> None:
    designs = written.parent.parent / "designs"
    result = run(designs / "lab4.yaml", designs / "lab6.yaml", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    again = tmp_path / "out" / written.name
    for name in ("compare.csv", "compare.xlsx", "compare.html", "compare.pdf"):
        assert (again / name).read_bytes() == (written / name).read_bytes(), name


@pytest.mark.parametrize("lock", ['{"not": "a lock"}', "garbage"])
def test_a_lock_beside_a_design_is_neither_read_nor_written(tmp_path: Path, lock: str) -> None:
    designs = two_labs(tmp_path / "designs")
    locks = [default_lock_path(design) for design in designs]
    locks[0].write_text(lock, encoding="utf-8")
    result = run(*designs, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert locks[0].read_text(encoding="utf-8") == lock and not locks[1].exists()
    assert sorted(p.name for p in (tmp_path / "designs").iterdir()) == ["lab4.lock.json", "lab4.yaml", "lab6.yaml"]


def test_a_price_list_prices_every_design(tmp_path: Path) -> None:
    (tmp_path / "prices.csv").write_text(PRICES, encoding="utf-8")
    result = run(*two_labs(tmp_path / "designs"), "--prices", tmp_path / "prices.csv", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    table = list(csv.reader((tmp_path / "out/compare-lab-4-servers-vs-lab-6-servers/compare.csv").open()))
    price = next(row for row in table if row[1] == "Price")
    assert price[2] == "USD" and int(price[5]) == 2 * 250_000  # two more servers at their quoted price
    assert next(row for row in table if row[1] == "Price list")[3:5] == ["prices.csv", "prices.csv"]


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("missing", r"missing\.yaml: cannot read the design: no such file"),
        ("bad", r"bad\.yaml:8:3: compute\.servrs: unknown field \(did you mean 'servers'\?\)"),
        ("one", r"compare needs two or more designs"),
        ("same-file", r"lab4\.yaml: the same file as .*lab4\.yaml: give each once"),
        ("same-name", r"copy\.yaml:2:1: name: 'lab-4-servers' is also the name of .*lab4\.yaml"),
        ("prices", r"prices\.csv:1:1: unit_price: "),
    ],
)
def test_bad_input_is_a_located_error_and_writes_nothing(tmp_path: Path, case: str, expected: str) -> None:
    lab4, lab6 = two_labs(tmp_path / "designs")
    designs = {
        "missing": [lab4, tmp_path / "missing.yaml"],
        "bad": [lab4, write_design(tmp_path, LAB.replace("  servers: 4", "  servrs: 4"), "bad.yaml")],
        "one": [lab4],
        "same-file": [lab4, lab6, tmp_path / "designs" / ".." / "designs" / "lab4.yaml"],
        "same-name": [lab4, write_design(tmp_path, LAB.replace("# A small lab", "# the lab again"), "copy.yaml")],
        "prices": [lab4, lab6, "--prices", write_design(tmp_path, "part_number,price,currency\n", "prices.csv")],
    }[case]
    result = run(*designs, "-o", tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert re.search(expected, result.output), result.output
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()


def test_hostile_text_is_escaped_on_the_page_and_guarded_in_the_workbook(tmp_path: Path) -> None:
    hostile = '=HYPERLINK("http://x.example","<script>alert(1)</script>")'
    folder = tmp_path / "<b>&designs"
    lab4, lab6 = two_labs(folder)
    described = re.sub(r"(?m)^description: .*$", f"description: '{hostile} lab'", LAB6)
    lab6.write_text(described, encoding="utf-8")
    result = run(lab4, lab6, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    out = tmp_path / "out" / "compare-lab-4-servers-vs-lab-6-servers"
    html = (out / "compare.html").read_text(encoding="utf-8")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<b>&designs" not in html and "&lt;b&gt;&amp;designs" in html
    designs = openpyxl.load_workbook(out / "compare.xlsx")["Designs"]
    description = designs["C3"]
    assert description.value.startswith("=HYPERLINK") and description.data_type == "s" and description.quotePrefix


def test_a_design_that_fails_a_design_rule_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    lab4, _lab6 = two_labs(tmp_path / "designs")
    late = LAB6 + "workload: {model_parameters_b: 405, training_tokens_b: 15000, target_days: 10}\n"
    result = run(lab4, write_design(tmp_path, late, "late.yaml"), "-o", tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert "lab-6-servers: rule:workload-fits-plan" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_time_to_train_and_interruptions_are_the_checkpoint_analysis_own() -> None:
    compared = compare_alternatives([alternative("superpod-h100-1su"), alternative("superpod-h200-4su")])
    by_name = rows(compared)
    h200 = analyse_checkpoints(planned("superpod-h200-4su")[1])
    assert h200.time_to_train_days is not None
    assert by_name[("Time to train", "Time to train")].values == (None, h200.time_to_train_days)
    assert by_name[("Time to train", "Time to train")].deltas == (None, None)  # the assumed 70B job has no tokens
    interruptions = by_name[("Failure analysis", "Expected interruptions in the run")].values[1]
    assert interruptions == h200.expected_interruptions == pytest.approx(h200.run_days * 86_400 / h200.mtbf_s)
    assert by_name[("Time to train", "Workload")].values[0].endswith("(assumed)")


def test_nvlink_domains_have_no_cluster_wide_bisection_row() -> None:
    compared = compare_alternatives([alternative("superpod-h100-1su"), alternative("gb200-nvl72-1su")])
    bisection = [row.name for row in compared.rows if row.name.endswith("bisection bandwidth")]
    assert "Compute fabric: bisection bandwidth" in bisection
    assert not any(name.startswith("NVLink") for name in bisection)


@pytest.mark.external
@needs_chromium
def test_the_page_loads_in_chromium_without_console_errors_or_requests(written: Path) -> None:
    url = (written / "compare.html").as_uri()
    with chromium_page(url) as (page, problems, requests):
        headings = page.eval_on_selector_all("section h2", "els => els.map(e => e.textContent)")
    assert problems == [] and requests == [url]
    assert headings == [
        "Systems and GPUs",
        "Switches",
        "Cables and optics",
        "Bill of materials",
        "Power and cooling",
        "Floor space",
        "Bisection and oversubscription",
        "Time to train",
        "Failure analysis",
    ]


@pytest.mark.external
@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="pdftoppm (poppler-utils) not installed")
def test_four_designs_of_the_longest_names_stay_inside_the_pages(tmp_path: Path) -> None:
    """The page's tables fit A4 landscape however long the names (63 characters, the most a design name has): no
    ink in the right margin of any page, where a table too wide for the page would run."""
    designs = []
    for n in range(4):
        name = f"{'abcd'[n]}{'x' * 62}"
        text = LAB.replace("name: lab-4-servers", f"name: {name}").replace("servers: 4\n", f"servers: {n + 4}\n")
        text = text.replace("kubernetes_servers: 2\n", f"kubernetes_servers: 2\n  slurm: {{cluster_name: lab{n}}}\n")
        designs.append(write_design(tmp_path, text, f"lab{n}.yaml"))
    result = run(*designs, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "out").iterdir()
    assert len(folder.name) <= 120  # cut and made unique by a digest
    dpi = 40
    subprocess.run(
        ["pdftoppm", "-r", str(dpi), "-png", str(folder / "compare.pdf"), str(tmp_path / "page")], check=True
    )
    pages = sorted(tmp_path.glob("page-*.png"))
    assert len(pages) >= 3
    margin = round(10 / 25.4 * dpi)  # the right 10 mm of the 12 mm margin
    top, bottom = round(12 / 25.4 * dpi), round((210 - 16) / 25.4 * dpi)  # above the footer's line
    for page in pages:
        with Image.open(page) as image:
            grey = image.convert("L")
            width = grey.width
            strip = grey.crop((width - margin, top, width, bottom))
            assert strip.getextrema()[0] > 200, f"{page.name}: ink in the right margin"


def test_every_bad_designs_problems_are_reported_at_once(tmp_path: Path) -> None:
    bad = write_design(tmp_path, LAB.replace("  servers: 4", "  servrs: 4"), "bad.yaml")
    result = run(tmp_path / "missing.yaml", bad, "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert "missing.yaml: cannot read the design: no such file" in result.output
    assert "bad.yaml:8:3: compute.servrs" in result.output and not (tmp_path / "out").exists()
