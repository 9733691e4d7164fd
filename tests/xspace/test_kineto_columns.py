"""The Kineto importer's columns give the profile the per-event oracle gives.

`open_host` builds the profile of a PyTorch trace from `kineto_to_columns` (typed columns, no
protobuf); `kineto_to_xspace` writes those columns as the XSpace message (bridges, `stepscope
import`); the oracle (tests/support/kineto_oracle) reads the trace event by event. Every event,
stat, metadata row, line and plane of the profiles is compared by value, on every real Kineto
fixture and on synthetic corner cases.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.model.from_xspace import profile_from_columns
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.kineto import kineto_to_columns
from stepscope.xspace.kineto.columns import ColumnSpace
from stepscope.xspace.wire import KIND_DOUBLE, KIND_INT, KIND_STR, KIND_UINT
from tests.support.fixtures import FIXTURES, by_size
from tests.support.kineto import assert_same_profile as _assert_same
from tests.support.kineto_oracle import decode

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

KINETO = sorted((FIXTURES / "kineto").glob("*.json.gz"))


@pytest.mark.parametrize("path", by_size(KINETO))
def test_direct_columns_match_the_xspace_path(path: Path) -> None:
    _assert_same(path)


def _write(tmp_path: Path, events: list[Any], **header: Any) -> Path:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events, **header}))
    return path


def test_corner_cases_match(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Flow-bound stats, unsorted and tied events, floats, big ints, several chunks."""
    # Small decode chunks (the oracle's): the boundaries are crossed with a few hundred events.
    chunk = 128
    monkeypatch.setattr(decode, "CHUNK_EVENTS", chunk)
    events: list[Any] = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}}
    ]
    for i in range(chunk + 50):  # more than one decode chunk
        ts = 1000 + (chunk - i) % 97  # unsorted, with ties
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": f"aten::op{i % 7}",
                "pid": 1,
                "tid": 2,
                "ts": ts,
                "dur": (i % 5) + 0.5,
                "args": {
                    "External id": i,
                    "Input Dims": [[i % 3, 4], []],
                    "ratio": i / 7,
                    "Addr": (1 << 63) + i,  # uint64
                    "flag": True,
                    "none": None,
                },
            }
        )
    events += [
        {"ph": "s", "cat": "fwdbwd", "id": 9, "pid": 1, "tid": 2, "ts": 1000},
        {"ph": "f", "cat": "fwdbwd", "id": 9, "pid": 1, "tid": 2, "ts": 1001, "bp": "e"},
        [1, 2],  # not an object
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "bad",
            "pid": 1,
            "tid": 2,
            "ts": 5,
            "dur": 1,
            "args": {"x": -(1 << 70)},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k",
            "pid": 0,
            "tid": 7,
            "ts": 1100,
            "dur": 3,
            "args": {
                "device": 0,
                "stream": 7,
                "correlation": 1,
                "grid": [1, 1, 1],
                "block": [32, 1, 1],
                "blocks per SM": 0.25,
            },
        },
    ]
    path = _write(tmp_path, events, baseTimeNanoseconds=10**18)
    _assert_same(path)
    profile = profile_from_columns(kineto_to_columns(path), str(path), None)
    # The bad event and the non-object entry are skipped and reported, the rest is kept.
    assert any("skipped 1 entries that are not objects" in w for w in profile.warnings)
    assert profile.n_events == chunk + 50 + 1
    starts = profile.start_ns[: chunk + 50]
    assert np.all(np.diff(starts) >= 0)


def test_damaged_json_takes_the_repair_path_to_the_same_columns(tmp_path: Path) -> None:
    text = json.dumps(
        {
            "traceEvents": [
                {
                    "ph": "X",
                    "cat": "cpu_op",
                    "name": 'op"quoted"',
                    "pid": 1,
                    "tid": 1,
                    "ts": 10,
                    "dur": 2,
                    "args": {},
                },
                {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 11, "dur": 1},
            ]
        }
    )
    path = tmp_path / "trace.json"
    path.write_text(text.replace('\\"', '"')[:-2])  # unescaped quotes, truncated
    _assert_same(path)
    profile = profile_from_columns(kineto_to_columns(path), str(path), None)
    assert profile.n_events == 2
    assert any("repaired" in w or "truncated" in w for w in profile.warnings)


def _stats_of(line: Any) -> list[list[tuple[str, Any]]]:
    """Each event's stats of a `ColumnLine` as (name, value) pairs, in row order."""
    counts, keys, kinds, values = line._stat_rows()
    codec, out, row = line.codec, [], 0
    floats = np.frombuffer(codec.floats, np.float64)
    for n in counts.tolist():
        pairs = []
        for k, kind, v in zip(
            keys[row : row + n], kinds[row : row + n], values[row : row + n], strict=True
        ):
            if kind == KIND_STR:
                value: Any = codec.string_list[v]
            elif kind == KIND_DOUBLE:
                value = float(floats[v])
            elif kind == KIND_UINT:
                value = int(v) + (1 << 64)
            else:
                value = int(v)
            pairs.append((codec.key_names[k], value))
        out.append(pairs)
        row += n
    return out


def test_stats_added_later_merge_as_the_builder_merges_them() -> None:
    """`ColumnLine.add_stats` / `add_stat_rows` (flow ends) against `LineBuilder.add_stats`:
    calls on one event, keys shared between calls and with the event's own stats (existing
    keys win, the newest call's keys first), strings, floats, uint64 values."""
    rng = np.random.default_rng(7)
    names = ["a", "b", "_p", "_pt", "_c", "correlation_id"]
    choices: list[Any] = [1, -5, "x", "y", 2.5, (1 << 63) + 3, 7]

    def some_stats() -> dict[str, Any]:
        picked = rng.permutation(len(names))[: rng.integers(0, 4)]
        return {names[i]: choices[rng.integers(len(choices))] for i in picked}

    columns = ColumnSpace().plane("p").line(1, "l")
    builder = XSpaceBuilder().plane("p").line(1, "l")
    for i in range(60):
        own = some_stats() or None
        columns.add_event(0, i, 1, own)
        builder.add_event(0, i, 1, own)
    for _ in range(80):  # calls one by one, some events called several times
        index, stats = int(rng.integers(60)), some_stats()
        columns.add_stats(index, stats)
        builder.add_stats(index, stats)
    # a batch of calls: two rows each, events repeated within it
    events = rng.integers(0, 60, 30)
    codec = columns.codec
    key_rows = np.array([[codec.key_id("_p"), codec.key_id("_pt")]] * 30, np.int32).ravel()
    values = np.stack([np.arange(30) + 100, np.full(30, 2)], axis=1).ravel()
    columns.add_stat_rows(
        events, np.full(30, 2), key_rows, np.full(60, KIND_INT, np.int8), values.astype(np.int64)
    )
    for k, index in enumerate(events.tolist()):
        builder.add_stats(index, {"_p": 100 + k, "_pt": 2})
    expected = [list((stats or {}).items()) for _meta, _start, _dur, stats in builder.events]
    assert _stats_of(columns) == expected
