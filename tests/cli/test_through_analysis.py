"""The interfaces (CLI, web server, TensorBoard plugin, MCP server, SQL) open runs and
profiles only through `stepscope.Analysis` (issue #29): the store, the cache, the choice of
host and the reuse of intermediates are then written once, and a command cannot read a
profile the others would read differently."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support import source
from tests.support.synthetic import synthetic_xspace_bytes

INTERFACES = ("cli", "serve", "sql")
# What only `stepscope.Analysis` (stepscope.tools.analysis) and the tools' own machinery use:
# the openers and step finding, imported; a store or a tool context, made (as types they
# are fine: `Analysis.host_context` hands a context out).
OPENERS = {"open_run", "open_host", "load_profile", "build_step_db"}
MADE = {"ProfileStore", "ToolContext"}


def _uses(module: source.Module) -> list[str]:
    found = []
    where = module.where
    for node in module.nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("stepscope"):
            found += [
                f"{where}:{node.lineno} imports {a.name}" for a in node.names if a.name in OPENERS
            ]
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MADE
        ):
            found.append(f"{where}:{node.lineno} makes {node.func.id}")
    return found


def test_interfaces_open_profiles_only_through_analysis() -> None:
    # serve/state.py builds the one ProfileStore a server's analyses share (Analysis(store=))
    allowed = {"serve/state.py:ProfileStore"}
    offenders = [
        use
        for package in INTERFACES
        for module in source.modules()
        if module.where.parts[0] == package
        for use in _uses(module)
        if f"{use.split(':')[0]}:{use.rsplit(' ', 1)[1]}" not in allowed
    ]
    assert offenders == []


def test_info_and_export_read_the_profile_through_the_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from stepscope.cli.main import main
    from stepscope.tools.context import ProfileStore

    trace = tmp_path / "one.xplane.pb"
    trace.write_bytes(synthetic_xspace_bytes(200))
    opened: list[str] = []
    real = ProfileStore.profile

    def counting(self: ProfileStore, run, host):  # type: ignore[no-untyped-def]
        opened.append(host)
        return real(self, run, host)

    monkeypatch.setattr(ProfileStore, "profile", counting)
    assert main(["info", str(trace), "--json"]) == 0
    assert main(["export", str(trace), "-o", str(tmp_path / "t.json")]) == 0
    assert len(opened) == 2
