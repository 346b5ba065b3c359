"""Shared fixtures: the example designs, planned once per test process."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from gpucluster import LoadedDesign, Plan, load_design, plan_design

ROOT = Path(__file__).resolve().parents[1]
DESIGNS = ROOT / "designs"
EXAMPLES = sorted(p.stem for p in DESIGNS.glob("*.yaml"))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="Chromium is not installed (.ci/install-tools installs it)"
)


@cache
def planned(name: str) -> tuple[LoadedDesign, Plan]:
    """An example design (designs/<name>.yaml) loaded and planned; cached, so treat it as read-only."""
    loaded = load_design(DESIGNS / f"{name}.yaml")
    return loaded, plan_design(loaded)


@pytest.fixture(scope="session")
def h100_1su() -> tuple[LoadedDesign, Plan]:
    return planned("superpod-h100-1su")


@pytest.fixture(scope="session")
def h200_4su() -> tuple[LoadedDesign, Plan]:
    return planned("superpod-h200-4su")


def write_design(tmp_path: Path, text: str, name: str = "design.yaml") -> Path:
    """A design file in a scratch folder, for tests of user input."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@contextmanager
def chromium_page(url: str) -> Iterator[tuple[Any, list[str], list[str]]]:
    """`url` open in Debian's headless Chromium (driven by playwright, no browser download): the page, the console
    errors and warnings and page errors it reported, and every URL it requested."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is a test dependency")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            problems: list[str] = []
            requests: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(url)
            yield page, problems, requests
        finally:
            browser.close()
