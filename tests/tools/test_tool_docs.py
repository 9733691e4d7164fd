"""docs/tools pages against what the tools write: generated field tables are current, and every
top-level key of every tool's JSON is documented on its page."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path
from typing import Any, cast

import pytest

from stepscope.fields import META
from stepscope.model import open_run
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.field_docs import (
    OTHER_PAGES,
    docs_out_of_date,
    documented_classes,
    field_table,
    result_class,
)
from stepscope.tools.output import field_rows
from stepscope.tools.registry import all_tools, get_tool
from tests.support.fixtures import FIXTURES, tf_xplane

DOCS = Path(__file__).resolve().parents[2] / "docs" / "tools"


def test_generated_field_tables_are_current() -> None:
    assert docs_out_of_date(DOCS) == [], "run: python scripts/gen_tool_docs.py"


def test_op_stats_table_comes_from_its_result_fields() -> None:
    cls = result_class(get_tool("op_stats"))
    assert cls is not None
    table = field_table(cls)
    assert "| `rows[].avg_time_us` | total time per occurrence | us |" in table
    assert "| `pie_charts` |" in table  # the JSON key, not the field name


def test_overview_page_json_is_its_declared_fields(
    outputs: dict[str, list[dict[str, object]]],
) -> None:
    cls = result_class(get_tool("overview_page"))
    assert cls is not None
    rows = [path for path, _, _ in field_rows(cls)]
    top = [p.removesuffix("[]") for p in rows if "." not in p]
    assert "step_time_ms" in top and "step_time" not in top  # the JSON key
    tables = ("run_environment.", "steps[].", "top_ops[].")
    nested = {p.removesuffix("[]") for p in rows if p.startswith(tables) and p.count(".") == 1}
    # a top op's eager share is written only for ops that ran eagerly (none in these fixtures)
    top_op = typing.get_type_hints(cls)["top_ops"].__args__[0]
    optional = {
        f"top_ops[].{f.name}"
        for f in dataclasses.fields(top_op)
        if f.metadata.get(META, {}).get("omit_none")
    }
    assert optional == {"top_ops[].eager_percent"}
    nested -= optional
    for data in outputs["overview_page"]:
        assert list(data) == top
        table = cast(dict[str, Any], data)
        written = {f"run_environment.{k}" for k in table["run_environment"]}
        written |= {f"steps[].{k}" for step in table["steps"] for k in step}
        written |= {f"top_ops[].{k}" for op in table["top_ops"] for k in op}
        # every nested key written is declared, and the reverse (but the optional ones)
        assert nested <= written <= nested | optional


@pytest.fixture(scope="module")
def outputs() -> dict[str, list[dict[str, object]]]:
    """Each tool's JSON on a CPU (TensorFlow) and a GPU (PyTorch) fixture."""
    store = ProfileStore(use_cache=False)
    found: dict[str, list[dict[str, object]]] = {}
    for path in (
        tf_xplane("ctl").parent,
        FIXTURES / "kineto" / "h100_bert_small_inference.json.gz",
    ):
        run = open_run(str(path))
        for spec in all_tools():
            # Built even where the UI would not offer the tool (pod_viewer on one device):
            # its JSON keys are the same.
            ctx = ToolContext(run, run.host_names[0], store)
            found.setdefault(spec.name, []).append(output.to_json(spec.build(ctx)))
    return found


@pytest.mark.parametrize("tool", [t.name for t in all_tools()])
def test_every_top_level_key_is_documented(
    tool: str, outputs: dict[str, list[dict[str, object]]]
) -> None:
    page = (DOCS / f"{tool}.md").read_text()
    documented = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)", page))
    assert tool in outputs, f"{tool} ran on no fixture"
    for data in outputs[tool]:
        missing = sorted(set(data) - documented)
        assert missing == [], f"docs/tools/{tool}.md does not document {missing}"


def _dataclasses_in(hint: object) -> list[type]:
    """The dataclasses a field's type names: itself, or inside tuple/list/dict/Optional/union."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return [hint]
    return [c for arg in typing.get_args(hint) for c in _dataclasses_in(arg)]


def _reachable(roots: list[type]) -> dict[type, str]:
    """Every result class reachable from ``roots`` through field types, with a path to it."""
    found: dict[type, str] = {}
    todo = [(cls, cls.__name__) for cls in roots]
    while todo:
        cls, path = todo.pop()
        if cls in found:
            continue
        found[cls] = path
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            todo += [(inner, f"{path}.{f.name}") for inner in _dataclasses_in(hints[f.name])]
    return found


def test_every_field_of_every_result_is_declared_and_documented() -> None:
    roots: list[type] = [cls for _page, _tag, cls in OTHER_PAGES]
    unconverted = []
    for spec in all_tools():
        documented = documented_classes(spec)
        if not documented:
            unconverted.append(spec.name)
        roots += [cls for _endpoint, cls in documented]
        hint = typing.get_type_hints(spec.build).get("return")
        roots += [c for c in _dataclasses_in(hint) if any(True for _ in field_rows(c))]
    assert unconverted == [], "tool results are declared-field dataclasses (tools.output)"
    undocumented = [
        f"{path}.{f.name}"
        for cls, path in _reachable(roots).items()
        for f in dataclasses.fields(cls)
        if not (f.metadata.get(META) or {}).get("doc")
    ]
    assert undocumented == [], "declare these with out(doc, unit=...) and run gen_tool_docs"
    serializing = [path for cls, path in _reachable(roots).items() if hasattr(cls, "to_json")]
    assert serializing == [], "nested results are written by tools.output, not their own to_json"
