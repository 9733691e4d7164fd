"""The collective-arrival rule of `stepscope.stats.stragglers` at its edges: ranks whose calls are
given in code (arrival, exit, sequence number, run-up per category), so every figure of the
answer is worked out by hand below -- thresholds met exactly, two stragglers and the two hidden
behind them, calls that only some ranks recorded, clocks since the epoch, the text's figures."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from stepscope.stats.stragglers import find_stragglers, held_by
from stepscope.stats.stragglers_types import BY_ARRIVAL, PodLateness, Rank
from tests.support.arrivals import MS, STEP, Call, job, rank


def _arrival(ranks: Sequence[Rank]) -> PodLateness:
    pod = find_stragglers(ranks)
    assert pod.method == BY_ARRIVAL
    return pod


def test_late_by_exactly_the_threshold_is_late() -> None:
    """Steps of 11 ms; ranks 0 and 1 ready at 4 ms, rank 2 at 5 ms; the all-reduce ends at 8.
    Ranks 0 and 1 wait 1 ms: own times 10, 10 and 11 ms, so the threshold (10% of the median
    rank's) is the 1 ms rank 2 holds them: late at every step, a straggler. Its late time
    is what it held less what it waited (0), the others' what they held (0) less 1 ms."""
    pod = _arrival(
        job(3, 4, lambda r, s: 5 * MS if r == 2 else 4 * MS, end=8 * MS, step_ns=11 * MS)
    )
    assert pod.late.tolist() == [[False] * 4, [False] * 4, [True] * 4]
    assert [(s.host, s.steps, s.late_ns) for s in pod.stragglers] == [("r2", (0, 1, 2, 3), 4 * MS)]
    assert pod.late_ns.tolist() == [[-MS] * 4, [-MS] * 4, [MS] * 4]


def test_a_rank_last_by_exactly_20_us_counts_as_last() -> None:
    pod = _arrival(job(2, 5, lambda r, s: 4 * MS + 20_000 * r))
    assert pod.last_count is not None and pod.last_count.dtype == np.int64
    assert pod.last_count.tolist() == [0, 5]


def test_the_one_hidden_behind_a_straggler_late_by_exactly_the_threshold() -> None:
    """Three ranks, steps of 24 ms, the all-reduce ends at 12 ms: rank 0 is ready at 4 ms,
    rank 1 at 6, rank 2 at 10. Waits 6, 4 and 0 ms: own times 18, 20 and 24 ms, threshold 2
    ms. Rank 2 holds the others 4 ms a step; without it, rank 1 holds rank 0 2 ms: the
    threshold exactly, and only two ranks are left. A call after the last step, matched by
    its sequence number, where rank 1 is last of the other two, counts in no step. Rank 1's
    host name begins with a dot (a file named so)."""
    after = 4 * 24 * MS
    ranks = job(
        3,
        4,
        lambda r, s: [4, 6, 10][r] * MS,
        end=12 * MS,
        hosts=["r0", ".r1", "r2"],
        seq=True,
        step_ns=24 * MS,
        extra=lambda r: [Call(-1, after + [1, 9, 5][r] * MS, after + 12 * MS, seq=4)],
    )
    pod = _arrival(ranks)
    late, hidden = pod.stragglers
    assert (late.host, late.late_ns, hidden.host, hidden.late_ns) == ("r2", 16 * MS, ".r1", 8 * MS)
    assert hidden.explanation == (
        "Next in line, hidden behind r2: .r1 is the last of the other ranks at steps 0-3 (4 of "
        "4 steps): it arrived last at 4 collective calls there, 2.00 ms per step after the next "
        "rank (once r2 is fixed, the others will wait for it)."
    )


def test_the_figures_a_user_reads_of_a_straggler() -> None:
    """Steps of 10 ms, the all-reduce ends at 9 ms; steps 0-8 balanced (every rank ready at
    4 ms), at steps 9-11 rank "s" is ready 2.505001 ms later: 1.005001 ms input as the others
    then 2.5 ms more, and 5,001 ns more host compute. Rank "w" waits for it; rank "y"'s calls
    there end as they begin (a record of no length) but for 1 ns at step 9: it waited 1 ns,
    and still waited. Figures shown to 0.01 ms round up from ...5001."""
    late_steps = (9, 10, 11)

    def ready(r: int, s: int) -> int:
        return 4 * MS + (2_505_001 if r == 1 and s in late_steps else 0)

    def runup(r: int, s: int) -> dict[str, int]:
        if r == 1 and s in late_steps:
            return {"input": 3_505_001, "host_compute": 3_000_000}
        return {"input": 1_005_001, "host_compute": 2_994_999}

    def exit_(r: int, s: int) -> int:
        if r == 2 and s in late_steps:
            return 4 * MS + (1 if s == 9 else 0)
        return 9 * MS

    pod = _arrival(
        job(3, 12, ready, runup=runup, exit_=exit_, hosts=["w", "s", "y"], step_ns=10 * MS)
    )
    [late] = pod.stragglers
    assert late.explanation == (
        "s is late at steps 9-11 (3 of 12 steps): it arrived last at 3 collective calls there, "
        "2.51 ms per step after the next rank; since its previous collective it spent 3.51 ms "
        "per step in input where the other ranks spent 1.01 ms; 2 other ranks wait for it in "
        "their collectives (7.52 ms in all)."
    )
    assert (late.waiters, late.waited_ns) == (2, 3 * 2_505_001 + 1)
    assert held_by(pod) == (
        "Held by a straggler: s is late at steps 9-11 (3 of 12 steps), 2.51 ms per step after "
        "the next rank, "
        "from input (3.51 ms per step where the other ranks spent 1.01 ms); the other ranks "
        "wait for it."
    )
    assert pod.waiting is not None and pod.waiting.tolist() == [True, False, True]
    assert np.nan_to_num(pod.wait_ns[2]).tolist() == [0] * 9 + [1, 0, 0]
    assert np.nan_to_num(pod.wait_ns[0]).tolist() == [0] * 9 + [2_505_001] * 3


def test_two_stragglers_and_the_two_hidden_behind_them() -> None:
    """Steps of 20 ms, the all-reduce ends at 15 ms; steps 0-3 balanced (all ready at 2 ms).
    Steps 4-7: "a" ready at 10 ms, "h1" at 3 (the others at 0); steps 8-11: "b" at 12, "h2"
    at 4. Thresholds: 10% of the median own time, 11.5 ms at steps 4-7 (1.15 ms), 8 ms at
    8-11 (0.8 ms). "a" holds the others 7 ms a step, "b" 8: each late at a third of the
    steps, by more than 20% of the own time, so both are stragglers, "b" first. Without
    them, "h1" is last at steps 4-7 by 3 ms, "h2" at 8-11 by 4 ms: "h2" first. "z"'s calls
    at steps 4-7 end as they begin: it waited only for "b" (and "h2")."""

    def ready(r: int, s: int) -> int:
        if s < 4:
            return 2 * MS
        if s < 8:
            return {0: 10 * MS, 2: 3 * MS}.get(r, 0)
        return {1: 12 * MS, 3: 4 * MS}.get(r, 0)

    def exit_(r: int, s: int) -> int:
        return ready(r, s) if r == 5 and 4 <= s < 8 else 15 * MS

    pod = _arrival(job(6, 12, ready, exit_=exit_, hosts=["a", "b", "h1", "h2", "w", "z"]))
    assert [(s.host, s.steps, s.late_ns, s.behind) for s in pod.stragglers] == [
        ("b", (8, 9, 10, 11), 32 * MS, ""),
        ("a", (4, 5, 6, 7), 28 * MS, ""),
        ("h2", (8, 9, 10, 11), 16 * MS, "b, a"),
        ("h1", (4, 5, 6, 7), 12 * MS, "b, a"),
    ]
    assert pod.stragglers[2].explanation.startswith("Next in line, hidden behind b, a: h2 ")
    assert held_by(pod).endswith(". Next in line, hidden behind it: h2, h1.")
    assert pod.waiting is not None and pod.waiting.tolist() == [
        False,
        False,
        False,
        False,
        True,
        True,
    ]
    assert [pod.role(i) for i in range(6)] == [
        "straggler",
        "straggler",
        "next straggler",
        "next straggler",
        "waiting",
        "waiting",
    ]


@pytest.mark.parametrize(
    ("late_runup", "n_steps", "reason", "excess"),
    [
        ({"input": MS}, 4, "other", 0),  # the same run-up as the others': nothing stands out
        ({"input": MS + 1}, 1, "input", 1),  # 1 ns more input, in a profile of one step
        ({"input": 3 * MS, "host_compute": 2 * MS}, 4, "input", 8 * MS),  # a tie: the first
    ],
)
def test_the_reason_is_the_category_that_exceeds_the_others_most(
    late_runup: dict[str, int], n_steps: int, reason: str, excess: int
) -> None:
    """Rank 2 is ready at 8 ms, the others at 4; the others' run-up is 1 ms of input."""
    pod = _arrival(
        job(
            3,
            n_steps,
            lambda r, s: 8 * MS if r == 2 else 4 * MS,
            runup=lambda r, s: late_runup if r == 2 else {"input": MS},
        )
    )
    [late] = pod.stragglers
    assert (late.host, late.reason, late.reason_excess_ns) == ("r2", reason, excess)


def test_a_step_without_calls_and_a_rank_without_calls_read_unknown() -> None:
    """Four ranks, five steps; r3's calls were not recorded, and nobody calls at step 4. Two
    calls a step: an all-reduce r1 is last at (ready at 6 ms, the others at 4; ends at 8) and
    a broadcast r0 is last at (11 ms, the others 10; ends at 12). A rank's late time is what
    it held less what it waited: r0 1 - 2 ms, r1 2 - 1 ms, r2 0 - 3 ms. Own times 18, 19, 17
    and 20 ms: the threshold is 1.85 ms, so r1 is late, r0 not."""
    lanes = ("all_reduce", "broadcast")

    def calls(r: int) -> list[Call]:
        out = []
        for s in range(4):
            t = s * STEP
            out.append(Call(s, t + (6 if r == 1 else 4) * MS, t + 8 * MS, lane=0))
            out.append(Call(s, t + (11 if r == 0 else 10) * MS, t + 12 * MS, lane=1))
        return out

    ranks = [rank(f"r{r}", calls(r), 5, lanes=lanes) for r in range(3)]
    pod = _arrival([*ranks, rank("r3", None, 5)])
    nan = float("nan")
    same = np.testing.assert_array_equal
    same(pod.late_ns, [[-MS] * 4 + [nan], [MS] * 4 + [nan], [-3 * MS] * 4 + [nan], [nan] * 5])
    same(pod.wait_ns, [[2 * MS] * 4 + [nan], [MS] * 4 + [nan], [3 * MS] * 4 + [nan], [nan] * 5])
    assert pod.offsets_ns is not None
    same(pod.offsets_ns, [0, 0, 0, nan])
    assert [(s.host, s.steps) for s in pod.stragglers] == [("r1", (0, 1, 2, 3))]
    assert [pod.role(i) for i in range(4)] == ["waiting", "straggler", "waiting", ""]
    assert pod.pairing == "paired by step number: 5 steps every host has"
    assert pod.calls_matched == 8


def test_one_step_is_enough() -> None:
    """A profile of one step: the calls matched are all in pod step 0."""
    pod = _arrival(job(2, 1, lambda r, s: (9 if r else 4) * MS))
    assert [(s.host, s.steps) for s in pod.stragglers] == [("r1", (0,))]


def test_sequence_numbers_past_2_14_in_two_process_groups() -> None:
    """Two process groups number their all-reduces alike, from 100,000 (a long job): a call
    is its group and its number, told apart past the 2^14 where a float key would merge
    them. r1 is last at the first group's calls."""
    lanes = ("all_reduce a", "all_reduce b")

    def calls(r: int) -> list[Call]:
        out = []
        for s in range(6):
            t = s * STEP
            ready = t + (9 if r == 1 else 4) * MS
            out.append(Call(s, ready, t + 10 * MS, lane=0, seq=100_000 + s))
            out.append(Call(s, t + 11 * MS, t + 12 * MS, lane=1, seq=100_000 + s))
        return out

    pod = _arrival([rank(f"r{r}", calls(r), 6, lanes=lanes) for r in range(3)])
    assert pod.clock_note.startswith(
        "12 collective calls matched on every rank (by sequence number)"
    )
    [late] = pod.stragglers
    assert (late.host, late.last_arrivals, late.late_ns) == ("r1", 6, 30 * MS)


def test_a_number_every_call_repeats_keys_calls_by_step() -> None:
    """A graph whose all-reduce keeps sequence number 0 every step: calls are matched by
    step, kind and position."""
    repeated = [
        rank(
            r.host,
            [
                Call(s, s * STEP + (9 if k == 1 else 4) * MS, s * STEP + 12 * MS, seq=0)
                for s in range(6)
            ],
            6,
        )
        for k, r in enumerate(job(3, 6, lambda r, s: 0))
    ]
    pod = _arrival(repeated)
    assert pod.clock_note == (
        "6 collective calls matched on every rank (by step, kind and position); clock offsets "
        "estimated from their exits (largest: r0 +0.000 ms, r1 +0.000 ms, r2 +0.000 ms); the "
        "corrected exits agree within 0.0 us (median)"
    )
    assert [(s.host, s.late_ns) for s in pod.stragglers] == [("r1", 30 * MS)]


def test_calls_that_some_ranks_did_not_record_are_left_out() -> None:
    """r0's capture began after the first all-reduce, r1's ended before the last: the
    calls every rank has are numbers 1-4."""

    def keep(r: int, s: int) -> bool:
        return not ((r == 0 and s == 0) or (r == 1 and s == 5))

    ranks = [
        rank(
            f"r{r}",
            [
                Call(s, s * STEP + (9 if r == 2 else 4) * MS, s * STEP + 12 * MS, seq=s)
                for s in range(6)
                if keep(r, s)
            ],
            6,
        )
        for r in range(3)
    ]
    pod = _arrival(ranks)
    assert pod.calls_matched == 4
    assert pod.clock_note.startswith("4 collective calls matched on every rank (by sequence")
    # no call every rank has at steps 0 and 5: nothing is known there
    np.testing.assert_array_equal(pod.wait_ns[0], [np.nan] + [5 * MS] * 4 + [np.nan])


def test_a_call_recorded_in_the_next_step_by_one_rank_is_matched_by_its_number() -> None:
    """r1's step 3 ended as its all-reduce number 3 began, so r1 has it in step 4: the
    sequence number matches it all the same (step 3 of the pod, as the first rank has it)."""
    ranks = [
        rank(
            f"r{r}",
            [
                Call(4 if (r == 1 and s == 3) else s, s * STEP + 4 * MS, s * STEP + 12 * MS, seq=s)
                for s in range(6)
            ],
            6,
        )
        for r in range(2)
    ]
    pod = _arrival(ranks)
    assert pod.calls_matched == 6


def test_calls_outside_the_pod_steps_are_not_matched_by_position() -> None:
    """Without sequence numbers: every rank makes two all-reduces and two broadcasts before
    its steps, and r0 has a step (number 5) the others lack, with a call of each kind in it.
    Only the calls in the six pod steps (6-11) are matched; r2 is 3 ms late to the
    all-reduces, which r0 waits for at every pod step."""
    lanes = ("all_reduce", "broadcast")

    def calls(r: int, numbers: range) -> list[Call]:
        out = [Call(-1, -STEP + k * MS, -STEP + 9 * MS, lane=k % 2) for k in range(4)]
        for row, n in enumerate(numbers):
            t = (n - 5) * STEP
            out.append(Call(row, t + (7 if r == 2 else 4) * MS, t + 10 * MS, lane=0))
            out.append(Call(row, t + 11 * MS, t + 12 * MS, lane=1))
        return out

    ranks = [
        rank(f"r{r}", calls(r, numbers), len(numbers), lanes=lanes, numbers=numbers)
        for r, numbers in enumerate([range(5, 12), range(6, 12), range(6, 12)])
    ]
    pod = _arrival(ranks)
    assert pod.calls_matched == 12
    assert pod.clock_note.startswith("12 collective calls matched on every rank (by step, kind")
    assert pod.step_num.tolist() == list(range(6, 12))
    assert pod.wait_ns[0].tolist() == [3 * MS] * 6


def test_clocks_since_the_epoch_are_corrected_to_the_nanosecond() -> None:
    """Two ranks whose clocks count ns since 1970 (2025 here) and differ by 12.345679 ms:
    once corrected, their exits agree exactly and r1's 2,000,001 ns of lateness is what r0
    waits, to the nanosecond."""
    epoch = 1_764_000_000_123_456_789
    pod = _arrival(
        job(2, 4, lambda r, s: 4 * MS + 2_000_001 * r, clock=lambda r: epoch + 12_345_679 * r)
    )
    assert pod.exit_spread_ns == 0
    assert pod.wait_ns.tolist() == [[2_000_001] * 4, [0] * 4]
    assert pod.late_ns.tolist() == [[-2_000_001] * 4, [2_000_001] * 4]
    assert pod.clock_note.endswith(
        "(largest: r0 -6.173 ms, r1 +6.173 ms); the corrected exits agree within 0.0 us (median)"
    )


def test_one_late_exit_at_the_middle_call_moves_no_clock() -> None:
    """Three ranks on one clock; r1 leaves its second of three all-reduces 5 us late: the
    offsets are the median of each rank's exits against the median rank's, so none moves."""
    pod = _arrival(
        job(
            3,
            3,
            lambda r, s: 4 * MS,
            exit_=lambda r, s: 15 * MS + (5_000 if (r, s) == (1, 1) else 0),
        )
    )
    assert pod.offsets_ns is not None and pod.offsets_ns.tolist() == [0, 0, 0]


def test_the_clock_note_names_the_three_largest_offsets() -> None:
    """Five ranks with clocks 0, 4, 1, -2 and 0.25 ms: against the median (0.25 ms) the
    largest are r1 +3.75, r3 -2.25 and r2 +0.75 ms. Exits jitter by 1.05 us either way,
    alternately, so the corrected exits agree within 1.05 us (shown 1.1)."""
    clocks = [0, 4 * MS, MS, -2 * MS, MS // 4]
    jitter = [1_050, -1_050, 1_050, -1_050, 0]
    pod = _arrival(
        job(
            5,
            6,
            lambda r, s: 4 * MS,
            clock=lambda r: clocks[r],
            exit_=lambda r, s: 15 * MS + jitter[r] * (1 if s % 2 else -1),
        )
    )
    assert pod.clock_note == (
        "6 collective calls matched on every rank (by step, kind and position); clock offsets "
        "estimated from their exits (largest: r1 +3.750 ms, r3 -2.250 ms, r2 +0.750 ms); the "
        "corrected exits agree within 1.1 us (median)"
    )


def test_offsets_of_the_same_size_are_named_in_rank_order() -> None:
    """23 ranks whose clocks are 0, 1, 2 or 3 ms off (either way, the median rank at 0):
    the note names the first three ranks 3 ms off, in rank order."""
    size = [1, 1, 1, 0, 0, 0, 0, 2, 2, 2, 1, 2, 3, 1, 1, 3, 3, 3, 1, 2, 3, 2, 3]
    sign = [1, -1] * 12
    clocks = [s * k * MS for s, k in zip(sign, size, strict=False)]
    pod = _arrival(job(23, 3, lambda r, s: 4 * MS, clock=lambda r: clocks[r]))
    assert "(largest: r12 +3.000 ms, r15 -3.000 ms, r16 +3.000 ms)" in pod.clock_note


def test_offsets_and_spread_since_the_epoch_are_exact() -> None:
    """Clocks counting ns since 1970 (float64 holds such a time only to 256 ns): the offsets
    against the median rank and the exits' agreement come out to the nanosecond. Three ranks,
    r1's clock 12,345,679 ns ahead, r2's 3 ns behind; r2 leaves every call 1,050 ns after
    the others (1.05 us shown 1.1: the median distance to the call's median exit)."""
    epoch = 1_764_000_000_123_456_789
    pod = _arrival(
        job(
            3,
            4,
            lambda r, s: 4 * MS,
            clock=lambda r: epoch + [0, 12_345_679, -3][r],
            exit_=lambda r, s: 15 * MS + (1_050 if r == 2 else 0),
        )
    )
    assert pod.offsets_ns is not None
    assert pod.offsets_ns.tolist() == [-1_047, 12_344_632, 0]
    assert pod.exit_spread_ns == 0
    # two ranks, r1 leaving 2.1 us late and early by turns: 1.05 us from the calls' median
    # (the corrected exits are small numbers: each rank's offset holds its first exit)
    jitter = [0, 2_100, -2_100, 2_100, -2_100]
    pod = _arrival(
        job(
            2,
            5,
            lambda r, s: 4 * MS,
            clock=lambda r: epoch + 12_345_679 * r,
            exit_=lambda r, s: 15 * MS + jitter[s] * r,
        )
    )
    assert pod.offsets_ns is not None and pod.offsets_ns.tolist() == [-6_172_839.5, 6_172_839.5]
    assert pod.exit_spread_ns == 1_050
