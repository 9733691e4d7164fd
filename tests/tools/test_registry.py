"""The explicit tool list, and option parsing and host resolution on ToolSpec (CLI and server)."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

import stepscope.tools as tools_package
from stepscope.errors import NotFoundError
from stepscope.model import ALL_HOSTS, HostFile, Run
from stepscope.tools.registry import (
    TOOL_MODULES,
    ToolOption,
    ToolSpec,
    ToolUsageError,
    all_tools,
)

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

ROOT = Path(__file__).resolve().parents[2]


def _spec(multi_host: bool = True) -> ToolSpec:
    return ToolSpec(
        name="fake",
        title="Fake",
        description="A fake tool.",
        build=lambda ctx: None,  # type: ignore[arg-type,return-value]
        multi_host=multi_host,
        options=(ToolOption("mode", "how", "a", ("a", "b")), ToolOption("free", "any", "")),
    )


def _run(*hosts: str) -> Run:
    return Run("r", "/r", tuple(HostFile(h, f"/r/{h}.xplane.pb", "xspace", 1) for h in hosts))


def test_every_module_declaring_a_tool_is_listed_and_in_the_import_contract() -> None:
    declared = set()
    for info in pkgutil.walk_packages(tools_package.__path__, "stepscope.tools."):
        module = importlib.import_module(info.name)
        if isinstance(getattr(module, "TOOL", None), ToolSpec):
            declared.add(info.name.removeprefix("stepscope.tools."))
    assert declared == set(TOOL_MODULES)
    assert len(all_tools()) == len(TOOL_MODULES)
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    independent = next(c for c in contracts if c["type"] == "independence")
    tool_packages = {"stepscope.tools." + m.split(".")[0] for m in TOOL_MODULES}
    assert set(independent["modules"]) == tool_packages


def test_options_are_checked_and_defaults_filled() -> None:
    spec = _spec()
    assert spec.parse_options({}) == {"mode": "a", "free": ""}
    assert spec.parse_options({"mode": "b", "free": "x"}) == {"mode": "b", "free": "x"}
    with pytest.raises(ToolUsageError, match=r"has no option 'colour' \(options: mode, free\)"):
        spec.parse_options({"colour": "red"})
    with pytest.raises(ToolUsageError, match="must be one of a, b"):
        spec.parse_options({"mode": "c"})


def test_host_resolution() -> None:
    one, two = _run("h1"), _run("h1", "h2")
    spec = _spec()
    assert spec.resolve_host(one, None) == "h1"
    assert spec.resolve_host(two, None) == ALL_HOSTS
    assert spec.resolve_host(two, "h2") == "h2"
    with pytest.raises(NotFoundError):
        spec.resolve_host(two, "h3")
    single = _spec(multi_host=False)
    assert single.resolve_host(two, "h1") == "h1"
    for host in (None, ALL_HOSTS):
        with pytest.raises(ToolUsageError, match="one host at a time; pick one of h1, h2"):
            single.resolve_host(two, host)


@pytest.mark.integration
def test_one_tool_is_found_without_importing_the_others() -> None:
    code = (
        "import sys; from stepscope.tools.registry import get_tool, TOOL_MODULES; "
        "assert get_tool('op_stats').name == 'op_stats'; "
        "assert get_tool('trace_viewer').name == 'trace_viewer'; "
        "print(sorted(m for m in TOOL_MODULES if 'stepscope.tools.' + m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['op_stats', 'trace_viewer.tool']"
