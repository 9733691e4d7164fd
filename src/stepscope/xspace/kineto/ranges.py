"""``B`` / ``E`` pairs of a `ScannedTrace` -> complete events, on the columns.

Kineto writes complete (``X``) events; other Chrome-trace writers open and close ranges. A
range becomes one complete event with its ``B``'s category, name, thread and start, lasting
until its ``E``, with the two events' args merged (the ``E``'s values win, as ``{**b, **e}``),
in the ``E``'s place in the trace (where the range is known). Ranges are matched per thread
(pid, tid), the last open one first. An ``E`` without its ``B``, a ``B`` never closed and a
pair without a timestamp are left out and counted in the trace's warnings. B/E events are
few (Kineto writes none): the pairs are matched in a Python loop over them alone and the
columns rebuilt around them.
"""

from __future__ import annotations

import numpy as np

from stepscope.xspace.kineto.devices import us_to_ns
from stepscope.xspace.kineto.scan import (
    F_ARGS,
    F_DUR,
    F_ID,
    F_PID_STR,
    F_TID_STR,
    F_TS,
    ScannedTrace,
)

_B, _E = ord("B"), ord("E")


def count(skipped: dict[str, int], what: str, n: int) -> None:
    if n:
        skipped[what] = skipped.get(what, 0) + n


def pair_ranges(trace: ScannedTrace, skipped: dict[str, int]) -> None:
    """Replace ``trace``'s B/E events by complete events, in place (see module docstring)."""
    ph, flags = trace.ph, trace.flags
    marks = np.flatnonzero((ph == _B) | (ph == _E))
    if not len(marks):
        return
    stacks: dict[tuple[int, int, int, int], list[int]] = {}
    ends: dict[int, int] = {}  # the E of each timed pair -> its B
    lone = untimed = 0
    for event in marks.tolist():
        bits = int(flags[event])
        key = (bits & F_PID_STR, int(trace.pid[event]), bits & F_TID_STR, int(trace.tid[event]))
        if ph[event] == _B:
            stacks.setdefault(key, []).append(event)
            continue
        stack = stacks.get(key)
        if not stack:
            lone += 1
            continue
        begin = stack.pop()
        if flags[begin] & F_TS and bits & F_TS:
            ends[event] = begin
        else:
            untimed += 1
    count(skipped, "'E' events without their 'B'", lone)
    count(skipped, "'B' events without their 'E'", sum(map(len, stacks.values())))
    count(skipped, "events without a valid timestamp", untimed)
    _rebuild(trace, marks, ends)


def _rebuild(trace: ScannedTrace, marks: np.ndarray, ends: dict[int, int]) -> None:
    n = trace.n_events
    keep = np.ones(n, bool)
    keep[marks] = False
    at = np.array(sorted(ends), np.int64)
    begins = np.array([ends[e] for e in at.tolist()], np.int64)
    keep[at] = True
    # The flow ids, by event (the column holds those of the events with F_ID, in order).
    id_of = np.zeros(n, np.int64)
    id_of[(trace.flags & F_ID) != 0] = trace.flow_ids
    flags = trace.flags.copy()
    ph = trace.ph.copy()
    columns = {name: getattr(trace, name).copy() for name in ("cat", "name", "pid", "tid", "ts_ns")}
    dur = trace.dur_ns.copy()
    nargs = trace.nargs.copy()
    if len(at):
        ph[at] = ord("X")
        for column in columns.values():
            column[at] = column[begins]
        had_args = (flags[begins] | flags[at]) & F_ARGS
        flags[at] = (flags[begins] & ~np.uint8(F_ID | F_DUR | F_ARGS)) | F_DUR | had_args
        stamps = trace.ts_ns
        dur[at] = [
            us_to_ns((int(stamps[e]) - int(stamps[b])) / 1000) or 0
            for e, b in zip(at.tolist(), begins.tolist(), strict=True)
        ]
    # Argument rows: those of the untouched events as they are, the merged ones in place.
    starts = np.zeros(n + 1, np.int64)
    np.cumsum(trace.nargs, out=starts[1:])
    keys, kinds, values = [], [], []
    previous = 0
    for event in [*marks.tolist(), n]:
        lo, hi = int(starts[previous]), int(starts[event])
        keys.append(trace.arg_key[lo:hi])
        kinds.append(trace.arg_kind[lo:hi])
        values.append(trace.arg_value[lo:hi])
        begin = ends.get(event)
        if begin is not None:
            merged: dict[int, tuple[int, int]] = {}
            for one in (begin, event):
                a, b = int(starts[one]), int(starts[one + 1])
                for key, kind, value in zip(
                    trace.arg_key[a:b].tolist(),
                    trace.arg_kind[a:b].tolist(),
                    trace.arg_value[a:b].tolist(),
                    strict=True,
                ):
                    merged[key] = (kind, value)
            keys.append(np.array(list(merged), np.int32))
            kinds.append(np.array([k for k, _v in merged.values()], np.int8))
            values.append(np.array([v for _k, v in merged.values()], np.int64))
            nargs[event] = len(merged)
        previous = event + 1
    trace.ph, trace.flags, trace.dur_ns, trace.nargs = ph[keep], flags[keep], dur[keep], nargs[keep]
    for name, column in columns.items():
        setattr(trace, name, column[keep])
    trace.flow_ids = id_of[keep & ((flags & F_ID) != 0)]
    trace.arg_key = np.concatenate(keys)
    trace.arg_kind = np.concatenate(kinds)
    trace.arg_value = np.concatenate(values)
    trace.__post_init__()  # the row and key indexes, made again on use
