"""Declared output fields: what a result's field means, its unit, rounding and JSON key.

``total_time_us: float = out("time including nested ops", unit="us", digits=3)`` declares a
field of a frozen dataclass result; `stepscope.tools.output` serializes such results to JSON
and CSV and the docs/tools field tables are generated from the same metadata. Here, below
every layer (standard library only), so that results built in `stepscope.stats` (run
summaries, diffs, advice) declare their fields the same way as the tools' own.
"""

from __future__ import annotations

import dataclasses
from typing import Any

META = "stepscope_output"


def out(
    doc: str,
    unit: str = "",
    digits: int | None = None,
    key: str | None = None,
    default: Any = dataclasses.MISSING,
    omit_none: bool = False,
    inline: bool = False,
    item_units: dict[str, str] | None = None,
) -> Any:
    """A result field: its meaning, unit (as docs/tools write it: ns, ms, us, %, bytes...),
    the decimals floats are rounded to, its JSON key when not the field name, and whether the
    key is left out of the JSON when the value is None (an answer part only some requests
    have), and whether a dict field's items are written as keys of the parent instead (plane
    stats that differ per device); ``item_units`` gives the unit of such a dict's known keys
    (``{"memory_size": "bytes"}``)."""
    meta: dict[str, dict[str, Any]] = {
        META: {"doc": doc, "unit": unit, "digits": digits, "key": key}
    }
    if omit_none:
        meta[META]["omit_none"] = True
    if inline:
        meta[META]["inline"] = True
    if item_units:
        meta[META]["item_units"] = dict(item_units)
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def meta(f: dataclasses.Field[Any]) -> dict[str, Any]:
    """The declared output metadata of a dataclass field ({} when it declares none)."""
    return dict(f.metadata.get(META, {}))
