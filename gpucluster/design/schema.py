"""The design file: what an architect writes. Defaults follow the NVIDIA DGX SuperPOD reference
architecture, so a design that names a server and a count is complete.

Units are in field names (``_kw``, ``_mm``, ``_gbytes_per_s`` is gigabytes per second,
``_gbps`` gigabits per second, ``_tb`` decimal terabytes).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpucluster.inputs.limits import (
    MAX_CAPACITY_TB,
    MAX_CATALOG_FILES,
    MAX_FILESYSTEMS,
    MAX_GPUS,
    MAX_LIST_ITEMS,
    MAX_PORTS_PER_DEVICE,
    MAX_SERVERS,
    MAX_THROUGHPUT_GBYTES_PER_S,
    MIN_CAPACITY_TB,
    MIN_THROUGHPUT_GBYTES_PER_S,
    Phases,
    Text,
    visible_strings,
)

# A Linux network interface name as netplan and the Network Operator's selectors take it (at most 15 characters)
InterfaceName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$")]
_PlaneInterfaces = Annotated[list[InterfaceName], Field(min_length=2, max_length=4)]  # one per plane, plane 1 first


class _Section(BaseModel):
    """Strict: a YAML value of the wrong type is refused, never converted (a string is not a number, a boolean
    not a count), a number must be finite and no text may hold an invisible or control character."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)
    _visible = field_validator("*")(visible_strings)


def _ratio(value: object) -> object:
    """Accept oversubscription as a number (2) or as the architect writes it ("2:1", "4:3")."""
    if isinstance(value, str) and ":" in value:
        down, _, up = value.partition(":")
        try:
            down_f, up_f = float(down), float(up)
        except ValueError:
            raise ValueError(f"ratio {value!r} is not of the form 'down:up', e.g. '2:1'") from None
        if not (math.isfinite(down_f) and math.isfinite(up_f) and down_f > 0 and up_f > 0):
            raise ValueError(f"ratio {value!r} needs two positive numbers, e.g. '2:1'")
        return down_f / up_f
    return value


class PowerFeed(_Section):
    """One rack power circuit as the site provides it."""

    voltage_v: float = Field(415, ge=100, le=1000, description="line-to-line voltage for three-phase feeds")
    phases: Phases = 3
    breaker_a: float = Field(60, ge=10, le=1000, description="circuit breaker rating")
    redundancy: Literal["N+1", "2N", "N"] = Field(
        "N+1",
        description="N+1 (the DGX SuperPOD RA's): every PDU of a rack on its own feed (A, B, C ...), each device's "
        "power supplies spread evenly over them, so any one PDU or feed can be lost (three PDUs per DGX compute rack, "
        "PSUs 2-2-2); 2N: A and B feeds, each able to carry the whole rack; N: load shared by all circuits",
    )
    continuous_load_fraction: float = Field(
        0.8, ge=0.5, le=1, description="usable share of a breaker's rating for continuous load (NEC 80 % rule)"
    )


class Cabling(_Section):
    """How cables are routed, for run lengths."""

    tray_height_above_rack_m: float = Field(0.3, ge=0, le=10, description="overhead tray above the rack top")
    slack_m: float = Field(0.5, ge=0, le=100, description="fixed slack per cable (service loop)")
    slack_fraction: float = Field(0.1, ge=0, le=1, description="slack as a share of the routed length")


class Site(_Section):
    """The data hall: racks, rows, power and cooling."""

    name: str = Field("DC1", pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,15}$", description="site code used in labels")
    rack: str = Field("legrand-nvidpd13", description="rack model from the catalog")
    rack_height_u: int | None = Field(None, gt=0, le=60, description="defaults to the rack model's height")
    rack_power_budget_kw: float = Field(45.0, ge=1, le=1000, description="maximum IT load per rack (nameplate maximum)")
    servers_per_rack: int | None = Field(
        None,
        gt=0,
        le=64,
        description="GPU servers per compute rack; default: the most that fit the power budget, the rack height and "
        "the cooling and divide the scalable unit evenly (the RA's layouts)",
    )
    cooling: Literal["air", "rear-door", "liquid"] = "rear-door"
    cooling_capacity_kw: float | None = Field(
        None, ge=1, le=1000, description="heat one rack's cooling can remove; defaults by cooling type"
    )
    rack_pitch_mm: float | None = Field(
        None, ge=100, le=5000, description="rack-to-rack spacing in a row; defaults to rack width"
    )
    row_pitch_mm: float = Field(2400, ge=500, le=20_000, description="row-to-row spacing (rack depth plus aisle)")
    floor_load_kpa: float = Field(
        12.0,
        ge=1,
        le=100,
        description="the floor's rated distributed (superimposed live) load; default 12 kPa (250 lb/ft2), "
        "TIA-942 Rated-3, which the DGX SuperPOD RAs ask of the data centre",
    )
    racks_per_row: int = Field(20, gt=0, le=200)
    power_feed: PowerFeed = PowerFeed()
    pdu: str | None = Field(
        None, description="compute racks' PDU model from the catalog; chosen from the power feed when omitted"
    )
    non_compute_pdu: str | None = Field(
        None,
        description="PDU model for racks without GPU servers (network, storage, management); chosen from the power "
        "feed when omitted (the one with the most C13 outlets, for switches' C14 inlets)",
    )
    pue: float = Field(1.3, ge=1.0, le=3.0, description="power usage effectiveness of the facility")
    electricity_price_per_kwh: float | None = Field(None, ge=0, le=100)
    currency: str = Field("USD", pattern=r"^[A-Z]{3}$")
    air_temperature_rise_k: float = Field(
        11.1,
        ge=3,
        le=30,
        description="air temperature rise across the equipment, for airflow (11.1 K = the 20 °F rule of thumb; "
        "ASHRAE's equipment rises are 5-20 K, below 3 K the airflow a rack needs is no longer buildable)",
    )
    coolant_temperature_rise_k: float | None = Field(
        None,
        ge=1,
        le=30,
        description="coolant temperature rise across a liquid-cooled rack: its flow follows from its liquid heat "
        "(water); when omitted, the rack system's published flow per kW",
    )
    coolant_supply_c: float | None = Field(
        None, ge=2, le=50, description="facility coolant supply temperature, for published flow-by-supply tables"
    )
    cdu: str = Field(
        "auto",
        description="coolant distribution unit (catalog) for liquid-cooled rack systems; auto: the smallest "
        "in-row unit that serves a scalable unit's racks",
    )
    cabling: Cabling = Cabling()
    paper: Literal["a4", "letter"] = Field(
        "a4",
        description="paper size of the rack cabling printouts, the design review report and the decision summary "
        "(ISO A4 or US Letter)",
    )


class Compute(_Section):
    """The GPU servers."""

    server: str = Field("dgx-h100", description="GPU server model from the catalog")
    gpus: int | None = Field(None, gt=0, le=MAX_GPUS, description="production GPUs (give gpus or servers)")
    servers: int | None = Field(None, gt=0, le=MAX_SERVERS, description="production servers (give gpus or servers)")
    spare_servers: int | None = Field(
        None,
        ge=0,
        le=MAX_SERVERS,
        description="hot spares, racked and cabled; default one per scalable unit where the units have a free slot",
    )
    hostname_prefix: str = Field("gpu", pattern=r"^[a-z][a-z0-9-]{0,15}$")
    rail_interfaces: list[InterfaceName | _PlaneInterfaces] | None = Field(
        None,
        max_length=MAX_PORTS_PER_DEVICE,
        description="the server's compute interfaces in rail order, as `ip link` shows them on one server, where "
        "its catalog entry does not name them (OEM servers): hosts' netplan and, on RoCE, the pods' per-rail "
        "networks need them; on a multi-plane fabric a list per rail, one name per plane",
    )

    @model_validator(mode="after")
    def _gpus_or_servers(self) -> Compute:
        if self.gpus is None and self.servers is None:
            raise ValueError("give either 'gpus' or 'servers'")
        if self.gpus is not None and self.servers is not None:
            raise ValueError("give 'gpus' or 'servers', not both")
        return self


class ComputeFabric(_Section):
    """The GPU-to-GPU network: one port per GPU, a rail-optimized fat tree."""

    technology: Literal["infiniband-ndr", "infiniband-xdr", "roce"] | None = Field(
        None, description="defaults to what the server's compute ports speak"
    )
    switch: str | None = Field(None, description="switch model; default qm9700 (NDR), q3400-ra (XDR), sn5600 (RoCE)")
    topology: Literal["rail-optimized-fat-tree"] = "rail-optimized-fat-tree"
    scalable_unit_servers: int = Field(32, gt=0, le=1024, description="servers per scalable unit (SU)")
    oversubscription: float = Field(1.0, ge=1.0, le=16.0, description="leaf down:up bandwidth, e.g. 1 or '2:1'")
    fabric_manager: str | None = Field("auto", description="UFM appliance model; 'auto' for InfiniBand, null for none")
    fabric_managers: int = Field(2, ge=0, le=8, description="fabric-manager appliances (an HA pair by default)")
    fabric_manager_ports: Literal["su-slot", "own-leaf"] = Field(
        "su-slot",
        description="where the fabric managers' compute ports land: su-slot = on SU 1's rail leaves in place of a "
        "server, as the DGX SuperPOD RA does (31 DGX in SU 1); own-leaf = on a leaf of their own outside the SUs, "
        "with the management servers, so every SU keeps all its server slots",
    )
    planes: int | None = Field(
        None,
        ge=1,
        le=4,
        description="independent fabric planes, each GPU port split across them (RoCE only); default from the "
        "server: 2 for ConnectX-8 on Spectrum-X (each GPU 2 x 400GbE), else 1",
    )
    final_scalable_units: int | None = Field(
        None,
        ge=1,
        le=4096,
        description="growth reserve: the scalable units the cluster will have at its final size; spines, cores, "
        "the central racks, floor space and the in-band network are planned for it, so a later phase adds SUs "
        "and their leaf-spine cables without re-cabling a port (default: the SUs the design fills now)",
    )

    _parse_ratio = field_validator("oversubscription", mode="before")(_ratio)


class StorageNetwork(_Section):
    """The network between servers and the parallel filesystem, separate from the compute fabric."""

    technology: Literal["infiniband-ndr", "infiniband-xdr", "ethernet"] | None = Field(
        None, description="defaults to what the server's storage ports speak"
    )
    switch: str | None = Field(None, description="switch model; default qm9700 (NDR) or sn5600 (Ethernet)")
    server_oversubscription: float = Field(
        4 / 3, ge=1.0, le=16.0, description="leaf down:up for server ports (the SuperPOD RA runs about 4:3)"
    )
    storage_oversubscription: float = Field(1.0, ge=1.0, le=16.0, description="leaf down:up for storage ports")
    fabric_managers: int | None = Field(
        None,
        ge=0,
        le=8,
        description="UFM appliances of an InfiniBand storage fabric, its own subnet (the H100 RA's storage-fabric UFM "
        "pair, Table 7); default: as many as the compute fabric's, 0 on Ethernet",
    )
    final_scalable_units: int | None = Field(
        None,
        ge=1,
        le=4096,
        description="growth reserve of the storage network: the scalable units its spines are planned for "
        "(default: compute_fabric.final_scalable_units)",
    )

    _parse_ratio = field_validator("server_oversubscription", "storage_oversubscription", mode="before")(_ratio)


PerformanceLevel = Literal["good", "better", "best"]


FILESYSTEM_NAME = r"^[a-z][a-z0-9]{0,15}$"  # a device-name stem (<name>-01) and a default mount point (/<name>)
# names the plan's own devices start with: a filesystem of that name would give its blocks their names
RESERVED_FILESYSTEM_NAMES = ("pfs", "obj", "ufm", "head", "pdu", "cdu")


class ExistingLinks(_Section):
    """The client-facing links of a filesystem the site already has, as its owner states them: they are cabled
    to the storage network's leaves, the filesystem itself is not bought, racked or powered by this plan."""

    count: int = Field(ge=1, le=256, description="links from the existing system to the storage network")
    speed_gbps: Literal[100, 200, 400, 800] = Field(description="per link")
    network: Literal["infiniband", "ethernet"] = Field(description="what its ports speak")
    cage_type: Literal["qsfp28", "qsfp56", "qsfp112", "osfp"] | None = Field(
        None,
        description="the cage of its ports; default: qsfp28 at 100G, qsfp56 at 200G InfiniBand, qsfp112 at 200G "
        "Ethernet, osfp at 400G and 800G",
    )
    run_length_m: float = Field(
        30, ge=1, le=2000, description="cable run from the storage leaves' rack to the existing system"
    )


class ParallelFilesystem(_Section):
    """A filesystem the cluster mounts: new (bought, sized from the catalog's building blocks) or existing (the
    site's, reached over the storage network through the links its owner states). The parallel filesystem is the
    fast tier training reads from and checkpoints to."""

    name: str | None = Field(
        None,
        pattern=FILESYSTEM_NAME,
        description="its name (its devices <name>-01 ..., its mount /<name>); required in filesystems; the parallel "
        "filesystem's defaults to its kind (its blocks are pfs-01 ...)",
    )
    kind: Literal["lustre", "gpfs", "weka", "vast", "beegfs", "ontap", "nfs"] = "lustre"
    existing: bool = Field(False, description="the site's own: not bought; its links are stated under links")
    links: ExistingLinks | None = Field(None, description="an existing filesystem's client-facing links")
    mount: str | None = Field(
        None,
        pattern=r"^(/[A-Za-z0-9_][A-Za-z0-9._-]{0,63}){1,16}$",
        description="where the GPU nodes mount it; default /<name>",
    )
    block: str | None = Field(None, description="building block from the catalog; default fits the kind")
    capacity_tb: float | None = Field(
        None,
        ge=MIN_CAPACITY_TB,
        le=MAX_CAPACITY_TB,
        description="usable capacity; given alone, the filesystem is sized by it (the fewest blocks that hold it) "
        "and no throughput target is set; default: what the building blocks the throughput needs hold",
    )
    performance_level: PerformanceLevel = Field(
        "better",
        description="SuperPOD RA storage guideline level (Table 6, per SU) for a throughput target the design does not "
        "state; applied when stated, or when neither capacity nor throughput is given",
    )
    read_gbytes_per_s: float | None = Field(
        None,
        ge=MIN_THROUGHPUT_GBYTES_PER_S,
        le=MAX_THROUGHPUT_GBYTES_PER_S,
        description="aggregate read target; default from the level (none when only capacity_tb is given)",
    )
    write_gbytes_per_s: float | None = Field(
        None,
        ge=MIN_THROUGHPUT_GBYTES_PER_S,
        le=MAX_THROUGHPUT_GBYTES_PER_S,
        description="aggregate write target; default from the level (none when only capacity_tb is given)",
    )

    @model_validator(mode="after")
    def _existing_has_links(self) -> ParallelFilesystem:
        if self.existing and self.links is None:
            raise ValueError(
                "an existing filesystem needs links: {count, speed_gbps, network} (its client-facing ports), "
                "so the plan can cable it to the storage network"
            )
        if self.existing and self.capacity_tb is None:
            raise ValueError(
                "an existing filesystem needs capacity_tb (what it holds for this cluster, as the site knows)"
            )
        if self.existing and self.block:
            raise ValueError("an existing filesystem is not bought: drop block (its links say how it is reached)")
        if self.existing and "performance_level" in self.model_fields_set:
            raise ValueError("an existing filesystem is not sized: drop performance_level")
        if not self.existing and self.links is not None:
            raise ValueError("links describe an existing filesystem: add existing: true, or drop links")
        return self


class ObjectStorage(_Section):
    """The cheaper tier where raw data and finished models live, staged to the fast tier when needed."""

    block: str | None = Field(None, description="object-storage building block from the catalog")
    capacity_tb: float = Field(ge=MIN_CAPACITY_TB, le=MAX_CAPACITY_TB)
    throughput_gbytes_per_s: float | None = Field(
        None,
        ge=MIN_THROUGHPUT_GBYTES_PER_S,
        le=MAX_THROUGHPUT_GBYTES_PER_S,
        description="aggregate read throughput wanted",
    )
    shared_with_parallel_filesystem: bool = Field(
        False,
        description="serve S3 from the parallel filesystem's own blocks (a platform such as VAST presents the same "
        "data as files and objects): no object blocks of their own, and nothing staged between the tiers",
    )


class Management(_Section):
    """In-band (Ethernet) and out-of-band (BMC) management networks and the head nodes."""

    inband_switch: str | None = Field(None, description="default sn4600c (100G) or sn5600 for 200G+ in-band ports")
    oob_switch: str = Field("sn2201", description="1G RJ45 access switch for BMCs, switch and PDU management")
    oob_aggregation_switch: str = Field(
        "sn4600c",
        description="where the out-of-band switches uplink when the in-band top tier has no free ports for them "
        "(else they uplink into it, as the RA)",
    )
    management_server: str = "bcm-head-node"
    management_servers: int = Field(4, ge=1, le=64, description="head nodes (cluster manager, scheduler controllers)")


DNS1123_LABEL_RE = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"  # a Kubernetes namespace / object name segment
# slurmdbd names its MySQL tables "<ClusterName>_<table>", the longest "<ClusterName>_assoc_usage_month_table"
# (Slurm's src/plugins/accounting_storage/mysql/accounting_storage_mysql.c), and MySQL names are at most 64
# characters: 64 - 24 leaves 40 for the cluster name, given or derived from the design name.
SLURM_CLUSTER_NAME_MAX_CHARS = 40


# Slurm's releases (YY.MM, two a year since 23.02; SchedMD's CHANGELOG/ folder), from the oldest still running at
# sites (Debian 12's slurm-wlm 22.05) to the newest (26.05).
SlurmRelease = Literal["22.05", "23.02", "23.11", "24.05", "24.11", "25.05", "25.11", "26.05"]


# Slurm's time limits as slurm.conf(5) takes them: minutes, minutes:seconds, hours:minutes:seconds,
# days-hours[:minutes[:seconds]], or UNLIMITED / INFINITE.
_SLURM_TIME = r"^(UNLIMITED|INFINITE|\d{1,7}(:\d{1,2}){0,2}|\d{1,5}-\d{1,2}(:\d{1,2}){0,2})$"
_SLURM_NAME = r"^[a-z][a-z0-9_-]{0,39}$"  # partitions and accounts: lower case (sacctmgr folds account names)
_POSIX_USER = r"^[a-z_][a-z0-9_.-]{0,31}$"
SLURM_GENERATED_PARTITIONS = ("spares", "burnin")  # written for every Slurm cluster (hot spares, acceptance tests)


def slurm_minutes(limit: str) -> float:
    """A Slurm time limit in minutes (infinite for UNLIMITED/INFINITE), to compare two limits."""
    if limit in ("UNLIMITED", "INFINITE"):
        return math.inf
    days, dash, clock = limit.partition("-")
    if not dash:  # minutes, minutes:seconds or hours:minutes:seconds
        parts = [int(p) for p in days.split(":")]
        hours, minutes, seconds = parts if len(parts) == 3 else [0, *parts, 0][:3]
        return hours * 60 + minutes + seconds / 60
    hours, minutes, seconds = [*(int(p) for p in clock.split(":")), 0, 0][:3]  # days-hours[:minutes[:seconds]]
    return int(days) * 1440 + hours * 60 + minutes + seconds / 60


class SlurmPartition(_Section):
    """A partition as the site runs it: its servers (a count taken from the Slurm servers in plan order, or
    names), its limits and who may use it."""

    name: str = Field(
        pattern=_SLURM_NAME,
        description="partition name (lower case letters, digits, '-', '_'); not 'default', 'spares' or 'burnin'",
    )
    nodes: int | Literal["all"] | None = Field(
        None,
        description="production servers it takes: a count (partitions with counts take disjoint servers, in plan "
        "order, so each keeps its scalable units together) or 'all'; give nodes or node_list",
    )
    node_list: list[str] | None = Field(
        None,
        min_length=1,
        max_length=MAX_LIST_ITEMS,
        description="the servers by host name (e.g. gpu001), instead of a count",
    )
    default: bool = Field(False, description="the partition jobs go to when they name none (default: the first)")
    max_time: str | None = Field(None, pattern=_SLURM_TIME, description="MaxTime, e.g. '7-00:00:00' (default: none)")
    default_time: str | None = Field(None, pattern=_SLURM_TIME, description="DefaultTime, e.g. '1:00:00'")
    max_nodes: int | None = Field(None, ge=1, le=MAX_SERVERS, description="MaxNodes: most servers one job takes")
    allow_accounts: list[str] = Field(
        default_factory=list,
        max_length=MAX_LIST_ITEMS,
        description="accounts that may use it (AllowAccounts; default: every account)",
    )

    @field_validator("node_list")
    @classmethod
    def _host_names(cls, names: list[str] | None) -> list[str] | None:
        for name in names or []:
            if not re.fullmatch(r"[a-z][a-z0-9-]{0,62}", name):
                raise ValueError(f"{name!r} is not a host name (lower case letters, digits and '-')")
        _unique("host", names or [])
        return names

    @model_validator(mode="after")
    def _servers_and_limits(self) -> SlurmPartition:
        if self.name == "default" or self.name in SLURM_GENERATED_PARTITIONS:
            raise ValueError(
                f"partition name {self.name!r} is taken ('default' is Slurm's keyword; spares and burnin "
                "are written for every Slurm cluster)"
            )
        if (self.nodes is None) == (self.node_list is None):
            raise ValueError("give 'nodes' (a count or 'all') or 'node_list', one of them")
        if isinstance(self.nodes, int) and self.nodes < 1:
            raise ValueError("nodes must be at least 1")
        if self.default_time and self.max_time and slurm_minutes(self.default_time) > slurm_minutes(self.max_time):
            raise ValueError(f"default_time {self.default_time} is longer than max_time {self.max_time}")
        return self


class SlurmAccount(_Section):
    """A Slurm account (a department, a group, a project) in the fair-share tree, written as sacctmgr commands."""

    name: str = Field(pattern=_SLURM_NAME, description="account name (lower case); not 'root'")
    parent: str = Field("root", pattern=_SLURM_NAME, description="the parent account ('root': the top)")
    fairshare: int = Field(1, ge=1, le=1_000_000, description="shares among its siblings (sacctmgr Fairshare)")
    max_gpus: int | None = Field(
        None, ge=1, le=MAX_GPUS, description="GPUs its jobs may hold at once (GrpTRES=gres/gpu=N)"
    )
    max_jobs: int | None = Field(None, ge=1, le=1_000_000, description="running jobs per user (MaxJobs)")
    max_wall: str | None = Field(None, pattern=_SLURM_TIME, description="longest job (MaxWall), e.g. '2-00:00:00'")
    users: list[str] = Field(
        default_factory=list, max_length=MAX_LIST_ITEMS, description="POSIX user names that charge it"
    )

    @field_validator("users")
    @classmethod
    def _user_names(cls, users: list[str]) -> list[str]:
        for user in users:
            if not re.fullmatch(_POSIX_USER, user):
                raise ValueError(f"{user!r} is not a user name (lower case letters, digits, '_', '.', '-')")
        return users

    @model_validator(mode="after")
    def _not_root(self) -> SlurmAccount:
        if self.name == "root":
            raise ValueError("'root' is Slurm's own top account; name the account or give it parent: root")
        return self


class SlurmSettings(_Section):
    version: SlurmRelease = Field(
        "25.11",
        description="target Slurm release (the configs' generation): the block topology needs 23.11+, topology.yaml "
        "25.05+, 26.05 replaces OverSubscribe=EXCLUSIVE with Exclusive=NODE; 26.05 upgrades directly only from "
        "24.11, 25.05 and 25.11",
    )
    cluster_name: str | None = Field(
        None,
        pattern=rf"^[a-z][a-z0-9_]{{0,{SLURM_CLUSTER_NAME_MAX_CHARS - 1}}}$",
        description="Slurm ClusterName; default: the design name, '-' as '_' (at most 40 characters, for slurmdbd)",
    )
    state_save_location: str | None = Field(
        None,
        pattern=r"^/[A-Za-z0-9._/-]{1,200}$",
        description="slurmctld's StateSaveLocation; with a backup controller it must be storage both head nodes "
        "mount (default then: Base Command Manager's shared /cm/shared/apps/slurm/var/cm/statesave; with one "
        "controller /var/spool/slurmctld)",
    )
    containers: Literal["pyxis", "none"] = Field(
        "pyxis",
        description="container runtime for jobs: pyxis (NVIDIA's SPANK plugin with Enroot, `srun --container-image`, "
        "as DGX sites run containers; writes plugstack.conf) or none",
    )
    partitions: list[SlurmPartition] = Field(
        default_factory=list,
        max_length=MAX_LIST_ITEMS,
        description="the site's partitions, in place of the default 'gpu' partition of every production server "
        "(spares and burnin are always written)",
    )
    accounts: list[SlurmAccount] = Field(
        default_factory=list,
        max_length=MAX_LIST_ITEMS,
        description="accounts and fair share: written as slurm/accounts.sh (sacctmgr) with slurm/slurmdbd.conf",
    )

    @model_validator(mode="after")
    def _names_and_tree(self) -> SlurmSettings:
        _unique("partition", [p.name for p in self.partitions])
        _unique("account", [a.name for a in self.accounts])
        if sum(p.default for p in self.partitions) > 1:
            raise ValueError("only one partition can be the default")
        accounts = {a.name: a for a in self.accounts}
        for account in self.accounts:
            if account.parent != "root" and account.parent not in accounts:
                raise ValueError(
                    f"account {account.name!r}: unknown parent {account.parent!r} (root or one of: "
                    f"{', '.join(accounts) or 'no accounts'})"
                )
            seen, parent = {account.name}, account.parent
            while parent != "root":
                if parent in seen:
                    raise ValueError(f"account {account.name!r}: its parents go round in a circle")
                seen.add(parent)
                parent = accounts[parent].parent
        for partition in self.partitions:
            unknown = [a for a in partition.allow_accounts if a not in accounts]
            if unknown:
                raise ValueError(
                    f"partition {partition.name!r}: allow_accounts names unknown account(s) {', '.join(unknown)}"
                )
        return self


def _unique(what: str, names: list[str]) -> None:
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"{what} names must be unique; repeated: {', '.join(repeated)}")


class Team(_Section):
    """A team's GPU quota on Kubernetes, as Run:ai manages it (deserved quota, over-quota limit), mapped onto
    a Kueue ClusterQueue in the cluster's cohort."""

    name: str = Field(pattern=DNS1123_LABEL_RE, description="team name: its namespace, ClusterQueue and LocalQueue")
    gpus: int = Field(ge=0, le=MAX_GPUS, description="guaranteed GPUs (Kueue nominalQuota; Run:ai 'deserved' quota)")
    borrowing_limit_gpus: int | None = Field(
        None,
        ge=0,
        le=MAX_GPUS,
        description="GPUs the team may borrow beyond its quota from others' idle quota; null: no limit",
    )
    lending_limit_gpus: int | None = Field(
        None, ge=0, le=MAX_GPUS, description="GPUs of its quota the team lends to others when idle; null: all of it"
    )

    @model_validator(mode="after")
    def _lend_within_quota(self) -> Team:
        if self.lending_limit_gpus is not None and self.lending_limit_gpus > self.gpus:
            raise ValueError(f"lending_limit_gpus {self.lending_limit_gpus} is more than the team's {self.gpus} GPUs")
        return self


class GpuOperatorSettings(_Section):
    """Choices for the NVIDIA GPU Operator's Helm values."""

    driver: Literal["auto", "host", "container"] = Field(
        "auto",
        description="auto: the host's driver on DGX systems (DGX OS ships it), the driver container on others",
    )
    mig_strategy: Literal["none", "single", "mixed"] = Field(
        "none", description="MIG partitioning; training jobs take whole GPUs, so none by default"
    )


class KubernetesSettings(_Section):
    topology_labels: Literal["topograph-1", "topograph-0"] = Field(
        "topograph-1",
        description="the node labels' generation: topograph-1 (topograph 1.0: fabric.topograph.run/tier-N from the "
        "leaf up, accelerator.topograph.run/domain) or topograph-0 (up to topograph 0.5: <prefix>/leaf, spine, core, "
        "accelerator)",
    )
    topology_label_prefix: str | None = Field(
        None,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
        max_length=253,
        description="with topology_labels topograph-0: the labels' key prefix (default network.topology.nvidia.com, "
        "topograph 0.5's); topograph 1.0 fixes its keys",
    )
    kueue_api: Literal["v1beta2", "v1beta1"] = Field(
        "v1beta2",
        description="Kueue API version of the queues and topology: v1beta2 (current, Kueue 0.19) or v1beta1 (Kueue "
        "releases from topology-aware scheduling's beta to 0.19, which deprecates it)",
    )
    training_job: Literal["trainjob", "pytorchjob"] = Field(
        "trainjob",
        description="the launch template's kind: trainjob (Kubeflow Trainer v2, which Kueue integrates by default) or "
        "pytorchjob (Training Operator v1; Kueue 0.19 needs its kubeflow.org/pytorchjob integration turned on)",
    )
    teams: list[Team] = Field(
        default_factory=list,
        max_length=MAX_LIST_ITEMS,
        description="GPU quotas per team (Kueue ClusterQueues); default: one queue with all GPUs",
    )
    gpu_operator: GpuOperatorSettings = GpuOperatorSettings()
    rdma: Literal["shared", "sriov"] = Field(
        "shared",
        description="how pods reach the compute HCAs: the Network Operator's RDMA shared device plugin, or SR-IOV VFs",
    )

    @model_validator(mode="after")
    def _prefix_only_for_topograph_0(self) -> KubernetesSettings:
        if self.topology_label_prefix is not None and self.topology_labels == "topograph-1":
            raise ValueError(
                "topology_label_prefix is for topology_labels: topograph-0; topograph 1.0's label keys are fixed"
            )
        return self

    @field_validator("teams")
    @classmethod
    def _unique_teams(cls, teams: list[Team]) -> list[Team]:
        _unique("team", [t.name for t in teams])
        return teams


class Scheduler(_Section):
    kind: Literal["slurm", "kubernetes", "both"] = "slurm"
    kubernetes_servers: int | None = Field(
        None, ge=1, le=MAX_SERVERS, description="with 'both': servers given to Kubernetes (the rest run Slurm)"
    )
    slurm: SlurmSettings = SlurmSettings()
    kubernetes: KubernetesSettings = KubernetesSettings()

    @model_validator(mode="after")
    def _split_given_with_both(self) -> Scheduler:
        if self.kind == "both" and self.kubernetes_servers is None:
            raise ValueError("kind 'both' needs kubernetes_servers: how many servers Kubernetes gets")
        if self.kind != "both" and self.kubernetes_servers is not None:
            raise ValueError(f"kubernetes_servers is only used with kind 'both' (kind is {self.kind!r})")
        if self.kind == "slurm" and self.kubernetes.teams:
            raise ValueError("kubernetes.teams needs a Kubernetes side (kind 'kubernetes' or 'both')")
        if self.kind == "kubernetes" and (self.slurm.partitions or self.slurm.accounts):
            raise ValueError("slurm.partitions and slurm.accounts need a Slurm side (kind 'slurm' or 'both')")
        return self


class FailureRates(_Section):
    """Failures per unit and year that stop a training job, by component kind; each omitted kind keeps
    its sourced default (gpucluster/training/reliability.py, from Llama 3's 54-day failure table)."""

    gpu: float | None = Field(None, ge=0, le=100, description="per GPU and year")
    server: float | None = Field(None, ge=0, le=100, description="per GPU server and year (host parts, not GPUs)")
    nic_optics: float | None = Field(
        None, ge=0, le=100, description="per compute NIC or optical module and year (NICs, transceivers, AOC ends)"
    )
    switch: float | None = Field(None, ge=0, le=100, description="per compute-fabric switch and year")
    software: float | None = Field(
        None, ge=0, le=100, description="per GPU server and year: software bugs, NCCL timeouts, dependencies"
    )


class Workload(_Section):
    """The training job the cluster is for (sizing, checkpoints, failure analysis, simulation)."""

    model_parameters_b: float = Field(
        ge=0.01, le=100_000, description="model size in billions of parameters (10 million to 100 trillion)"
    )
    training_tokens_b: float | None = Field(
        None, ge=0.001, le=1_000_000, description="training tokens in billions (a million to a quadrillion)"
    )
    target_days: float | None = Field(
        None, ge=0.01, le=3650, description="wall-clock days the run should take (a quarter of an hour to ten years)"
    )
    precision: Literal["bf16", "fp16", "fp8"] = "bf16"
    mfu: float = Field(
        0.4,
        ge=0.01,
        le=1,
        description="expected model FLOPs utilisation (Llama 3 405B: 0.38-0.43); below 1 % the GPUs idle, not train",
    )
    checkpoint_interval_minutes: float | None = Field(
        None,
        ge=1,
        le=10_080,
        description="compute time between checkpoints, rounded to whole training steps; "
        "default Daly's optimum for this plan",
    )
    optimizer: Literal["adam", "adamw", "sgd-momentum"] = Field(
        "adam", description="sets the checkpoint's bytes per parameter (mixed-precision Adam: 14)"
    )
    checkpoint_bytes_per_parameter: float | None = Field(
        None, ge=1, le=64, description="overrides the optimizer's figure, e.g. 16 when fp32 gradients are saved too"
    )
    checkpoint_mode: Literal["blocking", "async"] = Field(
        "blocking", description="async: GPUs pause only to stage the checkpoint in host memory; the write goes on"
    )
    async_stall_seconds: float | None = Field(
        None, ge=0, le=3600, description="GPU pause per async checkpoint; default scaled from PyTorch's measurement"
    )
    restart_minutes: float = Field(
        10.0, ge=0, le=1440, description="detect, diagnose and reschedule after a failure (checkpoint load is added)"
    )
    run_days: float | None = Field(
        None, ge=0.01, le=3650, description="simulated run length; default target_days, else the compute time"
    )
    global_batch_tokens_m: float = Field(
        16.0, ge=0.001, le=10_000, description="tokens per step in millions (a thousand tokens at least)"
    )
    dataset_bytes_per_token: float = Field(4.0, ge=0.5, le=64, description="tokenised dataset size per token")
    dataset_tb: float | None = Field(
        None,
        ge=MIN_CAPACITY_TB,
        le=MAX_CAPACITY_TB,
        description="dataset size to stage; default tokens x bytes per token",
    )
    failure_rates: FailureRates = FailureRates()
    repair_hours: float = Field(72.0, ge=0.1, le=8760, description="time to repair a failed GPU server and return it")
    spare_confidence: float = Field(
        0.95,
        ge=0.5,
        le=0.9999,
        description="probability that the spares cover every server in repair at once (50 % to 99.99 %: the "
        "spare count grows without bound as it nears 1)",
    )


class BillOfMaterials(_Section):
    """What the BOM needs beyond the plan: the buyer's prices and the spares kept on site."""

    price_list: str | None = Field(
        None,
        description="CSV price list (part_number, unit_price, currency[, note]) relative to the design; adds unit and "
        "extended prices and totals to bom.xlsx",
    )
    spare_optics_fraction: float = Field(
        0.05,
        ge=0,
        le=1,
        description="spare transceivers and cables ordered per line, as a share of those installed (rounded up); "
        "default 5 %, a planning ASSUMPTION: no published per-transceiver failure rate was found",
    )


class Design(_Section):
    """One GPU training cluster."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$", description="used for output folder and cluster names")
    description: Text = ""
    catalog: list[str] = Field(
        default_factory=list,
        max_length=MAX_CATALOG_FILES,
        description="extra catalog files, relative to the design (or to a folder given with --data-dir)",
    )
    site: Site = Site()
    compute: Compute
    compute_fabric: ComputeFabric = ComputeFabric()
    storage_network: StorageNetwork = StorageNetwork()
    parallel_filesystem: ParallelFilesystem = ParallelFilesystem()
    filesystems: list[ParallelFilesystem] = Field(
        default_factory=list,
        max_length=MAX_FILESYSTEMS,
        description="further filesystems the GPU nodes mount beside the parallel filesystem (a home, a project "
        "store, the site's existing one), each new or existing, each with a name",
    )
    object_storage: ObjectStorage | None = None
    management: Management = Management()
    scheduler: Scheduler = Scheduler()
    workload: Workload | None = None
    bom: BillOfMaterials = BillOfMaterials()
