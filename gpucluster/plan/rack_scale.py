"""Rack-scale NVLink systems (GB200/GB300 NVL72): each is one rack and one NVLink domain, placed whole.

Its compute trays are the plan's GPU servers; its switch trays, power shelves and management switches stand at
the U positions of its catalog ``layout``, and nothing else goes into the rack. Every GPU's link to every switch
chip (1,296 per NVL72 rack) is on the copper backplane: the ``nvlink`` network, counted but never cabled.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from gpucluster.catalog.schema import GpuServer, NvlinkSwitchTray, PowerShelf, RackSystem, Switch
from gpucluster.plan.model import Device, Link, Plan, PlanDraft
from gpucluster.plan.networks import Resolved
from gpucluster.plan.racks import RackPlanner

# NVLink 5: 1.8 TB/s per GPU over 18 links, both directions (GB200 RA network fabrics) = 50 GB/s each way
# per link = 400 Gb/s per direction (derived; the unit every other link's speed_gbps is in).
NVLINK_LINK_GBPS_PER_GBYTES_PER_S = 8 / 2  # GB/s both directions -> Gb/s one direction


@dataclass(frozen=True, slots=True)
class Domain:
    """One rack system of the plan: its NVLink domain name, scalable unit and devices by kind."""

    name: str  # nvl001 ...
    su: int
    trays: tuple[str, ...]
    switch_trays: tuple[str, ...]
    shelves: tuple[str, ...]
    management_slots: int  # in-rack management switches (placed with the out-of-band network)


def domain_name(index: int) -> str:
    """The name of the index-th (1-based) NVLink domain; Slurm blocks and Kubernetes cliques use it too."""
    return f"nvl{index:03d}"


def add_rack_systems(plan: PlanDraft, r: Resolved, prefix: str) -> list[Domain]:
    """Every rack system's devices, in scalable units of whole racks: trays (GPU servers, numbered on from one
    across the cluster), switch trays and power shelves. Spare racks are the last racks, their trays hot spares."""
    system = r.rack_system
    assert system is not None
    tray = r.server
    switch_tray = plan.catalog_part(system.nvlink_switch_tray, NvlinkSwitchTray)
    shelf = plan.catalog_part(system.power_shelf, PowerShelf)
    racks = r.servers // system.compute_trays
    spare_racks = r.spare_servers // system.compute_trays
    racks_per_su = r.su_servers // system.compute_trays
    width = max(3, len(str(r.servers)))
    domains = []
    for index in range(1, racks + 1):
        name = domain_name(index)
        su = (index - 1) // racks_per_su + 1
        spare = index > racks - spare_racks
        trays = []
        for t in range(system.compute_trays):
            number = (index - 1) * system.compute_trays + t + 1
            device = Device(f"{prefix}{number:0{width}d}", tray.id, "compute-tray", u_height=tray.u_height, su=su)
            device.spare = spare
            device.nvlink_domain = name
            trays.append(plan.add(device).name)
        switches = []
        for s in range(1, system.nvlink_switch_trays + 1):
            device = Device(
                f"{name}-nvsw{s}", switch_tray.id, "nvlink-switch-tray", u_height=switch_tray.u_height, su=su
            )
            device.nvlink_domain = name
            switches.append(plan.add(device).name)
        shelves = [
            plan.add(Device(f"{name}-ps{s}", shelf.id, "power-shelf", u_height=shelf.u_height, su=su)).name
            for s in range(1, system.power_shelves + 1)
        ]
        domains.append(Domain(name, su, tuple(trays), tuple(switches), tuple(shelves), system.management_switches))
    return domains


_NVLINK_GPU_PORT = re.compile(r"GPU(0|[1-9][0-9]*)-NVL(0|[1-9][0-9]*)")
_NVLINK_SWITCH_PORT = re.compile(r"chip([1-9][0-9]*)-acp([1-9][0-9]*)")
_MOST_NVLINK_LINKS_PER_GPU = 64  # RackSystem.nvlink_links_per_gpu's bound


def is_nvlink_port(part: object, port: str) -> bool:
    """Whether `port` can be a backplane NVLink port of the part, as add_nvlink_links names them: GPU<g>-NVL<c> on
    a compute tray (g one of its GPUs), chip<c>-acp<n> on a switch tray (c one of its chips). The catalog lists no
    backplane ports, so a lock's are checked by name."""
    if isinstance(part, GpuServer) and (gpu := _NVLINK_GPU_PORT.fullmatch(port)):
        return int(gpu[1]) < part.gpu.count and int(gpu[2]) < _MOST_NVLINK_LINKS_PER_GPU
    if isinstance(part, NvlinkSwitchTray) and (chip := _NVLINK_SWITCH_PORT.fullmatch(port)):
        return int(chip[1]) <= part.switch_chips
    return False


def add_nvlink_links(plan: Plan, system: RackSystem, domains: list[Domain]) -> None:
    """One backplane link from every GPU to every switch chip of its domain: GPU g of the domain (0-based over
    its trays) takes access port g + 1 of each chip."""
    tray = plan.catalog_parts[system.compute_tray]
    switch_tray = plan.catalog_parts[system.nvlink_switch_tray]
    assert isinstance(tray, GpuServer) and isinstance(switch_tray, NvlinkSwitchTray)
    gpus = tray.gpu.count
    chips = switch_tray.switch_chips
    speed = tray.gpu.nvlink_bandwidth_gbytes_per_s / system.nvlink_links_per_gpu * NVLINK_LINK_GBPS_PER_GBYTES_PER_S
    gpu_ports = [f"GPU{g}-NVL{c}" for g in range(gpus) for c in range(system.nvlink_links_per_gpu)]
    links = plan.links
    for domain in domains:
        for t, tray_name in enumerate(domain.trays):
            for g in range(gpus):
                index = t * gpus + g
                for c in range(system.nvlink_links_per_gpu):
                    port = gpu_ports[g * system.nvlink_links_per_gpu + c]
                    chip_port = f"chip{c % chips + 1}-acp{index + 1}"
                    links.append(Link("nvlink", 0, tray_name, port, domain.switch_trays[c // chips], chip_port, speed))


def place_rack_systems(
    plan: Plan, planner: RackPlanner, system: RackSystem, domains: list[Domain]
) -> dict[str, list[Device]]:
    """Each domain in a rack of its own, in its scalable unit's cluster, every tray at its elevation's U. Returns
    the placeholders standing where the in-rack management switches go (filled by the out-of-band network)."""
    rack_part = planner.catalog.parts[system.rack]
    height = getattr(rack_part, "u_height", planner.height_u)
    if system.height_u > height:
        raise ValueError(f"{system.id} needs {system.height_u}U; its rack {system.rack} has {height}U")
    reserved: dict[str, list[Device]] = {}
    management = planner.catalog.get(system.management_switch, Switch)
    for domain in domains:
        cluster = planner.cluster(f"su{domain.su:02d}", domain.su)
        rack = planner.new_rack(cluster, "compute")
        rack.height_u = height
        rack.part = system.rack
        rack.system = system.id
        rack.nvlink_domain = domain.name
        queues = {
            "compute-tray": [plan.devices[n] for n in domain.trays],
            "nvlink-switch-tray": [plan.devices[n] for n in domain.switch_trays],
            "power-shelf": [plan.devices[n] for n in domain.shelves],
            "management-switch": [
                Device(f"~{domain.name}-{i}", management.id, "switch", u_height=management.u_height)
                for i in range(domain.management_slots)
            ],
        }
        reserved[domain.name] = list(queues["management-switch"])
        u = 1
        for slot in system.layout:
            for _ in range(slot.count):
                device = queues[slot.item].pop(0)
                device.u_position = u
                u += math.ceil(device.u_height)
                rack.devices.append(device)
                rack.power_max_w += planner.power_w(device)
        rack.next_u = u
    return reserved


def shelf_capacity_w(plan: Plan, system: RackSystem) -> tuple[float, float]:
    """(usable, nameplate) watts of a rack system's shelves: nameplate is every PSU at its rating; usable keeps
    the redundancy (N+N: half the shelves carry the rack; N+1: all but one)."""
    shelf = plan.catalog_parts[system.power_shelf]
    assert isinstance(shelf, PowerShelf)
    nameplate = system.power_shelves * shelf.rating_w
    carrying = {"N+N": system.power_shelves // 2, "N+1": system.power_shelves - 1, "N": system.power_shelves}
    return carrying[system.power_shelf_redundancy] * shelf.rating_w, nameplate
