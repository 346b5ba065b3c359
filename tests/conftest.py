"""Shared fixtures: the example designs, planned once per test process."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import slurmctld

from gpucluster import LoadedDesign, Plan, load_design, plan_design

ROOT = Path(__file__).resolve().parents[1]
DESIGNS = ROOT / "designs"
EXAMPLES = sorted(p.stem for p in DESIGNS.glob("*.yaml"))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="Chromium is not installed (.ci/install-tools installs it)"
)


@pytest.fixture(autouse=True)
def _locks_of_the_example_designs_in_scratch(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """`gpucluster build` writes a plan lock beside its design: a test that builds an example design of the
    repository keeps that lock in its own scratch folder, so it never lands in designs/ (where the next run
    would build under it)."""
    import gpucluster.cli
    from gpucluster.plan.lock import default_lock_path

    folder: list[Path] = []

    def scratch_lock(design: Path) -> Path:
        lock = default_lock_path(design)
        if not lock.resolve().is_relative_to(ROOT):
            return lock
        folder[:] = folder or [tmp_path_factory.mktemp("locks")]
        return folder[0] / lock.name

    monkeypatch.setattr(gpucluster.cli, "default_lock_path", scratch_lock)


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


def _slurm_or_skip(slurm: Any, what: str, how: str) -> Any:
    """A Slurm installation, or a skip where it is missing; CI (CI=true) installs every tool, so there a missing
    one fails the test instead of skipping it."""
    if slurm is None:
        message = f"{what} is not installed ({how})"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return slurm


@pytest.fixture(scope="session")
def debian_slurm() -> slurmctld.Slurm:
    """Debian's slurm-wlm 22.05 (.ci/install-tools)."""
    return _slurm_or_skip(slurmctld.debian_slurm(), "slurm-wlm", ".ci/install-tools")


@pytest.fixture(scope="session")
def current_slurm() -> slurmctld.Slurm:
    """Slurm 26.05 built from ../shared/tools/slurm/ (.ci/build-slurm, cached in /var/cache/gpu-cluster/)."""
    return _slurm_or_skip(slurmctld.current_slurm(), f"Slurm {slurmctld.CURRENT_SLURM_RELEASE}", ".ci/build-slurm")


@pytest.fixture
def load_slurm(tmp_path: Path) -> Callable[..., slurmctld.Loaded]:
    """``load_slurm(slurm, files)``: generated Slurm configs (file name -> text) loaded into that Slurm's slurmctld
    (``slurmctld -D -i``, nodes State=FUTURE), each call in its own scratch folder; returns what scontrol reported
    (topology, topoconf, nodes, partitions, config) and the log (``.problems``: its complaints)."""
    calls = iter(range(1_000))

    def load(slurm: slurmctld.Slurm, files: dict[str, str]) -> slurmctld.Loaded:
        return slurmctld.load_configs(slurm, files, tmp_path / f"slurm-{next(calls)}")

    return load
