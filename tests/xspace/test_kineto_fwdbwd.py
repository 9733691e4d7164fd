"""Kineto fwdbwd flows (PyTorch's forward-to-backward links): bound to their ops on arrays
(`xspace/kineto/fwdbwd.py`, decision 226) exactly as the per-flow loop binds them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepscope.xspace.kineto import importer
from tests.support.kineto import write_trace


def _op(name: str, ts: int, dur: int, tid: int = 2) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


def _flow_stats(path: Path) -> list[tuple[str, int, list[tuple[str, object]]]]:
    """(name, start, the flow stats) of every event, as the column route gives them."""
    from stepscope.model.from_xspace import profile_from_columns

    profile = profile_from_columns(importer.kineto_to_columns(path), str(path), None)
    out = []
    for row in range(profile.n_events):
        lo, hi = int(profile.stat_start[row]), int(profile.stat_start[row + 1])
        stats = [
            (profile.strings[int(profile.stats.key[r])], int(profile.stats.value[r]))
            for r in range(lo, hi)
            if profile.strings[int(profile.stats.key[r])] in ("_p", "_pt", "_c", "_ct")
        ]
        out.append((profile.strings[int(profile.name[row])], int(profile.start_ns[row]), stats))
    return out


def test_fwdbwd_flows_bind_on_arrays_as_the_loop_binds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first op of the flow's thread at its time takes the stat; an op with both ends and
    one with two starts (the first flow's id stays); ends without an op or a time bind
    nothing."""
    from stepscope.xspace.kineto import fwdbwd

    def flow(ph: str, flow_id: Any, ts: Any, tid: int = 2) -> dict[str, Any]:
        event = {"ph": ph, "cat": "fwdbwd", "id": flow_id, "pid": 1, "tid": tid, "ts": ts}
        return {**event, "bp": "e"} if ph == "f" else event

    events = [
        _op("fwd", 1000, 10),
        _op("fwd_twin", 1000, 5),  # same thread and start: the first op binds
        _op("mid", 1020, 10),
        _op("bwd", 1040, 10),
        _op("other_thread", 1020, 10, tid=3),
        flow("s", 1, 1000),
        flow("s", 2, 1000),  # a second start on "fwd": its first id stays
        flow("f", 1, 1020),
        flow("s", 3, 1020),  # "mid" ends flow 1 and starts flow 3
        flow("t", 3, 1040),
        flow("f", 4, 1500),  # no op at that time
        {"ph": "f", "cat": "fwdbwd", "id": 5, "pid": 1, "tid": 2, "bp": "e"},  # no time
    ]
    path = write_trace(tmp_path, events)
    matched = []
    real_match = fwdbwd.match
    monkeypatch.setattr(fwdbwd, "match", lambda *a: matched.append(real_match(*a)) or matched[-1])
    on_arrays = _flow_stats(path)
    assert matched and matched[0] is not None and matched[0].unbound == 2
    by_name = {name: stats for name, _start, stats in on_arrays}
    assert by_name["fwd"] == [("_p", 1), ("_pt", 0)]
    assert by_name["fwd_twin"] == by_name["other_thread"] == []
    assert by_name["mid"] == [("_p", 3), ("_pt", 0), ("_c", 1), ("_ct", 0)]
    assert by_name["bwd"] == [("_c", 3), ("_ct", 0)]
    monkeypatch.setattr(fwdbwd, "match", lambda *a: None)  # the per-flow loop
    assert _flow_stats(path) == on_arrays
    warnings = importer.kineto_to_columns(path).space_header.warnings
    assert "2 fwdbwd flow ends matched no op (left out)" in warnings
