"""The plan's two vocabularies, each in one place: device roles and networks.

Every view (drawings, printouts, the BOM, NetBox, the rack elevations, the Pulumi components ...) reads
its labels, colours, order and sections from here and keeps no table of its own, so adding a role or a
network is one entry below (README, "How to extend").
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ControlPlaneNode:
    """One kind of control-plane node a rack-scale (Mission Control) design gets: its host-name prefix, how many
    and what it runs. Source: the DGX SuperPOD RA's management-server list (two BCM heads in HA, three Kubernetes
    admin nodes, three Kubernetes user nodes, two Slurm login nodes) and Mission Control's GB200 host-name schema
    (HEAD-0[1-2], SLOGIN-0[1-2], K8U-0[1-3], k8s-admin-01..03); NVLink fabric management: NMX Manager on a cluster
    of at least three servers of its own (Mission Control 2.0 lists NMX-M among the control-plane nodes), while the
    NMX Controller and Telemetry run in NVOS on every NVLink switch tray: docs/sources/rack-scale.md section 5."""

    prefix: str
    count: int
    label: str
    scheduler: str  # the scheduler kind it serves: "" every design, "slurm" or "kubernetes"


CONTROL_PLANE: tuple[ControlPlaneNode, ...] = (
    ControlPlaneNode("head", 2, "Base Command Manager head node (HA pair)", ""),
    ControlPlaneNode("k8s-admin", 3, "Kubernetes admin node (Mission Control services)", ""),
    ControlPlaneNode("k8s-user", 3, "Kubernetes user control plane (Run:ai)", "kubernetes"),
    ControlPlaneNode("slogin", 2, "Slurm login node", "slurm"),
    ControlPlaneNode("nmx-m", 3, "NMX Manager node (NVLink fabric management)", ""),
)


def control_plane_names(scheduler: str) -> tuple[str, ...]:
    """The control-plane host names of a rack-scale design for a scheduler kind (slurm, kubernetes, both)."""
    return tuple(
        f"{node.prefix}-{i:02d}"
        for node in CONTROL_PLANE
        if not node.scheduler or scheduler in (node.scheduler, "both")
        for i in range(1, node.count + 1)
    )


def control_plane_node(name: str) -> ControlPlaneNode | None:
    """The kind of control-plane node a management server's host name says it is."""
    return next((n for n in CONTROL_PLANE if name.rsplit("-", 1)[0] == n.prefix), None)


# Where a rack stands and what it holds (RackPlan.purpose), with the colour the floor plan and the power
# chart draw it in (the colour of the role that fills such racks).
RACK_PURPOSES: dict[str, str] = {
    "compute": "#4C72B0",
    "network": "#55A868",
    "storage": "#C44E52",
    "management": "#8172B2",
}


def purpose_colour(purpose: str) -> str:
    """A rack's colour on the floor plan, the power chart and the report's legend."""
    return RACK_PURPOSES.get(purpose, "#937860")


@dataclass(frozen=True, slots=True)
class Role:
    """One device role of the plan (Device.role)."""

    name: str  # the plan's id, e.g. "gpu-server"
    label: str  # a reader's name for one, e.g. "GPU server"
    colour: str  # "#RRGGBB": drawings, charts, NetBox; boxes with text fill with its tint()
    rack_purpose: str  # the kind of rack it stands in (RACK_PURPOSES); "" for zero-U parts and switches,
    # which stand where their network puts them (Network.rack_purpose)
    bom_section: str  # the BOM section its lines go to (gpucluster.analyse.bom.SECTIONS); switches: their network's
    drawing_order: int | None = None  # hosts on a network drawing come in this order; None: after those, by name
    plural: str = ""  # e.g. "power shelves"; empty: the label and an s
    netbox_role: str = ""  # the slug of its NetBox device role; empty: the name
    # the service that stops when such a device is cut off from its network (a filesystem whose appliance is
    # unreachable cannot serve the files striped over it): the failure analysis names it; empty: none
    service: str = ""
    # a GPU node: a host with GPUs and compute-fabric ports, so a Slurm node, a Kubernetes worker, a DCGM scrape
    # target, a burn-in subject, a failure-model unit; every view finds GPU nodes through this, never by role name
    gpu_node: bool = False
    # False: the site's own device, in the plan for its links only (no BOM line, no power)
    bought: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "plural", self.plural or self.label + "s")
        object.__setattr__(self, "netbox_role", self.netbox_role or self.name)


_ROLES = (
    Role("gpu-server", "GPU server", "#4C72B0", "compute", "compute", drawing_order=0, gpu_node=True),
    # A tray of a rack-scale NVLink system (GB200/GB300 NVL72): its GPUs, CPUs and NICs; a node to the schedulers
    Role("compute-tray", "compute tray", "#64B5CD", "compute", "compute", drawing_order=1, gpu_node=True),
    # The NVLink switch trays of a rack-scale system: its NVLink domain's switches, on the rack's cable cartridges
    Role("nvlink-switch-tray", "NVLink switch tray", "#CCB974", "compute", "compute", drawing_order=2),
    Role("fabric-manager", "fabric manager", "#DD8452", "network", "compute-fabric", drawing_order=3),
    Role("storage", "storage block", "#C44E52", "storage", "storage", drawing_order=4, service="parallel filesystem"),
    # The site's existing filesystem: the hand-off of the links it is reached over (zero-U, in its storage leaves'
    # rack); not bought, racked or powered by the plan (no BOM line, no power)
    Role(
        "existing-storage",
        "existing filesystem",
        "#A0A0A0",
        "storage",
        "storage",
        drawing_order=4,
        service="existing filesystem",
        bought=False,
    ),
    Role(
        "object-storage",
        "object-storage block",
        "#DA8BC3",
        "management",
        "storage",
        drawing_order=5,
        service="object storage",
    ),
    Role("management-server", "management server", "#8172B2", "management", "management-networks", drawing_order=6),
    # Switches stand where their network puts them (Network.rack_purpose) and count in its BOM section
    Role("switch", "switch", "#55A868", "", "", plural="switches"),
    Role("pdu", "PDU", "#937860", "", "racks-power"),
    # The power shelves of a rack-scale system: its PSUs feeding the rack's DC busbar
    Role("power-shelf", "power shelf", "#8C613C", "compute", "racks-power", plural="power shelves"),
    # A coolant distribution unit (in-rack or in-row): it feeds the liquid loop of liquid-cooled racks
    Role("coolant-distribution-unit", "coolant distribution unit", "#2A9D8F", "compute", "racks-power"),
)
ROLES: dict[str, Role] = {role.name: role for role in _ROLES}


def is_gpu_node(role_name: str) -> bool:
    """Whether devices of this role are GPU nodes (a GPU server, a rack-scale system's compute tray)."""
    entry = ROLES.get(role_name)
    return bool(entry and entry.gpu_node)


@dataclass(frozen=True, slots=True)
class Network:
    """One network of the plan (Link.network, Device.network of its switches)."""

    name: str  # the plan's id, e.g. "compute"
    title: str  # a heading, e.g. "Compute fabric"
    short: str  # inside a sentence or a BOM note, e.g. "compute fabric"
    colour: str  # "#RRGGBB" of its links and heading in drawings
    bom_section: str  # the BOM section of its switches (gpucluster.analyse.bom.SECTIONS)
    cable_prefix: str  # first letter of its cable ids (C-A04-0001: network, rack of the A end, number there)
    rack_purpose: str  # the rack its switches above the SU leaves stand in (RACK_PURPOSES)
    cabled: bool = True  # its links run over orderable cables; False: on a backplane (counted, no cable)
    every_design: bool = True  # planned for every design; False: present only where a part has such links
    rdma: bool = False  # carries RDMA (GPU and storage traffic): RoCE, with its lossless QoS, on Ethernet switches


_NETWORKS = (
    Network("compute", "Compute fabric", "compute fabric", "#1F4E8C", "compute-fabric", "C", "network", rdma=True),
    Network("storage", "Storage network", "storage", "#A23B3B", "storage-network", "S", "storage", rdma=True),
    Network("inband", "In-band management network", "in-band", "#5B4A8B", "management-networks", "I", "management"),
    Network(
        "oob", "Out-of-band management network", "out-of-band", "#6B6B6B", "management-networks", "O", "management"
    ),
    # GPU-to-GPU links of a rack-scale NVLink domain through its switch trays, on the rack's cable cartridges
    Network(
        "nvlink", "NVLink domain", "NVLink", "#76B900", "compute", "N", "compute", cabled=False, every_design=False
    ),
)
NETWORK_INFO: dict[str, Network] = {network.name: network for network in _NETWORKS}
NETWORK_NAMES: tuple[str, ...] = tuple(NETWORK_INFO)


def role(name: str) -> Role:
    """The registry entry of a device role; a role the registry lacks is a programming error."""
    try:
        return ROLES[name]
    except KeyError:
        raise ValueError(f"unknown device role {name!r}; the roles are {', '.join(ROLES)}") from None


def network(name: str) -> Network:
    """The registry entry of a network."""
    try:
        return NETWORK_INFO[name]
    except KeyError:
        raise ValueError(f"unknown network {name!r}; the networks are {', '.join(NETWORK_INFO)}") from None


def tint(colour: str, amount: float = 0.82) -> str:
    """The colour mixed with white, for box fills that keep black text readable (drawings, rack elevations)."""
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return "#{:02X}{:02X}{:02X}".format(*(round(c + (255 - c) * amount) for c in (red, green, blue)))


def elevation_fill(role_name: str) -> str:
    """A device's box in a rack elevation (SVG and PDF printouts): its role's colour, tinted."""
    entry = ROLES.get(role_name)
    return tint(entry.colour) if entry else UNKNOWN_FILL


UNKNOWN_FILL = "#E6E6E6"  # an elevation box of a role without a registry entry (never in a valid plan)
