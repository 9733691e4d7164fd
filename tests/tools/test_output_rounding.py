"""A NumPy float's rounding in tool answers: the fast path gives NumPy's own bits."""

from __future__ import annotations

import numpy as np

from stepscope.records import record
from stepscope.tools import output
from stepscope.tools.output import _numpy_rounded, out


def test_numpy_floats_round_as_numpy_rounds_them() -> None:
    rng = np.random.default_rng(7)
    values = np.concatenate(
        [
            rng.normal(0, 1e3, 300),
            rng.uniform(-1, 1, 300) * 10.0 ** rng.integers(-12, 18, 300),
            np.arange(-100, 100) / 8.0,  # halves and quarters: ties go to even
            np.arange(-100, 100) / 2000.0,
            [0.0, -0.0, -0.4, 5e-324, 1e300, -1e300, 2.0**53 + 2, np.inf, -np.inf, np.nan],
        ]
    )
    with np.errstate(over="ignore"):
        for digits in (None, 0, 1, 3, 6, 9, 25, -1):
            for value in values.tolist():
                x = np.float64(value)
                want = x.item() if digits is None else round(x, digits).item()
                assert repr(_numpy_rounded(x, digits)) == repr(want), (value, digits)


@record
class _Row:
    time_us: float = out("a time", unit="us", digits=2)
    count: int = out("a count")
    name: str = out("a name")


def test_a_rows_numpy_fields_are_written_as_plain_numbers() -> None:
    row = _Row(np.float64(2.675), np.int64(3), "x")  # type: ignore[arg-type]
    data = output.to_json(row)
    assert data == {"time_us": round(np.float64(2.675), 2).item(), "count": 3, "name": "x"}
    assert [type(v) for v in data.values()] == [float, int, str]
