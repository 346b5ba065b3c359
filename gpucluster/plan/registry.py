"""The plan's two vocabularies, each in one place: device roles and networks.

Every view (drawings, printouts, the BOM, NetBox, the rack elevations, the Pulumi components ...) reads
its labels, colours, order and sections from here and keeps no table of its own, so adding a role or a
network is one entry below (README, "How to extend").
"""

from __future__ import annotations

from dataclasses import dataclass

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
    plural: str  # e.g. "GPU servers"
    colour: str  # "#RRGGBB": drawings, charts, NetBox; boxes with text fill with its tint()
    rack_purpose: str  # the kind of rack it stands in (RACK_PURPOSES); "" for zero-U parts and switches,
    # which stand where their network puts them (Network.rack_purpose)
    bom_section: str  # the BOM section its lines go to (gpucluster.bom.SECTIONS); switches: their network's
    netbox_role: str  # the slug of its NetBox device role
    drawing_order: int | None  # hosts on a network drawing come in this order; None: after those, by name


_ROLES = (
    Role(
        name="gpu-server",
        label="GPU server",
        plural="GPU servers",
        colour="#4C72B0",
        rack_purpose="compute",
        bom_section="compute",
        netbox_role="gpu-server",
        drawing_order=0,
    ),
    # A tray of a rack-scale NVLink system (GB200/GB300 NVL72): its GPUs, CPUs and NICs; a node to the schedulers
    Role(
        name="compute-tray",
        label="compute tray",
        plural="compute trays",
        colour="#64B5CD",
        rack_purpose="compute",
        bom_section="compute",
        netbox_role="compute-tray",
        drawing_order=1,
    ),
    # The NVLink switch trays of a rack-scale system: its NVLink domain's switches, on the rack's cable cartridges
    Role(
        name="nvlink-switch-tray",
        label="NVLink switch tray",
        plural="NVLink switch trays",
        colour="#CCB974",
        rack_purpose="compute",
        bom_section="compute",
        netbox_role="nvlink-switch-tray",
        drawing_order=2,
    ),
    Role(
        name="fabric-manager",
        label="fabric manager",
        plural="fabric managers",
        colour="#DD8452",
        rack_purpose="network",
        bom_section="compute-fabric",
        netbox_role="fabric-manager",
        drawing_order=3,
    ),
    Role(
        name="storage",
        label="storage block",
        plural="storage blocks",
        colour="#C44E52",
        rack_purpose="storage",
        bom_section="storage",
        netbox_role="storage",
        drawing_order=4,
    ),
    Role(
        name="object-storage",
        label="object-storage block",
        plural="object-storage blocks",
        colour="#DA8BC3",
        rack_purpose="management",
        bom_section="storage",
        netbox_role="object-storage",
        drawing_order=5,
    ),
    Role(
        name="management-server",
        label="management server",
        plural="management servers",
        colour="#8172B2",
        rack_purpose="management",
        bom_section="management-networks",
        netbox_role="management-server",
        drawing_order=6,
    ),
    # Switches stand where their network puts them (Network.rack_purpose) and count in its BOM section
    Role(
        name="switch",
        label="switch",
        plural="switches",
        colour="#55A868",
        rack_purpose="",
        bom_section="",
        netbox_role="switch",
        drawing_order=None,
    ),
    Role(
        name="pdu",
        label="PDU",
        plural="PDUs",
        colour="#937860",
        rack_purpose="",
        bom_section="racks-power",
        netbox_role="pdu",
        drawing_order=None,
    ),
    # The power shelves of a rack-scale system: its PSUs feeding the rack's DC busbar
    Role(
        name="power-shelf",
        label="power shelf",
        plural="power shelves",
        colour="#8C613C",
        rack_purpose="compute",
        bom_section="racks-power",
        netbox_role="power-shelf",
        drawing_order=None,
    ),
    # A coolant distribution unit (in-rack or in-row): it feeds the liquid loop of liquid-cooled racks
    Role(
        name="coolant-distribution-unit",
        label="coolant distribution unit",
        plural="coolant distribution units",
        colour="#2A9D8F",
        rack_purpose="compute",
        bom_section="racks-power",
        netbox_role="coolant-distribution-unit",
        drawing_order=None,
    ),
)
ROLES: dict[str, Role] = {role.name: role for role in _ROLES}


@dataclass(frozen=True, slots=True)
class Network:
    """One network of the plan (Link.network, Device.network of its switches)."""

    name: str  # the plan's id, e.g. "compute"
    title: str  # a heading, e.g. "Compute fabric"
    short: str  # inside a sentence or a BOM note, e.g. "compute fabric"
    colour: str  # "#RRGGBB" of its links and heading in drawings
    bom_section: str  # the BOM section of its switches (gpucluster.bom.SECTIONS)
    cable_prefix: str  # first letter of its cable ids and labels (C0001 ...)
    rack_purpose: str  # the rack its switches above the SU leaves stand in (RACK_PURPOSES)
    cabled: bool  # its links run over orderable cables; False: on a backplane (counted, no cable)
    every_design: bool  # planned for every design; False: present only where a part has such links


_NETWORKS = (
    Network(
        name="compute",
        title="Compute fabric",
        short="compute fabric",
        colour="#1F4E8C",
        bom_section="compute-fabric",
        cable_prefix="C",
        rack_purpose="network",
        cabled=True,
        every_design=True,
    ),
    Network(
        name="storage",
        title="Storage network",
        short="storage",
        colour="#A23B3B",
        bom_section="storage-network",
        cable_prefix="S",
        rack_purpose="storage",
        cabled=True,
        every_design=True,
    ),
    Network(
        name="inband",
        title="In-band management network",
        short="in-band",
        colour="#5B4A8B",
        bom_section="management-networks",
        cable_prefix="I",
        rack_purpose="management",
        cabled=True,
        every_design=True,
    ),
    Network(
        name="oob",
        title="Out-of-band management network",
        short="out-of-band",
        colour="#6B6B6B",
        bom_section="management-networks",
        cable_prefix="O",
        rack_purpose="management",
        cabled=True,
        every_design=True,
    ),
    # GPU-to-GPU links of a rack-scale NVLink domain through its switch trays, on the rack's cable cartridges
    Network(
        name="nvlink",
        title="NVLink domain",
        short="NVLink",
        colour="#76B900",
        bom_section="compute",
        cable_prefix="N",
        rack_purpose="compute",
        cabled=False,
        every_design=False,
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
