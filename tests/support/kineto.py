"""Compare the Kineto importer's profile (the column route) with the per-event oracle's
(`tests.support.kineto_oracle`), and the C scanner's columns with the Python scanner's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stepscope.model import Profile, profile_from_xspace
from stepscope.model.from_xspace import profile_from_columns
from stepscope.xspace.kineto import kineto_to_columns, kineto_to_xspace, scan
from stepscope.xspace.wire import KIND_BYTES, KIND_STR
from tests.support.kineto_oracle import per_event_xspace


def scanned(data: bytes, window: int = 0) -> scan.ScannedTrace | None:
    """The C scanner's columns of a whole document (by default in one window, as large as
    the text), or None where it leaves the trace to the Python scanner."""
    import io

    window = window or len(data) + 16
    found = scan.scan_stream(io.BytesIO(data).readinto, 1 << 40, window)
    assert not isinstance(found, int)
    return found


def _stat_rows(profile: Profile, stats: Any) -> list[tuple[str, int, object]]:
    """Every row of a stats table as (key, kind, value), string ids resolved. The columns are
    made Python lists once: read element by element as NumPy scalars, describing the largest
    fixture took most of the test's time."""
    strings = profile.strings
    text = (KIND_STR, KIND_BYTES)
    return [
        (strings[key], kind, strings[value] if kind in text else value)
        for key, kind, value in zip(
            stats.key.tolist(), stats.kind.tolist(), stats.value.tolist(), strict=True
        )
    ]


def describe(profile: Profile) -> dict[str, Any]:
    """Everything in a profile, with string ids resolved (the two paths intern differently)."""
    strings = profile.strings
    rows = _stat_rows(profile, profile.stats)
    bounds = profile.stat_start.tolist()
    line_index = [line.index for line in profile.lines]
    display = profile.meta_display_name.tolist()
    events = [
        (
            line_index[line],
            strings[name],
            strings[display[meta]],
            start,
            dur,
            rows[bounds[row] : bounds[row + 1]],
        )
        for row, (line, name, meta, start, dur) in enumerate(
            zip(
                profile.line.tolist(),
                profile.name.tolist(),
                profile.meta.tolist(),
                profile.start_ns.tolist(),
                profile.dur_ns.tolist(),
                strict=True,
            )
        )
    ]
    meta_rows = _stat_rows(profile, profile.meta_stats)
    meta_bounds = profile.meta_stat_start.tolist()
    metadata = sorted(
        (plane, meta_id, strings[name], meta_rows[meta_bounds[m] : meta_bounds[m + 1]])
        for m, (plane, meta_id, name) in enumerate(
            zip(
                profile.meta_plane.tolist(),
                profile.meta_id.tolist(),
                profile.meta_name.tolist(),
                strict=True,
            )
        )
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


def assert_same_profile(path: Path) -> None:
    """The column route's profile is the per-event oracle's, and `kineto_to_xspace` (the
    columns written as XSpace) reads back as the same profile."""
    direct = profile_from_columns(kineto_to_columns(path), str(path), None)
    ours = describe(direct)  # once for both comparisons
    _same(direct, ours, profile_from_xspace(per_event_xspace(path), source=str(path)))
    _same(direct, ours, profile_from_xspace(kineto_to_xspace(path), source=str(path)))


def _same(direct: Profile, ours: dict[str, Any], via_xspace: Profile) -> None:
    assert direct.n_events == via_xspace.n_events
    theirs = describe(via_xspace)
    for key in ours:
        assert ours[key] == theirs[key], key


def resolved_columns(trace: scan.ScannedTrace | None) -> Any:
    """A scanned trace with its string ids resolved (the scanners' numberings may differ
    where a string is written with escapes); None stays None. The ids and argument values of
    an event flagged F_BAD are left out: no route reads them."""
    if trace is None:
        return None
    texts = trace.texts
    flags = trace.flags.tolist()

    def thread(column: Any, flag: int) -> list[object]:
        return [
            None
            if f & scan.F_BAD or (f & flag and v == scan.NO_ID)
            else (texts[v] if f & flag else v)
            for v, f in zip(column.tolist(), flags, strict=True)
        ]

    bad = [bool(flags[e] & scan.F_BAD) for e in trace.arg_event.tolist()]
    rows = [
        (texts[key], kind, None if is_bad else trace.value(kind, value))
        for key, kind, value, is_bad in zip(
            trace.arg_key.tolist(),
            trace.arg_kind.tolist(),
            trace.arg_value.tolist(),
            bad,
            strict=True,
        )
    ]
    pid, tid = thread(trace.pid, scan.F_PID_STR), thread(trace.tid, scan.F_TID_STR)
    return {
        "header": trace.header,
        "ph": trace.ph.tolist(),
        "flags": flags,
        "cat": [texts[v] if v >= 0 else None for v in trace.cat.tolist()],
        "name": [texts[v] if v >= 0 else None for v in trace.name.tolist()],
        "pid": pid,
        "tid": tid,
        "ts_ns": trace.ts_ns.tolist(),
        "dur_ns": trace.dur_ns.tolist(),
        "flow_ids": trace.flow_ids.tolist(),
        "nargs": trace.nargs.tolist(),
        "args": rows,
        "keys": sorted(texts[k] for k in trace.key_ids().tolist()),
    }


def write_trace(folder: Path, events: list[Any], **header: Any) -> Path:
    """A Kineto trace of ``events`` (and header keys) as ``folder/trace.json``."""
    path = folder / "trace.json"
    path.write_text(json.dumps({"traceEvents": events, **header}))
    return path
