"""The steps' child's bound (`kept_apart.ChildBound`, decision 1020): its CPU time and the time
it hangs count, its wait for a core does not. Readings and clock are made up: no test here
waits or reads a real time."""

from __future__ import annotations

from collections.abc import Callable

from stepscope.tools.kept_apart import ChildBound, child_times

Times = tuple[float, dict[int, int]] | None

LIMIT_S = 100.0
TID = 7


class Clock:
    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


def _run(
    bound: ChildBound, clock: Clock, step: Callable[[int], Times], seconds: int
) -> float | None:
    """Reads ``step(k)`` each second for ``seconds``; the second the bound is over, or None."""
    for k in range(1, seconds + 1):
        clock.now_s = float(k)
        if bound.over(step(k)):
            return clock.now_s
    return None


def _read_at(bound: ChildBound, clock: Clock, now_s: float, times: Times) -> bool:
    clock.now_s = now_s
    return bound.over(times)


def test_a_child_starved_of_cores_is_never_over() -> None:
    """1% of each second on a core, the rest runnable but waiting: 10,000 s of wall, 100 s of
    CPU at the end, so it is over only then (a wall-clock bound: at 100 s)."""
    clock = Clock()
    bound = ChildBound(LIMIT_S, clock)
    over = _run(bound, clock, lambda k: (0.01 * k, {TID: k * 10**9}), 9_999)
    assert over is None
    assert bound.blocked_s == 0.0
    assert _read_at(bound, clock, 10_001.0, (100.01, {TID: 10_001 * 10**9}))


def test_its_waits_counted_late_are_given_back() -> None:
    """A wait for a core is in schedstat only once it ends: seconds that read as blocked are
    given back when the next reading holds them."""
    clock = Clock()
    bound = ChildBound(LIMIT_S, clock)
    readings = {1: 1, 2: 1, 3: 1, 4: 4}  # (10^9 ns) waiting from 1 s, counted at 4 s
    assert _run(bound, clock, lambda k: (0.0, {TID: readings[k] * 10**9}), 3) is None
    assert bound.blocked_s == 2.0
    assert not _read_at(bound, clock, 4.0, (0.0, {TID: 4 * 10**9}))
    assert bound.blocked_s == 0.0


def test_a_busy_child_is_over_at_its_cpu_limit() -> None:
    clock = Clock()
    bound = ChildBound(LIMIT_S, clock)
    assert _run(bound, clock, lambda k: (float(k), {TID: k * 10**9}), 1_000) == LIMIT_S + 1


def test_a_hung_child_is_over_after_its_limit_of_blocked_time() -> None:
    """Every thread blocked (no time on a core or waiting for one): the time counts, beside
    its 2 s of CPU (blocked from the first reading on: 2 + 99 s are over at 100 s)."""
    clock = Clock()
    bound = ChildBound(LIMIT_S, clock)
    assert _run(bound, clock, lambda k: (2.0, {TID: 5 * 10**9}), 1_000) == LIMIT_S


def test_a_thread_waking_now_and_then_does_not_hide_a_hang() -> None:
    """One thread blocked for good, another waking 1 ms a second: over after about the
    limit (the waking thread's 1 ms a second counts as activity)."""
    clock = Clock()
    bound = ChildBound(LIMIT_S, clock)
    over = _run(bound, clock, lambda k: (0.0, {TID: 10**9, TID + 1: k * 10**6}), 1_000)
    assert over is not None and LIMIT_S <= over <= LIMIT_S + 2


def test_ended_threads_take_nothing_back() -> None:
    """A thread gone between two reads (a decoder's): the others' activity is what counts."""
    clock = Clock()
    bound = ChildBound(LIMIT_S, clock)
    assert not _read_at(bound, clock, 1.0, (1.0, {TID: 10**9, TID + 1: 50 * 10**9}))
    assert not _read_at(bound, clock, 2.0, (2.0, {TID: 2 * 10**9}))
    assert bound.blocked_s == 0.0


def test_where_nothing_can_be_read_the_wall_counts() -> None:
    clock = Clock()
    bound = ChildBound(LIMIT_S, clock)
    assert _run(bound, clock, lambda k: None, 1_000) == LIMIT_S + 1


def test_this_process_times_read() -> None:
    import os
    import sys

    times = child_times(os.getpid())
    if not sys.platform.startswith("linux"):
        assert times is None
        return
    assert times is not None
    cpu_s, active = times
    assert cpu_s >= 0.0 and os.getpid() in active
