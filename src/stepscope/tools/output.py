"""Tool results are data: frozen dataclasses whose fields say their JSON key, unit, rounding
and meaning (`out`), turned into JSON and CSV by one serializer here.

A result field declared ``total_time_us: float = out("time including nested ops", unit="us",
digits=3)`` is written rounded to 3 digits under its own name; ``key=`` renames it in the
JSON. Nested dataclasses, tuples and dicts are walked the same way, and a field's rounding
applies to every float inside it (dict values, list items). The docs/tools pages' field
tables are generated from the same metadata (`field_rows`, `scripts/gen_tool_docs.py`) and a
test fails when they drift.

A result with CSV output names the field (or property) holding its rows in ``CSV_ROWS``; the
CSV header is those rows' JSON keys, one line per row, an empty cell for ``null``.

Results not yet declared this way keep their own ``to_json`` / ``to_csv``, which the
serializer calls.
"""

from __future__ import annotations

import dataclasses
import io
import math
import types
import typing
from collections.abc import Iterator
from typing import Any

import numpy as np

from stepscope.fields import meta, out

__all__ = ["field_rows", "out", "to_csv", "to_json"]

_meta = meta


def _round(value: Any, digits: int | None) -> Any:
    if digits is None:
        return value
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {k: _round(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_round(v, digits) for v in value]
    return value


# JSON values returned as they are (checked by exact type: a subclass, such as a NumPy
# float64, may convert differently)
_PLAIN = frozenset({int, float, str, bool, type(None)})
_NUMPY_INTS = frozenset({np.int64, np.int32, np.int16, np.int8, np.uint32, np.uint16, np.uint8})


def _numpy_rounded(value: np.float64, digits: int | None) -> float:
    """``round(value, digits).item()`` for a NumPy float64, as NumPy rounds it (multiply by
    10**digits, round half to even, divide: `np.around`), in plain float arithmetic: the
    same bits, at a fifth of the cost (a table of 2,500 rows rounds 12,000 values)."""
    x = float(value)
    if digits is None:
        return x
    scale = 10.0 ** min(max(digits, 0), 22)  # exact to 1e22, as NumPy's (a table, then x10)
    scaled = x * scale
    if not 0 <= digits <= 22 or not math.isfinite(scaled):  # NumPy's way (and its warning)
        return float(round(value, digits))
    whole = float(round(scaled))  # half to even, exact: a float this large is whole
    if whole == 0.0:
        whole = math.copysign(0.0, scaled)  # rint keeps the sign of a zero
    return whole / scale


# dataclass type -> per field: (attribute, JSON key, digits, omit when None, inline)
_Plan = tuple[tuple[str, str, Any, bool, bool], ...]
_plans: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    """How ``cls``'s fields are written, read from their metadata once per type (results
    hold thousands of rows of a few types)."""
    found = _plans.get(cls)
    if found is None:
        rows = []
        for f in dataclasses.fields(cls):
            meta = _meta(f)
            rows.append(
                (
                    f.name,
                    meta.get("key") or f.name,
                    meta.get("digits"),
                    bool(meta.get("omit_none")),
                    bool(meta.get("inline")),
                )
            )
        found = _plans[cls] = tuple(rows)
    return found


def to_json(value: Any) -> Any:
    """JSON-ready data of a tool result (or any part of one)."""
    if type(value) in _PLAIN:
        return value
    legacy = getattr(value, "to_json", None)
    if legacy is not None and callable(legacy):
        return legacy()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        data: dict[str, Any] = {}
        for name, key, digits, omit_none, inline in _plan(type(value)):
            field_value = getattr(value, name)
            if omit_none and field_value is None:
                continue
            kind = type(field_value)
            if not inline:  # most fields of a table's rows, as the general case below
                if kind in _PLAIN:
                    if kind is float and digits is not None:
                        field_value = round(field_value, digits)
                    data[key] = field_value
                    continue
                if kind is np.float64:
                    data[key] = _numpy_rounded(field_value, digits)
                    continue
                if kind in _NUMPY_INTS:
                    data[key] = int(field_value)
                    continue
            # Rounded before conversion: a NumPy float rounds as NumPy does (half to even on
            # its binary value), as the tools' JSON always has.
            converted = to_json(_round(field_value, digits))
            if inline:
                data.update(converted)
            else:
                data[key] = converted
        return data
    if isinstance(value, (tuple, list)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    item = getattr(value, "item", None)  # NumPy scalars
    if item is not None and callable(item) and not isinstance(value, (str, bytes)):
        return item()
    return value


def to_csv(result: Any) -> str:
    """CSV of a result's rows (``CSV_ROWS``): the rows' JSON keys as header, an empty cell for
    ``null``."""
    legacy = getattr(result, "to_csv", None)
    if legacy is not None and callable(legacy):
        return str(legacy())
    rows_field = getattr(result, "CSV_ROWS", None)
    if rows_field is None:
        raise TypeError(f"{type(result).__name__} has no CSV output")
    rows = [to_json(row) for row in getattr(result, rows_field)]
    hints = _field_types(type(result))
    if rows_field in hints:
        row_type = _item_type(hints[rows_field])
    else:  # a property computing the rows (a table that is not a JSON field)
        prop = getattr(type(result), rows_field)
        row_type = _item_type(typing.get_type_hints(prop.fget)["return"])
    header = [_meta(f).get("key") or f.name for f in dataclasses.fields(row_type)]
    import csv  # imported by the few callers that write CSV

    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if row[k] is None else row[k] for k in header])
    return text.getvalue()


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _item_type(hint: Any) -> Any:
    """The dataclass inside ``tuple[X, ...]``, ``list[X]``, ``X | None`` or ``dict[str, X]``."""
    if dataclasses.is_dataclass(hint):
        return hint
    args = [a for a in typing.get_args(hint) if a is not Ellipsis and a is not type(None)]
    origin = typing.get_origin(hint)
    if origin in (dict,) and len(args) == 2:
        return _item_type(args[1])
    for arg in args:
        found = _item_type(arg)
        if found is not None:
            return found
    return None


def field_rows(
    cls: type, prefix: str = "", _outer: tuple[type, ...] = ()
) -> Iterator[tuple[str, str, str]]:
    """(JSON key path, unit, doc) of every declared field of a result class, nested ones as
    ``parent.child`` and items of lists as ``parent[].child``: the docs' field table. A
    class nested in itself (a tree's children) is listed once."""
    hints = _field_types(cls)
    for f in dataclasses.fields(cls):
        meta = _meta(f)
        if not meta:
            continue
        # An inlined dict's items are keys of the parent: shown as ``parent.*``.
        path = prefix + ("*" if meta.get("inline") else meta.get("key") or f.name)
        hint = hints[f.name]
        origin = typing.get_origin(hint)
        is_list = origin in (tuple, list) or (
            origin in (typing.Union, types.UnionType)
            and any(typing.get_origin(a) in (tuple, list) for a in typing.get_args(hint))
        )
        shown = path + ("[]" if is_list else "")
        yield shown, meta.get("unit", ""), meta.get("doc", "")
        for key, unit in meta.get("item_units", {}).items():  # a dict's keys of known unit
            yield f"{prefix}{key}", unit, f"`{key}` (when present)"
        inner = _item_type(hint)
        if inner is not None and origin is not dict and inner not in (*_outer, cls):
            yield from field_rows(inner, shown + ".", (*_outer, cls))
