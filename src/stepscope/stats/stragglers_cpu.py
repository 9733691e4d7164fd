"""What a late rank's steps' thread did in its late run-ups, by its CPU readings
(`stats.host.thread_cpu`, decision 646), against the other ranks' over the same calls.

A rank running the same traced ops as the others, slower (decision 602), was either
runnable but waiting for a core (descheduled: other processes held its cores) or on a core
the whole time (a slower core, larger inputs); without readings the trace cannot tell, and
says so. The same ops on a slower core take as many times the others' CPU time as their
time; a thread on a core `MORE_WORK` times beyond that did work of its own, however alike
its traced ops: a checkpoint written with `torch.save` is untraced Python, its ops the
others' (/tmp/ranks15/j2a: 406 host ops per step against 394, run 7.6x longer, was "the same
work, slower"; its thread was on a core 12.54 ms per step there, the others 0.43)."""

from __future__ import annotations

import numpy as np

from stepscope.stats.stragglers_types import Matched

WAITED = 0.25  # runnable this share of its run-ups at least, twice the others' share...
RAN = 0.75  # ...else on a core this share at least: it ran the whole time
MORE_WORK = 2.0  # on a core this many times the others' time x the slowdown: more work
# the readings' verdict on a rank whose thread waited for a core: the machine's load
DESCHEDULED = "descheduled, other processes held its cores"
SLOWED_WHY = (
    "its process off its core, descheduled while other processes took it, looks like this, "
    "as do a slower core and larger inputs to the same ops (a bigger batch, longer "
    "sequences); the trace holds no CPU time to tell which"
)


def _read(m: Matched, k: int, mine: np.ndarray) -> tuple[float, float, float] | None:
    """(ns on a core, ns runnable, ns of run-ups) of rank ``k``'s run-ups before its calls
    ``mine``; None without readings there."""
    if k >= len(m.cpu) or not m.cpu[k].read or not mine.any():
        return None
    arrive = m.arrive_ns[k, mine] + int(m.offsets_ns[k])
    lo = arrive - m.runup_ns[k, mine].sum(axis=1)
    covered, on, rq = (float(x.sum()) for x in m.cpu[k].within(lo, arrive))
    span = float((arrive - lo).sum())
    return (on, rq, span) if covered > 0 and span > 0 else None


def _peers(m: Matched, j: int, mine: np.ndarray) -> tuple[float, float, float] | None:
    """The other ranks' median of `_read`, None when none was read."""
    read = [r for k in range(len(m.rows)) if k != j and (r := _read(m, k, mine))]
    if not read:
        return None
    on, rq, span = (float(np.median([r[i] for r in read])) for i in range(3))
    return on, rq, span


def more_work(m: Matched, j: int, mine: np.ndarray, slower: float) -> bool:
    """Whether rank ``j``'s thread ran on a core `MORE_WORK` times as long as the other
    ranks' in those run-ups, times ``slower`` (how many times longer its ops ran), and 1 ms
    more per call: work of its own, beyond the same ops on a slower core."""
    own, peers = _read(m, j, mine), _peers(m, j, mine)
    if own is None or peers is None:
        return False
    return own[0] >= MORE_WORK * max(slower, 1.0) * peers[0] and own[0] - peers[0] >= 1e6 * int(
        mine.sum()
    )


def slowed_why(m: Matched, j: int, mine: np.ndarray) -> str:
    """Why rank ``j`` ran the same ops slower in its run-ups before its calls ``mine``: its
    readings against the other ranks' over the same calls, or what it looks like."""
    own = _read(m, j, mine)
    if own is None:
        return SLOWED_WHY
    on, rq = own[0] / own[2], own[1] / own[2]
    peers = _peers(m, j, mine)
    peer_rq = peers[1] / peers[2] if peers else float("nan")
    said = (
        f"its steps' thread was on a core {on:.0%} of those run-ups and runnable, waiting "
        f"for one, {rq:.0%} ("
        + (f"the other ranks' {peers[0] / peers[2]:.0%} and {peer_rq:.0%}" if peers else "")
        + (")" if peers else "no other rank read)")
    )
    if rq >= WAITED and not rq < 2 * peer_rq:
        return f"{said}: {DESCHEDULED}"
    if on >= RAN:
        return (
            f"{said}: it ran the whole time, not descheduled; a slower core, or larger inputs to "
            "the same ops (a bigger batch, longer sequences), look like this"
        )
    return (
        f"{said}: neither runs it slower alone (the rest: sleeping, blocked, or not read); "
        + SLOWED_WHY.replace("; the trace holds no CPU time to tell which", "")
    )


def work_words(
    m: Matched, j: int, mine: np.ndarray, same: tuple[float, float, float] | None, n: int
) -> str:
    """The clause after a straggler's reason: the same ops slower, and why (``same``, from
    `stragglers_work.same_work`); else its thread's time on a core and waiting for one in
    those run-ups beside the other ranks', when read; else ""."""
    if same is not None:
        return (
            f"; its traced host ops there were as many as the others' ({same[0] / n:.0f} per "
            f"step, the others {same[1] / n:.0f}) and ran {same[2]:.1f}x longer: the same "
            f"work, slower ({slowed_why(m, j, mine)})"
        )
    own, peers = _read(m, j, mine), _peers(m, j, mine)
    if own is None or peers is None:
        return ""
    return (
        f"; its steps' thread was on a core {own[0] / n / 1e6:.2f} ms per step of those "
        f"run-ups (the other ranks {peers[0] / n / 1e6:.2f} ms) and runnable, waiting for "
        f"one, {own[1] / n / 1e6:.2f} ms (the others {peers[1] / n / 1e6:.2f} ms)"
    )
