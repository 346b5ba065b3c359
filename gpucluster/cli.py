"""The `gpucluster` command: validate a design, build its artifacts, export the design schema."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gpucluster.artifacts import ARTIFACTS, Writing, default_jobs, output_folder
from gpucluster.artifacts.summary import summary_lines
from gpucluster.design.load import LoadedDesign, load_design
from gpucluster.design.schema import Design
from gpucluster.errors import (
    MAX_REPORTED,
    DesignError,
    MissingSystemLibrary,
    Problem,
    stop_if_terminated,
    terminated,
)
from gpucluster.pipeline import plan_design
from gpucluster.plan.lock import Lock, default_lock_path, read_design_lock
from gpucluster.plan.model import Plan
from gpucluster.runtime import profiling
from gpucluster.runtime import progress as progress_display

if TYPE_CHECKING:
    from click.decorators import FC

    from gpucluster.catalog.listing import PartKind
    from gpucluster.growth.compare import Alternative

EXIT_BAD_INPUT = 2


@contextlib.contextmanager
def _display(enabled: bool | None) -> Iterator[progress_display.Reporter]:
    """The progress display for a command: bars with counts, rate and time left on a terminal (the default
    there), one line per stage on a pipe when asked for with --progress, else nothing. It is this process's
    reporter while the command runs, so long loops anywhere report to it."""
    terminal = sys.stderr.isatty()
    shown = terminal if enabled is None else enabled
    reporter: progress_display.Reporter
    with contextlib.ExitStack() as stack:
        if shown and terminal:
            reporter = stack.enter_context(progress_display.Bars())
        elif shown:
            reporter = progress_display.Lines()
        else:
            reporter = progress_display.Silent()
        previous = progress_display.install(reporter)
        stack.callback(progress_display.install, previous)
        yield reporter


class _Timed:
    """Planning stages go to the display and to the stopwatch (for --profile)."""

    def __init__(self, display: progress_display.Reporter, stopwatch: profiling.Stopwatch):
        self.display, self.stopwatch = display, stopwatch

    def __call__(self, stage: str) -> None:
        stop_if_terminated()
        self.stopwatch(stage)
        self.display(stage)

    def update(self, done: int, total: int | None, unit: str) -> None:
        self.display.update(done, total, unit)


def _terminated(signum: int, _frame: object) -> None:
    """SIGTERM (a CI timeout, `kill`, systemd) ends a build as Ctrl-C does: the writers and the planning processes it
    forked are stopped and reaped and the staging folder is removed as the stack unwinds; a build stopped before its
    output was swapped in leaves the previous output as it was."""
    click.echo("error: terminated (SIGTERM) before the build finished", err=True)
    terminated(signum)  # asked again at the next stage or writers' turn, should this raise be lost in a finalizer
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """SIGTERM handled as _terminated while the body runs (in the main thread only; the handler before is restored)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    terminated(None)
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        terminated(None)


def _fail(error: DesignError) -> None:
    for problem in error.problems[:MAX_REPORTED]:
        click.echo(f"error: {problem}", err=True)
    if len(error.problems) > MAX_REPORTED:
        click.echo(f"error: ... and {len(error.problems) - MAX_REPORTED:,} more problems", err=True)
    sys.exit(EXIT_BAD_INPUT)


def _refuse_rule_errors(plan: Plan) -> None:
    """A design that fails a design rule is a bad design: say which rules, exit 2 (nothing is written).
    The Pulumi policy pack enforces the same rules as mandatory."""
    errors = [f for f in plan.findings if f.severity == "error"]
    if errors:
        for finding in errors:
            subject = f" [{finding.subject}]" if finding.subject else ""
            click.echo(f"error: {plan.name}: {finding.rule}{subject}: {finding.message}", err=True)
        click.echo(f"{len(errors)} design-rule error(s): fix the design, then validate again", err=True)
        sys.exit(EXIT_BAD_INPUT)


def _write_file(path: Path, text: str) -> None:
    """Write a file atomically (a temporary file renamed over it); an unwritable path exits 2."""
    staging = path.with_name(f".{path.name}.tmp")
    try:
        staging.write_text(text, encoding="utf-8")
        os.replace(staging, path)
    except OSError as error:
        click.echo(f"error: {path}: cannot write: {error.strerror}", err=True)
        sys.exit(EXIT_BAD_INPUT)


def _plan(design: Path, say: Callable[[str], None], data_dirs: tuple[Path, ...] = ()) -> Plan:
    """Load and plan a design, under its plan lock when there is one beside it (what is built is where the lock
    says: validate's rules, simulate and verify see that plan); bad input exits with status 2."""
    try:
        loaded = load_design(design, data_dirs)
        return plan_design(loaded, say, _read_lock(default_lock_path(design), loaded), kept=True)
    except DesignError as error:
        _fail(error)
        raise


def _part_kinds() -> tuple[PartKind, ...]:
    from gpucluster.catalog.listing import PART_KINDS

    return PART_KINDS


def _out_file_option(help_text: str) -> Callable[[FC], FC]:
    return click.option(
        "-o", "--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None, help=help_text
    )


data_dir_option = click.option(
    "--data-dir",
    "data_dirs",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    multiple=True,
    help="Another folder the design's catalog files and price list may be read from (repeatable); by default "
    "only the design's own folder.",
)

progress_option = click.option(
    "--progress/--no-progress",
    default=None,
    help="Show each stage as it runs; on a terminal with a bar per stage and writer (rows, racks, pages), its "
    "rate and time left (default: on when stderr is a terminal).",
)


def _out_option(help_text: str) -> Callable[[FC], FC]:
    return click.option(
        "-o",
        "--out",
        "out_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=Path("out"),
        show_default=True,
        help=help_text,
    )


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gpu-cluster")
def main() -> None:
    """Design GPU training clusters: one YAML design, one physical plan, every artifact."""


@main.command()
@click.argument("design", type=click.Path(dir_okay=False, path_type=Path))
@data_dir_option
@progress_option
def validate(design: Path, data_dirs: tuple[Path, ...], progress: bool | None) -> None:
    """Check DESIGN and print a one-screen summary, or every problem with its file:line:column
    (and every failed design rule); exit status 2 when there is one."""
    with _display(progress) as say:
        plan = _plan(design, say, data_dirs)
    _refuse_rule_errors(plan)
    click.echo("ok")
    for line in summary_lines(plan):
        click.echo(line)


@main.command()
@click.argument("design", type=click.Path(dir_okay=False, path_type=Path))
@_out_option("Folder for the output; the design's artifacts go to OUT/<design name>/.")
@click.option(
    "--only",
    type=click.Choice(sorted(ARTIFACTS)),
    multiple=True,
    help="Write only these artifacts (repeatable); the design's output folder then holds just these, so it "
    "never mixes files of two builds. Default: all.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(1, 64),
    default=None,
    help="Worker processes that write artifacts side by side after planning (default: the CPUs available; "
    "1 writes them one after another in this process). The files are the same either way.",
)
@click.option(
    "--profile",
    is_flag=True,
    help="Print (to stderr) each planning stage's and each writer's wall and CPU seconds and memory, and the "
    "build's peak memory.",
)
@click.option(
    "--lock",
    "lock_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The plan lock to read and write (default: DESIGN's name with .lock.json, beside it). What it holds "
    "keeps its rack, U, ports and cable ids; the build then writes the new plan's lock there.",
)
@click.option("--relock", is_flag=True, help="Ignore the lock: plan afresh (and write a new lock).")
@click.option("--no-lock", is_flag=True, help="Neither read nor write a lock.")
@data_dir_option
@progress_option
def build(
    design: Path,
    out_dir: Path,
    only: tuple[str, ...],
    jobs: int | None,
    profile: bool,
    lock_file: Path | None,
    relock: bool,
    no_lock: bool,
    data_dirs: tuple[Path, ...],
    progress: bool | None,
) -> None:
    """Plan DESIGN and write its artifacts (plan.json, summary ...) to OUT/<design name>/, and its plan lock
    (designs/x.yaml: designs/x.lock.json): a later build of a revised design keeps every placement, port and
    cable label it holds."""
    from gpucluster.growth.phases import lock_changes, lock_lines

    with _sigterm_unwinds():
        start = time.perf_counter()
        stopwatch = profiling.Stopwatch()
        costs: list[profiling.Cost] = []
        sampler = profiling.PeakSampler(enabled=profile)
        jobs = default_jobs() if jobs is None else jobs
        staged = _StagedLock(None)
        try:
            with _display(progress) as display, contextlib.ExitStack() as unstage:
                timed = _Timed(display, stopwatch)
                timed("load design")
                loaded = load_design(design, data_dirs)
                lock_path = None if no_lock else lock_file or default_lock_path(design)
                lock = _read_lock(lock_path, loaded) if lock_path is not None and not relock else None
                staged = _StagedLock(lock_path)
                staged.remove_stale()
                unstage.callback(staged.remove)  # a build that fails leaves the lock as it was
                with Writing(loaded.design.name, out_dir, only or None, display, jobs, costs, sampler) as writing:
                    plan = plan_design(loaded, timed, lock, kept=True)
                    stopwatch.stop()
                    sampler.sample([], force=True)
                    _refuse_rule_errors(plan)
                    # the summary printed at the end, made before the other writers fork: its scheduler sides make the
                    # compute fabric (scheduling, kept with the plan's queries) that the Slurm, Kubernetes, NCCL and
                    # summary writers and the report read, so each worker has it rather than making it again
                    summary = summary_lines(plan)
                    # the lock (large at scale) is written beside the last writers (the report alone leaves
                    # a CPU idle), under a name of its own: it replaces the lock once the build has succeeded
                    # the output and the lock are renamed in together, once both are written
                    folder = writing.finish(
                        plan, loaded, functools.partial(staged.write, plan), functools.partial(staged.ready, plan)
                    )
                unstage.pop_all()  # built: the staged lock was renamed with the output
        except DesignError as error:
            _fail(error)
        except MissingSystemLibrary as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(1)
        except OSError as error:
            click.echo(f"error: {_os_error_place(error, out_dir, staged)}", err=True)
            sys.exit(EXIT_BAD_INPUT)
        if lock is not None:
            for line in lock_lines(lock_changes(lock, plan)):
                click.echo(line)
        if profile:
            sampler.sample([], force=True)
            for line in profiling.profile_lines(
                stopwatch.costs + costs, time.perf_counter() - start, sampler.peak_mib, jobs
            ):
                click.echo(line, err=True)
        for line in summary:
            click.echo(line)
        click.echo(f"wrote {folder}")
        if lock_path is not None:
            click.echo(f"wrote {lock_path}")


def _os_error_place(error: OSError, out_dir: Path, staged: _StagedLock) -> str:
    """An OS error of a build as one line: the path the user gave (the output folder for anything in it: the staging
    folder's names are the build's own; the lock for its new file), what failed and why. Nothing was swapped in."""
    name = error.filename
    if staged.path is not None and (error is staged.error or str(name or "").startswith(str(staged.new_path))):
        return f"{staged.path}: cannot write the lock: {error.strerror}"
    place = out_dir if name is None or Path(os.fsdecode(name)).is_relative_to(out_dir) else os.fsdecode(name)
    return f"{place}: cannot write the output: {error.strerror}"


class _StagedLock:
    """A build's plan lock, written while its last writers run (`write`) under a name of its own beside the lock, and
    renamed over the lock together with the output's swap (`ready`); `remove` drops it when the build failed."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.staged: Path | None = None
        self.error: OSError | None = None

    @property
    def new_path(self) -> Path:
        assert self.path is not None
        return self.path.with_name(f".{self.path.name}.new")

    def remove_stale(self) -> None:
        """Remove the new lock (and its temporary) a killed build left, before this build writes its own."""
        if self.path is not None:
            output_folder.remove_stale_file(self.new_path)

    def write(self, plan: Plan) -> None:
        from gpucluster.growth.phases import write_lock

        if self.path is None:
            return
        try:
            write_lock(plan, self.new_path)
        except OSError as error:  # raised by `ready`, before the swap, as when it is written then
            self.error = error
            return
        self.staged = self.new_path

    def ready(self, plan: Plan) -> tuple[Path, Path] | None:
        """The new lock and the lock it replaces, for the swap to rename (written now when the build had no writers
        to write it beside); a failed write raises here, so the previous output and lock stay."""
        if self.path is None:
            return None
        if self.staged is None and self.error is None:
            self.write(plan)
        if self.error is not None:
            raise self.error
        assert self.staged is not None
        return self.staged, self.path

    def remove(self) -> None:
        if self.staged is not None:
            with contextlib.suppress(OSError):
                self.staged.unlink()
            self.staged = None


def _read_lock(path: Path, loaded: LoadedDesign) -> Lock | None:
    """The lock at `path` when there is one (a first build has none), checked against the design's name and
    catalog; a bad one is a DesignError."""
    return read_design_lock(path, loaded) if path.exists() else None


@main.command("catalog")
@click.argument("kind", required=False, type=click.Choice([k.name for k in _part_kinds()]))
@click.option(
    "--design",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Include the extra catalog files this design names (and its overrides).",
)
@click.option("--citations", is_flag=True, help="Print each figure's full citation instead of its source tag.")
def catalog_command(kind: str | None, design: Path | None, citations: bool) -> None:
    """List the parts catalog (or one KIND of part): each part's key figures and their sources."""
    from gpucluster.catalog.listing import catalog_lines
    from gpucluster.catalog.load import load_catalog

    try:
        catalog = load_design(design).catalog if design is not None else load_catalog()
    except DesignError as error:
        _fail(error)
        raise
    for line in catalog_lines(catalog, kind, citations=citations):
        click.echo(line)


@main.command("size")
@click.option(
    "--from",
    "from_design",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A design to start from: its GPU server and workload (options override) and every setting size does not "
    "decide itself (site, fabric, storage, scheduler and teams, BOM ...) as it writes them.",
)
@click.option("--parameters-b", type=float, default=None, help="Model size in billions of parameters.")
@click.option("--tokens-b", type=float, default=None, help="Training tokens in billions.")
@click.option("--days", type=float, default=None, help="Target wall-clock days.")
@click.option("--server", default=None, help="GPU server model from the catalog [default: the design's; dgx-h100].")
@click.option("--mfu", type=float, default=None, help="Expected model FLOPs utilisation [default: 0.4].")
@click.option("--precision", type=click.Choice(["bf16", "fp16", "fp8"]), default=None, help="[default: bf16]")
@click.option("--name", default=None, help="Design name (default from the model and server).")
@_out_file_option("Starter design file to write (default NAME.yaml).")
def size_command(
    from_design: Path | None,
    parameters_b: float | None,
    tokens_b: float | None,
    days: float | None,
    server: str | None,
    mfu: float | None,
    precision: str | None,
    name: str | None,
    out_file: Path | None,
) -> None:
    """Size GPUs and servers for a workload (6·N·D), plan the starter design and grow it until its own plan
    trains in the target days with the spares its failure model asks for; write it."""
    from pydantic import ValidationError

    from gpucluster.catalog.load import load_catalog
    from gpucluster.catalog.schema import GpuServer, RackSystem
    from gpucluster.design.schema import Workload
    from gpucluster.training.starter import kept_settings, plan_starter

    flags = {"model_parameters_b": "--parameters-b", "training_tokens_b": "--tokens-b", "target_days": "--days"}
    fields: dict[str, object] = {}
    site: dict[str, object] | None = None
    catalog_files: list[str] | None = None
    kept: dict[str, dict[str, object]] = {}
    if from_design is not None:
        try:
            base = load_design(from_design)
        except DesignError as error:
            _fail(error)
            raise
        catalog = base.catalog
        server = server or base.design.compute.server
        site = base.design.site.model_dump(mode="json", exclude_unset=True) or None
        if base.design.workload is not None:
            fields = base.design.workload.model_dump(mode="json", exclude_unset=True)
        out_folder = (out_file.parent if out_file else Path(".")).resolve()
        catalog_files = [
            os.path.relpath((from_design.parent / extra).resolve(), out_folder) for extra in base.design.catalog
        ] or None
        kept = kept_settings(base.design, from_design, out_folder)
    else:
        catalog = load_catalog()
    given: dict[str, object] = {"model_parameters_b": parameters_b, "training_tokens_b": tokens_b, "target_days": days}
    given |= {"mfu": mfu, "precision": precision}
    fields |= {k: v for k, v in given.items() if v is not None}
    missing = [flags[k] for k in flags if fields.get(k) is None]
    if missing:
        where = f" (or a workload section in {from_design} that gives them)" if from_design else ""
        click.echo(f"error: give {', '.join(missing)}{where}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    try:
        workload = Workload.model_validate(fields)
    except ValidationError as exc:
        for problem in exc.errors():
            field = str(problem["loc"][0]) if problem["loc"] else "workload"
            click.echo(f"error: {flags.get(field, '--' + field)}: {problem['msg']}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    server = server or "dgx-h100"
    if not isinstance(catalog.parts.get(server), (GpuServer, RackSystem)):
        choices = ", ".join(catalog.ids((GpuServer, RackSystem)))
        click.echo(
            f"error: --server: unknown GPU server or rack-scale system {server!r}; the catalog has: {choices}", err=True
        )
        sys.exit(EXIT_BAD_INPUT)
    name = name or f"{server}-{workload.model_parameters_b:g}b".replace(".", "-")
    out_file = out_file or Path(f"{name}.yaml")
    if not out_file.parent.is_dir():
        click.echo(f"error: {out_file}: cannot write: no such folder {out_file.parent}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    try:
        starter = plan_starter(
            catalog,
            server,
            workload,
            name,
            out_file.parent,
            site=site,
            catalog_files=catalog_files,
            source=str(from_design or out_file),
            kept=kept,
        )
    except DesignError as error:
        _fail(error)
        raise
    _write_file(out_file, starter.text)
    from gpucluster.training import sizing_lines

    for line in [*sizing_lines(starter.sizing), *starter.lines]:
        click.echo(line)
    for finding in starter.findings:
        click.echo(f"{finding.severity}: {finding.message}")
    click.echo(f"wrote {out_file}")


@main.command()
@click.argument("old", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("new", type=click.Path(dir_okay=False, path_type=Path))
@_out_option("Folder for the output; the diff goes to OUT/<old name>-vs-<new name>/ (bom-diff.xlsx, review.html/.pdf).")
@click.option(
    "--files/--no-files",
    default=True,
    show_default=True,
    help="Build both designs and compare the files they generate (configs, scripts, plan.json) in the review.",
)
@click.option(
    "--lock",
    "lock_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The plan lock of what is built (default: OLD's .lock.json beside it, when there is one). Both designs "
    "are planned under it and the review shows NEW as a phase: what it adds (racks, devices, cables with their "
    "labels, the BOM to order, the printouts of the racks that change) and any move, re-cabling or relabelling "
    "of what is built, which is an error (exit 1) unless --allow-moves.",
)
@click.option(
    "--no-lock",
    is_flag=True,
    help="Compare two alternatives, not a phase of growth: plan both afresh without reading any lock.",
)
@click.option("--allow-moves", is_flag=True, help="Accept a phase that moves, re-cables or relabels what is built.")
@data_dir_option
@progress_option
def diff(
    old: Path,
    new: Path,
    out_dir: Path,
    files: bool,
    lock_file: Path | None,
    no_lock: bool,
    allow_moves: bool,
    data_dirs: tuple[Path, ...],
    progress: bool | None,
) -> None:
    """Print what the BOM gains and loses from design OLD to design NEW (quantities, power, price) and
    write it as bom-diff.xlsx; write the review of everything that changed as review.html and review.pdf.
    With a plan lock, NEW is reviewed as a phase of growth of what is built; --no-lock compares alternatives."""
    if no_lock and lock_file is not None:
        click.echo("error: --no-lock: give --lock or --no-lock, not both", err=True)
        sys.exit(EXIT_BAD_INPUT)
    with _display(progress) as say:
        moves = _diff(old, new, out_dir, files, say, data_dirs, lock_file, read_locks=not no_lock)
    if moves and not allow_moves:
        click.echo(
            f"error: {new} moves, re-cables or relabels {moves:,} things already built (listed above and in the "
            "review); a phase of growth only adds. Accept it with --allow-moves.",
            err=True,
        )
        sys.exit(1)


def _diff(
    old: Path,
    new: Path,
    out_dir: Path,
    files: bool,
    say: Callable[[str], None],
    data_dirs: tuple[Path, ...] = (),
    lock_file: Path | None = None,
    read_locks: bool = True,
) -> int:
    """Write the diff and the review; the number of changes to what the lock says is built (0 without one, and
    with ``read_locks`` false: alternatives side by side are not growth, so no lock is read)."""
    from gpucluster.analyse.bom import bom_for
    from gpucluster.artifacts.bom_diff import report_lines, write_bom_diff
    from gpucluster.artifacts.review import write_review
    from gpucluster.growth.changes import compare_builds, compare_plans
    from gpucluster.growth.diff import diff_boms
    from gpucluster.growth.phases import lock_changes, lock_lines, write_rack_printouts

    lock_path = lock_file or default_lock_path(old)
    try:
        planned = []
        lock = None
        for design in (old, new):
            loaded = load_design(design, data_dirs)
            if read_locks and design is old and (lock_file is not None or lock_path.exists()):
                lock = read_design_lock(lock_path, loaded)
            planned.append((loaded, plan_design(loaded, say, lock)))
    except DesignError as error:
        _fail(error)
    result = diff_boms(*(bom_for(plan, loaded) for loaded, plan in planned))
    folder = out_dir / f"{result.old.name}-vs-{result.new.name}"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "bom-diff.xlsx"
    staging = target.with_name(f".{target.name}.tmp")
    write_bom_diff(result, staging)
    os.replace(staging, target)
    old_side, new_side = planned
    if files:
        changes = compare_builds(old_side, new_side, result, say)
    else:
        changes = compare_plans(old_side[1], new_side[1], bom=result)
    printouts: list[Path] = []
    if lock is not None:
        changes.phase = lock_changes(lock, new_side[1])
        printouts = write_rack_printouts(new_side[1], changes.phase.changed_racks, folder)
    say("review")
    try:
        reviews = write_review(changes, folder)
    except MissingSystemLibrary as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    for line in report_lines(result):
        click.echo(line)
    if changes.phase is not None:
        for line in lock_lines(changes.phase):
            click.echo(line)
    for path in (*reviews, target):
        click.echo(f"wrote {path}")
    if printouts:
        click.echo(f"wrote {len(printouts)} rack printouts to {folder / 'racks'}")
    return len(changes.phase.moves) if changes.phase is not None else 0


@main.command("compare")
@click.argument("designs", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@_out_option("Folder for the output; the comparison goes to OUT/compare-<first>-vs-<second>.../.")
@click.option(
    "--prices",
    "prices_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A price list (CSV) to price every design's BOM with (default: each design's own bom.price_list).",
)
@data_dir_option
@progress_option
def compare_command(
    designs: tuple[Path, ...],
    out_dir: Path,
    prices_file: Path | None,
    data_dirs: tuple[Path, ...],
    progress: bool | None,
) -> None:
    """Plan two or more alternative DESIGNS afresh (no plan lock is read or written: alternatives are not growth)
    and write what differs, with the deltas against the first, as compare.csv, compare.xlsx, compare.html and
    compare.pdf."""
    from gpucluster.artifacts.compare import write_comparison
    from gpucluster.growth.compare import compare_alternatives

    if len(designs) < 2:
        click.echo(f"error: {designs[0]}: compare needs two or more designs (alternatives); got one", err=True)
        sys.exit(EXIT_BAD_INPUT)
    with _display(progress) as say:
        alternatives = _alternatives(designs, prices_file, data_dirs, say)
    comparison = compare_alternatives(alternatives)
    try:
        folder = write_comparison(comparison, out_dir)
    except MissingSystemLibrary as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    except OSError as error:
        click.echo(f"error: {out_dir}: cannot write the output: {error.strerror}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    differ = sum(row.differs for row in comparison.rows)
    click.echo(f"{len(designs)} designs, {len(comparison.rows):,} figures, {differ:,} differ")
    click.echo(f"wrote {folder}")


def _alternatives(
    designs: tuple[Path, ...], prices_file: Path | None, data_dirs: tuple[Path, ...], say: Callable[[str], None]
) -> list[Alternative]:
    """Each design loaded and planned without a lock, with the views compare reads; a design given twice (the same
    file, or two files of one name) or one that fails a design rule is bad input: exit 2, before anything is written."""
    from gpucluster.analyse.bom import bom_for, build_bom
    from gpucluster.analyse.budget import kept_power_budget
    from gpucluster.growth.compare import Alternative
    from gpucluster.inputs.prices import load_price_list
    from gpucluster.training import analyse_checkpoints

    problems: list[Problem] = []
    loaded = []
    for design in designs:  # every design's problems at once, not only the first bad design's
        try:
            loaded.append(load_design(design, data_dirs))
        except DesignError as error:
            problems += error.problems
    prices = None
    try:
        prices = load_price_list(prices_file) if prices_file is not None else None
    except DesignError as error:
        problems += error.problems
    problems += _given_twice(loaded)
    if problems:
        _fail(DesignError(problems))
    try:
        planned = [(design, plan_design(design, say, None)) for design in loaded]
    except DesignError as error:
        _fail(error)
        raise
    for _design, plan in planned:
        _refuse_rule_errors(plan)
    return [
        Alternative(
            str(design.path),
            plan,
            build_bom(plan, prices) if prices is not None else bom_for(plan, design),
            kept_power_budget(plan),
            analyse_checkpoints(plan),
        )
        for design, plan in planned
    ]


def _given_twice(loaded: list[LoadedDesign]) -> list[Problem]:
    """A design given twice: the same file, or two files of one design name (their outputs would be one column)."""
    problems = []
    for i, this in enumerate(loaded):
        for before in loaded[:i]:
            if this.path.resolve() == before.path.resolve():
                problems.append(Problem(str(this.path), 0, 0, "", f"the same file as {before.path}: give each once"))
            elif this.design.name == before.design.name:
                file, line, column = this.where("name")
                message = f"{this.design.name!r} is also the name of {before.path}; each alternative needs its own"
                problems.append(Problem(file, line, column, "name", message))
    return problems


@main.command()
@click.argument("design", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--runs", type=click.IntRange(2, 100_000), default=1000, show_default=True, help="Simulated runs.")
@click.option(
    "--days",
    type=click.FloatRange(min=0, max=3650, min_open=True),
    default=None,
    help="Run length in days, up to 3650 (default: the workload's).",
)
@click.option(
    "--interval",
    "minutes",
    type=click.FloatRange(min=0, max=10_080, min_open=True),
    multiple=True,
    help="Checkpoint interval in minutes to compare (repeatable; default: around Daly's optimum).",
)
@click.option("--seed", type=int, default=None, help="Random seed (default: one fixed seed, so runs repeat).")
@data_dir_option
@progress_option
def simulate(
    design: Path,
    runs: int,
    days: float | None,
    minutes: tuple[float, ...],
    seed: int,
    data_dirs: tuple[Path, ...],
    progress: bool | None,
) -> None:
    """Simulate training runs on DESIGN with failures and checkpoints; compare checkpoint intervals."""
    from gpucluster.training import analyse_checkpoints, compare_intervals, comparison_lines
    from gpucluster.training.intervals import DEFAULT_SEED

    seed = DEFAULT_SEED if seed is None else seed
    with _display(progress) as say:
        plan = _plan(design, say, data_dirs)
        analysis = analyse_checkpoints(plan)
        say("simulation")
        results = compare_intervals(analysis, runs=runs, days=days, minutes=list(minutes) or None, seed=seed)
    for line in comparison_lines(analysis, results, days or analysis.run_days, seed):
        click.echo(line)


@main.command("verify")
@click.argument("design", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--ibnetdiscover",
    "ibnetdiscover_files",
    type=click.Path(dir_okay=False, path_type=Path),
    multiple=True,
    help="ibnetdiscover output of one InfiniBand fabric (repeatable: one per fabric).",
)
@click.option(
    "--lldp",
    "lldp_paths",
    type=click.Path(path_type=Path),
    multiple=True,
    help="'lldpcli show neighbors -f json' output of one switch, named <switch>.json, or a folder of them "
    "(repeatable).",
)
@_out_option("Folder for the findings; they go to OUT/<design name>-verify/ (findings.csv, findings.html).")
@progress_option
def verify_command(
    design: Path,
    ibnetdiscover_files: tuple[Path, ...],
    lldp_paths: tuple[Path, ...],
    out_dir: Path,
    progress: bool | None,
) -> None:
    """Compare the fabric as built (ibnetdiscover, LLDP) with DESIGN's plan and name every miswired, swapped,
    missing, unexpected or degraded link by cable label, rack, U and port. Exit 0 when the fabric matches
    the plan, 1 when it does not, 2 on bad input."""
    from gpucluster.verify.check import verify
    from gpucluster.verify.report import summary_lines as verify_summary
    from gpucluster.verify.report import table_lines, write_reports

    if not ibnetdiscover_files and not lldp_paths:
        click.echo("error: give discovery output: --ibnetdiscover FILE and/or --lldp FILE_OR_DIR", err=True)
        sys.exit(EXIT_BAD_INPUT)
    with _display(progress) as say:
        plan = _plan(design, say)
        say("verify")
        try:
            results = verify(plan, list(ibnetdiscover_files), list(lldp_paths))
        except DesignError as error:
            _fail(error)
    folder = out_dir / f"{plan.name}-verify"
    try:
        written = write_reports(results, plan.name, folder)
    except OSError as error:
        click.echo(f"error: {folder}: cannot write: {error.strerror}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    for line in table_lines(results):
        click.echo(line)
    for line in verify_summary(results):
        click.echo(line)
    for path in written:
        click.echo(f"wrote {path}")
    sys.exit(1 if any(result.findings for result in results) else 0)


@main.command()
@_out_file_option("Write the JSON Schema here (default: print it).")
def schema(out_file: Path | None) -> None:
    """Export the design file's JSON Schema, for editor completion and checking."""
    text = json.dumps(Design.model_json_schema(), indent=2, sort_keys=True) + "\n"
    if out_file is None:
        click.echo(text, nl=False)
    else:
        _write_file(out_file, text)
        click.echo(f"wrote {out_file}")


if __name__ == "__main__":
    main()
