"""The rack printouts drawn as PDF with ReportLab from the page model (printouts/pages.py): WeasyPrint's table
layout is far too slow for a network rack's thousands of cable ends (figures: docs/performance.md). Fonts are
DejaVu, as shipped with matplotlib, embedded as subsets.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4, LETTER
from reportlab.lib.styles import ParagraphStyle
from reportlab.lib.units import mm
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.pdfgen.canvas import Canvas
from reportlab.platypus import (
    BaseDocTemplate,
    Flowable,
    Frame,
    LongTable,
    PageBreak,
    PageTemplate,
    Paragraph,
    Spacer,
    Table,
    TableStyle,
)

from gpucluster.artifacts.printouts.pages import (
    CABLE_COLUMNS,
    CORD_COLUMNS,
    LABEL_COLUMNS,
    OPTICS_COLUMNS,
    PICK_COLUMNS,
    EndRow,
    RackPage,
    Slot,
    cord_cells,
)
from gpucluster.plan.model import Plan

PAPER = {"a4": A4, "letter": LETTER}
MARGIN = 12 * mm
FONT, BOLD, MONO, MONO_BOLD = "DejaVuSans", "DejaVuSans-Bold", "DejaVuSansMono", "DejaVuSansMono-Bold"
TABLE_FONT_PT = 7.0
MIN_FONT_PT = 5.0
LABEL_HEIGHT = 21 * mm


def rack_pdf(page: RackPage, paper: str) -> bytes:
    """A rack's printout as PDF: elevation and device list, cable ends, then the label sheet."""
    _fonts()
    buffer = io.BytesIO()
    doc = _document(buffer, paper, page.title, f"Rack {page.rack.name} cabling")
    width = doc.width
    story: list[Flowable] = [Paragraph(f"Rack {page.rack.name}", _STYLES["h1"]), Paragraph(_facts(page), _STYLES["p"])]
    devices = Table(
        [["U", "Device", "Model"], *[[_u_range(s), s.name, s.model] for s in page.slots + page.zero_u]],
        colWidths=None,
        repeatRows=1,
    )
    devices.setStyle(_table_style(TABLE_FONT_PT))
    front = _Elevation(page, width * 0.46, doc.height * 0.84)
    rear = _RearElevation(page, width * 0.5, doc.height * 0.84)
    story.append(Table([[front, rear]], colWidths=[width * 0.48, width * 0.52], style=_LAYOUT))
    story.append(PageBreak())
    story.append(Paragraph(f"Rack {page.rack.name}: devices", _STYLES["h2"]))
    story.append(devices)
    story.append(PageBreak())
    story.append(Paragraph(f"Rack {page.rack.name}: {len(page.ends)} cable ends, top device first", _STYLES["h2"]))
    if page.ends:
        story.append(_fitted_table([CABLE_COLUMNS, *(end.cells() for end in page.ends)], width))
    if page.optics:
        story.append(Paragraph(f"Rack {page.rack.name}: optics pick list, one module per occupied cage", _STYLES["h2"]))
        story.append(_fitted_table([OPTICS_COLUMNS, *page.optics], width))
    if page.cords:
        story.append(
            Paragraph(f"Rack {page.rack.name}: {len(page.cords)} power cords, PSU to PDU outlet", _STYLES["h2"])
        )
        story.append(_fitted_table([CORD_COLUMNS, *(cord_cells(c) for c in page.cords)], width))
    if page.ends:
        story.append(PageBreak())
        story.append(Paragraph(f"Rack {page.rack.name}: cable labels, one per cable end", _STYLES["h2"]))
        story.append(_Labels(page.ends, width))
    doc.build(story, canvasmaker=_NumberedCanvas)
    return buffer.getvalue()


def overview_pdf(
    plan: Plan, pages: dict[str, RackPage], paper: str, picks: list[tuple[str, str, str, str, int]]
) -> bytes:
    _fonts()
    buffer = io.BytesIO()
    title = f"{plan.name} · {plan.design.site.name} · rack cabling"
    doc = _document(buffer, paper, title, title)
    rows = [["Rack", "Purpose", "SU", "Devices", "Cable ends", "Max kW"]]
    for page in pages.values():
        r = page.rack
        rows.append(
            [
                r.name,
                r.purpose,
                str(r.su or ""),
                str(len(page.slots) + len(page.zero_u)),
                str(len(page.ends)),
                f"{r.power_max_w / 1000:.1f}",
            ]
        )
    table = LongTable(rows, repeatRows=1)
    table.setStyle(_table_style(TABLE_FONT_PT))
    cables = len(plan.cables)
    story = [
        Paragraph(f"{plan.name}: rack cabling", _STYLES["h1"]),
        Paragraph(
            f"Site {plan.design.site.name}, {len(pages)} racks, {cables:,} cables. "
            "Each rack follows: its front and rear elevations, its cable ends (top device first, then port by port) "
            "and a sheet of labels. Labels read <i>this end / other end</i> as site.rack-U:port (TIA-606).",
            _STYLES["p"],
        ),
        Spacer(1, 4 * mm),
        table,
    ]
    if picks:
        pick_rows: list[tuple[str, ...]] = [PICK_COLUMNS]
        pick_rows += [(rack, kind, pn, model, f"{n:,}") for rack, kind, pn, model, n in picks]
        story += [
            PageBreak(),
            Paragraph("Pick list: every rack's transceivers and power cords", _STYLES["h2"]),
            _fitted_table(pick_rows, doc.width),
        ]
    doc.build(story, canvasmaker=_NumberedCanvas)
    return buffer.getvalue()


def _facts(page: RackPage) -> str:
    r = page.rack
    return (
        f"{r.purpose.capitalize()} rack{f' of SU {r.su}' if r.su else ''}, row {chr(ord('A') + r.row)} position "
        f"{r.position + 1} (x {r.x_mm / 1000:.1f} m, y {r.y_mm / 1000:.1f} m), {r.height_u} U. "
        f"{len(page.slots)} devices, {len(page.zero_u)} zero-U PDUs; maximum load {r.power_max_w / 1000:.1f} kW. "
        f"{len(page.ends)} cable ends to plug here."
    )


def _u_range(slot: Slot) -> str:
    if not slot.u:
        return "0U"
    top = slot.u + max(round(slot.height_u), 1) - 1
    return f"{slot.u:02d}" if top == slot.u else f"{slot.u:02d}-{top:02d}"


# ----------------------------------------------------------------------------- ReportLab pieces

_LAYOUT = TableStyle(
    [("VALIGN", (0, 0), (-1, -1), "TOP"), ("LEFTPADDING", (0, 0), (-1, -1), 0), ("FONT", (0, 0), (-1, -1), FONT)]
)
_STYLES: dict[str, ParagraphStyle] = {}


def _fonts() -> None:
    """Register DejaVu (shipped with matplotlib, so no system font is needed) once per process."""
    if _STYLES:
        return
    folder = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    for name in (FONT, BOLD, MONO, MONO_BOLD):
        pdfmetrics.registerFont(TTFont(name, str(folder / f"{name}.ttf")))
    pdfmetrics.registerFontFamily(FONT, normal=FONT, bold=BOLD, italic=FONT, boldItalic=BOLD)
    _STYLES["h1"] = ParagraphStyle("h1", fontName=BOLD, fontSize=14, leading=18, spaceAfter=3 * mm)
    _STYLES["h2"] = ParagraphStyle("h2", fontName=BOLD, fontSize=10, leading=13, spaceAfter=2 * mm)
    _STYLES["p"] = ParagraphStyle("p", fontName=FONT, fontSize=8, leading=10.5, spaceAfter=2 * mm)


def _document(buffer: io.BytesIO, paper: str, header: str, title: str) -> BaseDocTemplate:
    size = PAPER[paper]
    doc = BaseDocTemplate(
        buffer,
        pagesize=size,
        leftMargin=MARGIN,
        rightMargin=MARGIN,
        topMargin=MARGIN + 4 * mm,
        bottomMargin=MARGIN + 4 * mm,
        title=title,
        author="gpucluster",
        creator="gpucluster",
        invariant=1,  # fixed dates and document id: same design, same bytes
        initialFontName=FONT,  # else the canvas preamble names Helvetica, which is never embedded
    )
    frame = Frame(doc.leftMargin, doc.bottomMargin, doc.width, doc.height, id="body", leftPadding=0, rightPadding=0)

    def decorate(canvas: Canvas, _doc: BaseDocTemplate) -> None:
        canvas.setFont(FONT, 7)
        canvas.setFillColor(colors.grey)
        canvas.drawString(MARGIN, size[1] - MARGIN, header)

    doc.addPageTemplates([PageTemplate(id="page", frames=[frame], onPage=decorate)])
    return doc


def _table_style(font_pt: float) -> TableStyle:
    return TableStyle(
        [
            ("FONT", (0, 0), (-1, -1), FONT, font_pt),
            ("FONT", (0, 0), (-1, 0), BOLD, font_pt),
            ("BACKGROUND", (0, 0), (-1, 0), colors.Color(0.87, 0.87, 0.87)),
            ("GRID", (0, 0), (-1, -1), 0.25, colors.Color(0.6, 0.6, 0.6)),
            ("TOPPADDING", (0, 0), (-1, -1), 1),
            ("BOTTOMPADDING", (0, 0), (-1, -1), 1.5),
            ("LEFTPADDING", (0, 0), (-1, -1), 2),
            ("RIGHTPADDING", (0, 0), (-1, -1), 2),
        ]
    )


def _fitted_table(rows: list[tuple[str, ...]], width: float) -> LongTable:
    """A table whose header repeats on each page and whose rows are never split, fitted to the width."""
    font_pt, widths = _fit(rows, width)
    table = LongTable(rows, colWidths=widths, repeatRows=1, splitByRow=1)
    table.setStyle(_table_style(font_pt))
    return table


def _fit(rows: list[tuple[str, ...]], width: float) -> tuple[float, list[float]]:
    """Column widths from the widest text of each column, at the largest font size (down to 5 pt)
    at which the table fits the page width, so no cell is cut or wrapped."""
    padding = 4.5
    widest = [
        max(pdfmetrics.stringWidth(str(row[c]), BOLD if i == 0 else FONT, 1.0) for i, row in enumerate(rows))
        for c in range(len(rows[0]))
    ]
    font_pt = TABLE_FONT_PT
    while font_pt > MIN_FONT_PT and sum(w * font_pt + padding for w in widest) > width:
        font_pt -= 0.25
    widths = [w * font_pt + padding for w in widest]
    spare = max(width - sum(widths), 0.0)
    return font_pt, [w + spare / len(widths) for w in widths]


def _fitting_size(text: str, font: str, size: float, width: float) -> float:
    """The font size, at most `size`, at which `text` fits `width` (long names shrink, never cut)."""
    natural = pdfmetrics.stringWidth(text, font, 1.0)
    return min(size, width / natural) if natural else size


class _NumberedCanvas(Canvas):
    """Writes "page n of N" on every page (pages are kept until the total is known)."""

    # the canvas's own page state, kept and restored per page here, which types-reportlab leaves out
    _pagesize: tuple[float, float]
    _pageNumber: int
    _startPage: Callable[[], None]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pages: list[dict[str, Any]] = []

    def showPage(self) -> None:
        self._pages.append(dict(self.__dict__))
        self._startPage()

    def save(self) -> None:
        total = len(self._pages)
        for state in self._pages:
            self.__dict__.update(state)
            self.setFont(FONT, 7)
            self.setFillColor(colors.grey)
            self.drawRightString(self._pagesize[0] - MARGIN, MARGIN - 2 * mm, f"page {self._pageNumber} of {total}")
            super().showPage()
        super().save()


class _RackView(Flowable):
    """A drawing of one rack page at a fixed size (the front and rear elevations)."""

    def __init__(self, page: RackPage, width: float, height: float):
        super().__init__()
        self.page, self.width, self.height = page, width, height

    def wrap(self, available_width: float, available_height: float) -> tuple[float, float]:
        return self.width, self.height

    def _frame(self, title: str, left: float, rail: float, unit: float) -> None:
        """The title above the rack and the rack's outline."""
        c = self.canv
        c.setFont(BOLD, 7)
        c.drawString(left, self.height - 7, title)
        c.setStrokeColor(colors.black)
        c.setLineWidth(0.6)
        c.rect(left, 0, rail, self.page.rack.height_u * unit)


class _Elevation(_RackView):
    """The rack's front view: a unit scale, and every device as a box at its U with its name."""

    def draw(self) -> None:
        c, page = self.canv, self.page
        units = page.rack.height_u
        unit = (self.height - 10) / units
        left, rail = 14.0, self.width - 16.0
        self._frame(f"{page.rack.name} front, {units} U", left, rail, unit)
        c.setFont(FONT, min(5.5, unit * 0.75))
        for u in range(1, units + 1):
            c.drawRightString(left - 2, (u - 1) * unit + unit * 0.2, str(u))
        for slot in page.slots:
            y = (slot.u - 1) * unit
            h = max(slot.height_u, 1) * unit
            c.setFillColor(colors.HexColor(slot.fill))
            c.setLineWidth(0.4)
            c.rect(left + 1, y + 0.5, rail - 2, h - 1, fill=1)
            c.setFillColor(colors.black)
            text = f"{slot.name}  {slot.model}"
            size = _fitting_size(text, FONT, min(7.0, max(unit * 0.7, 4.0)), rail - 6)
            c.setFont(FONT, size)
            c.drawString(left + 3, y + h / 2 - size * 0.35, text)


class _RearElevation(_RackView):
    """The rack's rear view: the zero-U PDUs on the rear posts (name, feed, cords), and every device at its U with
    its power supplies by PDU and the face its cables plug into (a dashed box: ports at the front)."""

    def draw(self) -> None:
        c, page = self.canv, self.page
        units = page.rack.height_u
        unit = (self.height - 10) / units
        bar = 9.0
        left_n, right_n = (len(page.rear_pdus) + 1) // 2, len(page.rear_pdus) // 2
        left = left_n * (bar + 1) + 2
        rail = self.width - left - right_n * (bar + 1) - 2
        self._frame(f"{page.rack.name} rear, {units} U: PDUs, PSUs, cable side", left, rail, unit)
        for i, pdu in enumerate(page.rear_pdus):
            x = left - (i // 2 + 1) * (bar + 1) if i % 2 == 0 else left + rail + 1 + (i // 2) * (bar + 1)
            c.setFillColor(colors.HexColor("#f3e9dc"))
            c.setLineWidth(0.4)
            c.rect(x, 0, bar, units * unit, fill=1)
            c.setFillColor(colors.black)
            text = f"{pdu.name}  feed {pdu.feed}  {pdu.cords} cords  {pdu.model}"
            size = _fitting_size(text, FONT, 5.5, units * unit - 4)
            c.saveState()
            c.translate(x + bar / 2 + size * 0.35, 2)
            c.rotate(90)
            c.setFont(FONT, size)
            c.drawString(0, 0, text)
            c.restoreState()
        for slot in page.rear:
            y = (slot.u - 1) * unit
            h = max(slot.height_u, 1) * unit
            c.setFillColor(colors.HexColor(slot.fill))
            c.setLineWidth(0.4)
            if slot.cable_side != "rear":
                c.setDash(2, 1)
            c.rect(left + 1, y + 0.5, rail - 2, h - 1, fill=1)
            c.setDash()
            c.setFillColor(colors.black)
            text = slot.text()
            size = _fitting_size(text, FONT, min(6.5, max(unit * 0.7, 4.0)), rail - 6)
            c.setFont(FONT, size)
            c.drawString(left + 3, y + h / 2 - size * 0.35, text)


class _Labels(Flowable):
    """A sheet of cable labels, LABEL_COLUMNS across, one per cable end; a label is never split."""

    def __init__(self, ends: list[EndRow], width: float, height: float | None = None):
        super().__init__()
        self.ends, self.width, self.height = ends, width, height or 0.0

    def wrap(self, available_width: float, available_height: float) -> tuple[float, float]:
        self.height = -(-len(self.ends) // LABEL_COLUMNS) * LABEL_HEIGHT  # all of them: split() cuts to pages
        return self.width, self.height

    def split(self, available_width: float, available_height: float) -> list[Flowable]:
        per_page = int(available_height // LABEL_HEIGHT) * LABEL_COLUMNS
        if per_page == 0:
            return []  # not one row fits: next page
        return [_Labels(self.ends[:per_page], self.width), _Labels(self.ends[per_page:], self.width)]

    def draw(self) -> None:
        c = self.canv
        label_w = self.width / LABEL_COLUMNS
        for k, end in enumerate(self.ends):
            x = (k % LABEL_COLUMNS) * label_w
            y = self.height - (k // LABEL_COLUMNS + 1) * LABEL_HEIGHT
            c.setStrokeColor(colors.Color(0.6, 0.6, 0.6))
            c.setDash(1, 2)
            c.setLineWidth(0.3)
            c.rect(x + 1, y + 1, label_w - 2, LABEL_HEIGHT - 2)
            c.setDash()
            c.setFillColor(colors.black)
            lines = [
                (MONO_BOLD, f"{end.cable_id}  {end.media.upper()} {end.length_m:g} m"),
                (MONO, end.near_id),
                (MONO, f"→ {end.far_id}"),
                (FONT, f"{end.device} → {end.far_device}"),
            ]
            for j, (font, text) in enumerate(lines):
                size = _fitting_size(text, font, 7.5 if j == 0 else 6.5, label_w - 8)
                c.setFont(font, size)
                c.drawString(x + 4, y + LABEL_HEIGHT - 6 - (j + 1) * 3.6 * mm + 2, text)
