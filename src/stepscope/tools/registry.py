"""Every tool is declared exactly once, as a module-level ``TOOL = ToolSpec(...)`` in a module
of this package listed in `TOOL_MODULES`. The CLI sub-commands, the server's routes and the web
UI's tool list are all generated from these declarations; a spec also parses its options and
resolves the host(s) a request names, for the CLI and the server alike.

Tools never import one another (an import-linter contract): what two tools share is computed
in `stepscope.tools._analysis` or below, in `stepscope.stats`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import field
from functools import cache
from typing import TYPE_CHECKING, Any

from stepscope.errors import NotFoundError, StepscopeError
from stepscope.logdir import ALL_HOSTS
from stepscope.records import record

if TYPE_CHECKING:
    from stepscope.model.runs import Run
    from stepscope.tools.context import ToolContext


# What a tool returns: a frozen dataclass of typed fields, serialized at the edges (CLI,
# server) by `stepscope.tools.output.to_json` / `to_csv`.
ToolResult = Any


@record
class ToolOption:
    """An option a tool takes, with its default and allowed values."""

    name: str
    description: str
    default: str
    choices: tuple[str, ...] = ()


@record
class ToolEndpoint:
    """An extra GET route of a tool, ``/api/tool/<tool>/<name>?run=&host=&<params>``, for tools
    that answer follow-up queries (the trace viewer's windows). ``handle(ctx, params)`` returns
    (body, content type); a ValueError means a bad parameter (HTTP 400)."""

    name: str
    handle: Callable[[ToolContext, Mapping[str, str]], tuple[bytes, str]]
    description: str = ""
    # The declared-field class of a JSON answer (tools.output): docs/tools tables are
    # generated from it; None for a binary answer.
    result: type | None = None


@record
class ToolSpec:
    """A tool's declaration: its name, builder, formats, options and extra routes."""

    name: str  # identifier used in URLs and the CLI, e.g. "overview_page"
    title: str  # shown in the UI, e.g. "Overview"
    description: str
    build: Callable[[ToolContext], ToolResult]
    formats: tuple[str, ...] = ("json",)  # "csv" when the result has CSV rows (tools.output)
    multi_host: bool = True  # supports ALL_HOSTS
    # ALL_HOSTS is a reduction of per-host summaries (tools/_fanout.py); False: the tool
    # schedules its own per-host work (the trace viewer's per-host indexes)
    fan_out: bool = True
    options: tuple[ToolOption, ...] = ()
    # Whether the tool has anything to show for a run (e.g. kernel_stats needs a GPU).
    available: Callable[[ToolContext], bool] = field(default=lambda ctx: True)
    # What a profile must hold for `available`, and how to record it: said when it is missing;
    # a function of the context when the words depend on the run (its framework).
    needs: str | Callable[[ToolContext], str] = ""
    order: int = 100  # position in the UI's tool list
    endpoints: tuple[ToolEndpoint, ...] = ()  # extra routes (see ToolEndpoint)

    def parse_options(self, given: Mapping[str, str]) -> dict[str, str]:
        """Every declared option, the given value or its default; `ToolUsageError` for an
        unknown name or a value outside the option's choices."""
        declared = {o.name: o for o in self.options}
        unknown = sorted(set(given) - set(declared))
        if unknown:
            names = ", ".join(declared) or "none"
            raise ToolUsageError(
                f"tool {self.name} has no option {unknown[0]!r} (options: {names})"
            )
        options = {}
        for name, option in declared.items():
            value = given.get(name, option.default)
            if option.choices and value not in option.choices:
                raise ToolUsageError(
                    f"option {name}={value[:40]!r} of tool {self.name} must be one of "
                    f"{', '.join(option.choices)}"
                )
            options[name] = value
        return options

    def resolve_host(self, run: Run, host: str | None) -> str:
        """The host to show: the one named, else the run's only host, else ALL_HOSTS; a tool
        that shows one host at a time refuses ALL_HOSTS with `ToolUsageError`. An unknown host
        raises NotFoundError."""
        if host is None:
            host = run.hosts[0].host if len(run.hosts) == 1 else ALL_HOSTS
        if host == ALL_HOSTS:
            if not self.multi_host:
                raise ToolUsageError(
                    f"tool {self.name} shows one host at a time; pick one of "
                    f"{', '.join(run.host_names)}"
                )
            return ALL_HOSTS
        return run.host(host).host


class ToolUsageError(StepscopeError):
    """A request a tool cannot answer as asked: an unknown option, a bad value, ALL_HOSTS for a
    one-host tool (the server answers HTTP 400)."""


# Every tool, by module under stepscope.tools: an explicit list, so finding the tools imports
# nothing else and a helper module can never be mistaken for a tool.
TOOL_MODULES = (
    "overview_page",
    "trace_viewer.tool",
    "input_pipeline_analyzer",
    "op_stats",
    "kernel_stats",
    "op_profile",
    "hlo_stats",
    "roofline_model",
    "memory_viewer",
    "graph_viewer",
    "memory_profile",
    "tf_data_bottleneck_analysis",
    "pod_viewer",
    "diagnostics",
)


@cache
def all_tools() -> tuple[ToolSpec, ...]:
    """All declared tools, in UI order."""
    specs: list[ToolSpec] = []
    for name in TOOL_MODULES:
        module = importlib.import_module(f"{__package__}.{name}")
        spec = getattr(module, "TOOL", None)
        if not isinstance(spec, ToolSpec):
            raise RuntimeError(f"stepscope.tools.{name} declares no TOOL = ToolSpec(...)")
        specs.append(spec)
    names = [s.name for s in specs]
    duplicated = {n for n in names if names.count(n) > 1}
    if duplicated:
        raise RuntimeError(f"tools declared twice: {sorted(duplicated)}")
    return tuple(sorted(specs, key=lambda s: (s.order, s.name)))


def get_tool(name: str) -> ToolSpec:
    # A tool's own module first: one tool's run need not import (and build the dataclasses
    # of) every other tool, which costs about 0.1-0.2 s of a cold start.
    module = next((m for m in TOOL_MODULES if m.split(".")[0] == name), None)
    if module is not None:
        spec = getattr(importlib.import_module(f"{__package__}.{module}"), "TOOL", None)
        if isinstance(spec, ToolSpec) and spec.name == name:
            return spec
    for spec in all_tools():
        if spec.name == name:
            return spec
    known = ", ".join(s.name for s in all_tools())
    raise NotFoundError(f"unknown tool {name!r}; tools: {known}")
