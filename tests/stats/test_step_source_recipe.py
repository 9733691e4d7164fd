"""CONTRIBUTING.md's "A new step source" recipe holds: the sources are named in
`stats/steps/sources.py` (their order is `step_source=auto`'s), found by `markers.py` (and the
finders it calls), and every interface offers exactly that list -- each tool's `step_source`
option, `stepscope report/summary/diff --step-source`, and the table of
docs/tools/overview_page.md. No other module names a source, so a new one needs no other
change."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import stepscope
from stepscope.stats.steps.sources import SOURCES
from tests.support.fixtures import REPO

SRC = Path(stepscope.__file__).resolve().parent
# the recipe's files, and the finders markers.py calls
MAY_NAME_SOURCES = {"stats/steps/sources.py", "stats/steps/markers.py", "stats/steps/infer.py"}


def test_every_tool_with_a_step_source_offers_every_source() -> None:
    from stepscope.tools.registry import all_tools

    offered = {
        spec.name: option.choices
        for spec in all_tools()
        for option in spec.options
        if option.name == "step_source"
    }
    assert len(offered) >= 5
    assert set(offered.values()) == {("auto", *SOURCES)}


def test_the_cli_offers_every_source() -> None:
    from stepscope.cli.main import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for command in ("report", "summary", "diff"):
        parser: argparse.ArgumentParser = commands[command]
        (option,) = [a for a in parser._actions if "--step-source" in a.option_strings]
        assert tuple(option.choices) == ("auto", *SOURCES), command


def test_every_source_has_a_finder_and_a_docs_row() -> None:
    from stepscope.stats.steps.markers import find_step_markers
    from stepscope.xspace.builder import XSpaceBuilder
    from tests.support.gpu_fixtures import build

    builder = XSpaceBuilder(hostname="h")
    builder.plane("/host:CPU").line(1, "python").event("work", 0, 1000)
    profile = build(builder)
    page = (REPO / "docs" / "tools" / "overview_page.md").read_text()
    for source in SOURCES:
        assert find_step_markers(profile, source).source in (source, "none")  # it has a finder
        assert f"| `{source}` |" in page, f"docs/tools/overview_page.md: no row for {source}"


def _compared_names(node: ast.Compare) -> list[str]:
    """The string constants a comparison of a ``...source...`` name tests against
    (``source == "a"``, ``db.step_source in ("a", "b")``)."""
    sides = (node.left, *node.comparators)
    named = [ast.unparse(side) for side in sides if isinstance(side, (ast.Name, ast.Attribute))]
    if not any("source" in name for name in named):
        return []
    found = []
    for side in sides:
        items = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
        found += [i.value for i in items if isinstance(i, ast.Constant)]
    return found


def test_no_other_module_tests_for_a_source() -> None:
    # A module that compares with a source's name would need changing for a new one.
    names = set(SOURCES)
    found = []
    for path in sorted(SRC.rglob("*.py")):
        where = str(path.relative_to(SRC))
        if where in MAY_NAME_SOURCES or where.startswith("vocab/"):
            continue
        text = path.read_text()
        if not any(f'"{name}"' in text for name in names):
            continue  # most modules: not worth parsing
        for node in ast.walk(ast.parse(text, where)):
            if isinstance(node, ast.Compare):
                found += [
                    f"{where}:{node.lineno} {v!r}" for v in _compared_names(node) if v in names
                ]
    assert found == []
