"""A build ended by SIGTERM (a CI job's timeout, `kill`, systemd stopping a service) unwinds as Ctrl-C does: the
writer processes and the planning process it forked are stopped and reaped, the staging folder is removed, and the
previous output is left as it was."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from conftest import ROOT

DESIGN = ROOT / "bench" / "designs" / "h100-4096.yaml"  # seconds of writers side by side: time to stop it mid-way


def test_sigterm_mid_build_stops_every_process_and_keeps_the_previous_output(tmp_path):
    out = tmp_path / "out"
    previous = out / "bench-h100-4096"
    previous.mkdir(parents=True)
    (previous / "kept.txt").write_text("the previous build's output")
    build = subprocess.Popen(
        [sys.executable, "-m", "gpucluster.cli", "build", str(DESIGN), "-o", str(out), "--no-lock", "-j", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: what is left of it after it ends can be found
    )
    try:
        deadline = time.monotonic() + 300
        while not list(out.glob(".bench-h100-4096.*.tmp")):  # writers are at work in the staging folder
            assert build.poll() is None, "the build ended before it could be stopped mid-way"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        build.send_signal(signal.SIGTERM)
        _stdout, stderr = build.communicate(timeout=120)
    finally:
        if build.poll() is None:
            os.killpg(build.pid, signal.SIGKILL)
    assert build.returncode == 128 + signal.SIGTERM
    assert "terminated (SIGTERM)" in stderr
    assert "Traceback" not in stderr
    time.sleep(0.5)
    try:  # nothing of the build's process group is left running
        os.killpg(build.pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive, "a writer or planning process outlived the build"
    assert sorted(p.name for p in out.iterdir()) == ["bench-h100-4096"]  # no staging folder left behind
    assert [p.name for p in previous.iterdir()] == ["kept.txt"]
