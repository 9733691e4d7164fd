"""The untraced place the Python / host advice names ("mostly after A and before B (x ms per
step ...)") holds host time only: the loop's fetch from its Python iterator in that gap is
input, counted there already (decision 482). Synthetic profiles built in code."""

from __future__ import annotations

from stepscope.stats import build_step_db
from stepscope.stats.host.untraced import where_untraced
from stepscope.stats.steps.breakdown import StepDb
from tests.support.analysis import MS, build
from tests.support.fetch_loop import FETCH, METRICS, Piece, fetch_loop_builder, timed_fetches


def _place(db: StepDb) -> tuple[float, str]:
    """The host limit per step (ms), and the sentence naming its place."""
    where = where_untraced(db.untraced, db.n_steps, int(db.dur_ns.sum()), with_python=False)
    host_ms = float(db.limit_ns()["host"].mean()) / 1e6
    return host_ms, where


def test_the_place_of_host_time_leaves_out_the_fetch_counted_as_input() -> None:
    """10 ms steps: 4 ms of model op, then 2 ms of untraced metrics and a 4 ms fetch from a
    generator, in one gap. The place said 6.00 ms per step: the whole gap, the fetch
    with it, for 1.85 ms of host time."""
    db = build_step_db(build(fetch_loop_builder(Piece(METRICS, 2, 2), Piece(FETCH, 4, 8, "2"))))
    assert db.fetched.counted and db.fetched.ns.any()
    host_ms, where = _place(db)
    assert 1.5 < host_ms < 2.5
    assert where.endswith(f"before '(step end)' ({host_ms:.2f} ms per step in 8 of 8 steps)")


def test_the_fetch_the_capture_timed_is_left_out_too() -> None:
    """Too few samples saw the fetch (decision 433): the probe's timed fetches place it, and
    that time leaves the place's figure as well."""
    builder = fetch_loop_builder(Piece(METRICS, 2, 2), Piece(FETCH, 4, 1, "2"), fetch_steps=5)
    spans = [(k * 10 * MS + 6 * MS, 4 * MS) for k in range(4)]
    timed_fetches(builder, "batches (data.py)", "main (train.py)", spans)
    db = build_step_db(build(builder))
    assert db.fetched.timed.any() and db.fetched.ns.any()
    host_ms, where = _place(db)
    assert 1.5 < host_ms < 2.5
    assert f"({host_ms:.2f} ms per step in " in where


def test_a_gap_that_is_all_fetch_is_no_place_of_host_time() -> None:
    """Only the fetch is untraced: no place is named (it named the fetch's gap, 6 ms)."""
    db = build_step_db(build(fetch_loop_builder(Piece(FETCH, 6, 12, "2"))))
    assert db.fetched.ns.any() and not db.limit_ns()["host"].any()
    assert db.untraced.places == ()
