"""Rack cabling printouts: a PDF per rack and one for the cluster (read back with pypdf, rendered
with pdftoppm), their HTML versions and the SVG elevations, all from one page model."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest
from conftest import planned, write_design
from pypdf import PdfReader

from gpucluster import load_design, plan_design, write_artifacts
from gpucluster.artifacts.printouts import rack_html
from gpucluster.artifacts.printouts.pages import cord_cells, rack_pages
from gpucluster.artifacts.printouts.pdf import rack_pdf

A4_PT = (595.3, 841.9)
LETTER_PT = (612.0, 792.0)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    loaded, plan = planned("lab-4-servers")
    out = write_artifacts(plan, loaded, tmp_path_factory.mktemp("lab"), only=["printouts"])
    return plan, out / "cabling"


def _text(reader: PdfReader) -> list[str]:
    return [page.extract_text() or "" for page in reader.pages]


def test_each_rack_pdf_holds_elevation_cable_ends_and_one_label_per_end(lab):
    plan, folder = lab
    pages = rack_pages(plan)
    assert set(pages) == set(plan.racks)
    for name, page in pages.items():
        reader = PdfReader(folder / "racks" / f"{name}.pdf")
        text = _text(reader)
        assert f"Rack {name}" in text[0] and f"{name} front, {page.rack.height_u} U" in text[0]
        for slot in page.slots:
            assert slot.name in text[0], slot.name
        ends = page.ends
        if not ends:
            continue
        tables = [t for t in text if "cable ends, top device first" in t or "Cable P/N" in t]
        labels = [t for t in text if "cable labels" in t or ("→" in t and "Cable P/N" not in t)]
        for end in ends:  # a row is never cut: all its cells stand on one page
            assert any(all(cell in t for cell in end.cells()) for t in tables), end
        label_text = "".join(labels)
        assert sum(label_text.count(f"{end.cable_id}  ") for end in ends) >= len(ends)
        for end in ends:
            assert end.near_id in label_text


def test_cables_are_listed_top_device_first_then_port_by_port(lab):
    plan, _folder = lab
    for page in rack_pages(plan).values():
        units = [plan.devices[end.device].u_position for end in page.ends]
        assert units == sorted(units, reverse=True)
        cabled = {(end.device, port) for end in page.ends for port in end.ports.split("+")}
        linked = {
            (d, p)
            for link in plan.links
            for d, p in ((link.a_device, link.a_port), (link.b_device, link.b_port))
            if plan.devices[d].rack == page.rack.name
        }
        assert cabled == linked


def test_pages_are_a4_or_letter_and_fonts_are_embedded(lab, tmp_path):
    _plan, folder = lab
    reader = PdfReader(folder / "cluster.pdf")
    box = reader.pages[0].mediabox
    assert (round(float(box.width), 1), round(float(box.height), 1)) == A4_PT
    fonts = set()
    for page in reader.pages[:12]:
        for font in page["/Resources"]["/Font"].values():
            font = font.get_object()
            descriptor = font["/FontDescriptor"].get_object()
            assert "/FontFile2" in descriptor, font["/BaseFont"]
            fonts.add(str(font["/BaseFont"]).split("+")[-1])
    assert fonts >= {"DejaVuSans", "DejaVuSansMono"}
    path = write_design(
        tmp_path, "name: letter-lab\nsite: {paper: letter}\ncompute: {server: hgx-h100-oem, servers: 4}\n"
    )
    loaded = load_design(path)
    out = write_artifacts(plan_design(loaded), loaded, tmp_path / "out", only=["printouts"])
    box = PdfReader(out / "cabling" / "racks" / "A01.pdf").pages[0].mediabox
    assert (round(float(box.width), 1), round(float(box.height), 1)) == LETTER_PT


def test_cluster_pdf_is_the_overview_then_every_rack_with_a_bookmark(lab):
    plan, folder = lab
    cluster = PdfReader(folder / "cluster.pdf")
    outline = [item.title for item in cluster.outline]
    assert outline == ["Overview", *(f"Rack {name}" for name in plan.racks)]
    rack_pages_count = {name: len(PdfReader(folder / "racks" / f"{name}.pdf").pages) for name in plan.racks}
    overview = cluster.get_destination_page_number(cluster.outline[1])
    assert len(cluster.pages) == overview + sum(rack_pages_count.values())
    start = overview
    for item, name in zip(cluster.outline[1:], plan.racks, strict=True):
        assert cluster.get_destination_page_number(item) == start
        assert f"Rack {name}" in cluster.pages[start].extract_text()
        start += rack_pages_count[name]


@pytest.mark.external
@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="pdftoppm (poppler-utils) not installed")
def test_a_rack_pdf_renders_with_pdftoppm(lab, tmp_path):
    _plan, folder = lab
    subprocess.run(
        [
            "pdftoppm",
            "-r",
            "40",
            "-png",
            "-f",
            "1",
            "-l",
            "2",
            str(folder / "racks" / "A01.pdf"),
            str(tmp_path / "a01"),
        ],
        check=True,
        capture_output=True,
    )
    pictures = sorted(tmp_path.glob("a01-*.png"))
    assert len(pictures) == 2
    import matplotlib.image

    first = matplotlib.image.imread(pictures[0])
    assert first.shape[0] > first.shape[1] and first.min() < 0.5 < first.max()  # portrait, ink on paper


class _Cells(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def test_html_and_svg_show_the_same_rack_as_the_pdf(lab):
    plan, folder = lab
    for name, page in rack_pages(plan).items():
        parser = _Cells()
        parser.feed((folder / "racks" / f"{name}.html").read_text(encoding="utf-8"))
        devices, cables, *rest = parser.tables
        assert [row[1] for row in devices[1:]] == [s.name for s in page.slots + page.zero_u]
        assert [tuple(row) for row in cables[1:]] == [end.cells() for end in page.ends]
        optics = rest.pop(0)[1:] if page.optics else []
        assert [tuple(row) for row in optics] == page.optics
        assert [tuple(row) for row in (rest[0][1:] if rest else [])] == [cord_cells(c) for c in page.cords]
        svg = ET.parse(folder / "racks" / f"{name}.svg").getroot()
        texts = " ".join("".join(t.itertext()) for t in svg.iter("{http://www.w3.org/2000/svg}text"))
        for slot in page.slots:
            assert slot.name in texts
        boxes = [g for g in svg.iter("{http://www.w3.org/2000/svg}g") if "device" in g.get("class", "")]
        assert len(boxes) == len(page.slots)
    index = (folder / "cluster.html").read_text(encoding="utf-8")
    assert sorted(re.findall(r'href="racks/(\w+)\.pdf"', index)) == sorted(plan.racks)


def test_printouts_are_byte_identical_across_builds(tmp_path):
    loaded, plan = planned("lab-4-servers")
    first = write_artifacts(plan, loaded, tmp_path / "one", only=["printouts", "cabling", "netbox"])
    second = write_artifacts(plan, loaded, tmp_path / "two", only=["printouts", "cabling", "netbox"])
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files
    for path in files:
        assert (first / path).read_bytes() == (second / path).read_bytes(), path


def test_each_rack_printout_maps_every_psu_to_its_pdu_outlet(tmp_path):
    from gpucluster.plan.power.cords import power_cords

    _loaded, plan = planned("superpod-h100-1su")
    pages = rack_pages(plan)
    cords = power_cords(plan)
    assert sum(len(p.cords) for p in pages.values()) == len(cords) > 0
    for page in pages.values():
        assert all(plan.devices[c.device].rack == page.rack.name for c in page.cords)
        assert all(c.pdu in page.rack.pdus for c in page.cords)
    server = next(d for d in plan.gpu_nodes())
    page = pages[server.rack]
    html = rack_html(page, "a4", "")
    first = next(c for c in page.cords if c.device == server.name)
    assert (
        f"<td>{first.device}</td><td>{first.psu}</td><td>{first.feed}</td><td>{first.pdu}</td><td>{first.outlet}</td>"
        in html
    )
    text = "".join(p.extract_text() for p in PdfReader(io.BytesIO(rack_pdf(page, "a4"))).pages)
    assert f"{len(page.cords)} power cords, PSU to PDU outlet" in text and first.outlet in text


def test_each_rack_has_an_optics_pick_list_that_adds_up_to_the_bom():
    from gpucluster.analyse.bom import build_bom

    _loaded, plan = planned("superpod-h100-1su")
    pages = rack_pages(plan)
    picked: dict[str, int] = {}
    for page in pages.values():
        for device, part_number, _model, modules, _cages in page.optics:
            assert plan.devices[device].rack == page.rack.name
            picked[part_number] = picked.get(part_number, 0) + int(modules)
    ordered: dict[str, int] = {}
    for line in build_bom(plan).lines:
        if line.kind == "transceiver":
            ordered[line.part_number] = ordered.get(line.part_number, 0) + line.quantity
    assert picked == ordered and sum(picked.values()) > 0


def test_cage_ranges_read_at_a_glance():
    from gpucluster.artifacts.printouts.pages import number_ranges

    assert number_ranges([3, 1, 2, 5, 7, 8]) == "1-3, 5, 7-8"


def test_each_rack_has_a_rear_elevation_with_its_pdus_psus_and_cable_side():
    """The rear view: every zero-U PDU with its feed and cords, every device with its PSUs by PDU (a DGX H100's
    six 2-2-2 over the three PDUs of a compute rack) and the face its cables plug into; in the SVG and the PDF."""
    from gpucluster.formats.templating import render

    _loaded, plan = planned("superpod-h100-1su")
    pages = rack_pages(plan)
    compute = next(p for p in pages.values() if p.rack.purpose == "compute")
    assert [p.name for p in compute.rear_pdus] == compute.rack.pdus
    assert [p.feed for p in compute.rear_pdus] == ["A", "B", "C"]
    assert sum(p.cords for p in compute.rear_pdus) == len(compute.cords)
    for slot in compute.rear:
        assert slot.psus == "6 PSU: a 2, b 2, c 2" and slot.cable_side == "rear", slot
        assert slot.cable_ends == sum(1 for end in compute.ends if end.device == slot.name)
    assert [s.name for s in compute.rear] == [s.name for s in compute.slots]
    svg = ET.fromstring(render("rack-elevation.svg.j2", page=compute))
    ns = "{http://www.w3.org/2000/svg}"
    rear = [g for g in svg.iter(f"{ns}g") if "rear-view" in g.get("class", "")]
    strips = [g for g in svg.iter(f"{ns}g") if g.get("class") == "pdu-strip"]
    assert len(rear) == len(compute.slots) and len(strips) == len(compute.rack.pdus)
    texts = " ".join("".join(t.itertext()) for t in svg.iter(f"{ns}text"))
    assert f"{compute.rack.name} rear" in texts and "a 2, b 2, c 2" in texts and "feed C" in texts
    text = PdfReader(io.BytesIO(rack_pdf(compute, "a4"))).pages[0].extract_text()
    assert f"{compute.rack.name} rear, {compute.rack.height_u} U" in text and "a 2, b 2, c 2" in text


def test_the_cluster_pick_list_holds_every_racks_optics_and_cords_and_adds_up_to_the_bom(tmp_path):
    import csv

    from gpucluster.analyse.bom import build_bom

    loaded, plan = planned("superpod-h100-1su")
    folder = write_artifacts(plan, loaded, tmp_path, only=["printouts"]) / "cabling"
    with open(folder / "pick-list.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["Rack"] for r in rows} == {name for name, rack in plan.racks.items() if rack.devices}
    picked: dict[tuple[str, str], int] = {}
    for row in rows:
        key = (row["Kind"], row["Part number"] or row["Model"])
        picked[key] = picked.get(key, 0) + int(row["Quantity"])
    ordered: dict[tuple[str, str], int] = {}
    for line in build_bom(plan).lines:
        if line.kind in ("transceiver", "power-cord"):
            key = ("transceiver", line.part_number) if line.kind == "transceiver" else ("power cord", line.model)
            ordered[key] = ordered.get(key, 0) + line.quantity
    assert picked == ordered
    index = (folder / "cluster.html").read_text(encoding="utf-8")
    assert 'href="pick-list.csv"' in index and "IEC 60320 C20 plug to C19 connector power cord" in index
    overview = "".join(p.extract_text() for p in PdfReader(folder / "cluster.pdf").pages[:6])
    assert "Pick list" in overview


def test_printouts_written_as_rack_batches_side_by_side_are_the_same_bytes_as_in_one_process(tmp_path, monkeypatch):
    """Side by side the racks' files are jobs of the writers' pool, in batches; the cluster's PDF binds them after."""
    import gpucluster.artifacts.printouts as printouts

    monkeypatch.setattr(printouts, "BATCHED_MIN_CABLES", 0)
    loaded, plan = planned("lab-4-servers")
    assert printouts.parts(plan) == ["racks-1", "racks-2", "cluster"]  # two racks: a batch each
    costs: list = []
    side = write_artifacts(plan, loaded, tmp_path / "side", only=["printouts"], jobs=2, costs=costs)
    alone = write_artifacts(plan, loaded, tmp_path / "alone", only=["printouts"], jobs=1)
    files = sorted(p.relative_to(alone).as_posix() for p in alone.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(side).as_posix() for p in side.rglob("*") if p.is_file())
    assert all((side / name).read_bytes() == (alone / name).read_bytes() for name in files)
    assert [cost.name for cost in costs][-1] == "printouts:cluster"
