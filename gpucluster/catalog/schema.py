"""Typed parts catalog: every hardware fact lives here once, with its source beside it.

A catalog file's ``sources`` map tags to citations; each of its ``parts`` (``kind`` selects the model) cites every
measured field it sets (dotted for nested values, ``gpu.tdp_w``) by a tag, a URL or ``"derived: <arithmetic>"``;
:func:`uncited_fields` finds the ones that do not (docs/catalog.md).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from gpucluster.inputs.limits import (
    MAX_LIST_ITEMS,
    MAX_NAME_CHARS,
    MAX_PORTS_PER_DEVICE,
    MIN_CAPACITY_TB,
    MIN_THROUGHPUT_GBYTES_PER_S,
    PORT_NAME,
    DeviceName,
    Name,
    Phases,
    Text,
    format_template,
    visible_strings,
)

MIB_PER_GB = 1024
MIN_FABRIC_RADIX = 4  # the smallest switch a fat tree is built of: two ports down, two up

CageType = Literal["osfp", "qsfp112", "qsfp56", "qsfp28", "sfp28", "rj45"]
Technology = Literal[
    "infiniband-ndr",
    "infiniband-xdr",
    "ethernet",
]
PortRole = Literal[
    "compute",  # a GPU's own port on the compute fabric (one per GPU, rail order)
    "storage",  # a host's port on the storage network
    "inband",  # a host's port on the in-band management network
    "bmc",  # the baseboard management controller (out-of-band)
    "fabric",  # a switch port usable down or up
    "access",  # a switch's low-speed edge port (e.g. SN2201 1G RJ45)
    "uplink",  # a switch's high-speed uplink (e.g. SN2201 QSFP28)
    "mgmt",  # a switch's or appliance's own management port (out-of-band)
]
Airflow = Literal["front-to-rear", "rear-to-front", "passive", "liquid"]
Media = Literal["dac", "acc", "aoc", "mmf", "smf", "cat6"]


class _Strict(BaseModel):
    """A catalog file is user input too: wrong types are refused, never converted, numbers are finite and no text
    holds an invisible or control character."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)
    _visible = field_validator("*")(visible_strings)


_PORT_FIELDS: dict[str, float] = {"cage": 1, "sub": 1, "sub0": 0, "index": 1}


def _port_template(template: str) -> str:
    return format_template(template, _PORT_FIELDS)


def _flat(pairs: list[tuple[str, str]]) -> list[str]:
    return [name for pair in pairs for name in pair]


def _split_port_template(template: str) -> str:
    return format_template(template, {**_PORT_FIELDS, "half": 1, "lane0": 0})


def _part_number_template(template: str) -> str:
    return format_template(template, {"length_m": 1.5, "length_dm": 15})


def _check_port_name(template: str, name: str) -> None:
    """A port name a template gives reaches switch configs and cabling labels: only the characters port names use."""
    if not PORT_NAME.fullmatch(name):
        allowed = "1-64 letters, digits, spaces and _ . / : -"
        raise ValueError(f"{template} gives the port name {name[:80]!r}; a port name is {allowed}")


class PortGroup(_Strict):
    """A run of identical cages on a device, e.g. 32 twin-port OSFP cages of 2 x 400G."""

    role: PortRole
    cage_type: CageType
    cages: int = Field(gt=0, le=MAX_PORTS_PER_DEVICE)
    ports_per_cage: int = Field(default=1, gt=0, le=8, description="logical ports per cage (2 = twin-port OSFP)")
    speed_gbps: float = Field(ge=0.1, le=100_000, description="per logical port; 0.1: 100BASE-T management ports")
    technology: Technology | None = None
    name_format: Annotated[str, Field(max_length=64), AfterValidator(_port_template)] = Field(
        description="port name; {cage} (cage number, from number_from), {sub} (1-based sub-port), {sub0} "
        "(0-based sub-port, as Cumulus names split ports swp1s0) and {index} (1-based logical port within "
        "the group) are substituted",
    )
    number_from: int = Field(default=1, ge=0, le=100_000, description="the number the first cage of the group carries")
    split_name_format: Annotated[str, Field(max_length=64), AfterValidator(_split_port_template)] | None = Field(
        default=None,
        description="switch ports that split into two ports of half their speed (a 1:2 splitter fibre, NVIDIA "
        "MFP7E20): the name of each half; {half} (1 or 2) and {lane0} (0-based quarter of the cage, as Cumulus names a "
        "4x breakout swp1s0..swp1s3) with the name_format fields",
    )
    rails: list[int] | None = Field(
        default=None,
        max_length=MAX_PORTS_PER_DEVICE,
        description="compute ports: the rail (GPU index + 1) of each logical port, in group order",
    )
    os_devices: list[DeviceName] | None = Field(
        default=None,
        max_length=MAX_PORTS_PER_DEVICE,
        description="host RDMA device per logical port, in rail order (NCCL_IB_HCA)",
    )
    netdevs: list[DeviceName] | None = Field(
        default=None, max_length=MAX_PORTS_PER_DEVICE, description="host network interface per logical port"
    )
    ethernet_netdevs: list[DeviceName] | None = Field(
        default=None,
        max_length=MAX_PORTS_PER_DEVICE,
        description="VPI ports: the host network interface per logical port when the port runs Ethernet (RoCE); "
        "netdevs names them in the group's own technology",
    )
    plane_netdevs: list[Annotated[list[DeviceName], Field(max_length=4)]] | None = Field(
        default=None,
        max_length=MAX_PORTS_PER_DEVICE,
        description="compute ports split into Ethernet planes (Spectrum-X software multiplane: one PF per plane): "
        "per logical port, in group order, the host network interface of each plane, plane 1 first",
    )
    pci_device_id: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{4}$",
        description="PCI device ID of the adapter behind these ports (lower-case hex, e.g. 1021 for ConnectX-7): "
        "what device-plugin selectors and NCCL's device discovery match when names are not known",
    )
    ethernet_planes: int | None = Field(
        default=None,
        ge=2,
        le=4,
        description="compute ports on a Spectrum-X Ethernet fabric: planes each port splits into, an equal share "
        "of its speed per plane (ConnectX-8: '800Gb/s or XDR IB or 2 x 400GbE', so 2)",
    )

    @property
    def port_count(self) -> int:
        return self.cages * self.ports_per_cage

    def _name_fields(self) -> list[tuple[dict[str, int], int]]:
        """The name_format fields of every logical port, in group order, with its 1-based cage in the group."""
        fields = []
        for cage in range(1, self.cages + 1):
            for sub in range(1, self.ports_per_cage + 1):
                index = (cage - 1) * self.ports_per_cage + sub
                fields.append(
                    ({"cage": cage - 1 + self.number_from, "sub": sub, "sub0": sub - 1, "index": index}, cage)
                )
        return fields

    def port_names(self) -> list[tuple[str, int]]:
        """(name, 1-based cage within the group) of every logical port, in group order."""
        return [(self.name_format.format(**fields), cage) for fields, cage in self._name_fields()]

    def split_port_names(self) -> list[tuple[str, str]]:
        """The two half-speed ports of every logical port, in group order (empty when the ports do not split)."""
        split = self.split_name_format
        if split is None:
            return []
        return [
            (split.format(**f, half=1, lane0=2 * f["sub0"]), split.format(**f, half=2, lane0=2 * f["sub0"] + 1))
            for f, _cage in self._name_fields()
        ]

    def plane_port_names(self) -> list[tuple[str, int, int]]:
        """(name, 1-based cage, plane) of every port a multi-plane Ethernet fabric uses: each logical port
        split into one port per plane, named <port>/<plane>."""
        planes = self.ethernet_planes or 1
        return [(f"{name}/{plane}", cage, plane) for name, cage in self.port_names() for plane in range(1, planes + 1)]

    @model_validator(mode="after")
    def _device_lists_match_ports(self) -> PortGroup:
        if self.port_count > MAX_PORTS_PER_DEVICE:
            raise ValueError(f"{self.port_count} ports; at most {MAX_PORTS_PER_DEVICE} per device are supported")
        ports = self.port_names()
        for name, _cage in (ports[0], ports[-1]):
            _check_port_name("name_format", name)
        halves = self.split_port_names()
        for name in (*halves[0], *halves[-1]) if halves else ():
            _check_port_name("split_name_format", name)
        if self.rails is not None and sorted(self.rails) != list(range(1, self.port_count + 1)):
            raise ValueError(f"rails must list 1..{self.port_count} once each")
        for name in ("os_devices", "netdevs", "ethernet_netdevs", "plane_netdevs"):
            values = getattr(self, name)
            if values is not None and len(values) != self.port_count:
                raise ValueError(f"{name} lists {len(values)} entries for {self.port_count} ports")
        if self.plane_netdevs is not None:
            if not self.ethernet_planes:
                raise ValueError("plane_netdevs names each plane's interface; the group has no ethernet_planes")
            for index, names in enumerate(self.plane_netdevs, start=1):
                if len(names) != self.ethernet_planes:
                    raise ValueError(
                        f"plane_netdevs: port {index} lists {len(names)} interfaces for {self.ethernet_planes} planes"
                    )
        return self


class Psus(_Strict):
    count: int = Field(gt=0, le=64)
    rating_w: float = Field(ge=1, le=100_000)
    redundancy: Name = Field(description='e.g. "4+2" or "1+1"')
    inlet: Name = Field(description="IEC 60320 inlet, e.g. C20")


class _Part(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")
    vendor: Name
    model: Name
    part_number: Name | None = None
    description: Text = ""
    sources: dict[Name, Text] = Field(default_factory=dict, max_length=MAX_LIST_ITEMS)


class RackMounted(_Part):
    u_height: float = Field(ge=0, le=60, description="rack units; 0 for zero-U (side-mounted) parts")
    weight_kg: float | None = Field(default=None, gt=0, le=10_000)
    depth_mm: float | None = Field(default=None, gt=0, le=5_000)
    power_typical_w: float = Field(ge=0, le=1_000_000)
    power_max_w: float = Field(ge=0, le=1_000_000)
    power_max_includes_optics: bool = Field(
        default=False,
        description="power_max_w already covers modules or active cables in every cage (e.g. a switch maximum "
        "'with active cables'); otherwise the plan adds the optics it puts in the device's cages",
    )
    airflow: Airflow = "front-to-rear"
    airflow_cfm: float | None = Field(default=None, gt=0, le=100_000)
    ports: list[PortGroup] = Field(default_factory=list, max_length=64)
    psus: Psus | None = None

    @model_validator(mode="after")
    def _typical_not_above_max(self) -> RackMounted:
        if self.power_typical_w > self.power_max_w:
            raise ValueError("power_typical_w exceeds power_max_w")
        if sum(group.port_count for group in self.ports) > MAX_PORTS_PER_DEVICE:
            raise ValueError(f"more than {MAX_PORTS_PER_DEVICE} ports; that many per device are not supported")
        # whole ports' names are unique, and so are split halves' (a half may reuse a whole port's name, as Cumulus
        # names both a 2x and a 4x breakout swp1s0 ...: a cage runs one way or the other)
        seen: set[str] = set()
        halves: set[str] = set()
        for group in self.ports:
            for names, known in (([n for n, _ in group.port_names()], seen), (_flat(group.split_port_names()), halves)):
                for name in names:
                    if name in known:
                        raise ValueError(f"port name {name!r} is used twice; each port needs its own name")
                    known.add(name)
        return self

    def port_groups(self, role: str) -> list[PortGroup]:
        return [group for group in self.ports if group.role == role]


class Gpu(_Strict):
    model: Name
    count: int = Field(gt=0, le=72)
    memory_gb: float = Field(ge=1, le=100_000)
    tdp_w: float = Field(ge=1, le=100_000)
    bf16_dense_tflops: float = Field(ge=1, le=1_000_000, description="dense (no sparsity) BF16 peak per GPU")
    gres_type: str = Field(pattern=r"^[a-z0-9_]+$", description="Slurm GRES type, e.g. h100")
    nvlink_domain_gpus: int = Field(
        gt=0, le=MAX_PORTS_PER_DEVICE, description="GPUs in one NVLink domain (8 for HGX, 72 for NVL72)"
    )
    nvlink_bandwidth_gbytes_per_s: float = Field(ge=1, le=1_000_000, description="per GPU, total both directions")


class Cpu(_Strict):
    model: Name
    sockets: int = Field(gt=0, le=64)
    cores_per_socket: int = Field(gt=0, le=4_096)
    threads_per_core: int = Field(gt=0, le=16)


class Cooling(_Strict):
    """How the part rejects heat; liquid_fraction is the share of its heat taken by liquid."""

    method: Literal["air", "liquid"] = "air"
    liquid_fraction: float = Field(default=0.0, ge=0, le=1)


class GpuServer(RackMounted):
    kind: Literal["gpu_server"]
    gpu: Gpu
    cpu: Cpu
    memory_gb: float = Field(ge=1, le=1_000_000)
    os_reserved_memory_gb: float = Field(
        ge=0, le=1_000_000, description="memory the OS keeps (Slurm RealMemory is the rest)"
    )
    local_nvme_tb: float | None = Field(default=None, ge=0, le=100_000)
    cooling: Cooling = Cooling()

    @property
    def threads(self) -> int:
        """Hardware threads (what Slurm and Kubernetes count as CPUs)."""
        return self.cpu.sockets * self.cpu.cores_per_socket * self.cpu.threads_per_core

    @property
    def usable_memory_mib(self) -> int:
        """Memory left to jobs once the OS keeps its share, in MiB: memory_gb counts binary gigabytes
        (32 x 64 GB DIMMs = 2,048 GB), schedulers count MiB."""
        return math.floor((self.memory_gb - self.os_reserved_memory_gb) * MIB_PER_GB)

    @model_validator(mode="after")
    def _one_compute_port_per_gpu(self) -> GpuServer:
        compute = sum(group.port_count for group in self.port_groups("compute"))
        if compute not in (0, self.gpu.count):
            raise ValueError(f"{compute} compute ports for {self.gpu.count} GPUs (rail-optimized needs one per GPU)")
        return self


class Switch(RackMounted):
    kind: Literal["switch"]
    technology: Technology
    subnet_manager: bool = Field(default=False, description="runs an on-board InfiniBand subnet manager")

    @property
    def radix(self) -> int:
        """Logical fabric ports at full speed."""
        return sum(group.port_count for group in self.port_groups("fabric"))

    @model_validator(mode="after")
    def _radix_builds_a_tree(self) -> Switch:
        if 0 < self.radix < MIN_FABRIC_RADIX:
            raise ValueError(
                f"{self.radix} fabric ports; a switch with fabric ports needs at least {MIN_FABRIC_RADIX} (a fat tree "
                "gives half of them down and half up and groups switches in blocks of half the radix)"
            )
        return self


class Appliance(RackMounted):
    """Fabric managers and management servers: rack devices with host ports but no GPUs."""

    kind: Literal["appliance"]
    role: Literal["fabric-manager", "management-server"]


class StorageBlock(RackMounted):
    """One building block of a parallel filesystem or object store (an appliance or a node)."""

    kind: Literal["storage_block"]
    tier: Literal["parallel-filesystem", "object"]
    filesystems: list[Name] = Field(min_length=1, max_length=64, description="filesystem or protocol kinds it serves")
    capacity_tb: float = Field(ge=MIN_CAPACITY_TB, le=1_000_000, description="usable capacity, decimal TB")
    read_gbytes_per_s: float = Field(ge=MIN_THROUGHPUT_GBYTES_PER_S, le=1_000_000)
    write_gbytes_per_s: float = Field(ge=MIN_THROUGHPUT_GBYTES_PER_S, le=1_000_000)

    @model_validator(mode="after")
    def _reachable(self) -> StorageBlock:
        if not self.port_groups("storage"):
            raise ValueError("a storage block needs ports with role 'storage' (how clients reach it)")
        return self


class Nic(_Part):
    kind: Literal["nic"]
    ports: list[PortGroup] = Field(max_length=64)
    power_typical_w: float = Field(ge=0, le=10_000)
    power_max_w: float = Field(ge=0, le=10_000)


def speaks(technology: Technology | list[Technology] | None, wanted: str | None) -> bool:
    """Whether a part's technology (one, several for dual-protocol parts, or None for generic) fits."""
    if technology is None or wanted is None:
        return True
    return wanted in technology if isinstance(technology, list) else technology == wanted


class Transceiver(_Part):
    kind: Literal["transceiver"]
    cage_type: CageType
    ports: int = Field(gt=0, le=8, description="logical ports it serves (2 = twin-port)")
    speed_gbps: float = Field(ge=0.1, le=100_000, description="per logical port")
    technology: Technology | list[Technology] = Field(description="one, or several for dual-protocol optics")
    media: Literal["mmf", "smf"]
    reach_m: float = Field(ge=0.1, le=1_000_000)
    end: Literal["switch", "host", "any"] = Field(
        description="finned top for switch cages, flat top for host cages; any where the form factor has one kind"
    )
    power_typical_w: float | None = Field(default=None, ge=0, le=1_000)
    power_max_w: float = Field(ge=0, le=1_000)
    split_power_typical_w: float | None = Field(
        default=None, ge=0, le=1_000, description="on one leg of a 1:2 splitter fibre (half its lanes: 200G mode)"
    )
    split_power_max_w: float | None = Field(default=None, ge=0, le=1_000, description="on one leg of a splitter")


class Cable(_Part):
    kind: Literal["cable"]
    media: Media
    technology: Technology | list[Technology] | None = Field(default=None, description="None: any (e.g. Cat6)")
    speed_gbps: float = Field(ge=0.1, le=100_000, description="per logical link it carries")
    links: int = Field(default=1, gt=0, le=8, description="logical links one cable carries (2 = twin-port straight)")
    split: int = Field(default=1, gt=0, le=8, description="far ends per near end (2 = 1:2 splitter)")
    splits_port: bool = Field(
        default=False,
        description="a 1:2 splitter fibre whose two legs share one logical switch port, split into two ports of half "
        "its speed (NVIDIA MFP7E20), rather than one leg per port of a twin-port cage",
    )
    end_a: CageType
    end_b: CageType
    reach_m: float = Field(ge=0.1, le=1_000_000)
    lengths_m: list[Annotated[float, Field(ge=0.1, le=100_000)]] = Field(
        min_length=1, max_length=MAX_LIST_ITEMS, description="orderable lengths"
    )
    length_step_m: float | None = Field(
        default=None,
        ge=0.01,
        le=1_000,
        description="made to order: any multiple of this step up to the reach, beyond lengths_m",
    )
    part_number_format: (
        Annotated[str, Field(max_length=MAX_NAME_CHARS), AfterValidator(_part_number_template)] | None
    ) = Field(default=None, description="vendor part number for a length; {length_m} is substituted")
    power_per_end_w: float = Field(default=0.0, ge=0, le=1_000, description="active cables only")
    weight_kg_per_m: float | None = Field(default=None, gt=0, le=1_000)

    def orderable_length_m(self, run_length_m: float) -> float | None:
        """Shortest orderable length that covers the run, or None when no length does."""
        fitting = [length for length in sorted(self.lengths_m) if length >= run_length_m]
        if fitting and fitting[0] <= self.reach_m:
            return fitting[0]
        if self.length_step_m:
            made = math.ceil(round(run_length_m / self.length_step_m, 9)) * self.length_step_m
            return made if made <= self.reach_m else None
        return None

    def part_number_for(self, length_m: float) -> str | None:
        if self.part_number_format is None:
            return self.part_number
        return self.part_number_format.format(length_m=length_m, length_dm=round(length_m * 10))


class Rack(_Part):
    kind: Literal["rack"]
    u_height: int = Field(gt=0, le=60)
    width_mm: float = Field(ge=100, le=5_000)
    depth_mm: float = Field(ge=100, le=5_000)
    max_load_kg: float | None = Field(default=None, gt=0, le=100_000)
    weight_kg: float | None = Field(default=None, gt=0, le=10_000)


class Pdu(_Part):
    kind: Literal["pdu"]
    u_height: float = Field(ge=0, le=60)
    voltage_v: float = Field(ge=100, le=1_000, description="line-to-line for three-phase")
    phases: Phases
    current_a: float = Field(ge=1, le=1_000, description="input breaker rating")
    outlets: dict[Name, Annotated[int, Field(ge=0, le=1_000)]] = Field(
        max_length=64, description="IEC 60320 outlet type -> count"
    )
    weight_kg: float | None = Field(default=None, gt=0, le=10_000)
    power_typical_w: float = Field(default=0.0, ge=0, le=100_000, description="the PDU's own draw")
    power_max_w: float = Field(default=0.0, ge=0, le=100_000)
    switched: bool = False
    metered: bool = True


class NvlinkSwitchTray(RackMounted):
    """A tray of NVLink switch chips on a rack-scale system's copper backplane (no front-panel cabling in a
    single-rack domain): every GPU of the domain has one NVLink link to every chip."""

    kind: Literal["nvlink_switch_tray"]
    switch_chips: int = Field(gt=0, le=64)
    nvlink_ports_per_chip: int = Field(
        gt=0, le=MAX_PORTS_PER_DEVICE, description="NVLink ports of one chip (its backplane side)"
    )


class PowerShelf(RackMounted):
    """A rack power shelf: rectifier PSUs that feed the rack's DC busbar (instead of PDUs and IEC cords)."""

    kind: Literal["power_shelf"]
    psus: Psus
    output: Name = Field(description="what it feeds, e.g. the rack's DC busbar")

    @property
    def rating_w(self) -> float:
        """Nameplate output: every PSU at its rating."""
        return self.psus.count * self.psus.rating_w


class FlowPoint(_Strict):
    """A published rack coolant flow at one facility supply temperature."""

    supply_c: float = Field(ge=0, le=100, description="facility supply temperature")
    flow_l_per_min: float = Field(ge=0.1, le=1_000_000)


class RackSlot(_Strict):
    """A run of one kind of tray in a rack-scale system's elevation, bottom up."""

    item: Literal["compute-tray", "nvlink-switch-tray", "power-shelf", "management-switch"]
    count: int = Field(gt=0, le=128)


class CoolantCount(_Strict):
    """How many of one in-rack liquid-cooling part a rack-scale system holds: per rack or per tray of a kind."""

    part: str = Field(description="catalog id of a coolant_part")
    per: Literal["rack", "compute-tray", "nvlink-switch-tray"]
    count: int = Field(gt=0, le=1_000)


class RackSystem(_Part):
    """A rack-scale NVLink system (GB200/GB300 NVL72): bought, placed and powered as one rack, one NVLink domain;
    its trays are parts of their own, this part says how many of each stand where, and the rack's cooling."""

    kind: Literal["rack_system"]
    rack: str = Field(description="catalog id of the rack it ships in")
    compute_tray: str
    compute_trays: int = Field(gt=0, le=128)
    nvlink_switch_tray: str
    nvlink_switch_trays: int = Field(gt=0, le=64)
    management_switch: str
    management_switches: int = Field(ge=0, le=16)
    power_shelf: str
    power_shelves: int = Field(gt=0, le=64)
    power_shelf_redundancy: Literal["N+N", "N+1", "N"] = Field(
        description="N+N: half the shelves carry the rack (the other half on a second feed)"
    )
    domain_racks: int = Field(default=1, gt=0, le=16, description="racks in one NVLink domain (2 for the 36x2 variant)")
    nvlink_links_per_gpu: int = Field(gt=0, le=64, description="NVLink links of each GPU, one to each switch chip")
    layout: list[RackSlot] = Field(min_length=1, max_length=64, description="the rack's elevation, bottom up, from U1")
    liquid_fraction: float = Field(ge=0, le=1, description="share of the rack's heat its liquid loop takes")
    published_power_w: float = Field(
        ge=1, le=10_000_000, description="the vendor's rack power figure (what the parts add up to)"
    )
    coolant_flow_l_per_min_per_kw: float = Field(ge=0.01, le=100, description="published flow per kW of rack power")
    coolant_flow_by_supply: list[FlowPoint] = Field(default_factory=list, max_length=64)
    weight_kg: float | None = Field(
        default=None, gt=0, le=100_000, description="the loaded rack: trays, shelves, rack, coolant"
    )
    coolant_parts: list[CoolantCount] = Field(
        default_factory=list, max_length=16, description="its in-rack liquid-cooling parts: manifolds, couplings, hoses"
    )
    storage_inband_fabric: Literal["separate", "combined"] = Field(
        default="separate",
        description="combined: the trays' storage and in-band ports, and the control plane's, on one Ethernet fabric "
        "(the GB200 RA's 'Storage and In-band Ethernet Fabric'); separate: a storage and an in-band network",
    )
    storage_inband_oversubscription: float | None = Field(
        default=None, ge=1.0, le=16.0, description="the combined fabric's leaf down:up for the trays' ports"
    )

    def coolant_per_rack(self, count: CoolantCount) -> int:
        """Units of one coolant part in one rack: per rack, or per tray times the rack's trays of that kind."""
        trays = {"rack": 1, "compute-tray": self.compute_trays, "nvlink-switch-tray": self.nvlink_switch_trays}
        return count.count * trays[count.per]

    @property
    def height_u(self) -> int:
        return sum(slot.count for slot in self.layout)

    @model_validator(mode="after")
    def _layout_matches_counts(self) -> RackSystem:
        counts = {
            "compute-tray": self.compute_trays,
            "nvlink-switch-tray": self.nvlink_switch_trays,
            "power-shelf": self.power_shelves,
            "management-switch": self.management_switches,
        }
        for item, count in counts.items():
            laid = sum(slot.count for slot in self.layout if slot.item == item)
            if laid != count:
                raise ValueError(f"layout places {laid} {item}s, the rack has {count}")
        return self


class Cdu(_Part):
    """A coolant distribution unit: a liquid-to-liquid heat exchanger and pumps between facility water and
    the racks' technology cooling loop."""

    kind: Literal["cdu"]
    placement: Literal["in-rack", "in-row"]
    capacity_kw: float = Field(ge=1, le=100_000, description="heat it moves to facility water")
    max_racks: int | None = Field(default=None, gt=0, le=1_000, description="racks one unit serves (in-row)")
    pump_redundancy: Name = Field(description='e.g. "N+1"')
    flow_l_per_min: float | None = Field(default=None, ge=0.1, le=1_000_000)
    power_w: float | None = Field(
        default=None, ge=0, le=1_000_000, description="electrical input (pumps, controls); None: not published"
    )
    u_height: float = Field(
        default=0, ge=0, le=60, description="in-rack units take rack units; in-row ones a floor position"
    )


class CoolantPart(_Part):
    """An in-rack liquid-cooling part a rack-scale system ships with (its manifolds, the blind-mate quick
    disconnects its trays mate through, the hoses to the CDU): on the BOM so the loop can be checked and spared."""

    kind: Literal["coolant_part"]
    item: Literal["manifold", "quick-disconnect", "hose"]
    weight_kg: float | None = Field(default=None, gt=0, le=1_000)


AnyPart = (
    GpuServer
    | Switch
    | Appliance
    | StorageBlock
    | Nic
    | Transceiver
    | Cable
    | Rack
    | Pdu
    | NvlinkSwitchTray
    | PowerShelf
    | RackSystem
    | Cdu
    | CoolantPart
)
Part = Annotated[AnyPart, Field(discriminator="kind")]


class CatalogFile(_Strict):
    sources: dict[Name, Text] = Field(default_factory=dict, max_length=MAX_LIST_ITEMS)
    parts: list[Part] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)


# role: our classification; the part ids a rack system names are references, not facts
_UNCITED_OK = {
    "id",
    "kind",
    "vendor",
    "model",
    "description",
    "sources",
    "role",
    "rack",
    "compute_tray",
    "nvlink_switch_tray",
    "management_switch",
    "power_shelf",
}


def uncited_fields(part: _Part) -> list[str]:
    """Fields of a part that are set but cite no source; a nested model (``gpu``) is cited whole or field by field
    (``gpu.tdp_w``), port groups as a whole (``ports``)."""
    cited = set(part.sources)
    missing = []
    for name in sorted(part.model_fields_set - _UNCITED_OK):
        if name in cited:
            continue
        value = getattr(part, name)
        if isinstance(value, BaseModel):
            missing += [f"{name}.{sub}" for sub in sorted(value.model_fields_set) if f"{name}.{sub}" not in cited]
        else:
            missing.append(name)
    return missing
