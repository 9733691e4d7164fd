"""The field tables of docs/tools/<tool>.md, generated from the tools' result metadata.

Each page holds its table between ``<!-- fields -->`` and ``<!-- /fields -->``; the rows
come from `output.field_rows` of the result class the tool's ``build`` returns, so the docs
cannot drift from what the tool writes (scripts/gen_tool_docs.py rewrites them, a test
checks them).
"""

from __future__ import annotations

import typing
from pathlib import Path

from stepscope.tools.output import field_rows
from stepscope.tools.registry import ToolSpec, all_tools

START, END = "<!-- fields -->", "<!-- /fields -->"


def result_class(spec: ToolSpec) -> type | None:
    """The result class ``spec.build`` returns, when its fields carry output metadata."""
    hint = typing.get_type_hints(spec.build).get("return")
    if isinstance(hint, type) and any(True for _ in field_rows(hint)):
        return hint
    return None


def field_table(cls: type) -> str:
    lines = ["| key | meaning | unit |", "|---|---|---|"]
    for path, unit, doc in field_rows(cls):
        lines.append(f"| `{path}` | {doc} | {unit} |" if unit else f"| `{path}` | {doc} | |")
    return "\n".join(lines)


def _rewritten(text: str, table: str, page: Path) -> str:
    if START not in text or END not in text:
        raise ValueError(f"{page}: no {START} ... {END} markers around the field table")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table}\n{END}{tail}"


def _pages(docs: Path) -> list[tuple[str, Path, str]]:
    pages = []
    for spec in all_tools():
        cls = result_class(spec)
        if cls is not None:
            pages.append((spec.name, docs / f"{spec.name}.md", field_table(cls)))
    return pages


def docs_out_of_date(docs: Path) -> list[str]:
    """Tools whose page's field table differs from their result metadata."""
    return [
        name
        for name, page, table in _pages(docs)
        if _rewritten(page.read_text(), table, page) != page.read_text()
    ]


def write_field_tables(docs: Path) -> list[str]:
    """Rewrites every stale field table; returns the tools whose page changed."""
    changed = []
    for name, page, table in _pages(docs):
        text = page.read_text()
        new = _rewritten(text, table, page)
        if new != text:
            page.write_text(new)
            changed.append(name)
    return changed
