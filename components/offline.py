"""Running a Pulumi program without the Pulumi CLI: the real SDK registration, as in `pulumi preview`,
against mocks. Tests, the benchmarks and a quick look at what a design registers all use it."""

from __future__ import annotations

import contextvars
import runpy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pulumi
from google.protobuf import struct_pb2
from pulumi.runtime import Mocks, set_mocks
from pulumi.runtime.config import set_all_config
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.settings import get_root_resource
from pulumi.runtime.sync_await import _sync_await


@dataclass(frozen=True)
class Registration:
    """One resource as the SDK registered it: type, name, parent URN, and its properties both as
    deserialized inputs and as the protobuf Struct that goes to the engine (and from it to policy packs)."""

    type: str
    name: str
    urn: str
    parent: str
    inputs: dict
    struct: struct_pb2.Struct = field(repr=False)


@dataclass
class OfflineRun:
    """What a program registered, in order, and the stack outputs it exported."""

    resources: list[Registration]
    outputs: dict[str, object]

    def of_type(self, type_token: str) -> list[Registration]:
        return [r for r in self.resources if r.type == type_token]

    def named(self, name: str) -> Registration:
        return next(r for r in self.resources if r.name == name)


class _Mocks(Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list | None]:
        return {}, None


class _RecordingMonitor(MockMonitor):
    """The SDK's mock monitor, keeping each registration request as it arrived."""

    def __init__(self) -> None:
        super().__init__(_Mocks())
        self.registrations: list[Registration] = []

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            inputs = self.resources[response.urn].state
            self.registrations.append(
                Registration(request.type, request.name, response.urn, request.parent, inputs, request.object)
            )
        return response


def run_offline(
    program: Callable[[], None] | Path,
    config: Mapping[str, str] | None = None,
    project: str = "gpu-cluster",
    stack: str = "dev",
) -> OfflineRun:
    """Run `program` (a function, or a Pulumi program's ``__main__.py``) as `pulumi preview` would, with
    `config` as its project's stack config, in a context of its own (so runs do not share state)."""
    return contextvars.Context().run(_run, program, dict(config or {}), project, stack)


def _run(program: Callable[[], None] | Path, config: dict[str, str], project: str, stack: str) -> OfflineRun:
    monitor = _RecordingMonitor()
    set_mocks(monitor.mocks, project=project, stack=stack, preview=True, monitor=monitor)
    set_all_config({f"{project}:{key}": value for key, value in config.items()})
    if callable(program):
        pulumi.runtime.test(program)()
    else:
        pulumi.runtime.test(lambda: _run_path(program))()
    root = get_root_resource()
    outputs = {key: _resolve(value) for key, value in getattr(root, "outputs", {}).items()}
    return OfflineRun(monitor.registrations, outputs)  # a parent registers before its children


def _run_path(program: Path) -> None:
    """Run a program file as Pulumi's Python host does (its module globals are not a result to await)."""
    runpy.run_path(str(program), run_name="__main__")


def _resolve(value: object) -> object:
    return _sync_await(value.future()) if isinstance(value, pulumi.Output) else value
