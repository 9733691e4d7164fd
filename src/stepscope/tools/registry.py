"""Every tool is declared exactly once, as a module-level ``TOOL = ToolSpec(...)`` in a module
of this package. The CLI sub-commands, the server's routes and the web UI's tool list are all
generated from these declarations.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

from stepscope.errors import NotFoundError

if TYPE_CHECKING:
    from stepscope.tools.context import ToolContext


class ToolResult(Protocol):
    """What a tool returns: typed data that serializes itself at the edges."""

    def to_json(self) -> dict[str, Any]: ...


class TableResult(ToolResult, Protocol):
    def to_csv(self) -> str: ...


@dataclass(frozen=True)
class ToolOption:
    name: str
    description: str
    default: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolEndpoint:
    """An extra GET route of a tool, ``/api/tool/<tool>/<name>?run=&host=&<params>``, for tools
    that answer follow-up queries (the trace viewer's windows). ``handle(ctx, params)`` returns
    (body, content type); a ValueError means a bad parameter (HTTP 400)."""

    name: str
    handle: Callable[[ToolContext, Mapping[str, str]], tuple[bytes, str]]
    description: str = ""


@dataclass(frozen=True)
class ToolSpec:
    name: str  # identifier used in URLs and the CLI, e.g. "overview_page"
    title: str  # shown in the UI, e.g. "Overview"
    description: str
    build: Callable[[ToolContext], ToolResult]
    formats: tuple[str, ...] = ("json",)  # "csv" when the result has to_csv()
    multi_host: bool = True  # supports ALL_HOSTS
    options: tuple[ToolOption, ...] = ()
    # Whether the tool has anything to show for a run (e.g. kernel_stats needs a GPU).
    available: Callable[[ToolContext], bool] = field(default=lambda ctx: True)
    order: int = 100  # position in the UI's tool list
    endpoints: tuple[ToolEndpoint, ...] = ()  # extra routes (see ToolEndpoint)


@cache
def all_tools() -> tuple[ToolSpec, ...]:
    """All declared tools, in UI order."""
    import stepscope.tools as package

    specs: list[ToolSpec] = []
    for module_info in pkgutil.iter_modules(package.__path__):
        if module_info.name in ("registry", "context") or module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{module_info.name}")
        spec = getattr(module, "TOOL", None)
        if isinstance(spec, ToolSpec):
            specs.append(spec)
    names = [s.name for s in specs]
    duplicated = {n for n in names if names.count(n) > 1}
    if duplicated:
        raise RuntimeError(f"tools declared twice: {sorted(duplicated)}")
    return tuple(sorted(specs, key=lambda s: (s.order, s.name)))


def get_tool(name: str) -> ToolSpec:
    for spec in all_tools():
        if spec.name == name:
            return spec
    known = ", ".join(s.name for s in all_tools())
    raise NotFoundError(f"unknown tool {name!r}; tools: {known}")
