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


def _stat_rows(profile: Profile, stats: Any, lo: int, hi: int) -> list[tuple[str, int, object]]:
    out: list[tuple[str, int, object]] = []
    for row in range(lo, hi):
        kind = int(stats.kind[row])
        value: object = int(stats.value[row])
        if kind in (KIND_STR, KIND_BYTES):
            value = profile.strings[int(stats.value[row])]
        out.append((profile.strings[int(stats.key[row])], kind, value))
    return out


def describe(profile: Profile) -> dict[str, Any]:
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


def assert_same_profile(path: Path) -> None:
    """The column route's profile is the per-event oracle's, and `kineto_to_xspace` (the
    columns written as XSpace) reads back as the same profile."""
    direct = profile_from_columns(kineto_to_columns(path), str(path), None)
    via_xspace = profile_from_xspace(per_event_xspace(path), source=str(path))
    _same(direct, via_xspace)
    _same(direct, profile_from_xspace(kineto_to_xspace(path), source=str(path)))


def _same(direct: Profile, via_xspace: Profile) -> None:
    assert direct.n_events == via_xspace.n_events
    ours, theirs = describe(direct), describe(via_xspace)
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
