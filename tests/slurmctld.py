"""A real slurmctld for the tests: Debian's slurm-wlm 22.05 (.ci/install-tools) and a current Slurm built from
../shared/tools/slurm/ by .ci/build-slurm. ``load_configs`` starts slurmctld in the foreground (``-D -i``) on a
local copy of generated configs (controller localhost, no munge, no accounting, nodes State=FUTURE) and returns what
scontrol reports: topology, topoconf, nodes, partitions, config, and the log with its complaints."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

# The Slurm .ci/build-slurm builds, and where (GPUCLUSTER_SLURM_PREFIX overrides it).
CURRENT_SLURM_RELEASE = "26.05.3"
CURRENT_SLURM_PREFIX = Path(
    os.environ.get("GPUCLUSTER_SLURM_PREFIX", f"/var/cache/gpu-cluster/slurm-{CURRENT_SLURM_RELEASE}")
)

# Log lines the test environment causes, not the configs: slurmctld probes every MPI plugin and this machine
# has no PMIx library; a fresh state directory has no state files yet; there is no NVIDIA driver (NVML) here;
# the copy stores no accounting (see local_copy) while jobacct_gather still gathers it (26.05 words it "no
# AccountingStorageType set"); the 26.05 build has no HTTP parser library (.ci/build-slurm follows the shared
# README's dependency list), which only slurmctld's HTTP listeners (metrics, slurmrestd) use.
ENVIRONMENT_NOISE = (
    "Job accounting information gathered, but not stored",
    "you have asked for it not to be stored",
    "cannot create http_parser context",
    # a reply to an scontrol that gave up waiting (a loaded test machine): about the connection, not the configs
    "failed: Unexpected missing socket error",
    "can only be used with SlurmDBD, ignoring",  # fair-share weights: checked in the key list instead
    "mpi/pmix",
    "High latency for 1000 calls to gettimeofday()",  # a loaded test machine's clock, not the configs
    "MPI: Cannot create context",
    "state file",
    "Trying backup state save file",
    "We were configured with nvml functionality, but that lib wasn't found",
)
_BAD = re.compile(r"error|fatal|warning|ignor|unrecognized|invalid|unknown|not supported|deprecat", re.IGNORECASE)


@dataclass(frozen=True)
class Slurm:
    """One Slurm installation: its release (YY.MM) and the programs the tests run."""

    release: str
    slurmctld: Path
    slurmd: Path
    scontrol: Path

    @property
    def version(self) -> tuple[int, int]:
        year, month = self.release.split(".")[:2]
        return int(year), int(month)


def debian_slurm() -> Slurm | None:
    """Debian's slurm-wlm (22.05), when installed."""
    slurmctld = Path(shutil.which("slurmctld") or "/usr/sbin/slurmctld")
    scontrol = shutil.which("scontrol")
    if not (slurmctld.exists() and scontrol):
        return None
    return Slurm("22.05", slurmctld, Path(shutil.which("slurmd") or "/usr/sbin/slurmd"), Path(scontrol))


def current_slurm() -> Slurm | None:
    """The Slurm .ci/build-slurm installs (complete: marked by .complete after make install)."""
    prefix = CURRENT_SLURM_PREFIX
    if not (prefix / ".complete").exists():
        return None
    return Slurm(
        ".".join(CURRENT_SLURM_RELEASE.split(".")[:2]),
        prefix / "sbin" / "slurmctld",
        prefix / "sbin" / "slurmd",
        prefix / "bin" / "scontrol",
    )


@dataclass(frozen=True)
class Loaded:
    """What slurmctld reported about a loaded configuration."""

    topology: list[dict[str, str]]  # scontrol show topology (the default one), one record per switch or block
    topology_text: str
    topologies: dict[str, list[dict[str, str]]]  # scontrol show topology NAME, for each topology of topology.yaml
    topoconf: str  # scontrol show topoconf (Slurm 25.05+; empty before)
    nodes: list[dict[str, str]]
    partitions: list[dict[str, str]]
    config: str
    log: str

    @property
    def problems(self) -> list[str]:
        return problems(self.log)


def local_copy(files: dict[str, str], scratch: Path) -> dict[str, str]:
    """The generated configs with only what lets slurmctld run here changed: the controller is localhost,
    no munge (auth/none, cred/none), no accounting (slurmdbd needs a MySQL server, and slurmctld will not start
    with AccountingStorageTRES when slurmdbd is down: these three lines go unchecked, and AccountingStorageEnforce
    where a design's accounts set it, which needs slurmdbd too), state and logs in the
    scratch folder, nodes FUTURE (no name resolution), GPU device files in the scratch folder, a longer
    MessageTimeout (a busy machine). Every replaced
    key must be present."""
    conf = files["slurm.conf"]
    port = free_port()
    replace = {
        r"^(SlurmctldHost=.*\n)+": "SlurmctldHost=localhost\n",
        r"^AuthType=.*$": "AuthType=auth/none",
        r"^CredType=.*$": "CredType=cred/none",
        r"^AccountingStorageType=.*$": "AccountingStorageType=accounting_storage/none",
        r"^AccountingStorageHost=.*\n": "",
        r"^AccountingStorageTRES=.*\n": "",
        r"^SlurmUser=.*$": f"SlurmUser={_user()}",
        r"^StateSaveLocation=.*$": f"StateSaveLocation={scratch}/state",
        r"^SlurmdSpoolDir=.*$": f"SlurmdSpoolDir={scratch}/spool",
        r"^SlurmctldPort=.*$": f"SlurmctldPort={port}",
        r"^SlurmdPort=.*$": f"SlurmdPort={port + 1}",
    }
    for pattern, new in replace.items():
        conf, count = re.subn(pattern, new, conf, flags=re.MULTILINE)
        assert count, f"slurm.conf has no line matching {pattern}"
    conf = re.sub(r"^AccountingStorageEnforce=.*\n", "", conf, flags=re.MULTILINE)  # only with accounts
    conf = re.sub(r"^(NodeName=.*)$", r"\1 State=FUTURE", conf, flags=re.MULTILINE)
    conf += (
        f"SlurmctldPidFile={scratch}/slurmctld.pid\nSlurmctldLogFile={scratch}/slurmctld.log\n"
        f"SlurmdPidFile={scratch}/slurmd.pid\nSlurmctldDebug=info\nMailProg=/bin/true\n"
        "MessageTimeout=60\n"  # scontrol waits for a slurmctld slowed by a busy test machine
    )
    local = dict(files)
    local["slurm.conf"] = conf
    local["gres.conf"] = files["gres.conf"].replace("/dev/nvidia", f"{scratch}/dev/nvidia")
    return local


def free_port() -> int:
    """A port below Linux's ephemeral range (32768-60999), so no client connection of a parallel test takes it
    between this check and slurmctld's bind; the next two are free too (SlurmdPort)."""
    for attempt in range(200):
        port = 10000 + (os.getpid() * 7919 + attempt * 131 + time.monotonic_ns() // 1000) % 20000
        try:
            for offset in range(2):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port + offset))
        except OSError:
            continue
        return port
    raise AssertionError("no free port for slurmctld")


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def problems(log: str) -> list[str]:
    """Log lines that report a problem with the configs (the environment's own noise left out)."""
    return [
        line for line in log.splitlines() if _BAD.search(line) and not any(noise in line for noise in ENVIRONMENT_NOISE)
    ]


def parse_records(text: str, one_per_line: bool = False) -> list[dict[str, str]]:
    """scontrol output: records separated by blank lines (show topology: one per line), key=value pairs
    separated by spaces."""
    records = []
    for block in re.split(r"\n" if one_per_line else r"\n\s*\n", text.strip()):
        record: dict[str, str] = {}
        for key, value in re.findall(r"(\w+)=(\S*)", block):
            record.setdefault(key, value)
        if record:
            records.append(record)
    return records


class Slurmctld:
    """slurmctld in the foreground on the scratch folder's configs, and scontrol against it."""

    def __init__(self, slurm: Slurm, scratch: Path):
        self.slurm = slurm
        self.scratch = scratch
        self.env = {**os.environ, "SLURM_CONF": str(scratch / "slurm.conf")}
        (scratch / "state").mkdir()
        (scratch / "spool").mkdir()
        self.process = subprocess.Popen(
            [str(slurm.slurmctld), "-D", "-i", "-f", str(scratch / "slurm.conf")],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError("slurmctld exited:\n" + self.stop())
            ping = subprocess.run([str(slurm.scontrol), "ping"], env=self.env, capture_output=True, text=True)
            if "UP" in ping.stdout:
                return
            time.sleep(0.2)
        raise AssertionError("slurmctld did not answer:\n" + self.stop())

    def scontrol(self, *args: str, check: bool = True) -> str:
        result = subprocess.run(
            [str(self.slurm.scontrol), *args], env=self.env, capture_output=True, text=True, check=check
        )
        return result.stdout

    def stop(self) -> str:
        """Stop slurmctld; return everything it logged."""
        if self.process.poll() is None:
            self.process.terminate()
        output, _ = self.process.communicate(timeout=30)
        log_file = self.scratch / "slurmctld.log"
        return output + (log_file.read_text() if log_file.exists() else "")


def load_configs(slurm: Slurm, files: dict[str, str], scratch: Path) -> Loaded:
    """Load generated configs (file name -> text) into ``slurm``'s slurmctld and collect what it reports."""
    scratch.mkdir(parents=True, exist_ok=True)
    local = local_copy(files, scratch)
    for name, text in local.items():
        (scratch / name).write_text(text)
    ctld = Slurmctld(slurm, scratch)
    try:
        topology = ctld.scontrol("show", "topology")
        names = [t["topology"] for t in yaml.safe_load(files["topology.yaml"])] if "topology.yaml" in files else []
        named = {name: parse_records(ctld.scontrol("show", "topology", name), one_per_line=True) for name in names}
        topoconf = ctld.scontrol("show", "topoconf") if slurm.version >= (25, 5) else ""
        nodes = ctld.scontrol("--future", "show", "nodes")
        partitions = ctld.scontrol("show", "partitions")
        config = ctld.scontrol("show", "config")
    finally:
        log = ctld.stop()
    return Loaded(
        parse_records(topology, one_per_line=True),
        topology,
        named,
        topoconf,
        parse_records(nodes),
        parse_records(partitions),
        config,
        log,
    )
