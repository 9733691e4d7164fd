"""CONTRIBUTING.md's "A new tool" recipe holds: a tool declared in one module and named in
`TOOL_MODULES` is offered by every interface without another change -- the CLI (`stepscope
tool`, its JSON and CSV, its options), `stepscope.Analysis`, the server's tool list and data
route, the MCP server, README's generated tool list and the generated field tables of its
docs page. The made-up tool is `tests/support/toy_tool.py`; its web page (the recipe's
fourth file) and the import contract's entry (the third) are checked for the real tools by
`test_every_tool_has_a_page` and tests/tools/test_registry.py."""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepscope.tools import registry
from tests.support import toy_tool
from tests.support.fixtures import REPO, tf_xplane


@pytest.fixture
def with_toy_tool(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The recipe's step 2: the module named in TOOL_MODULES (here importable as
    stepscope.tools.line_census, since the registry imports tools from its package)."""
    monkeypatch.setitem(sys.modules, f"stepscope.tools.{toy_tool.NAME}", toy_tool)
    monkeypatch.setattr(registry, "TOOL_MODULES", (*registry.TOOL_MODULES, toy_tool.NAME))
    registry.all_tools.cache_clear()
    yield
    registry.all_tools.cache_clear()


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "logs" / "plugins" / "profile" / "r1"
    run.mkdir(parents=True)
    for host in ("ctl", "ctl_opt"):
        (run / f"{host}.xplane.pb").write_bytes(tf_xplane(host).read_bytes())
    return run


def _cli(*argv: str) -> str:
    from stepscope.cli.main import main

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0
    out.seek(0)
    return out.read()


def test_cli_and_analysis_offer_the_new_tool(with_toy_tool: None, run_dir: Path) -> None:
    import stepscope
    from stepscope.cli.commands.tool import _tool_list

    analysis = stepscope.Analysis(run_dir, use_cache=False)
    result = analysis.tool(toy_tool.NAME, host="ctl", top=5)
    assert type(result).__name__ == "LineCensus" and len(result.lines) == 5
    assert {r.host for r in analysis.tool(toy_tool.NAME).lines} == {"ctl", "ctl_opt"}
    argv = ("tool", str(run_dir), toy_tool.NAME, "--host", "ctl", "--option", "top=5")
    assert json.loads(_cli(*argv, "--json")) == analysis.json(toy_tool.NAME, host="ctl", top=5)
    assert _cli(*argv, "--csv").startswith("host,line,events,total_ms")
    listed = _tool_list()  # `stepscope tool --help`
    assert f"  {toy_tool.NAME} " in listed and "--option top=... (0|5|20)" in listed


def test_server_tensorboard_and_mcp_offer_the_new_tool(with_toy_tool: None, run_dir: Path) -> None:
    from stepscope.cli.agent.capabilities import tool_json
    from stepscope.cli.agent.workspace import Workspace
    from stepscope.serve.routes import build_routes
    from stepscope.serve.state import ServerState
    from stepscope.serve.wsgi import WsgiApp
    from tests.support.serve import wsgi_get

    logdir = run_dir.parents[2]
    # the TensorBoard plugin serves these routes under its prefix
    app = WsgiApp(build_routes(ServerState(logdir, use_cache=False)), prefix="/p")
    status, _, body = wsgi_get(app, "/p/api/tools", "run=r1")
    assert status == 200 and toy_tool.NAME in {t["name"] for t in json.loads(body)}
    status, _, body = wsgi_get(app, f"/p/api/tool/{toy_tool.NAME}", "run=r1&host=ctl&top=5")
    assert status == 200 and len(json.loads(body)["lines"]) == 5
    found = tool_json(Workspace(logdir, use_cache=False), toy_tool.NAME, "r1", "ctl")
    assert found["hosts"] == ["ctl"] and found["lines"]


def test_generated_docs_list_the_new_tool(with_toy_tool: None, tmp_path: Path) -> None:
    from stepscope.tools.field_docs import write_field_tables

    table = runpy.run_path(str(REPO / "scripts" / "gen_readme.py"))["tool_table"]()
    assert f"[`{toy_tool.NAME}`](docs/tools/{toy_tool.NAME}.md)" in table
    # its page, docs/tools/<tool>.md: prose and the markers the field table is generated into
    docs = tmp_path / "tools"
    shutil.copytree(REPO / "docs" / "tools", docs)
    (docs / f"{toy_tool.NAME}.md").write_text(
        "# Line census\n\n<!-- fields -->\n<!-- /fields -->\n"
    )
    assert write_field_tables(docs) == [toy_tool.NAME]  # the others are current
    page = (docs / f"{toy_tool.NAME}.md").read_text()
    assert "| `lines[].total_ms` | their summed duration | ms |" in page


def test_every_tool_has_a_page() -> None:
    pages = REPO / "src" / "stepscope" / "serve" / "static" / "pages"
    missing = [s.name for s in registry.all_tools() if not (pages / f"{s.name}.js").is_file()]
    assert missing == []
