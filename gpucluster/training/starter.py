"""`gpucluster size`: a starter design checked against its own plan. The sizing assumes a goodput; the plan's own
figures then decide servers, spares and racks, so the design draws no finding against what it chose."""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from gpucluster.analyse.rules import TARGET_MARGIN
from gpucluster.catalog.load import Catalog
from gpucluster.design.schema import Design, Workload
from gpucluster.errors import DesignError
from gpucluster.plan.model import AnalysedPlan, Finding
from gpucluster.training.checkpoint import CheckpointAnalysis, analyse_checkpoints
from gpucluster.training.sizing import Sizing, size, starter_design

MAX_ROUNDS = 6  # plans of the starter design before `size` settles (each round adds what the last one lacked)


@dataclass(frozen=True)
class Starter:
    """The design `size` writes, with the plan it was checked on."""

    text: str
    sizing: Sizing
    analysis: CheckpointAnalysis
    findings: list[Finding]
    lines: list[str]


def plan_starter(
    catalog: Catalog,
    server_id: str,
    workload: Workload,
    name: str,
    folder: Path,
    plan_file: Callable[[str], AnalysedPlan],
    *,
    site: dict[str, object] | None = None,
    catalog_files: list[str] | None = None,
    source: str = "",
    kept: dict[str, dict[str, object]] | None = None,
) -> Starter:
    """Size the workload, then plan the starter design and grow it until its own plan meets the target. Its
    problems are told of `source` (what the user gave), never of the temporary file it was planned from.
    `plan_file` loads and plans a design file (the command hands the pipeline down)."""
    # the interval is the plan's choice (Daly's optimum for the planned GPUs), not a figure for another size
    workload = workload.model_copy(update={"checkpoint_interval_minutes": None})
    sizing = size(catalog, server_id, workload)
    servers, spares = sizing.servers, None
    aim = (workload.target_days or 0.0) * TARGET_MARGIN  # below the rule's warning line
    site = dict(site or {})
    for _round in range(MAX_ROUNDS):
        current, planned_site = replace(sizing, servers=servers), site
        text = starter_design(current, name, site=site or None, catalog=catalog_files, spare_servers=spares, kept=kept)
        plan = _plan_text(text, folder, source, plan_file)
        a = analyse_checkpoints(plan)
        days = a.time_to_train_days or 0.0
        # goodput falls as the job grows, so overshoot the ratio a little to settle in fewer rounds
        wanted_servers = max(servers + 1, math.ceil(servers * (days / aim) ** 1.2)) if days > aim else servers
        wanted_servers = sizing.whole(wanted_servers)  # a rack-scale system grows by whole racks
        wanted_spares = a.spares_needed if a.spares_needed > a.spares_have else spares
        if a.domains is not None:  # spare racks, for racks short of their segment (in-rack trays cover the rest)
            needed = a.domains.spare_racks_needed * a.domains.trays_per_rack
            wanted_spares = needed if a.domains.spare_racks_needed > a.domains.spare_racks_have else spares
        # racks packed to what the site allows when dividing the SU evenly would leave budget unused
        per_rack = plan.settings.servers_per_rack
        fit = plan.settings.servers_per_rack_fit or per_rack
        wanted_site = site
        if "servers_per_rack" not in site and fit > per_rack:
            wanted_site = {**site, "servers_per_rack": fit}
        if (wanted_servers, wanted_spares, wanted_site) == (servers, spares, site):
            break
        servers, spares, site = wanted_servers, wanted_spares, wanted_site
    else:  # the last round's changes were not planned: write what was
        servers, spares, site = current.servers, _planned_spares(plan), planned_site
    lines = [
        f"planned: {a.gpus:,} GPUs train in {days:,.1f} days ({a.compute_days or 0:,.1f} days of compute / "
        f"{a.goodput:.1%} goodput at the {a.interval_s / 60:,.0f}-min checkpoint interval), as checkpoint.md says; "
        f"sized to finish within {TARGET_MARGIN:.0%} of the target",
        f"spares: {a.spares_have} (the failure model asks for {a.spares_needed})",
    ]
    text = starter_design(
        current, name, site=site or None, catalog=catalog_files, spare_servers=spares, notes=lines, kept=kept
    )
    return Starter(text, current, a, [f for f in plan.findings if f.severity != "ok"], lines)


# What `size` decides itself: every other setting of a --from design is kept as written.
SIZED_DESIGN_FIELDS = frozenset({"name", "description", "catalog", "site", "workload"})
SIZED_COMPUTE_FIELDS = frozenset({"server", "gpus", "servers", "spare_servers"})


def kept_settings(design: Design, source: Path, out_folder: Path) -> dict[str, dict[str, object]]:
    """The sections of a --from design that `size` does not decide, as its author wrote them (what was left to
    its default stays so), with the price list's path rebased to where the starter design is written."""
    written = design.model_dump(mode="json", exclude_unset=True, exclude=set(SIZED_DESIGN_FIELDS))
    compute = {k: v for k, v in written.pop("compute", {}).items() if k not in SIZED_COMPUTE_FIELDS}
    if compute:
        written = {"compute": compute, **written}
    price_list = written.get("bom", {}).get("price_list")
    if price_list is not None:
        rebased = os.path.relpath((source.parent / price_list).resolve(), out_folder.resolve())
        written["bom"] = {**written["bom"], "price_list": rebased}
    return written


def _planned_spares(plan: AnalysedPlan) -> int:
    return sum(1 for d in plan.gpu_nodes() if d.spare)


def _plan_text(text: str, folder: Path, source: str, plan_file: Callable[[str], AnalysedPlan]) -> AnalysedPlan:
    """Plan a design text as if it stood in ``folder`` (so its catalog paths resolve); its problems are told of
    `source` by field (the text's lines are nowhere the user can see)."""
    handle, name = tempfile.mkstemp(prefix=".size-", suffix=".yaml", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        return plan_file(name)
    except DesignError as error:
        raise DesignError(
            [replace(p, file=source or p.file, line=0, column=0) if p.file == name else p for p in error.problems]
        ) from None
    finally:
        os.unlink(name)
