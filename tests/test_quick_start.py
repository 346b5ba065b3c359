"""The README's first command works in a fresh root container (no sudo there) and as a user (through sudo);
a build killed mid-way leaves no staging folder behind once the next build has run."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import DESIGNS, ROOT

from gpucluster import load_design, plan_design, write_artifacts


def _first_command() -> str:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"```sh\n(.*?)\n```", readme, re.S)
    assert match
    return match.group(1)


def _stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


def _run_as(uid: int, with_sudo: bool, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run the README's first command with stub tools on PATH: `id -u` says `uid`; apt-get, python3 and the
    venv's pip/gpucluster record their calls in a log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    _stub(bin_dir, "id", f'[ "$1" = "-u" ] && echo {uid}')
    _stub(bin_dir, "apt-get", f'echo "apt-get $*" >> {log}')
    if with_sudo:
        _stub(bin_dir, "sudo", f'echo "sudo $1" >> {log}; exec "$@"')
    venv_bin = tmp_path / "work" / ".venv" / "bin"
    _stub(
        bin_dir,
        "python3",
        textwrap.dedent(f"""\
            echo "python3 $*" >> {log}
            mkdir -p {venv_bin}
            printf '#!/bin/sh\\necho "pip $*" >> {log}\\n' > {venv_bin}/pip
            printf '#!/bin/sh\\necho "gpucluster $*" >> {log}\\n' > {venv_bin}/gpucluster
            chmod +x {venv_bin}/pip {venv_bin}/gpucluster"""),
    )
    (tmp_path / "work").mkdir()
    result = subprocess.run(
        ["/bin/sh", "-c", _first_command()],
        cwd=tmp_path / "work",
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result, log.read_text() if log.exists() else ""


@pytest.mark.parametrize("shell", ["/bin/sh", "/bin/bash"])
def test_the_readme_first_command_runs_as_root_without_sudo(tmp_path, shell):
    assert Path(shell).exists()
    result, calls = _run_as(0, with_sudo=False, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "sudo" not in calls
    assert "apt-get update" in calls and "apt-get install -y python3-venv" in calls
    assert "gpucluster build designs/superpod-h200-4su.yaml -o out/" in calls


def test_the_readme_first_command_uses_sudo_as_a_user(tmp_path):
    result, calls = _run_as(1000, with_sudo=True, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert calls.count("sudo apt-get") == 2
    assert "gpucluster build" in calls


def test_a_killed_build_leaves_a_staging_folder_the_next_build_removes(tmp_path):
    design = DESIGNS / "lab-4-servers.yaml"
    script = textwrap.dedent(f"""\
        import os, signal
        import gpucluster.artifacts as artifacts
        from gpucluster import AnalysedPlan, load_design, plan_design, write_artifacts

        def killed(plan, loaded, staging):
            (staging / "half-written.txt").write_text("partial")
            os.kill(os.getpid(), signal.SIGKILL)  # no finally runs

        artifacts.ARTIFACTS["summary"] = artifacts.Artifact(killed, AnalysedPlan)
        loaded = load_design({str(design)!r})
        write_artifacts(plan_design(loaded), loaded, {str(tmp_path)!r}, only=["summary"])
        """)
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL
    stale = [p.name for p in tmp_path.iterdir()]
    assert len(stale) == 1 and stale[0].startswith(".lab-4-servers.") and stale[0].endswith(".tmp")

    loaded = load_design(design)
    folder = write_artifacts(plan_design(loaded), loaded, tmp_path, only=["summary"])
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder.name]


def test_a_staging_folder_of_another_design_is_left_alone(tmp_path):
    other = tmp_path / "keep-me"
    other.mkdir()
    (tmp_path / ".other-design.abc.tmp").mkdir()
    loaded = load_design(DESIGNS / "lab-4-servers.yaml")
    write_artifacts(plan_design(loaded), loaded, tmp_path, only=["summary"])
    assert (tmp_path / ".other-design.abc.tmp").exists() and other.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".lab-4-servers.")]
    assert os.listdir(tmp_path)
