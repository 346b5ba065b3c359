"""The hostile-input corpus: malformed designs (designs/), the hostile catalogs and price lists they name (side/),
and the few cases made at run time (files too large to keep, links, a named pipe, a folder, special paths).

Each design's first line is `# expect: TEXT`: the text its error message must hold (a field path, or what is
wrong where a YAML-level problem has no field). Every case must end in exit status 2 with a located message, no
traceback, nothing written and no quoted content of a foreign file, within seconds, under a 2 GiB address-space
limit. `run_case` runs one in a subprocess and measures it; tests/test_hostile.py checks the corpus and
bench/hostile.py reports the slowest case.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ADDRESS_SPACE_BYTES = 2 << 30  # 2 GiB
TIMEOUT_S = 60.0  # a hang, not a slow case: the figures are measured, not asserted to the second
SECRET = "SECRET-CONTENT-OF-A-FOREIGN-FILE"


@dataclass(frozen=True)
class Case:
    name: str
    design: Path  # the path given on the command line
    expect: str  # text the error message must hold


@dataclass(frozen=True)
class Outcome:
    returncode: int | None  # None: killed at the timeout
    stdout: str
    stderr: str
    wall_s: float
    cpu_s: float
    max_rss_mib: float


def expectation(path: Path) -> str:
    """The `# expect:` text of a case file (UTF-8, or UTF-16 where the case is about the encoding)."""
    data = path.read_bytes()
    text = data.decode("utf-16") if data.startswith(b"\xff\xfe") else data.decode("utf-8", errors="replace")
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    assert first.startswith("# expect: "), f"{path.name}: the first line must be '# expect: ...'"
    return first.removeprefix("# expect: ").strip()


def prepare(folder: Path) -> list[Case]:
    """Copy the corpus into `folder` and add the cases made at run time; returns every case."""
    cases_dir = folder / "cases"
    shutil.copytree(HERE / "designs", cases_dir)
    shutil.copytree(HERE / "side", cases_dir / "side")
    outside = folder / "outside"
    outside.mkdir()
    (outside / "prices.csv").write_text(f"{SECRET},1,USD\n", encoding="utf-8")
    (outside / "parts.yaml").write_text(f"{SECRET}: [\n", encoding="utf-8")
    side = cases_dir / "side"
    (side / "link-out.csv").symlink_to(outside / "prices.csv")
    os.mkfifo(side / "fifo.csv")
    (side / "folder.csv").mkdir()
    (side / "prices-huge-field.csv").write_text(
        "part_number,unit_price,currency,note\nabc,1,USD," + "x" * 200_000 + "\n", encoding="utf-8"
    )
    (cases_dir / "size-file-too-large.yaml").write_text(
        "# expect: larger than 1,024 KiB\nname: x\ncompute: {servers: 4}\n" + "# padding\n" * 150_000,
        encoding="utf-8",
    )
    teams = "".join(f"    - {{name: t{i}, gpus: 0}}\n" for i in range(1_001))
    (cases_dir / "size-teams.yaml").write_text(
        "# expect: scheduler.kubernetes.teams\nname: x\ncompute: {servers: 4}\n"
        f"scheduler:\n  kind: kubernetes\n  kubernetes:\n   teams:\n{teams}",
        encoding="utf-8",
    )
    cases = [Case(p.stem, p, expectation(p)) for p in sorted(cases_dir.glob("*.yaml"))]
    (folder / "a-folder.yaml").mkdir()
    cases += [
        Case("argv-dev-zero", Path("/dev/zero"), "not a regular file"),
        Case("argv-folder", folder / "a-folder.yaml", "is a directory"),
        Case("argv-missing", folder / "missing.yaml", "no such file"),
    ]
    return cases


GENERATED = ("size-file-too-large", "size-teams", "argv-dev-zero", "argv-folder", "argv-missing")


def case_names() -> list[str]:
    """Every case's name, known before the corpus is prepared (for test parametrisation)."""
    return sorted([p.stem for p in (HERE / "designs").glob("*.yaml")] + list(GENERATED))


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))


def run_case(case: Case, out: Path, timeout_s: float = TIMEOUT_S, args: list[str] | None = None) -> Outcome:
    """`gpucluster build` on the case (or the command `args`) in a subprocess under the address-space limit, with
    its wall time, CPU time and peak resident memory (from wait4)."""
    args = args or ["build", str(case.design), "-o", str(out), "--no-progress"]
    command = [sys.executable, "-m", "gpucluster.cli", *args]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    logs = out.parent / f".{case.name}.log"
    logs.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(logs / "stdout", "w+b") as stdout, open(logs / "stderr", "w+b") as stderr:
        process = subprocess.Popen(
            command, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, env=env, preexec_fn=_limit_address_space
        )
        returncode: int | None = None
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                returncode = os.waitstatus_to_exitcode(status)
                process.returncode = returncode
                break
            if time.monotonic() - start > timeout_s:
                process.kill()
                _, _, usage = os.wait4(process.pid, 0)
                process.returncode = -9
                break
            time.sleep(0.02)
        wall = time.monotonic() - start
        stdout.seek(0)
        stderr.seek(0)
        texts = stdout.read().decode("utf-8", "replace"), stderr.read().decode("utf-8", "replace")
    shutil.rmtree(logs)
    return Outcome(returncode, *texts, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)
