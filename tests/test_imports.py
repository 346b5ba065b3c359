"""The stages import one way (inputs -> physical plan -> derived models -> design rules -> pipeline -> changes ->
views),
and every module imports on its own in a fresh interpreter, whatever was imported before it."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The stages in order: a module may import modules of its own stage and of earlier ones only.
STAGES: tuple[str, ...] = (
    "inputs",
    "physical plan",
    "derived models",
    "design rules",
    "pipeline",
    "changes",
    "views",
)

# Every module's stage, one by one (a new module is placed here by its author: no prefix places it silently).
# inputs: errors, inputs (YAML with positions, bounds, the price list), formats (Jinja, the YAML dumper), runtime
# (progress, --profile costs), design, catalog. changes: growth (the lock as written, plan changes, phases, the
# comparison of alternatives), which the views render and never the other way round. views: artifacts, cli,
# components, templates, verify (discovery files), bar verify.expected (the links a discovery should find, from the
# plan: a derived model). training.starter sizes to the rules' target margin and plans through the function the
# command hands it: it never imports the pipeline.
STAGE_OF: dict[str, str] = {
    "gpucluster.analyse": "derived models",
    "gpucluster.analyse.bom": "derived models",
    "gpucluster.analyse.budget": "derived models",
    "gpucluster.analyse.burn_in": "derived models",
    "gpucluster.analyse.compatibility": "derived models",
    "gpucluster.analyse.deviations": "derived models",
    "gpucluster.analyse.floor": "derived models",
    "gpucluster.analyse.rules": "design rules",
    "gpucluster.analyse.scheduling": "derived models",
    "gpucluster.analyse.totals": "derived models",
    "gpucluster.artifacts": "views",
    "gpucluster.artifacts._pdf": "views",
    "gpucluster.artifacts.bom": "views",
    "gpucluster.artifacts.bom_diff": "views",
    "gpucluster.artifacts.burn_in": "views",
    "gpucluster.artifacts.cabling": "views",
    "gpucluster.artifacts.checkpoint": "views",
    "gpucluster.artifacts.burn_in_jobs": "views",
    "gpucluster.artifacts.compare": "views",
    "gpucluster.artifacts.decision": "views",
    "gpucluster.artifacts.drawings": "views",
    "gpucluster.artifacts.floor_plan": "views",
    "gpucluster.artifacts.grafana": "views",
    "gpucluster.artifacts.kubernetes": "views",
    "gpucluster.artifacts.monitoring": "views",
    "gpucluster.artifacts.monitoring.alert_rules": "views",
    "gpucluster.artifacts.monitoring.rule_tests": "views",
    "gpucluster.artifacts.monitoring.targets": "views",
    "gpucluster.artifacts.mounts": "views",
    "gpucluster.artifacts.nccl": "views",
    "gpucluster.artifacts.netbox": "views",
    "gpucluster.artifacts.output_folder": "views",
    "gpucluster.artifacts.plan_json": "views",
    "gpucluster.artifacts.pool": "views",
    "gpucluster.artifacts.power": "views",
    "gpucluster.artifacts.power_workbook": "views",
    "gpucluster.artifacts.printouts": "views",
    "gpucluster.artifacts.printouts.pages": "views",
    "gpucluster.artifacts.printouts.pdf": "views",
    "gpucluster.artifacts.registry": "views",
    "gpucluster.artifacts.report": "views",
    "gpucluster.artifacts.review": "views",
    "gpucluster.artifacts.simulation_html": "views",
    "gpucluster.artifacts.slurm": "views",
    "gpucluster.artifacts.summary": "views",
    "gpucluster.artifacts.switch_config": "views",
    "gpucluster.artifacts.verify_expected": "views",
    "gpucluster.catalog": "inputs",
    "gpucluster.catalog.listing": "inputs",
    "gpucluster.catalog.load": "inputs",
    "gpucluster.catalog.ports": "inputs",
    "gpucluster.catalog.schema": "inputs",
    "gpucluster.cli": "views",
    "gpucluster.components": "views",
    "gpucluster.components._device": "views",
    "gpucluster.components.cluster": "views",
    "gpucluster.components.compute": "views",
    "gpucluster.components.network": "views",
    "gpucluster.components.offline": "views",
    "gpucluster.components.outputs": "views",
    "gpucluster.components.policy": "views",
    "gpucluster.components.scheduler": "views",
    "gpucluster.components.site": "views",
    "gpucluster.components.storage": "views",
    "gpucluster.design": "inputs",
    "gpucluster.design.load": "inputs",
    "gpucluster.design.names": "inputs",
    "gpucluster.design.schema": "inputs",
    "gpucluster.errors": "inputs",
    "gpucluster.formats": "inputs",
    "gpucluster.formats.templating": "inputs",
    "gpucluster.formats.tables": "inputs",
    "gpucluster.formats.tables.csv_writer": "inputs",
    "gpucluster.formats.tables.fast_sheets": "inputs",
    "gpucluster.formats.tables.guard": "inputs",
    "gpucluster.formats.tables.workbook": "inputs",
    "gpucluster.formats.yamlout": "inputs",
    "gpucluster.growth": "changes",
    "gpucluster.growth.changes": "changes",
    "gpucluster.growth.compare": "changes",
    "gpucluster.growth.diff": "changes",
    "gpucluster.growth.phases": "changes",
    "gpucluster.inputs": "inputs",
    "gpucluster.inputs.jsonsource": "inputs",
    "gpucluster.inputs.limits": "inputs",
    "gpucluster.inputs.prices": "inputs",
    "gpucluster.inputs.yamlsource": "inputs",
    "gpucluster.pipeline": "pipeline",
    "gpucluster.plan": "physical plan",
    "gpucluster.plan.analysis": "physical plan",
    "gpucluster.plan.build": "physical plan",
    "gpucluster.plan.cables": "physical plan",
    "gpucluster.plan.fabric": "physical plan",
    "gpucluster.plan.facts": "physical plan",
    "gpucluster.plan.labels": "physical plan",
    "gpucluster.plan.lock": "physical plan",
    "gpucluster.plan.memo": "physical plan",
    "gpucluster.plan.model": "physical plan",
    "gpucluster.plan.networks": "physical plan",
    "gpucluster.plan.oob": "physical plan",
    "gpucluster.plan.power": "physical plan",
    "gpucluster.plan.power.circuits": "physical plan",
    "gpucluster.plan.power.cooling": "physical plan",
    "gpucluster.plan.power.cords": "physical plan",
    "gpucluster.plan.power.draw": "physical plan",
    "gpucluster.plan.queries": "physical plan",
    "gpucluster.plan.rack_fabric": "physical plan",
    "gpucluster.plan.rack_scale": "physical plan",
    "gpucluster.plan.racks": "physical plan",
    "gpucluster.plan.registry": "physical plan",
    "gpucluster.plan.reserve": "physical plan",
    "gpucluster.plan.resolve": "physical plan",
    "gpucluster.plan.roce": "physical plan",
    "gpucluster.runtime": "inputs",
    "gpucluster.runtime.collector": "inputs",
    "gpucluster.runtime.profiling": "inputs",
    "gpucluster.runtime.progress": "inputs",
    "gpucluster.templates": "views",
    "gpucluster.training": "derived models",
    "gpucluster.training.checkpoint": "derived models",
    "gpucluster.training.intervals": "derived models",
    "gpucluster.training.model": "derived models",
    "gpucluster.training.reliability": "derived models",
    "gpucluster.training.report": "derived models",
    "gpucluster.training.simulate": "derived models",
    "gpucluster.training.sizing": "derived models",
    "gpucluster.training.starter": "design rules",
    "gpucluster.verify": "views",
    "gpucluster.verify.check": "views",
    "gpucluster.verify.compare": "views",
    "gpucluster.verify.discovery": "views",
    "gpucluster.verify.expected": "derived models",
    "gpucluster.verify.ibnetdiscover": "views",
    "gpucluster.verify.lldp": "views",
    "gpucluster.verify.report": "views",
}


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
    return STAGES.index(STAGE_OF[module])


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


def test_every_module_has_its_own_stage_and_the_map_names_no_other():
    modules = set(_modules()) - {"gpucluster"}
    assert sorted(modules - set(STAGE_OF)) == [] and sorted(set(STAGE_OF) - modules) == []
    assert set(STAGE_OF.values()) <= set(STAGES)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports when it runs; an import of one of its own parent packages is left
    out (Python runs a package before any module in it, whatever imports it)."""
    modules = _modules()
    known = set(modules)
    graph = {}
    for module, path in modules.items():
        if module == "gpucluster":  # the public facade imports from every stage, lazily
            continue
        targets = _imports(module, path, known) - {"gpucluster", module}
        graph[module] = {target for target in targets if not module.startswith(target + ".")}
    return graph


def test_no_module_imports_a_later_stage():
    upward = [
        f"{module} ({STAGE_OF[module]}) imports {target} ({STAGE_OF[target]})"
        for module, targets in _import_graph().items()
        for target in sorted(targets)
        if _stage(target) > _stage(module)
    ]
    assert upward == []


def test_the_modules_import_each_other_without_a_circle():
    graph = _import_graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    circles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                circles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert circles == []


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
