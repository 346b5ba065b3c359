"""The `gpucluster` command: validate a design, build its artifacts, export the design schema."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from gpucluster.artifacts import ARTIFACTS, Writing, default_jobs, output_folder
from gpucluster.artifacts.summary import summary_lines
from gpucluster.catalog.listing import PART_KINDS
from gpucluster.design.load import LoadedDesign, load_design
from gpucluster.design.schema import Design
from gpucluster.errors import MAX_REPORTED, DesignError, MissingSystemLibrary, Problem, stop_if_terminated, terminated
from gpucluster.pipeline import plan_design
from gpucluster.plan.lock import Lock, default_lock_path, read_design_lock
from gpucluster.plan.model import AnalysedPlan, Plan
from gpucluster.runtime import profiling
from gpucluster.runtime import progress as progress_display

if TYPE_CHECKING:
    from click.decorators import FC

    from gpucluster.design.schema import Workload
    from gpucluster.growth.changes import PlanChanges
    from gpucluster.growth.compare import Alternative
    from gpucluster.growth.diff import PlanDiff

EXIT_BAD_INPUT = 2


@contextlib.contextmanager
def _display(enabled: bool | None) -> Iterator[progress_display.Reporter]:
    """This process's progress reporter while a command runs, so long loops anywhere report to it: bars on a
    terminal (the default there), a line per stage on a pipe when asked for with --progress, else nothing."""
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
        stack.callback(progress_display.install, progress_display.install(reporter))
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
    """SIGTERM (a CI timeout, `kill`, systemd) ends a build as Ctrl-C does: forked workers are reaped and the
    staging folder removed as the stack unwinds, so the previous output stays as it was."""
    click.echo("error: terminated (SIGTERM) before the build finished", err=True)
    terminated(signum)  # asked again at the next stage or writers' turn, should this raise be lost in a finalizer
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """SIGTERM handled as _terminated while the body runs (in the main thread only; the handler before is restored)."""
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


def _error(message: str, status: int = EXIT_BAD_INPUT) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(status)


def _fail(error: DesignError) -> NoReturn:
    for problem in error.problems[:MAX_REPORTED]:
        click.echo(f"error: {problem}", err=True)
    if len(error.problems) > MAX_REPORTED:
        _error(f"... and {len(error.problems) - MAX_REPORTED:,} more problems")
    sys.exit(EXIT_BAD_INPUT)


@contextlib.contextmanager
def _reported() -> Iterator[None]:
    """Bad input exits 2 with its located problems (nothing is written); a missing system library, 1."""
    try:
        yield
    except DesignError as error:
        _fail(error)
    except MissingSystemLibrary as error:
        _error(str(error), 1)


def _echo(lines: Iterable[str]) -> None:
    for line in lines:
        click.echo(line)


def _refuse_rule_errors(plan: AnalysedPlan) -> None:
    """A design that fails a design rule is a bad design: exit 2, nothing written (the policy pack agrees)."""
    errors = [f for f in plan.findings if f.severity == "error"]
    for finding in errors:
        subject = f" [{finding.subject}]" if finding.subject else ""
        click.echo(f"error: {plan.name}: {finding.rule}{subject}: {finding.message}", err=True)
    if errors:
        click.echo(f"{len(errors)} design-rule error(s): fix the design, then validate again", err=True)
        sys.exit(EXIT_BAD_INPUT)


def _write_file(path: Path, text: str) -> None:
    """Write a file atomically (a temporary file renamed over it); an unwritable path exits 2."""
    staging = path.with_name(f".{path.name}.tmp")
    try:
        staging.write_text(text, encoding="utf-8")
        os.replace(staging, path)
    except OSError as error:
        _error(f"{path}: cannot write: {error.strerror}")


def _plan(design: Path, say: Callable[[str], None], data_dirs: tuple[Path, ...] = ()) -> AnalysedPlan:
    """Load and plan a design under its plan lock when there is one beside it (what is built is where the lock
    says: validate's rules, simulate and verify see that plan)."""
    with _reported():
        loaded = load_design(design, data_dirs)
        return plan_design(loaded, say, _read_lock(default_lock_path(design), loaded), kept=True)


FILE = click.Path(dir_okay=False, path_type=Path)


def _out_file_option(help_text: str) -> Callable[[FC], FC]:
    return click.option("-o", "--out", "out_file", type=FILE, help=help_text)


def _out_option(help_text: str) -> Callable[[FC], FC]:
    folder = click.Path(file_okay=False, path_type=Path)
    return click.option("-o", "--out", "out_dir", type=folder, default=Path("out"), show_default=True, help=help_text)


design_argument = click.argument("design", type=FILE)

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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gpu-cluster")
def main() -> None:
    """Design GPU training clusters: one YAML design, one physical plan, every artifact."""


@main.command()
@design_argument
@data_dir_option
@progress_option
def validate(design: Path, data_dirs: tuple[Path, ...], progress: bool | None) -> None:
    """Check DESIGN and print a one-screen summary, or every problem with its file:line:column
    (and every failed design rule); exit status 2 when there is one."""
    with _display(progress) as say:
        plan = _plan(design, say, data_dirs)
    _refuse_rule_errors(plan)
    click.echo("ok")
    _echo(summary_lines(plan))


@main.command()
@design_argument
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
    type=FILE,
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
            with _reported(), _display(progress) as display, contextlib.ExitStack() as unstage:
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
                    # made before the writers fork: its scheduler sides make the compute fabric the Slurm,
                    # Kubernetes, NCCL and summary writers and the report read, so each worker has it
                    summary = summary_lines(plan)
                    # the lock (large at scale) is written beside the last writers, under a name of its own, and
                    # renamed in together with the output once both are written
                    folder = writing.finish(
                        plan, loaded, functools.partial(staged.write, plan), functools.partial(staged.ready, plan)
                    )
                unstage.pop_all()  # built: the staged lock was renamed with the output
        except OSError as error:
            _error(_os_error_place(error, out_dir, staged))
        if lock is not None:
            _echo(lock_lines(lock_changes(lock, plan)))
        if profile:
            sampler.sample([], force=True)
            elapsed = time.perf_counter() - start
            for line in profiling.profile_lines(stopwatch.costs + costs, elapsed, sampler.peak_mib, jobs):
                click.echo(line, err=True)
        _echo([*summary, f"wrote {folder}"])
        if lock_path is not None:
            click.echo(f"wrote {lock_path}")


def _os_error_place(error: OSError, out_dir: Path, staged: _StagedLock) -> str:
    """An OS error of a build as one line: the path the user gave (the output folder for anything in it; the lock
    for its new file), what failed and why."""
    name = error.filename
    if staged.path is not None and (error is staged.error or str(name or "").startswith(str(staged.new_path))):
        return f"{staged.path}: cannot write the lock: {error.strerror}"
    place = out_dir if name is None or Path(os.fsdecode(name)).is_relative_to(out_dir) else os.fsdecode(name)
    return f"{place}: cannot write the output: {error.strerror}"


class _StagedLock:
    """A build's plan lock, written beside its last writers (`write`) under a name of its own, and renamed over the
    lock with the output's swap (`ready`); `remove` drops it when the build failed."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.staged: Path | None = None
        self.error: OSError | None = None

    @property
    def new_path(self) -> Path:
        assert self.path is not None
        return self.path.with_name(f".{self.path.name}.new")

    def remove_stale(self) -> None:
        """Remove the new lock (and its temporary) a killed build left."""
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
        """The new lock and the lock it replaces, for the swap (written now if no writer ran beside it); a failed
        write raises here, so the previous output and lock stay."""
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
    """The lock at `path` checked against the design (a first build has none); a bad one is a DesignError."""
    return read_design_lock(path, loaded) if path.exists() else None


@main.command("catalog")
@click.argument("kind", required=False, type=click.Choice([k.name for k in PART_KINDS]))
@click.option("--design", type=FILE, help="Include the extra catalog files this design names (and its overrides).")
@click.option("--citations", is_flag=True, help="Print each figure's full citation instead of its source tag.")
def catalog_command(kind: str | None, design: Path | None, citations: bool) -> None:
    """List the parts catalog (or one KIND of part): each part's key figures and their sources."""
    from gpucluster.catalog.listing import catalog_lines
    from gpucluster.catalog.load import load_catalog

    with _reported():
        catalog = load_design(design).catalog if design is not None else load_catalog()
    _echo(catalog_lines(catalog, kind, citations=citations))


@main.command("size")
@click.option(
    "--from",
    "from_design",
    type=FILE,
    help="A design to start from: its GPU server and workload (options override) and every setting size does not "
    "decide itself (site, fabric, storage, scheduler and teams, BOM ...) as it writes them.",
)
@click.option("--parameters-b", type=float, help="Model size in billions of parameters.")
@click.option("--tokens-b", type=float, help="Training tokens in billions.")
@click.option("--days", type=float, help="Target wall-clock days.")
@click.option("--server", help="GPU server model from the catalog [default: the design's; dgx-h100].")
@click.option("--mfu", type=float, help="Expected model FLOPs utilisation [default: 0.4].")
@click.option("--precision", type=click.Choice(["bf16", "fp16", "fp8"]), help="[default: bf16]")
@click.option("--name", help="Design name (default from the model and server).")
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
    from gpucluster.catalog.load import load_catalog
    from gpucluster.catalog.schema import GpuServer, RackSystem
    from gpucluster.training import sizing_lines
    from gpucluster.training.starter import kept_settings, plan_starter

    fields: dict[str, object] = {}
    site: dict[str, object] | None = None
    catalog_files: list[str] | None = None
    kept: dict[str, dict[str, object]] = {}
    if from_design is None:
        catalog = load_catalog()
    else:
        with _reported():
            base = load_design(from_design)
        catalog, design = base.catalog, base.design
        server = server or design.compute.server
        site = design.site.model_dump(mode="json", exclude_unset=True) or None
        if design.workload is not None:
            fields = design.workload.model_dump(mode="json", exclude_unset=True)
        out_folder = (out_file.parent if out_file else Path(".")).resolve()
        catalog_files = [os.path.relpath((from_design.parent / c).resolve(), out_folder) for c in design.catalog]
        catalog_files = catalog_files or None
        kept = kept_settings(design, from_design, out_folder)
    given: dict[str, object] = {"model_parameters_b": parameters_b, "training_tokens_b": tokens_b, "target_days": days}
    given |= {"mfu": mfu, "precision": precision}
    workload = _workload(fields | {k: v for k, v in given.items() if v is not None}, from_design)
    server = server or "dgx-h100"
    if not isinstance(catalog.parts.get(server), (GpuServer, RackSystem)):
        choices = ", ".join(catalog.ids((GpuServer, RackSystem)))
        _error(f"--server: unknown GPU server or rack-scale system {server!r}; the catalog has: {choices}")
    name = name or f"{server}-{workload.model_parameters_b:g}b".replace(".", "-")
    out_file = out_file or Path(f"{name}.yaml")
    if not out_file.parent.is_dir():
        _error(f"{out_file}: cannot write: no such folder {out_file.parent}")
    with _reported():
        starter = plan_starter(
            catalog,
            server,
            workload,
            name,
            out_file.parent,
            lambda path: plan_design(load_design(path)),
            site=site,
            catalog_files=catalog_files,
            source=str(from_design or out_file),
            kept=kept,
        )
    _write_file(out_file, starter.text)
    _echo([*sizing_lines(starter.sizing), *starter.lines])
    _echo(f"{finding.severity}: {finding.message}" for finding in starter.findings)
    click.echo(f"wrote {out_file}")


_WORKLOAD_FLAGS = {"model_parameters_b": "--parameters-b", "training_tokens_b": "--tokens-b", "target_days": "--days"}


def _workload(fields: dict[str, object], from_design: Path | None) -> Workload:
    """The workload of the options over the --from design's; a missing or bad figure is told by its option."""
    from pydantic import ValidationError

    from gpucluster.design.schema import Workload

    missing = [flag for key, flag in _WORKLOAD_FLAGS.items() if fields.get(key) is None]
    if missing:
        where = f" (or a workload section in {from_design} that gives them)" if from_design else ""
        _error(f"give {', '.join(missing)}{where}")
    try:
        return Workload.model_validate(fields)
    except ValidationError as exc:
        for problem in exc.errors():
            field = str(problem["loc"][0]) if problem["loc"] else "workload"
            click.echo(f"error: {_WORKLOAD_FLAGS.get(field, '--' + field)}: {problem['msg']}", err=True)
        sys.exit(EXIT_BAD_INPUT)


@main.command()
@click.argument("old", type=FILE)
@click.argument("new", type=FILE)
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
    type=FILE,
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
        _error("--no-lock: give --lock or --no-lock, not both")
    with _display(progress) as say:
        moves = _diff(old, new, out_dir, files, say, data_dirs, lock_file, read_locks=not no_lock)
    if moves and not allow_moves:
        _error(
            f"{new} moves, re-cables or relabels {moves:,} things already built (listed above and in the "
            "review); a phase of growth only adds. Accept it with --allow-moves.",
            1,
        )


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
    from gpucluster.growth.changes import compare_plans
    from gpucluster.growth.diff import diff_boms
    from gpucluster.growth.phases import lock_changes, lock_lines

    lock_path = lock_file or default_lock_path(old)
    planned = []
    lock = None
    with _reported():
        for design in (old, new):
            loaded = load_design(design, data_dirs)
            if read_locks and design is old and (lock_file is not None or lock_path.exists()):
                lock = read_design_lock(lock_path, loaded)
            planned.append((loaded, plan_design(loaded, say, lock)))
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
    with _reported():
        reviews = write_review(changes, folder)
    _echo(report_lines(result))
    if changes.phase is not None:
        _echo(lock_lines(changes.phase))
    _echo(f"wrote {path}" for path in (*reviews, target))
    if printouts:
        click.echo(f"wrote {len(printouts)} rack printouts to {folder / 'racks'}")
    return len(changes.phase.moves) if changes.phase is not None else 0


def compare_builds(
    old: tuple[LoadedDesign, AnalysedPlan],
    new: tuple[LoadedDesign, AnalysedPlan],
    bom: PlanDiff | None = None,
    progress: Callable[[str], None] | None = None,
) -> PlanChanges:
    """compare_plans with the files: both designs built (every artifact but those that only gather the others,
    the report) into a scratch folder that is removed afterwards."""
    from gpucluster.artifacts import write_artifacts
    from gpucluster.artifacts.registry import RUNS_LAST
    from gpucluster.growth.changes import compare_plans

    names = [name for name in ARTIFACTS if name not in RUNS_LAST]
    with tempfile.TemporaryDirectory(prefix="gpucluster-diff-") as scratch:
        folders = [
            write_artifacts(plan, loaded, Path(scratch) / side, names, progress)
            for side, (loaded, plan) in (("old", old), ("new", new))
        ]
        return compare_plans(old[1], new[1], folders[0], folders[1], bom=bom)


def write_rack_printouts(plan: Plan, racks: list[str], folder: Path) -> list[Path]:
    """The rack printouts (HTML, with the elevation) of the racks a phase changes, into ``folder/racks/``: what
    the installers of that phase take to the floor."""
    from gpucluster.artifacts.printouts import rack_html
    from gpucluster.artifacts.printouts.pages import rack_pages
    from gpucluster.formats.templating import render

    out = folder / "racks"
    out.mkdir(parents=True, exist_ok=True)
    pages = rack_pages(plan)
    paper = plan.design.site.paper
    written = []
    for name in racks:
        page = pages[name]
        staging = out / f".{name}.html.tmp"
        staging.write_text(rack_html(page, paper, render("rack-elevation.svg.j2", page=page)), encoding="utf-8")
        written.append(staging.replace(out / f"{name}.html"))
    return written


@main.command("compare")
@click.argument("designs", nargs=-1, required=True, type=FILE)
@_out_option("Folder for the output; the comparison goes to OUT/compare-<first>-vs-<second>.../.")
@click.option(
    "--prices",
    "prices_file",
    type=FILE,
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
        _error(f"{designs[0]}: compare needs two or more designs (alternatives); got one")
    with _display(progress) as say:
        alternatives = _alternatives(designs, prices_file, data_dirs, say)
    comparison = compare_alternatives(alternatives)
    try:
        with _reported():
            folder = write_comparison(comparison, out_dir)
    except OSError as error:
        _error(f"{out_dir}: cannot write the output: {error.strerror}")
    differ = sum(row.differs for row in comparison.rows)
    click.echo(f"{len(designs)} designs, {len(comparison.rows):,} figures, {differ:,} differ")
    click.echo(f"wrote {folder}")


def _alternatives(
    designs: tuple[Path, ...], prices_file: Path | None, data_dirs: tuple[Path, ...], say: Callable[[str], None]
) -> list[Alternative]:
    """Each design planned without a lock, with the views compare reads; a design given twice or one that fails a
    design rule is bad input: exit 2, before anything is written. Every design's problems are told at once."""
    from gpucluster.analyse.bom import bom_for, build_bom
    from gpucluster.analyse.budget import kept_power_budget
    from gpucluster.growth.compare import Alternative
    from gpucluster.inputs.prices import load_price_list
    from gpucluster.training import analyse_checkpoints

    problems: list[Problem] = []
    loaded = []
    for design in designs:
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
    with _reported():
        planned = [(design, plan_design(design, say, None)) for design in loaded]
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
@design_argument
@click.option("--runs", type=click.IntRange(2, 100_000), default=1000, show_default=True, help="Simulated runs.")
@click.option(
    "--days",
    type=click.FloatRange(min=0, max=3650, min_open=True),
    help="Run length in days, up to 3650 (default: the workload's).",
)
@click.option(
    "--interval",
    "minutes",
    type=click.FloatRange(min=0, max=10_080, min_open=True),
    multiple=True,
    help="Checkpoint interval in minutes to compare (repeatable; default: around Daly's optimum).",
)
@click.option("--seed", type=int, help="Random seed (default: one fixed seed, so runs repeat).")
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
    _echo(comparison_lines(analysis, results, days or analysis.run_days, seed))


@main.command("verify")
@design_argument
@click.option(
    "--ibnetdiscover",
    "ibnetdiscover_files",
    type=FILE,
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
        _error("give discovery output: --ibnetdiscover FILE and/or --lldp FILE_OR_DIR")
    with _display(progress) as say:
        plan = _plan(design, say)
        say("verify")
        with _reported():
            results = verify(plan, list(ibnetdiscover_files), list(lldp_paths))
    folder = out_dir / f"{plan.name}-verify"
    try:
        written = write_reports(results, plan.name, folder)
    except OSError as error:
        _error(f"{folder}: cannot write: {error.strerror}")
    _echo([*table_lines(results), *verify_summary(results), *(f"wrote {path}" for path in written)])
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
