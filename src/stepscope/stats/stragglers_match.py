"""Rules 1 and 2 of `stats.stragglers`: the same collective call found on every rank, and the
ranks' times put on one clock (the shared clock of ranks on one machine in one boot, else
offsets estimated from the calls' exits), with the line that says how."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stepscope.stats.collective_calls import CollectiveCalls
from stepscope.stats.steps.pairing import StepPairing
from stepscope.stats.stragglers_first_call import from_the_first_steps
from stepscope.stats.stragglers_types import Matched, Rank, distinct_keys
from stepscope.stats.stragglers_work import before_step


def _pod_step_of_rows(pairing: StepPairing, i: int, n_rows: int) -> np.ndarray:
    out = np.full(max(n_rows, 1), -1, np.int64)
    rows = pairing.rows[i]
    have = rows >= 0
    out[rows[have]] = np.flatnonzero(have)
    return out


def _keys(
    calls: CollectiveCalls, lanes: dict[str, int], pod: np.ndarray, by_seq: bool
) -> np.ndarray:
    """One int64 key per call that is the same on every rank for the same call."""
    lane = np.array([lanes[calls.lanes[k]] for k in calls.lane.tolist()], np.int64)
    if by_seq:
        return lane * (1 << 40) + calls.seq
    step = np.where(calls.step >= 0, pod[np.maximum(calls.step, 0)], -1)
    return ((step + 1) * (len(lanes) + 1) + lane) * (1 << 24) + np.minimum(
        calls.ordinal, (1 << 24) - 1
    )


def match_calls(ranks: Sequence[Rank], pairing: StepPairing) -> Matched | None:
    """The calls of the ranks that have any, matched (see the module docstring), or None
    when fewer than two ranks have calls in common."""
    rows = [i for i, r in enumerate(ranks) if r.calls is not None and r.calls.n_calls]
    if len(rows) < 2:
        return None
    calls = [ranks[i].calls for i in rows]
    assert all(c is not None for c in calls)
    have = [c for c in calls if c is not None]
    lanes = {name: k for k, name in enumerate(dict.fromkeys(n for c in have for n in c.lanes))}
    # by sequence number only where every call has one and no number repeats (a graph
    # whose collective keeps one key every step)
    by_seq = all((c.seq >= 0).all() and distinct_keys(c.lane, c.seq) for c in have)
    pods = [_pod_step_of_rows(pairing, i, ranks[i].steps.n_steps) for i in rows]
    keys = [_keys(c, lanes, pod, by_seq) for c, pod in zip(have, pods, strict=True)]
    common = np.unique(keys[0])
    for k in keys[1:]:
        common = np.intersect1d(common, k)
    if not by_seq:  # calls outside the pod steps have no common position
        common = common[common >= (len(lanes) + 1) * (1 << 24)]
    if not len(common):
        return None
    at = []
    for k in keys:
        order = np.argsort(k, kind="stable")
        at.append(order[np.searchsorted(k[order], common)])
    arrive = np.stack([c.arrive_ns[a] for c, a in zip(have, at, strict=True)])
    exit_ = np.stack([c.exit_ns[a] for c, a in zip(have, at, strict=True)])
    runup = np.stack([c.runup_ns[a] for c, a in zip(have, at, strict=True)])
    before = np.stack([before_step(ranks[i], a) for i, a in zip(rows, at, strict=True)])
    first = have[0]
    step0 = first.step[at[0]]
    pod_step = np.where(step0 >= 0, pods[0][np.maximum(step0, 0)], -1)
    shared = shared_clock(have)
    offsets = _origins(have) if shared else _offsets(exit_)
    arrive, exit_ = arrive - offsets[:, None], exit_ - offsets[:, None]
    firsts = [ranks[i].steps.start_ns[:1] for i in rows]  # before it, no step's (727)
    if all(len(f) for f in firsts):
        arrive = from_the_first_steps(arrive, runup, np.concatenate(firsts) - offsets)
    spread = float(np.median(np.abs(exit_ - np.median(exit_, axis=0)[None, :])))
    keyed = "sequence number" if by_seq else "step, kind and position"
    return Matched(
        np.array(rows),
        pod_step,
        arrive,
        exit_,
        runup,
        offsets,
        spread,
        keyed,
        np.stack(at).astype(np.int64),
        tuple(c.python for c in have),
        before,
        np.stack([c.runup_ops[a] for c, a in zip(have, at, strict=True)])
        if all(len(c.runup_ops) == c.n_calls for c in have)
        else None,
        tuple(c.cpu for c in have),
        np.stack([c.runup_pipeline_ns[a] for c, a in zip(have, at, strict=True)])
        if all(len(c.runup_pipeline_ns) == c.n_calls for c in have)
        else None,
        shared,
    )


def shared_clock(calls: Sequence[CollectiveCalls]) -> str:
    """The clock every rank's times count on, when all of them recorded the same one (one
    machine, one boot: `vocab.profiler.CLOCK_STAT`), else ""."""
    clocks = {c.clock for c in calls}
    return clocks.pop() if len(clocks) == 1 and "" not in clocks else ""


def _origins(calls: Sequence[CollectiveCalls]) -> np.ndarray:
    """Each rank's offset on one shared clock: how much later its times read than the first
    rank's for the same instant (its time zero that much earlier)."""
    return np.array([calls[0].origin_ns - c.origin_ns for c in calls], np.int64)


def _offsets(exit_ns: np.ndarray) -> np.ndarray:
    """Each rank's clock offset against the median rank, from when it left the calls."""
    base = exit_ns[:, :1]
    rel = (exit_ns - base).astype(np.float64)  # small: each rank against its first exit
    ref = np.median(rel, axis=0)
    return base[:, 0] + np.round(np.median(rel - ref[None, :], axis=1)).astype(np.int64)


def against_the_median(offsets_ns: np.ndarray) -> np.ndarray:
    """Each rank's clock offset against the median rank's, exact for clocks counting ns since
    the epoch (beyond float64's 2^53: taken against the first rank's offset first)."""
    rel = offsets_ns - offsets_ns[0]
    return rel - np.median(rel)


def clock_note(hosts: tuple[str, ...], m: Matched) -> str:
    """How the calls were matched and put on one clock, for the straggler's explanation."""
    matched = f"{m.arrive_ns.shape[1]} collective calls matched on every rank (by {m.keyed_by})"
    agree = f"agree within {m.exit_spread_ns / 1e3:.1f} us (median)"
    rel = against_the_median(m.offsets_ns)
    if m.shared_clock:
        machine = m.shared_clock.split(" boot ", 1)[0]
        return (
            f"{matched}; one clock: every rank ran on {machine} in one boot, so no clock "
            "offset is estimated (0) and each rank's times are put on that clock from its "
            f"capture's start (the starts {float(rel.max() - rel.min()) / 1e6:.3f} ms "
            f"apart); the exits {agree}"
        )
    worst = np.argsort(-np.abs(rel), kind="stable")[:3]
    shown = ", ".join(f"{hosts[m.rows[k]]} {rel[k] / 1e6:+.3f} ms" for k in worst.tolist())
    return (
        f"{matched}; clock offsets estimated from their exits (largest: {shown}); the "
        f"corrected exits {agree}"
    )
