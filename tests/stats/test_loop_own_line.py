"""The loop's own lines in the sampled Python of the steps (decision 396): samples that stop in
the loop's function itself (a builtin it calls, e.g. ``time.sleep``) are named by line."""

from __future__ import annotations

from stepscope.stats import build_step_db
from stepscope.stats.host.python_samples import is_own_line
from tests.support.analysis import build
from tests.support.fetch_loop import METRICS, Piece, fetch_loop_builder

SLEEP = "<module> (train.py:50);main (train.py:44)"  # the loop's line 44: time.sleep(0.005)


def test_a_sleep_in_the_loop_body_is_named_by_its_line() -> None:
    db = build_step_db(build(fetch_loop_builder(Piece(SLEEP, 5, 5), Piece(METRICS, 1, 1))))
    python = db.untraced.python
    assert python.function[0] == "main (train.py:44)"
    assert is_own_line(python.function[0]) and not is_own_line("main (train.py)")
    # 5 of every 10 ms step (the samples are weighted by their spacing)
    assert 0.45 < python.ns[0] / db.dur_ns.sum() < 0.55
    text = python.describe(0, int(db.dur_ns.sum()))
    assert text.startswith("main (train.py:44) (the loop's own line) ")
    # the loop's function itself (on every sample) is still left out
    assert "main (train.py)" not in python.function and "<module> (train.py)" not in python.function


def test_a_callee_is_named_by_function_not_by_line() -> None:
    """Only samples that stop in the loop's own function are named by line: a function it
    calls keeps every line together."""
    db = build_step_db(build(fetch_loop_builder(Piece(METRICS, 5, 5), Piece(SLEEP, 1, 1))))
    names = db.untraced.python.function
    assert names[0] == "update_metrics (train.py)"
    assert [f for f in names if is_own_line(f)] == ["main (train.py:44)"]
