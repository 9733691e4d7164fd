"""The field tables of docs/tools/<tool>.md, generated from the tools' result metadata.

Each page holds its table between ``<!-- fields -->`` and ``<!-- /fields -->``, and one per
endpoint with a JSON answer between ``<!-- fields:NAME -->`` and ``<!-- /fields:NAME -->``;
the rows come from `output.field_rows` of the result class the tool's ``build`` returns (or
the endpoint's ``result``), so the docs cannot drift from what the tool writes
(scripts/gen_tool_docs.py rewrites them, a test checks them).
"""

from __future__ import annotations

import typing
from functools import cache
from pathlib import Path

from stepscope.stats.compare.diff_output import DiffOutput
from stepscope.stats.compare.summary_file import SummaryFile
from stepscope.tools.output import field_rows
from stepscope.tools.registry import ToolSpec, all_tools

# Results that are not a tool's: (page, table tag, class): `stepscope diff --json` and
# /api/compare, and the `stepscope summary` file.
OTHER_PAGES: tuple[tuple[str, str, type], ...] = (
    ("diff", "", DiffOutput),
    ("diff", "summary", SummaryFile),
)

START, END = "<!-- fields -->", "<!-- /fields -->"


def markers(endpoint: str = "") -> tuple[str, str]:
    """The comments around a page's field table: the result's, or an endpoint's JSON answer
    (``<!-- fields:search -->`` ... ``<!-- /fields:search -->``)."""
    if not endpoint:
        return START, END
    return f"<!-- fields:{endpoint} -->", f"<!-- /fields:{endpoint} -->"


def result_class(spec: ToolSpec) -> type | None:
    """The result class ``spec.build`` returns, when its fields carry output metadata (of a
    union, the first member: the trace viewer's one-host structure; its ALL_HOSTS structure
    has its own table)."""
    hint = typing.get_type_hints(spec.build).get("return")
    for cls in typing.get_args(hint) or (hint,):
        if isinstance(cls, type) and any(True for _ in field_rows(cls)):
            return cls
    return None


def documented_classes(spec: ToolSpec) -> list[tuple[str, type]]:
    """(endpoint name, or "" for the tool's result; declared class) of every JSON answer of
    ``spec`` whose fields are declared."""
    found = []
    cls = result_class(spec)
    if cls is not None:
        found.append(("", cls))
    found += [(e.name, e.result) for e in spec.endpoints if e.result is not None]
    return found


@cache
def field_units() -> dict[str, dict[str, str]]:
    """Per tool (and ``diff``, the Compare page's answer), the unit of every declared field
    that has one, by JSON path (``rows[].total_time_us`` -> ``us``): the web UI formats each
    number by the unit its field declares."""
    units: dict[str, dict[str, str]] = {}
    for spec in all_tools():
        for endpoint, cls in documented_classes(spec):
            name = f"{spec.name}/{endpoint}" if endpoint else spec.name
            units[name] = {path: unit for path, unit, _doc in field_rows(cls) if unit}
    for page, tag, cls in OTHER_PAGES:
        name = f"{page}/{tag}" if tag else page
        units[name] = {path: unit for path, unit, _doc in field_rows(cls) if unit}
    return units


def field_table(cls: type) -> str:
    lines = ["| key | meaning | unit |", "|---|---|---|"]
    for path, unit, doc in field_rows(cls):
        lines.append(f"| `{path}` | {doc} | {unit} |" if unit else f"| `{path}` | {doc} | |")
    return "\n".join(lines)


def _rewritten(text: str, table: str, page: Path, endpoint: str) -> str:
    start, end = markers(endpoint)
    if start not in text or end not in text:
        raise ValueError(f"{page}: no {start} ... {end} markers around the field table")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{table}\n{end}{tail}"


def _pages(docs: Path) -> list[tuple[str, Path, str]]:
    """(tool, page, the page's text with every generated table rewritten)."""
    pages = []
    documented_pages = [(spec.name, documented_classes(spec)) for spec in all_tools()]
    for other in dict.fromkeys(name for name, _tag, _cls in OTHER_PAGES):
        tables = [(tag, cls) for name, tag, cls in OTHER_PAGES if name == other]
        documented_pages.append((other, tables))
    for name, documented in documented_pages:
        if not documented:
            continue
        page = docs / f"{name}.md"
        text = page.read_text()
        for endpoint, cls in documented:
            text = _rewritten(text, field_table(cls), page, endpoint)
        pages.append((name, page, text))
    return pages


def docs_out_of_date(docs: Path) -> list[str]:
    """Tools whose page's field tables differ from their results' metadata."""
    return [name for name, page, text in _pages(docs) if text != page.read_text()]


def write_field_tables(docs: Path) -> list[str]:
    """Rewrites every stale field table; returns the tools whose page changed."""
    changed = []
    for name, page, text in _pages(docs):
        if text != page.read_text():
            page.write_text(text)
            changed.append(name)
    return changed
