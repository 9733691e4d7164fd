"""A query's result as text (an aligned table, CSV, JSON) or Parquet bytes."""

from __future__ import annotations

import io
import json
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

FORMATS = ("table", "csv", "json", "parquet")
MAX_CELL = 80  # characters of one cell in the text table


def plain(table: pa.Table) -> pa.Table:
    """Dictionary columns decoded and list columns as JSON text: what CSV writers take."""
    import pyarrow as pa

    from stepscope.sql.arrow import utf8

    columns = []
    for column in table.columns:
        kind = column.type
        if pa.types.is_dictionary(kind):
            column = column.cast(kind.value_type)
        elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_struct(kind):
            column = utf8(
                [None if v is None else json.dumps(v, default=str) for v in column.to_pylist()]
            )
        columns.append(column)
    return pa.table(columns, names=table.column_names)


def rows(table: pa.Table) -> list[dict[str, Any]]:
    """JSON-ready rows (NaN and infinities as null)."""
    out = table.to_pylist()
    for row in out:
        for key, value in row.items():
            if isinstance(value, float) and not math.isfinite(value):
                row[key] = None
    return out


def _cell(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        text = f"{value:.6g}" if abs(value) < 1e15 else f"{value:.6e}"
    else:
        text = str(value)
    text = " ".join(text.split()) if "\n" in text or "\t" in text else text
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def as_table(table: pa.Table) -> str:
    """An aligned plain-text table (numbers right-aligned, NULL for missing values)."""
    import pyarrow as pa

    names = table.column_names
    numeric = [
        pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
        for t in table.schema.types
    ]
    cells = [[_cell(v) for v in column.to_pylist()] for column in table.columns]
    widths = [max([len(n), *(len(c) for c in col)]) for n, col in zip(names, cells, strict=True)]

    def line(values: list[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    out = [line(names), line(["-" * w for w in widths])]
    out.extend(line([col[i] for col in cells]) for i in range(table.num_rows))
    return "\n".join(out) + "\n"


def as_csv(table: pa.Table) -> str:
    import pyarrow.csv as pcsv

    buffer = io.BytesIO()
    pcsv.write_csv(plain(table), buffer)
    return buffer.getvalue().decode("utf-8")


def as_json(table: pa.Table) -> str:
    """A JSON array of row objects, one row a line."""
    lines = [json.dumps(row, default=str) for row in rows(table)]
    return "[\n" + ",\n".join(lines) + ("\n]\n" if lines else "]\n")


def as_parquet(table: pa.Table) -> bytes:
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def render(table: pa.Table, fmt: str) -> bytes:
    """``table`` in ``fmt`` (one of `FORMATS`), as the bytes to write."""
    if fmt == "parquet":
        return as_parquet(table)
    text = {"table": as_table, "csv": as_csv, "json": as_json}[fmt](table)
    return text.encode("utf-8")
