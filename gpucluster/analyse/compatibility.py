"""Whether the two ends of every cabled link can come up together: each port and the module (or copper cable) at
its end speak the same generation, and so do the two ports.

NVIDIA's LinkX lists are the rule: "200G-PAM4-based transceivers cannot downshift to 100G-PAM4 or 50G-PAM4" (XDR
optics, https://docs.nvidia.com/networking/display/800g200gpam4list) and "the 400GbE/NDR transceivers cannot
downshift" to HDR's 50G-PAM4 (https://docs.nvidia.com/networking/display/400g100gpam4ovpub/linkx-100g-pam4-product-
line-overview). So an NDR ConnectX-7 port given an 800G XDR module, or an NDR port cabled to an XDR port, is a
link that never comes up: an error with its fix, not a warning. InfiniBand against Ethernet is not judged: the
catalog names one protocol for VPI adapters (ConnectX-7, BlueField-3) that run either.
"""

from __future__ import annotations

from gpucluster.catalog.ports import device_ports
from gpucluster.catalog.schema import AnyPart
from gpucluster.plan.facts import IncompatibleLink
from gpucluster.plan.model import Cable, Plan

# Which design field picks the switch a host's ports land on, per network (what a finding names).
SWITCH_FIELD = {
    "compute": "compute_fabric.switch",
    "storage": "storage_network.switch",
    "inband": "management.inband_switch",
    "oob": "management.oob_switch",
}


def _technologies(part: object) -> frozenset[str]:
    """What a module or cable speaks (one technology or several); empty: any (Cat6)."""
    technology = getattr(part, "technology", None)
    if technology is None:
        return frozenset()
    return frozenset([technology] if isinstance(technology, str) else technology)


def _clash(port: str, spoken: frozenset[str]) -> bool:
    """An InfiniBand port and a module, cable or far port of another InfiniBand generation only (no common one)."""
    infiniband = {t for t in spoken if t.startswith("infiniband")}
    return port.startswith("infiniband") and bool(infiniband) and port not in infiniband


def _port_technologies(part: AnyPart | None) -> dict[str, str]:
    """A part's port name -> technology, split halves included (a half speaks what its whole port speaks)."""
    by_name: dict[str, str] = {}
    if part is None or not getattr(part, "ports", None):
        return by_name
    for group in getattr(part, "ports", None) or []:
        if group.technology:
            for name, _cage in group.port_names():
                by_name[name] = group.technology
    for pool in device_ports(part).values():
        for whole, halves in zip(pool.names, pool.halves, strict=False):
            if whole in by_name:
                for half in halves:
                    by_name[half] = by_name[whole]
    return by_name


def _fix(plan: Plan, device: str, network: str, other_technology: str) -> str:
    """What to change: a fabric manager's adapter, else the switch model of the network."""
    role = plan.devices[device].role
    if role == "fabric-manager":
        field = "compute_fabric.fabric_manager" if network == "compute" else "storage_network.fabric_manager"
        return f"choose a fabric-manager appliance whose adapter speaks {other_technology} ({field})"
    return f"choose a switch and host ports of one generation ({SWITCH_FIELD.get(network, 'the network switch')})"


def incompatible_links(plan: Plan) -> list[IncompatibleLink]:
    """Every kind of cabled link with ends that cannot link, one record per kind with a count and an example."""
    ports_of: dict[str, dict[str, str]] = {}
    speaks: dict[str, frozenset[str]] = {}
    groups: dict[tuple[str, ...], IncompatibleLink] = {}

    def port_technology(device: str, port: str) -> str | None:
        part = plan.devices[device].part
        if part not in ports_of:
            ports_of[part] = _port_technologies(plan.catalog_parts.get(part))
        return ports_of[part].get(port)

    def technologies(part_id: str) -> frozenset[str]:
        if part_id not in speaks:
            speaks[part_id] = _technologies(plan.catalog_parts.get(part_id))
        return speaks[part_id]

    for cable in plan.cables:
        for index in cable.links:
            link = plan.links[index]
            ends = (
                (link.a_device, link.a_port, cable.a_transceiver),
                (link.b_device, link.b_port, cable.b_transceiver),
            )
            found = [port_technology(device, port) for device, port, _module in ends]
            for (device, port, module), technology in zip(ends, found, strict=True):
                if technology is None:
                    continue
                other = module or cable.cable_part
                spoken = technologies(other)
                if _clash(technology, spoken):
                    _record(plan, groups, cable, device, port, technology, other, "/".join(sorted(spoken)))
            if found[0] and found[1] and _clash(found[0], frozenset([found[1]])):
                far = plan.devices[link.b_device].part
                _record(plan, groups, cable, link.a_device, link.a_port, found[0], far, found[1])
    return [groups[key] for key in sorted(groups)]


def _record(
    plan: Plan,
    groups: dict[tuple[str, ...], IncompatibleLink],
    cable: Cable,
    device: str,
    port: str,
    technology: str,
    other: str,
    other_technology: str,
) -> None:
    part = plan.devices[device].part
    key = (cable.network, part, technology, other, other_technology, cable.cable_part)
    record = groups.get(key)
    if record is None:
        record = groups[key] = {
            "network": cable.network,
            "part": part,
            "port_technology": technology,
            "other": other,
            "other_technology": other_technology,
            "cable_part": cable.cable_part,
            "links": 0,
            "example": f"{cable.id}: {device} {port}",
            "fix": _fix(plan, device, cable.network, other_technology),
        }
    record["links"] += 1
