"""Every citation the project ships names a source a reader can open: a document, a URL, a paper, a repository.

Notes kept on one workstation (the ``*-facts.md`` research files, anything under /work/shared) are not sources: a
user of the catalog, a BOM or a report has no way to read them, so no shipped file may cite them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ["gpucluster", "templates", "components", "policy-pack", "README.md", "docs"]
SUFFIXES = {".py", ".yaml", ".yml", ".j2", ".md", ".json", ".txt", ".html", ".css", ".sh", ".toml"}
# A research-notes file (hardware-facts.md, "reliability-facts 5.2", "hardware-facts §5"), the machine-local
# reference folder, the notes' name for themselves, or the tag they gave an unnamed relay.
LOCAL_NOTES = re.compile(
    r"\b[a-z]+(?:-[a-z]+)*-facts\b|/work/shared|shared reference|shared facts|RLY-CN", re.IGNORECASE
)


def _shipped_files() -> list[Path]:
    files = []
    for name in SHIPPED:
        path = ROOT / name
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += [p for p in sorted(path.rglob("*")) if p.is_file() and p.suffix in SUFFIXES]
    return files


def test_no_shipped_file_cites_local_research_notes() -> None:
    files = _shipped_files()
    assert any(p.name == "servers.yaml" for p in files), "the parts catalog is among the shipped files scanned"
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if LOCAL_NOTES.search(line)
    ]
    assert not found, "cite the primary document (or the page that relays it) instead:\n" + "\n".join(found)


def test_the_pattern_catches_each_way_the_notes_were_cited() -> None:
    for cited in (
        "(via shared reference hardware-facts.md 1.4)",
        "(reliability-facts 5.2)",
        "(hardware-facts §5, Raritan PX3-5878)",
        "/work/shared/reference/rack-scale-facts.md",
        "via [RLY-CN]",
    ):
        assert LOCAL_NOTES.search(cited), cited
    for real in ("arXiv:2407.21783 Table 5", "https://docs.nvidia.com/dgx/dgxb200-user-guide/", "the facts of a plan"):
        assert not LOCAL_NOTES.search(real), real
