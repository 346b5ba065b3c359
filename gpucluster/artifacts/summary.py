"""The one-screen summary: what `gpucluster validate` prints and `summary.md` holds."""

from __future__ import annotations

from pathlib import Path

from gpucluster.analyse.scheduling import scheduler_sides
from gpucluster.design.load import LoadedDesign
from gpucluster.plan.model import AnalysedPlan, FilesystemAsked, Plan, Settings
from gpucluster.plan.reserve import growth_reserve, reserve_line


def summary_lines(plan: AnalysedPlan) -> list[str]:
    t = plan.totals
    s = plan.settings
    units = t.scalable_units
    system = s.rack_system
    if system:  # a rack-scale system: racks (NVLink domains) of compute trays
        per_rack = s.servers_per_rack
        spare = t.spare_servers // per_rack
        head = (
            f"{plan.name}: {t.production_gpus:,} GPUs in {t.production_servers // per_rack:,} {system} "
            f"racks ({t.production_servers:,} {s.server}s; one {per_rack * s.gpus_per_server}-GPU NVLink "
            f"domain per rack) + {spare} spare rack{'s' if spare != 1 else ''}, {units} scalable "
            f"unit{'s' if units != 1 else ''} of {s.scalable_unit_servers // per_rack} racks"
        )
    else:
        head = (
            f"{plan.name}: {t.production_gpus:,} GPUs on {t.production_servers:,} {s.server} servers "
            f"+ {t.spare_servers} spare, {units} scalable unit{'s' if units != 1 else ''} of "
            f"{s.scalable_unit_servers}"
        )
    lines = [head]
    for network in plan.networks():
        tiers = [tier for tier in plan.tiers if tier.network == network]
        if not tiers:
            continue
        models = {tier.switch_part for tier in tiers}
        if len(models) == 1:  # "qm9700: 8 leaf, 4 spine"
            switches = f"{tiers[0].switch_part}: " + ", ".join(f"{tier.switches} {tier.name}" for tier in tiers)
        else:  # "9 leaf sn2201, 2 spine sn4600c"
            switches = ", ".join(f"{tier.switches} {tier.name} {tier.switch_part}" for tier in tiers)
        links = sum(t.links[network].values())
        analysis = plan.analysis_of(network)
        extra = ""
        if network == "compute":
            hops = analysis.get("hops", {}).get("max_switch_hops")
            extra = f"; bisection {analysis.get('bisection_bandwidth_gbps', 0) / 1000:,.1f} Tb/s" + (
                f", at most {hops} switch hops" if hops else ""
            )
        lines.append(f"  {network:8} {switches}; {links:,} links{extra}")
    lines += [f"  storage  {figures}" for _title, _tb, figures in filesystem_rows(s)]
    if object_storage_figures(s):
        lines.append(f"  object   {object_storage_figures(s)}")
    lines += scheduler_lines(plan)
    racks = ", ".join(f"{n} {k}" for k, n in t.racks_by_purpose.items())
    one = s.servers_per_rack == 1
    per = (
        f"tray{'' if one else 's'} per rack-scale system" if system else f"server{'' if one else 's'} per compute rack"
    )
    lines.append(f"  racks    {t.racks} ({racks}), {s.servers_per_rack} {per}")
    lines.append(
        f"  power    IT {t.it_power_max_kw:,.1f} kW maximum, {t.it_power_typical_kw:,.1f} kW typical; "
        f"{t.cables:,} cables"
    )
    reserve = growth_reserve(plan)
    if reserve is not None:
        lines.append(f"  {reserve_line(reserve)}")
    return lines + [f"  {f.severity}: {f.message}" for f in plan.findings if f.severity != "ok"]


def scheduler_lines(plan: Plan) -> list[str]:
    """One line per scheduler: its servers, GPUs, units and leaves, and its partitions or team queues."""
    lines = []
    for side in scheduler_sides(plan):
        units = ", ".join(str(u) for u in side.units)
        queues = "; ".join(f"{q.name}: {q.what}" for q in side.queues)
        kind = "partitions" if side.scheduler == "Slurm" else "Kueue queues"
        lines.append(
            f"  {side.scheduler.lower():8} {len(side.servers)} servers ({side.production} + {side.spares} spare, "
            f"{side.gpus:,} GPUs) on SU {units} under {len(side.leaf_groups)} leaf group"
            f"{'s' if len(side.leaf_groups) != 1 else ''}; {kind}: {queues}"
        )
    return lines


def filesystem_figures(s: Settings) -> str:
    """The parallel filesystem as delivered by its blocks, and what the design asked (both named): a capacity
    asked alone shows the throughput the blocks give and that no throughput target was set."""
    asked = s.parallel_filesystem_asked
    if asked is None:  # a plan the planner did not resolve (a scratch plan)
        return ""
    delivered = (
        s.parallel_filesystem_capacity_tb,
        s.parallel_filesystem_read_gbytes_per_s,
        s.parallel_filesystem_write_gbytes_per_s,
    )
    return _new_figures(s.parallel_filesystem_blocks, s.parallel_filesystem_block, delivered, asked)


def _new_figures(blocks: int, block: str, delivered: tuple[float, float, float], asked: FilesystemAsked) -> str:
    capacity, read, write = delivered
    wanted = [f"{asked['capacity_tb']:,.0f} TB"] if asked["capacity_tb"] else []
    for figure, what in ((asked["read_gbytes_per_s"], "read"), (asked["write_gbytes_per_s"], "write")):
        if figure is not None:
            wanted.append(f"{figure:,.0f} GB/s {what}")
    basis = f", from {asked['basis']}" if asked.get("basis") else ""
    if asked["read_gbytes_per_s"] is None and asked["write_gbytes_per_s"] is None:
        basis = ", sized by capacity: no throughput target asked"
    derived = f"; {asked['capacity_basis']}" if asked.get("capacity_basis") else ""
    return (
        f"{blocks} x {block}: the appliances deliver {capacity:,.0f} TB, {read:,.0f} GB/s read, {write:,.0f} GB/s "
        f"write (target asked {', '.join(wanted)}{basis}{derived})"
    )


def filesystem_rows(s: Settings) -> list[tuple[str, float, str]]:
    """Each filesystem the GPU nodes mount: (title, capacity in TB, figures), the parallel filesystem first; a new
    one as its blocks deliver it and as asked, an existing one as stated, with the links it is reached over."""
    if s.filesystems is None:
        return [("Parallel filesystem", s.parallel_filesystem_capacity_tb, filesystem_figures(s))]
    rows = []
    for index, fs in enumerate(s.filesystems):
        title = "Parallel filesystem" if index == 0 else f"Filesystem {fs['name']}"
        head = f"{fs['name']} ({fs['kind']}, mounted at {fs['mount']})"
        links, asked = fs["links"], fs["asked"]
        if links is not None:
            figures = (
                f"{head}: the site's existing filesystem, not bought; reached over {links['count']} x "
                f"{links['speed_gbps']:g}G {links['network']} links ({links['cage_type']}, {links['run_length_m']:g} m "
                f"run) to the storage leaves; {fs['capacity_tb'] or 0:,.0f} TB as stated, "
                f"{fs['read_gbytes_per_s'] or 0:,.0f} GB/s read, {fs['write_gbytes_per_s'] or 0:,.0f} GB/s write "
                f"from {asked['basis']}"
            )
        else:
            delivered = (fs["capacity_tb"] or 0.0, fs["read_gbytes_per_s"] or 0.0, fs["write_gbytes_per_s"] or 0.0)
            figures = f"{head}: {_new_figures(fs['blocks'], fs['block'] or '', delivered, asked)}"
        rows.append((title, fs["capacity_tb"] or 0.0, figures))
    return rows


def object_storage_figures(s: Settings) -> str:
    """Object storage as delivered and as asked, or '' without one."""
    asked = s.object_storage_asked
    if s.object_storage_capacity_tb is None or asked is None:
        return ""
    wanted = f"asked {asked['capacity_tb']:,.0f} TB" + (
        f", {asked['throughput_gbytes_per_s']:,.0f} GB/s" if asked["throughput_gbytes_per_s"] else ""
    )
    if s.object_storage_shared:
        return (
            f"S3 on the parallel filesystem's {s.parallel_filesystem_blocks} x {s.parallel_filesystem_block} "
            f"(one store, files and objects): {s.object_storage_capacity_tb:,.0f} TB of it, sharing its "
            f"{s.object_storage_read_gbytes_per_s:,.0f} GB/s read ({wanted})"
        )
    return (
        f"{s.object_storage_blocks} x {s.object_storage_block}: delivered "
        f"{s.object_storage_capacity_tb:,.0f} TB, {s.object_storage_read_gbytes_per_s:,.0f} GB/s read ({wanted})"
    )


def write(plan: AnalysedPlan, loaded: LoadedDesign, folder: Path) -> None:
    text = "# " + plan.name + "\n\n```\n" + "\n".join(summary_lines(plan)) + "\n```\n"
    (folder / "summary.md").write_text(text, encoding="utf-8")
