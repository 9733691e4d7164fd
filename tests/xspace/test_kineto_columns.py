"""The Kineto importer's direct path to columns gives the profile its XSpace output gives.

`open_host` builds the profile of a PyTorch trace from `kineto_to_columns` (typed columns, no
protobuf); `kineto_to_xspace` fills a plain `XSpaceBuilder` and writes the XSpace message
(bridges, `stepscope import`). Here every event, stat, metadata row, line and plane of the two
profiles is compared by value, on every real Kineto fixture and on synthetic corner cases.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.model import Profile, profile_from_xspace
from stepscope.model.from_xspace import profile_from_columns
from stepscope.xspace.kineto import decode, kineto_to_columns, kineto_to_xspace
from stepscope.xspace.wire import KIND_BYTES, KIND_STR
from tests.support.fixtures import FIXTURES, by_size

KINETO = sorted((FIXTURES / "kineto").glob("*.json.gz"))


def _stat_rows(profile: Profile, stats: Any, lo: int, hi: int) -> list[tuple[str, int, object]]:
    out: list[tuple[str, int, object]] = []
    for row in range(lo, hi):
        kind = int(stats.kind[row])
        value: object = int(stats.value[row])
        if kind in (KIND_STR, KIND_BYTES):
            value = profile.strings[int(stats.value[row])]
        out.append((profile.strings[int(stats.key[row])], kind, value))
    return out


def _describe(profile: Profile) -> dict[str, Any]:
    """Everything in a profile, with string ids resolved (the two paths intern differently)."""
    events = []
    for row in range(profile.n_events):
        line = profile.lines[int(profile.line[row])]
        meta = int(profile.meta[row])
        events.append(
            (
                line.index,
                profile.strings[int(profile.name[row])],
                profile.strings[int(profile.meta_display_name[meta])],
                int(profile.start_ns[row]),
                int(profile.dur_ns[row]),
                _stat_rows(
                    profile,
                    profile.stats,
                    int(profile.stat_start[row]),
                    int(profile.stat_start[row + 1]),
                ),
            )
        )
    metadata = sorted(
        (
            int(profile.meta_plane[m]),
            int(profile.meta_id[m]),
            profile.strings[int(profile.meta_name[m])],
            _stat_rows(
                profile,
                profile.meta_stats,
                int(profile.meta_stat_start[m]),
                int(profile.meta_stat_start[m + 1]),
            ),
        )
        for m in range(len(profile.meta_id))
    )
    return {
        "hostname": profile.hostname,
        "planes": [(p.id, p.name, p.stats, p.first_line, p.line_count) for p in profile.planes],
        "lines": profile.lines,
        "metadata": metadata,
        "events": events,
        "warnings": profile.warnings,
        "errors": profile.errors,
    }


def _assert_same(path: Path) -> None:
    direct = profile_from_columns(kineto_to_columns(path), str(path), None)
    via_xspace = profile_from_xspace(kineto_to_xspace(path), source=str(path))
    assert direct.n_events == via_xspace.n_events
    ours, theirs = _describe(direct), _describe(via_xspace)
    for key in ours:
        assert ours[key] == theirs[key], key


@pytest.mark.parametrize("path", by_size(KINETO))
def test_direct_columns_match_the_xspace_path(path: Path) -> None:
    _assert_same(path)


def _write(tmp_path: Path, events: list[Any], **header: Any) -> Path:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events, **header}))
    return path


def test_corner_cases_match(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Flow-bound stats, unsorted and tied events, floats, big ints, several chunks."""
    # Small decode chunks: the chunk boundaries are crossed with a few hundred events.
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
