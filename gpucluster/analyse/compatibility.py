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
    """Every kind of cabled link with ends that cannot link, one record per kind with a count and an example. The
    verdict depends only on what the two ports and the modules (or cable) at their ends speak: it is judged once per
    distinct combination, not once per link."""
    ports_of: dict[str, dict[str, str]] = {}
    for device in plan.devices.values():
        if device.part not in ports_of:
            ports_of[device.part] = _port_technologies(plan.catalog_parts.get(device.part))
    port_table = {name: ports_of[device.part] for name, device in plan.devices.items()}
    verdicts: dict[tuple[str | None, str | None, str, str], tuple[str | None, str | None, bool]] = {}
    groups: dict[tuple[str, ...], IncompatibleLink] = {}
    for cable in plan.cables:
        a_other = cable.a_transceiver or cable.cable_part
        b_other = cable.b_transceiver or cable.cable_part
        for index in cable.links:
            link = plan.links[index]
            a_technology = port_table[link.a_device].get(link.a_port)
            b_technology = port_table[link.b_device].get(link.b_port)
            key = (a_technology, b_technology, a_other, b_other)
            verdict = verdicts.get(key)
            if verdict is None:
                verdict = verdicts[key] = _verdict(plan, *key)
            if verdict == _LINKS:
                continue
            a_spoken, b_spoken, ports_clash = verdict
            if a_spoken is not None:
                _record(plan, groups, cable, link.a_device, link.a_port, a_technology or "", a_other, a_spoken)
            if b_spoken is not None:
                _record(plan, groups, cable, link.b_device, link.b_port, b_technology or "", b_other, b_spoken)
            if ports_clash:
                far = plan.devices[link.b_device].part
                _record(plan, groups, cable, link.a_device, link.a_port, a_technology or "", far, b_technology or "")
    return [groups[key] for key in sorted(groups)]


_LINKS = (None, None, False)  # the verdict of ends that link: neither module clashes with its port, nor the ports


def _verdict(
    plan: Plan, a_technology: str | None, b_technology: str | None, a_other: str, b_other: str
) -> tuple[str | None, str | None, bool]:
    """What the a and b modules (or cable) speak when they clash with their port (None when not), and whether
    the two ports clash."""
    spoken: list[str | None] = []
    for technology, other in ((a_technology, a_other), (b_technology, b_other)):
        speaks = _technologies(plan.catalog_parts.get(other))
        clash = technology is not None and _clash(technology, speaks)
        spoken.append("/".join(sorted(speaks)) if clash else None)
    ports_clash = bool(a_technology and b_technology and _clash(a_technology, frozenset([b_technology])))
    return spoken[0], spoken[1], ports_clash


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
