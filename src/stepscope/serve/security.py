"""Validation of what a request names: a run, a host, a tool, a static file.

Nothing a request says is ever turned into a path. Run, host and tool names are looked up among
the discovered runs and the registry; a name that is not there is refused with 404. Values that
look like path tricks (``..``, absolute paths, backslashes, control characters, percent-encoded
leftovers such as ``%2e%2e%2f`` after the server's one decoding) are refused before lookup.
Runs whose files resolve (through symlinks) outside the log directory are never offered.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from stepscope.errors import NotFoundError, StepscopeError
from stepscope.model import ALL_HOSTS, HostFile, Run
from stepscope.tools.registry import ToolSpec, ToolUsageError
from stepscope.xspace.io import is_url

MAX_NAME_CHARS = 1024
_ENCODED = re.compile(r"%[0-9a-fA-F]{2}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class RefusedError(NotFoundError):
    """A request value that can only be an attempt to reach outside the log directory."""


class BadRequestError(StepscopeError):
    """A request that names existing things but asks for something they cannot do (HTTP 400)."""


def check_name(kind: str, value: str) -> str:
    """``value`` unchanged if it can be a run/host/tool name; RefusedError otherwise."""
    problem = ""
    if not value:
        problem = "is empty"
    elif len(value) > MAX_NAME_CHARS:
        problem = "is too long"
    elif _CONTROL.search(value):
        problem = "contains control characters"
    elif "\\" in value:
        problem = "contains a backslash"
    elif value.startswith("/") or re.match(r"^[A-Za-z]:", value) or "://" in value:
        problem = "is an absolute path"
    elif ".." in value.split("/") or value in (".", "~") or value.startswith("~"):
        problem = "points outside the log directory"
    elif _ENCODED.search(value):
        problem = "contains percent-encoded characters"
    if problem:
        shown = value[:80] + ("..." if len(value) > 80 else "")
        raise RefusedError(f"{kind} {shown!r} refused: it {problem}")
    return value


def _inside(path: str, root_real: str) -> bool:
    real = os.path.realpath(path)
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def confined_runs(logdir: str, runs: Sequence[Run]) -> list[Run]:
    """``runs`` less the host files that resolve outside ``logdir`` (a symlink to /etc/...).

    URLs (gs://, s3://) have no symlinks; their runs come from listing the logdir itself.
    """
    if is_url(logdir):
        return list(runs)
    root_real = os.path.realpath(logdir)
    kept: list[Run] = []
    for run in runs:
        hosts: tuple[HostFile, ...] = tuple(h for h in run.hosts if _inside(h.path, root_real))
        if len(hosts) == len(run.hosts):
            kept.append(run)
        elif hosts:
            kept.append(Run(run.name, run.path, hosts))
    return kept


def find_run(runs: Sequence[Run], name: str) -> Run:
    check_name("run", name)
    for run in runs:
        if run.name == name:
            return run
    known = ", ".join(r.name for r in runs[:10]) + (", ..." if len(runs) > 10 else "")
    raise NotFoundError(f"no run {name!r} in the log directory; runs: {known or '(none)'}")


def check_host(run: Run, host: str) -> str:
    """``host`` if it names one of ``run``'s hosts, or ALL_HOSTS for a run with several hosts."""
    check_name("host", host)
    if host == ALL_HOSTS or host in run.host_names:
        return host
    raise NotFoundError(
        f"run {run.name!r} has no host {host!r}; hosts: "
        f"{', '.join(run.host_names)}" + (f", {ALL_HOSTS}" if len(run.hosts) > 1 else "")
    )


def check_tool_host(run: Run, spec: ToolSpec, host: str) -> str:
    """`check_host`, then the tool's own rule (`ToolSpec.resolve_host`) as a 400."""
    check_host(run, host)
    try:
        return spec.resolve_host(run, host)
    except ToolUsageError as exc:
        raise BadRequestError(str(exc)) from None


def find_tool(tools: Sequence[ToolSpec], name: str) -> ToolSpec:
    check_name("tool", name)
    for spec in tools:
        if spec.name == name:
            return spec
    raise NotFoundError(f"no tool {name!r}; tools: {', '.join(s.name for s in tools) or '(none)'}")


def check_options(spec: ToolSpec, given: dict[str, str]) -> dict[str, str]:
    """The tool's options with defaults filled in; unknown names or values raise BadRequestError."""
    try:
        return spec.parse_options(given)
    except ToolUsageError as exc:
        raise BadRequestError(str(exc)) from None
