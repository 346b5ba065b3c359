"""The `gpucluster` command: validate a design, build its artifacts, export the design schema."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import click

from gpucluster.artifacts import ARTIFACTS, write_artifacts
from gpucluster.artifacts.bom_diff import report_lines, write_bom_diff
from gpucluster.artifacts.summary import summary_lines
from gpucluster.bom import bom_for
from gpucluster.design.load import load_design
from gpucluster.design.schema import Design
from gpucluster.diff import diff_boms
from gpucluster.errors import DesignError
from gpucluster.plan import plan_design

EXIT_BAD_INPUT = 2


def _progress(enabled: bool) -> Callable[[str], None]:
    start = time.monotonic()

    def say(stage: str) -> None:
        if enabled:
            click.echo(f"[{time.monotonic() - start:6.1f}s] {stage}", err=True)

    return say


def _fail(error: DesignError) -> None:
    for problem in error.problems:
        click.echo(f"error: {problem}", err=True)
    sys.exit(EXIT_BAD_INPUT)


progress_option = click.option(
    "--progress/--no-progress", default=None, help="Show each stage as it runs (default: when stderr is a terminal)."
)


def _out_option(help_text: str) -> Callable:
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
@progress_option
def validate(design: Path, progress: bool | None) -> None:
    """Check DESIGN and print a one-screen summary, or every problem with its file:line:column."""
    say = _progress(sys.stderr.isatty() if progress is None else progress)
    try:
        loaded = load_design(design)
        plan = plan_design(loaded, say)
    except DesignError as error:
        _fail(error)
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
    help="Write only these artifacts (repeatable). Default: all.",
)
@progress_option
def build(design: Path, out_dir: Path, only: tuple[str, ...], progress: bool | None) -> None:
    """Plan DESIGN and write its artifacts (plan.json, summary ...) to OUT/<design name>/."""
    say = _progress(sys.stderr.isatty() if progress is None else progress)
    try:
        loaded = load_design(design)
        plan = plan_design(loaded, say)
        folder = write_artifacts(plan, loaded, out_dir, only or None, say)
    except DesignError as error:
        _fail(error)
    for line in summary_lines(plan):
        click.echo(line)
    click.echo(f"wrote {folder}")


@main.command()
@click.argument("old", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("new", type=click.Path(dir_okay=False, path_type=Path))
@_out_option("Folder for the output; the diff goes to OUT/<old name>-vs-<new name>/bom-diff.xlsx.")
@progress_option
def diff(old: Path, new: Path, out_dir: Path, progress: bool | None) -> None:
    """Print what the BOM gains and loses from design OLD to design NEW (quantities, power, price) and
    write it as bom-diff.xlsx."""
    say = _progress(sys.stderr.isatty() if progress is None else progress)
    try:
        boms = []
        for design in (old, new):
            loaded = load_design(design)
            boms.append(bom_for(plan_design(loaded, say), loaded))
    except DesignError as error:
        _fail(error)
    result = diff_boms(*boms)
    folder = out_dir / f"{result.old.name}-vs-{result.new.name}"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "bom-diff.xlsx"
    staging = target.with_name(f".{target.name}.tmp")
    write_bom_diff(result, staging)
    os.replace(staging, target)
    for line in report_lines(result):
        click.echo(line)
    click.echo(f"wrote {target}")


@main.command()
@click.option(
    "-o",
    "--out",
    "out_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the JSON Schema here (default: print it).",
)
def schema(out_file: Path | None) -> None:
    """Export the design file's JSON Schema, for editor completion and checking."""
    text = json.dumps(Design.model_json_schema(), indent=2, sort_keys=True) + "\n"
    if out_file is None:
        click.echo(text, nl=False)
    else:
        out_file.write_text(text, encoding="utf-8")
        click.echo(f"wrote {out_file}")


if __name__ == "__main__":
    main()
