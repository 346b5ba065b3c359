"""The stages import one way (inputs -> physical plan -> derived models -> design rules -> pipeline -> views),
and every module imports on its own in a fresh interpreter, whatever was imported before it."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Each stage may import its own and earlier stages only; a module belongs to its longest matching prefix.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "inputs",
        (
            "gpucluster.errors",
            "gpucluster.inputs",  # YAML with positions, the bounds every input is held to, the price list
            "gpucluster.formats",  # the Jinja environment and the YAML dumper every writer shares
            "gpucluster.runtime",  # progress display, --profile costs, the cycle collector paused
            "gpucluster.design",
            "gpucluster.catalog",
        ),
    ),
    ("physical plan", ("gpucluster.plan",)),
    (
        "derived models",
        (
            "gpucluster.analyse",
            "gpucluster.training",
            "gpucluster.verify.expected",  # the links a discovery should find, from the plan
        ),
    ),
    ("design rules", ("gpucluster.analyse.rules",)),
    ("pipeline", ("gpucluster.pipeline",)),
    (
        "views",
        (
            "gpucluster.artifacts",
            "gpucluster.growth",  # the plan lock as written, what changes between two plans, the phase review
            "gpucluster.cli",
            "gpucluster.components",
            "gpucluster.templates",
            "gpucluster.training.starter",  # `gpucluster size`: plans a starter design (runs the pipeline)
            "gpucluster.verify",  # the plan against what the cluster reports (a view that reads discovery files)
        ),
    ),
)


def _modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (components/ and templates/ install inside it)."""
    found: dict[str, Path] = {}
    for base, package in ((ROOT / "gpucluster", "gpucluster"), (ROOT / "components", "gpucluster.components")):
        for path in sorted(base.rglob("*.py")):
            parts = [package, *path.relative_to(base).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    found["gpucluster.templates"] = ROOT / "templates" / "__init__.py"
    return found


def _stage(module: str) -> int:
    best, stage = -1, -1
    for index, (_name, prefixes) in enumerate(STAGES):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, stage = len(prefix), index
    return stage


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules a module imports when it runs (anywhere in it, lazy imports included)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            found.add(source)
            found |= {f"{source}.{alias.name}" for alias in node.names if f"{source}.{alias.name}" in known}
    return {name for name in found if name in known}


def _runtime_nodes(tree: ast.AST):
    """Every node but those under ``if TYPE_CHECKING:`` (annotations of later stages' types import nothing)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and isinstance(child.test, ast.Name) and child.test.id == "TYPE_CHECKING":
                stack.extend(child.orelse)
                continue
            stack.append(child)


def test_every_module_belongs_to_a_stage():
    assert [m for m in _modules() if m != "gpucluster" and _stage(m) < 0] == []


def test_no_stage_imports_a_later_one():
    modules = _modules()
    known = set(modules)
    upward = []
    for module, path in modules.items():
        if module == "gpucluster":  # the public facade imports from every stage, lazily
            continue
        for target in _imports(module, path, known):
            if target != "gpucluster" and _stage(target) > _stage(module):
                upward.append(f"{module} ({STAGES[_stage(module)][0]}) imports {target} ({STAGES[_stage(target)][0]})")
    assert upward == []


@pytest.mark.slow
def test_every_module_imports_alone_in_a_fresh_interpreter():
    """One interpreter loads the third-party libraries, then forks a child per module that imports only it:
    a cycle among our modules, hidden when another module happens to be imported first, fails here."""
    names = sorted(_modules())
    script = textwrap.dedent(
        """
        import importlib, os, sys, traceback
        for library in ("pydantic", "networkx", "yaml", "jinja2", "orjson", "xlsxwriter", "matplotlib.figure",
                        "reportlab.platypus", "pypdf", "click", "pulumi", "weasyprint", "hostlist"):
            importlib.import_module(library)
        assert not [m for m in sys.modules if m.split(".")[0] == "gpucluster"]
        failed = []
        for name in sys.argv[1:]:
            pid = os.fork()
            if pid == 0:
                try:
                    importlib.import_module(name)
                except BaseException:
                    print(f"--- import {name} failed:", file=sys.stderr)
                    traceback.print_exc()
                    os._exit(1)
                os._exit(0)
            if os.waitpid(pid, 0)[1]:
                failed.append(name)
        print(" ".join(failed))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script, *names], capture_output=True, text=True, cwd=ROOT / "tests", timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [], result.stderr
