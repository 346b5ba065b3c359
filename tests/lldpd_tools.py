"""A planned Ethernet network built of Linux network namespaces (one per device, one veth pair per cable) with
Debian's real lldpd in each, so the tests read what ``lldpcli show neighbors -f json`` really prints."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

import pytest

LLDPD = shutil.which("lldpd") or "/usr/sbin/lldpd"
LLDPCLI = shutil.which("lldpcli") or "/usr/sbin/lldpcli"
IP = shutil.which("ip") or "/usr/sbin/ip"


def _netns_works() -> bool:
    if not (Path(LLDPD).exists() and Path(LLDPCLI).exists() and Path(IP).exists()):
        return False
    name = f"gcprobe{uuid.uuid4().hex[:8]}"
    made = subprocess.run([IP, "netns", "add", name], capture_output=True, check=False).returncode == 0
    if made:
        subprocess.run([IP, "netns", "del", name], capture_output=True, check=False)
    return made


needs_lldpd = pytest.mark.skipif(
    not _netns_works(), reason="lldpd (.ci/install-tools) and network namespaces (root) are needed"
)


class Lab:
    """Namespaces, veth pairs and lldpd daemons; everything it starts it stops (by pid) on close()."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.tag = uuid.uuid4().hex[:6]
        self.namespaces: dict[str, str] = {}  # device -> namespace
        self.daemons: list[subprocess.Popen] = []
        # lldpcli gives up root for lldpd's user, so the sockets and configs sit in a folder that user can reach
        self.sockets = Path(tempfile.mkdtemp(prefix="gc-lldpd-"))
        self.sockets.chmod(0o755)

    def namespace(self, device: str) -> str:
        ns = self.namespaces.get(device)
        if ns is None:
            ns = self.namespaces[device] = f"gc{self.tag}n{len(self.namespaces)}"
            subprocess.run([IP, "netns", "add", ns], check=True)
        return ns

    def cable(self, a_device: str, a_if: str, b_device: str, b_if: str) -> None:
        a_ns, b_ns = self.namespace(a_device), self.namespace(b_device)
        subprocess.run(
            [IP, "link", "add", a_if, "netns", a_ns, "type", "veth", "peer", "name", b_if, "netns", b_ns], check=True
        )
        subprocess.run([IP, "-n", a_ns, "link", "set", a_if, "up"], check=True)
        subprocess.run([IP, "-n", b_ns, "link", "set", b_if, "up"], check=True)

    def start(self) -> None:
        """lldpd in every namespace, announcing the device's name every second."""
        for device, ns in self.namespaces.items():
            conf = self.sockets / f"{ns}.conf"  # lldpd applies it through lldpcli, as lldpd's user
            conf.write_text(f"configure system hostname {device}\nconfigure lldp tx-interval 1\n", encoding="utf-8")
            log = open(self.folder / f"{ns}.log", "w", encoding="utf-8")  # noqa: SIM115 (closed with the daemon)
            self.daemons.append(
                subprocess.Popen(
                    [IP, "netns", "exec", ns, LLDPD, "-d", "-u", str(self._socket(ns)), "-O", str(conf)],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )

    def _socket(self, ns: str) -> Path:
        return self.sockets / f"{ns}.sock"

    def neighbours(self, device: str) -> str:
        ns = self.namespaces[device]
        result = subprocess.run(
            [IP, "netns", "exec", ns, LLDPCLI, "-u", str(self._socket(ns)), "show", "neighbors", "-f", "json"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return result.stdout

    def wait_for(self, counts: dict[str, int], timeout_s: float = 60) -> dict[str, str]:
        """Each device's lldpcli JSON once it sees `counts[device]` neighbours."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:  # a daemon just started may not have its socket yet
                outputs = {device: self.neighbours(device) for device in counts}
            except subprocess.CalledProcessError as error:
                assert time.monotonic() < deadline, error.stderr
                time.sleep(0.5)
                continue
            if all(_count(outputs[d]) >= n for d, n in counts.items()):
                return outputs
            assert time.monotonic() < deadline, {d: _count(o) for d, o in outputs.items()}
            time.sleep(0.5)

    def close(self) -> None:
        for ns in self.namespaces.values():
            pids = subprocess.run([IP, "netns", "pids", ns], capture_output=True, text=True, check=False).stdout
            for pid in pids.split():
                subprocess.run(["kill", pid], capture_output=True, check=False)
        for daemon in self.daemons:
            try:
                daemon.wait(10)
            except subprocess.TimeoutExpired:
                daemon.kill()
        for ns in self.namespaces.values():
            subprocess.run([IP, "netns", "del", ns], capture_output=True, check=False)
        shutil.rmtree(self.sockets, ignore_errors=True)


def _count(text: str) -> int:
    lldp = json.loads(text).get("lldp") or {}
    interfaces: Iterable = lldp.get("interface", []) if isinstance(lldp, dict) else []
    return 1 if isinstance(interfaces, dict) else len(interfaces)
