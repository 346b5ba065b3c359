"""The verify findings as a terminal table, a CSV (``findings.csv``) and a printable HTML page
(``findings.html``, rendered from templates/verify/findings.html.j2 with autoescaping): one row per finding,
by cable label, rack, rack unit and port of both ends."""

from __future__ import annotations

import io
import os
from collections import Counter
from pathlib import Path

from gpucluster.formats.tables import GuardedCsvWriter
from gpucluster.formats.templating import render
from gpucluster.verify.compare import COLUMNS, KINDS, Finding, NetworkResult

TITLES: dict[str, str] = {
    "swapped": "two cables crossed",
    "miswired": "plugged into the wrong port",
    "missing": "no link",
    "unexpected": "a link the plan does not have",
    "wrong-width": "up at the wrong width",
    "wrong-speed": "up at the wrong speed",
}


def _printable(text: str) -> str:
    """Discovery text on a terminal: control characters (escape sequences) shown as '?'."""
    return "".join(c if c.isprintable() else "?" for c in text)


def _end(rack: str, unit: str, device: str, port: str) -> str:
    racks, units, devices, ports = (v.split(" + ") for v in (rack, unit, device, port))
    return " + ".join(
        f"{r} U{u} {d} {p}" if r else f"{d} {p}" for r, u, d, p in zip(racks, units, devices, ports, strict=False)
    )


def summary_lines(results: list[NetworkResult]) -> list[str]:
    lines = []
    for result in results:
        counts = Counter(f.kind for f in result.findings)
        what = ", ".join(f"{counts[k]} {k}" for k in KINDS if counts[k]) or "matches the plan"
        lines.append(
            f"{result.network}: {result.checked_links:,} of {result.planned_links:,} planned links checked "
            f"({_printable(result.source)}): {what}"
        )
        if result.split_unchecked:
            lines.append("  " + split_notice(result))
        if result.unknown_nodes:
            shown = ", ".join(repr(_printable(n)) for n in result.unknown_nodes[:5])
            more = f" and {len(result.unknown_nodes) - 5:,} more" if len(result.unknown_nodes) > 5 else ""
            lines.append(
                f"  {len(result.unknown_nodes):,} discovered node(s) name nothing in the plan: {shown}{more} "
                "(node descriptions not set? see verify/node-descriptions.csv)"
            )
        if result.duplicate_nodes:
            lines.append(
                f"  node descriptions carried by two or more nodes: {', '.join(map(repr, result.duplicate_nodes[:5]))}"
            )
    return lines


def split_notice(result: NetworkResult) -> str:
    """What verify could not check on split switch ports, said every time so that it never passes them silently."""
    links = result.split_unchecked
    ports = sorted({f"{p.b.device} {p.b.port.rsplit('/', 1)[0]}" for p in links})
    cables = ", ".join(sorted(p.cable for p in links)[:8]) + (f" and {len(links) - 8:,} more" if len(links) > 8 else "")
    return (
        f"{len(links):,} link(s) on {len(ports):,} split switch port(s) (1:2 splitters) checked to the switch but "
        "NOT to the switch port: how the switch numbers a split port's halves is not documented, so a leg on the "
        "wrong half or on another port of the same switch is not seen; check these by hand at the switch "
        f"('show interfaces ib status'): {_printable(cables)}"
    )


def table_lines(results: list[NetworkResult]) -> list[str]:
    """The findings as an aligned table: kind, cable, both ends (rack, U, device, port), what was found."""
    rows = [("KIND", "CABLE", "END A", "END B", "FOUND")]
    for result in results:
        for f in result.findings:
            rows.append(
                (
                    f.kind,
                    f.cable or "-",
                    _end(f.a_rack, f.a_u, f.a_device, f.a_port),
                    _end(f.b_rack, f.b_u, f.b_device, f.b_port),
                    _printable(f.found),
                )
            )
    if len(rows) == 1:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4] for row in rows]


def findings_csv(results: list[NetworkResult]) -> str:
    handle = io.StringIO()
    writer = GuardedCsvWriter(handle)
    writer.writerow(COLUMNS)
    for result in results:
        for f in result.findings:
            writer.writerow([getattr(f, c) for c in COLUMNS])
    return handle.getvalue()


def findings_html(results: list[NetworkResult], design: str) -> str:
    def row(f: Finding) -> dict[str, object]:
        return {
            "f": f,
            "a": _end(f.a_rack, f.a_u, f.a_device, f.a_port),
            "b": _end(f.b_rack, f.b_u, f.b_device, f.b_port),
            "a_labels": [label for label in f.a_label.split(" + ") if label],
            "b_labels": [label for label in f.b_label.split(" + ") if label],
        }

    sections = [
        (result, [(kind, TITLES[kind], [row(f) for f in result.findings if f.kind == kind]) for kind in KINDS])
        for result in results
    ]
    return render(
        "verify/findings.html",
        design=design,
        sections=sections,
        summary=summary_lines(results),
        matches=not any(r.findings for r in results),
        split_unchecked=sum(len(r.split_unchecked) for r in results),
    )


def write_reports(results: list[NetworkResult], design: str, folder: Path) -> list[Path]:
    """findings.csv and findings.html in `folder`, each written atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (("findings.csv", findings_csv(results)), ("findings.html", findings_html(results, design))):
        path = folder / name
        staging = path.with_name(f".{name}.tmp")
        staging.write_text(text, encoding="utf-8")
        os.replace(staging, path)
        written.append(path)
    return written


__all__ = ["Finding", "findings_csv", "findings_html", "split_notice", "summary_lines", "table_lines", "write_reports"]
