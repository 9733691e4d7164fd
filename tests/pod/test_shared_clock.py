"""Ranks of one machine share its clock (decision 940): their captures record the machine and
boot (`vocab.profiler.CLOCK_STAT`) and where each one's time zero falls on it, so arrivals are
compared on that clock and no offset is estimated from the exits, which need not be
simultaneous (gloo's all-reduce closes its range on a worker thread that may wait for a core:
a 2-rank DDP job on one loaded machine left the ranks' exits 2-6 ms apart at half the calls)."""

from __future__ import annotations

from dataclasses import replace

from stepscope.stats.stragglers import find_stragglers
from stepscope.stats.stragglers_types import BY_ARRIVAL, Rank
from tests.support.arrivals import MS, job

ONE = "vm boot 2d6e34f0-0756-4dea-ae0f-4f1806f00b02"
START = 1_796_174_219_025_641_037  # rank 0's capture start (wall-clock ns)


def _on_clocks(ranks: list[Rank], clocks: list[str], starts_ns: list[int]) -> list[Rank]:
    out = []
    for r, clock, start in zip(ranks, clocks, starts_ns, strict=True):
        assert r.calls is not None
        out.append(replace(r, calls=replace(r.calls, clock=clock, origin_ns=start)))
    return out


def _job() -> list[Rank]:
    """Two ranks, 8 steps; rank 1 started its capture 7 ms before rank 0, so its times read
    7 ms more for the same instant. Rank 1 arrives 1 ms after rank 0 at every all-reduce (4
    and 5 ms into the step); rank 0 leaves each at 15 ms, rank 1 at 15 ms at even steps and
    3 ms later at odd ones (its exit recorded late)."""
    return job(
        2,
        8,
        lambda r, s: (4 + r) * MS,
        clock=lambda r: 7 * MS * r,
        exit_=lambda r, s: 15 * MS + (3 * MS if r == 1 and s % 2 else 0),
    )


def test_ranks_on_one_machine_are_compared_on_its_clock() -> None:
    """Where rank 1's time zero falls on the machine's clock puts its arrivals 1 ms after
    rank 0's: it holds rank 0 1 ms a step, and no clock offset is said (0)."""
    pod = find_stragglers(_on_clocks(_job(), [ONE, ONE], [START, START - 7 * MS]))
    assert pod.method == BY_ARRIVAL
    assert pod.offsets_ns is not None and pod.offsets_ns.tolist() == [0, 0]
    assert pod.last_count is not None and pod.last_count.tolist() == [0, 8]
    assert pod.late_ns[1].tolist() == [MS] * 8
    assert pod.clock_note == (
        "8 collective calls matched on every rank (by step, kind and position); one clock: "
        "every rank ran on vm in one boot, so no clock offset is estimated (0) and each "
        "rank's times are put on that clock from its capture's start (the starts 7.000 ms "
        "apart); the exits agree within 750.0 us (median)"
    )


def test_the_exits_alone_would_move_the_arrivals() -> None:
    """The same job without the clocks recorded (or on two machines, or two boots): the
    offset is estimated from the exits, 1.5 ms off (the median of 0 and 3 ms), which puts
    rank 1 half a millisecond before rank 0 at every call but the first (where rank 1's first
    step, now 1.5 ms earlier than rank 0's, moves rank 0's arrival back by as much: decision
    727)."""
    for clocks in (["", ""], [ONE, ONE.replace("2d6e", "9f01")], [ONE, "other" + ONE[2:]]):
        pod = find_stragglers(_on_clocks(_job(), clocks, [START, START - 7 * MS]))
        assert "clock offsets estimated from their exits" in pod.clock_note
        assert pod.offsets_ns is not None and pod.offsets_ns.tolist() == [-4.25 * MS, 4.25 * MS]
        assert pod.last_count is not None and pod.last_count.tolist() == [7, 1]
