"""The Kineto path's C helpers give their NumPy reference's answers: the argument rows events
keep (`fast_stats.kept_rows`), the index of the looked-up keys (`ScannedTrace._rows_of`), and
the merge search of stat and argument owners (`wire.last_at_or_before`)."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.xspace.kineto import importer, scan
from tests.support.fixtures import FIXTURES
from tests.support.kineto import scanned
from tests.support.native import c_off, c_on, module


@pytest.fixture(autouse=True)
def _c_scanner(monkeypatch: pytest.MonkeyPatch) -> None:
    c_on(monkeypatch, "_kscan")


def test_kept_argument_rows_in_c_equal_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """`fast_stats.kept_rows`: the C pass gives the NumPy path's rows on a real trace's
    arguments, whatever the classes, the kept (class, key) pairs and the output keys."""
    from stepscope.xspace.kineto import fast_stats

    data = importer._read(FIXTURES / "kineto" / "h100_bert_small_inference.json.gz", [])
    trace = scanned(data)
    assert trace is not None and len(trace.arg_key) > 100
    rng = np.random.default_rng(5)
    for _ in range(3):
        event_class = rng.integers(0, 3, trace.n_events).astype(np.int8)
        kept = rng.random((3, len(trace.texts))) < 0.6
        key_lut = rng.integers(0, 50, len(trace.texts)).astype(np.int32)
        fast = fast_stats.kept_rows(trace, event_class, kept, key_lut)
        with monkeypatch.context() as patch:
            c_off(patch, "_kscan")
            slow = fast_stats.kept_rows(trace, event_class, kept, key_lut)
        for got, want in zip(fast, slow, strict=True):
            assert got.dtype == want.dtype
            assert got.tolist() == want.tolist()
        fast[3][:1] = 7  # the values are written in place by the caller
    with pytest.raises(ValueError, match="different lengths"):
        module(monkeypatch, "_kscan").kept_args(
            trace.nargs,
            event_class[:-1],
            trace.arg_key,
            trace.arg_kind,
            trace.arg_value,
            kept,
            key_lut,
        )


def test_kept_rows_written_over_the_scanned_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """`fast_stats.kept_rows(..., spend=True)`: the C pass writes the kept rows over the
    trace's own argument rows (no new pages, decision 451) and gives what the copying pass
    and the NumPy path give; the trace's rows are dropped after it on every path."""
    from stepscope.xspace.kineto import fast_stats

    data = importer._read(FIXTURES / "kineto" / "h100_bert_small_inference.json.gz", [])
    rng = np.random.default_rng(11)
    for _ in range(3):
        reference = scanned(data)
        assert reference is not None and len(reference.arg_key) > 100
        event_class = rng.integers(0, 3, reference.n_events).astype(np.int8)
        kept = rng.random((3, len(reference.texts))) < 0.6
        key_lut = rng.integers(0, 50, len(reference.texts)).astype(np.int32)
        want = fast_stats.kept_rows(reference, event_class, kept, key_lut)
        trace = scanned(data)
        assert trace is not None
        scanned_key = trace.arg_key
        got = fast_stats.kept_rows(trace, event_class, kept, key_lut, spend=True)
        # written in place: the kept keys are the scanned column's first rows
        assert np.shares_memory(got[1], scanned_key)
        assert not len(trace.arg_key) and not trace.nargs.any()
        for got_column, want_column in zip(got, want, strict=True):
            assert got_column.dtype == want_column.dtype
            assert got_column.tolist() == want_column.tolist()
        got[3][:1] = 7  # the values are written in place by the caller
        slow_trace = scanned(data)
        assert slow_trace is not None
        with monkeypatch.context() as patch:
            c_off(patch, "_kscan")
            slow = fast_stats.kept_rows(slow_trace, event_class, kept, key_lut, spend=True)
        assert not len(slow_trace.arg_key)
        assert [c.tolist() for c in slow[:3]] == [c.tolist() for c in want[:3]]


def test_key_index_in_c_equals_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ScannedTrace`'s index of the looked-up keys: C's counting pass (rows and their events)
    gives the NumPy path's rows, and the lookups read the same values through either."""
    data = importer._read(FIXTURES / "kineto" / "h100_bert_small_inference.json.gz", [])
    fast = scanned(data)
    slow = scanned(data)
    assert fast is not None and slow is not None
    events = np.random.default_rng(3).choice(fast.n_events, 200, replace=False)
    events.sort()
    keys = [k for k in scan.INDEXED_KEYS if k in fast._ids]
    assert len(keys) > 5
    for key in keys:
        fast_rows = fast._rows_of(fast._ids[key])
        with monkeypatch.context() as patch:
            c_off(patch, "_kscan")
            slow_rows = slow._rows_of(slow._ids[key])
        assert fast_rows.tolist() == slow_rows.tolist(), key
        owners = fast._owners_of(fast._ids[key], fast_rows)
        assert owners.tolist() == slow.arg_event[slow_rows].tolist(), key
        for got, want in zip(fast.arg(key), slow.arg(key), strict=True):
            assert got.tolist() == want.tolist(), key
        for got, want in zip(fast.arg_at(key, events), slow.arg_at(key, events), strict=True):
            assert got.tolist() == want.tolist(), key
        assert fast.has(key).tolist() == slow.has(key).tolist(), key
    assert fast._key_owners and not slow._key_owners  # each path was taken


def test_last_at_or_before_is_searchsorted() -> None:
    """`wire.last_at_or_before` (C merge for ascending events, else NumPy's search) answers
    ``np.searchsorted(owners, events, "right") - 1`` on ties, gaps, edges and empty input."""
    from stepscope.xspace.wire import last_at_or_before

    rng = np.random.default_rng(11)
    owners = np.sort(rng.integers(0, 500, 300)).astype(np.int32)  # repeated owners
    for events in (
        np.sort(rng.integers(-5, 520, 400)),
        rng.integers(-5, 520, 400),  # not ascending: searched
        np.zeros(0, np.int64),
        np.array([-1, 0, 499, 500, 10**12]),
    ):
        want = np.searchsorted(owners, events, side="right") - 1
        assert last_at_or_before(owners, events).tolist() == want.tolist()
        assert last_at_or_before(owners[:0], events).tolist() == [-1] * len(events)


def test_interned_strings_of_every_length_stay_distinct() -> None:
    """The scanner's string table tells apart names of every length 0-40 that differ in one
    byte anywhere (its hash reads the last 0-7 bytes by overlapping loads), and gives a
    repeated name its first id."""
    import json

    base = "aten::convolution_backward_fused_kernel_xyz"
    names = [""]
    for length in range(1, 41):
        stem = base[:length]
        names.append(stem)
        for at in {0, length // 2, length - 1}:  # the same length, one byte changed
            names.append(stem[:at] + "#" + stem[at + 1 :])
    events = [
        {"ph": "X", "name": n, "ts": i, "dur": 1, "pid": 1, "tid": 1} for i, n in enumerate(names)
    ]
    events += [
        {"ph": "X", "name": n, "ts": 1000 + i, "dur": 1, "pid": 1, "tid": 1}
        for i, n in enumerate(names)
    ]
    trace = scanned(json.dumps({"traceEvents": events}).encode())
    assert trace is not None
    ids = trace.name.tolist()
    assert [trace.texts[i] for i in ids] == names + names
    distinct = len(set(names))
    assert len(set(ids)) == distinct and ids[len(names) :] == ids[: len(names)]
