"""The Jinja environment every artifact writer renders its templates with."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jinja2


def markdown_text(value: object) -> str:
    """Free text in a Markdown line: HTML special characters as entities (a Markdown viewer renders raw HTML)
    and '|' escaped (it would split a table cell)."""
    text = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("|", "\\|")


@cache
def environment() -> jinja2.Environment:
    """Templates from templates/ (installed as gpucluster.templates); undefined names are errors,
    so a template cannot silently print nothing."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("gpucluster.templates", ""),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=escapes,
    )
    env.filters["md"] = markdown_text
    return env


MARKUP_SUFFIXES = (".html", ".htm", ".xml", ".svg")


def escapes(template_name: str | None) -> bool:
    """Markup templates are autoescaped, whether named page.html or page.html.j2 (jinja's select_autoescape
    looks only at the last suffix, so rack-elevation.svg.j2 went unescaped); every other output (configs,
    scripts, Markdown) is written as text and keeps free text to one line instead (gpucluster.inputs.limits)."""
    return (template_name or "").removesuffix(".j2").endswith(MARKUP_SUFFIXES)


def render(template: str, **context: object) -> str:
    return environment().get_template(template).render(**context)


def render_to(path: Path, template: str, **context: object) -> None:
    """Render a template straight into a file, a piece at a time: the same text as render(), without holding a
    file of hundreds of megabytes in memory (the 131,072-GPU fabric's expected topology)."""
    stream = environment().get_template(template).stream(**context)
    # a hundred pieces at a time: one at a time cost far more CPU than render(); thousands at a time made each joined
    # piece and its encoding megabytes long, which the C library maps afresh for each (page faults; none with a hundred)
    stream.enable_buffering(100)
    stream.dump(str(path), encoding="utf-8")
