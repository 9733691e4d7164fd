"""Forward/backward flows (``cat: fwdbwd``) bound to their ops on the columns.

PyTorch links each backward op to the forward op it differentiates with a flow: an ``s``
event at the forward op's start and an ``f`` at the backward op's (same pid, tid and ``ts``).
The importer writes them as XProf's producer/consumer stats on those ops: ``_p``/``_pt`` on
the op holding the start, ``_c``/``_ct`` on the one holding the end. A CPU training loop has
one per autograd op (8.8k in 200 steps of a small MLP), so they are matched here with arrays:
each flow end to the first op (in trace order) of its thread starting at its time, as the
per-flow loop of `importer._bind_flows` matched them through a dict. Flows or ops on a thread
named by a string take that loop (`match` returns None).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stepscope.distinct import distinct, member
from stepscope.records import record
from stepscope.xspace.kineto.columns import ColumnLine
from stepscope.xspace.kineto.scan import F_ID, F_PID_STR, F_TID_STR, F_TS, ScannedTrace
from stepscope.xspace.wire import KIND_INT

FWDBWD_CONTEXT_TYPE = 0  # XProf ContextType::kGeneric
_NAMED = F_PID_STR | F_TID_STR


@record
class Bound:
    """The flow ends that found their op, in trace order, and how many did not."""

    line: np.ndarray  # the op's line (a number into the route's lines)
    position: np.ndarray  # the op's position in its line
    flow_id: np.ndarray  # int64
    start: np.ndarray  # bool: an ``s`` (producer) end, else ``f``/``t`` (consumer)
    unbound: int


def match(
    trace: ScannedTrace,
    flows: np.ndarray,
    ops: np.ndarray,
    lines: np.ndarray,
    positions: np.ndarray,
) -> Bound | None:
    """Bind the fwdbwd flow events ``flows`` (in trace order) to the ops (a mask over the
    events) of their thread starting at their time; None when a flow or an op at a flow's
    time is on a thread named by a string."""
    flags = trace.flags
    if np.any(flags[flows] & _NAMED):
        return None
    candidates = np.flatnonzero(ops & member(trace.ts_ns, distinct(trace.ts_ns[flows])))
    if np.any(flags[candidates] & _NAMED):
        return None
    # A flow without a time or an integer id binds to nothing (as the loop's dict lookup).
    usable = flows[(flags[flows] & (F_TS | F_ID)) == (F_TS | F_ID)]
    # (pid, tid) in one int64, then the time: ops first, in trace order, so that the first
    # row of each key is the op the loop's `setdefault` kept.
    events = np.concatenate((candidates, usable))
    thread = (trace.pid[events].astype(np.int64) << 32) | (
        trace.tid[events].astype(np.int64) & 0xFFFFFFFF
    )
    keys = np.stack((thread, trace.ts_ns[events]), axis=1)
    _unique, first, group = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    owner = first[group.reshape(-1)[len(candidates) :]]
    found = owner < len(candidates)
    op = candidates[owner[found]]
    bound = usable[found]
    id_rank = np.cumsum((flags & F_ID) != 0) - 1
    return Bound(
        line=lines[op].astype(np.int64),
        position=positions[op].astype(np.int64),
        flow_id=trace.flow_ids[id_rank[bound]],
        start=trace.ph[bound] == ord("s"),
        unbound=len(flows) - len(bound),
    )


def add_stats(bound: Bound, lines: Sequence[ColumnLine]) -> None:
    """Write the bound flows' stats on their ops' lines (`ColumnLine.add_stat_rows`), as the
    loop's calls of `add_stats` in trace order would."""
    if not len(bound.line):
        return
    codec = lines[0].codec
    # Stat names registered in the order the loop met them (the first flow's end first).
    ends = (("_p", "_pt"), ("_c", "_ct"))
    first_start = bool(bound.start[0])
    for names in ends if first_start else ends[::-1]:
        for name in names:
            codec.key_id(name)
    id_key = np.where(bound.start, codec.key_id("_p"), codec.key_id("_c"))
    type_key = np.where(bound.start, codec.key_id("_pt"), codec.key_id("_ct"))
    order = np.argsort(bound.line, kind="stable")
    cuts = np.flatnonzero(np.diff(bound.line[order])) + 1
    for chosen in np.split(order, cuts):
        n = len(chosen)
        keys = np.stack((id_key[chosen], type_key[chosen]), axis=1).reshape(-1)
        values = np.stack(
            (bound.flow_id[chosen], np.full(n, FWDBWD_CONTEXT_TYPE, np.int64)), axis=1
        ).reshape(-1)
        line = lines[int(bound.line[chosen[0]])]
        line.add_stat_rows(
            bound.position[chosen],
            np.full(n, 2, np.int64),
            keys.astype(np.int32),
            np.full(2 * n, KIND_INT, np.int8),
            values.astype(np.int64),
        )
