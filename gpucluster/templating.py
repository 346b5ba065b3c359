"""The Jinja environment every artifact writer renders its templates with."""

from __future__ import annotations

from functools import cache

import jinja2


@cache
def environment() -> jinja2.Environment:
    """Templates from templates/ (installed as gpucluster.templates); undefined names are errors,
    so a template cannot silently print nothing."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("gpucluster.templates", ""),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=jinja2.select_autoescape(["html", "htm", "xml", "svg"]),
    )


def render(template: str, **context: object) -> str:
    return environment().get_template(template).render(**context)
