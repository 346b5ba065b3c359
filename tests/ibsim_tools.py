"""Run Debian's ibsim on a topology file, inject faults through its console, and discover the simulated fabric
with the real ibnetdiscover through libumad2sim (ibsim-run)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from gpucluster.artifacts.verify_expected import ibsim_port_options

IBSIM = shutil.which("ibsim")
IBSIM_RUN = shutil.which("ibsim-run")
IBNETDISCOVER = shutil.which("ibnetdiscover") or "/usr/sbin/ibnetdiscover"
needs_ibsim = pytest.mark.skipif(
    not (IBSIM and IBSIM_RUN and Path(IBNETDISCOVER).exists()),
    reason="ibsim-utils and infiniband-diags are not installed (.ci/install-tools installs them)",
)

# Debian bookworm's ibsim 0.10 trains links at most at HDR (NDR arrived in ibsim 0.11), so the simulated
# fabric runs one lane generation down and the discovered rates are named one generation up again. Every
# other field of the discovery file is ibnetdiscover's output as it printed it.
DOWN = {"XDR": "NDR", "NDR": "HDR", "HDR": "EDR"}
UP = {low: high for high, low in DOWN.items()}
_RATE = re.compile(r"(\d+x)(XDR|NDR|HDR|EDR)$", re.MULTILINE)


# a port line's ibsim options (w=, s=, e=), between the peer's port and the comment
_OPTIONS = re.compile(r"^(\[\d+\]\t\"[^\"]+\"\[\d+\]\t)[a-z]=[^\t]*(\t)", re.MULTILINE)


def one_generation(text: str, table: dict[str, str]) -> str:
    """The rates of a .net file or of ibnetdiscover's output one generation up or down, a .net port line's ibsim
    options with them."""
    return _with_options(_RATE.sub(lambda m: m.group(1) + table.get(m.group(2), m.group(2)), text))


def _with_options(net: str) -> str:
    """Each port line's ibsim options made again from the rate in its comment."""
    lines = net.split("\n")
    for i, line in enumerate(lines):
        rate = _RATE.search(line) if line.startswith("[") else None
        if rate:
            options = ibsim_port_options(rate.group(0))
            lines[i] = _OPTIONS.sub(lambda m, o=options: m.group(1) + o + m.group(2), line)
    return "\n".join(lines)


def set_port_rate(net: str, node_id: str, port: int, rate: str) -> str:
    """The .net text with one port of one node enabled at another width/rate (e.g. 1xHDR): a bad cable."""
    out, in_node = [], False
    for line in net.splitlines():
        if line.startswith(("Switch", "Ca")):
            in_node = f'"{node_id}"' in line
        elif in_node and line.startswith(f"[{port}]"):
            line = _with_options(_RATE.sub(rate, line))
        out.append(line)
    return "\n".join(out) + "\n"


def discover(net_text: str, folder: Path, commands: list[str] = (), timeout_s: float = 120) -> str:
    """Simulate `net_text` with ibsim, run `commands` on its console (Unlink, Link ...), then return what
    ibnetdiscover finds."""
    folder.mkdir(parents=True, exist_ok=True)
    net = folder / "sim.net"
    net.write_text(net_text, encoding="utf-8")
    log_path = folder / "ibsim.log"
    env = dict(os.environ, IBSIM_SOCKNAME=f"gpucluster-{uuid.uuid4().hex[:12]}")
    with open(log_path, "w", encoding="utf-8") as log:
        sim = subprocess.Popen(
            [IBSIM, "-s", str(net)], stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, env=env, text=True
        )
        try:
            _wait_prompts(sim, log_path, 1, timeout_s)
            for command in commands:
                sim.stdin.write(command + "\n")
            sim.stdin.flush()
            _wait_prompts(sim, log_path, 1 + len(commands), timeout_s)
            result = subprocess.run(
                [IBSIM_RUN, IBNETDISCOVER], env=env, capture_output=True, text=True, timeout=timeout_s, check=False
            )
            assert result.returncode == 0, result.stderr
            errors = [
                line for line in log_path.read_text().splitlines() if line.startswith("#") and "not found" in line
            ]
            assert not errors, errors  # a console command that named no node
            return result.stdout
        finally:
            sim.kill()
            sim.wait(10)


def _wait_prompts(sim: subprocess.Popen, log: Path, count: int, timeout_s: float) -> None:
    """Wait until ibsim has printed `count` console prompts (it is ready / has run the commands)."""
    deadline = time.monotonic() + timeout_s
    while log.read_text(errors="replace").count("sim> ") < count:
        assert sim.poll() is None, log.read_text(errors="replace")[-2000:]
        assert time.monotonic() < deadline, "ibsim did not answer"
        time.sleep(0.05)
