"""The straggler rule without collective calls to match: own time
(`stepscope.stats.stragglers_own_time`), on jobs built in code whose every figure is worked out
by hand below: who is late, by how much, why, who waited, and what the user reads."""

from __future__ import annotations

from typing import cast

import numpy as np
import pytest

from stepscope.stats import build_step_db
from stepscope.stats.collective_calls import no_calls
from stepscope.stats.events import CATEGORY_NAMES
from stepscope.stats.steps.breakdown import StepDb
from stepscope.stats.steps.pairing import BY_NUMBER, StepPairing
from stepscope.stats.stragglers import find_stragglers
from stepscope.stats.stragglers_own_time import _straggler, by_own_time
from stepscope.stats.stragglers_types import BY_OWN_TIME, PodLateness, Rank, Straggler
from stepscope.stats.stragglers_words import finding_summary
from stepscope.xspace.builder import XSpaceBuilder
from tests.pod.builders import MS, gloo_job
from tests.support.analysis import build

US = 1_000
INPUT = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _pod(builders: list[XSpaceBuilder]) -> PodLateness:
    """The ranks as the analysis reads them when their collective calls were not recorded
    (no calls), whatever their steps' breakdown says of collectives."""
    ranks = []
    for b in builders:
        profile = build(b)
        ranks.append(Rank(b.hostnames[0], build_step_db(profile), no_calls()))
    pod = find_stragglers(ranks)
    assert pod.method == BY_OWN_TIME
    return pod


def _idle() -> XSpaceBuilder:
    b = XSpaceBuilder("vm.idle")  # a host of the job that recorded no step
    b.plane("/host:CPU").line(1, "MainThread").event("aten::addmm", 0, MS)
    return b


def test_collectives_it_cannot_match_are_waits_beyond_the_least() -> None:
    """A gloo job of 4 ranks computing 4, 4, 9 and 14 ms per step, and a host without steps.
    Each step is 16.6 ms on every rank (1 ms input, the slowest rank's 14 ms compute, the two
    buckets' all-reduce until 1.5 ms after it, 0.1 ms to the next step). A rank's time in
    collectives is 11.5, 11.5, 6.5 and 1 ms: beyond the least (rank 3's 1 ms) it waited
    10.5, 10.5, 5.5 and 0 ms, so its own time is 6.1, 6.1, 11.1 and 16.6 ms; the median rank's
    is 8.6 ms, late by 10% of it is 0.86 ms: rank 3 is 8 ms late at every step, rank 2
    2.5 ms. The first and last of the 12 steps are left out as possibly cut."""
    compute = {0: 4.0, 1: 4.0, 2: 9.0, 3: 14.0}
    pod = _pod([*gloo_job(4, steps=12, compute_ms=lambda r, s: compute[r]), _idle()])
    assert pod.hosts == ("vm.rank0", "vm.rank1", "vm.rank2", "vm.rank3", "vm.idle")
    assert pod.step_num.tolist() == list(range(1, 11))
    assert pod.pairing.endswith("; no steps on vm.idle")
    ten = np.ones(10)
    np.testing.assert_array_equal(
        pod.dur_ns, np.outer([16_600, 16_600, 16_600, 16_600, np.nan], ten) * US
    )
    np.testing.assert_array_equal(pod.wait_ns, np.outer([10_500, 10_500, 5_500, 0, 0], ten) * US)
    late_us = np.outer([-2_500, -2_500, 2_500, 8_000, np.nan], ten)
    np.testing.assert_array_equal(pod.late_ns, late_us * US)
    assert pod.late.tolist() == [[r in (2, 3)] * 10 for r in range(5)]
    steps = tuple(range(1, 11))
    assert pod.stragglers == (
        Straggler(
            "vm.rank3",
            steps,
            80 * MS,
            "host_compute",
            75 * MS,  # 14 ms against the median rank's 6.5 ms, 10 steps
            265 * MS,  # 10.5 + 10.5 + 5.5 ms waited, 10 steps
            3,
            "vm.rank3 is late at steps 1-10 (10 of 10 steps) by 8.00 ms per step: its host "
            "compute takes 7.50 ms per step longer than the median rank's; 3 other ranks "
            "wait for it in their collectives (265.00 ms in all).",
            BY_OWN_TIME,
            0,
            140 * MS,
            65 * MS,
        ),
        Straggler(
            "vm.rank2",
            steps,
            25 * MS,
            "host_compute",
            25 * MS,
            210 * MS,  # ranks 0 and 1 waited (rank 3 and the idle host did not)
            2,
            "vm.rank2 is late at steps 1-10 (10 of 10 steps) by 2.50 ms per step: its host "
            "compute takes 2.50 ms per step longer than the median rank's; 2 other ranks "
            "wait for it in their collectives (210.00 ms in all).",
            BY_OWN_TIME,
            0,
            90 * MS,
            65 * MS,
        ),
    )
    assert pod.waiting is not None and pod.waiting.tolist() == [True, True, False, False, False]
    assert [pod.role(i) for i in range(5)] == ["waiting", "waiting", "straggler", "straggler", ""]


def test_a_straggler_of_some_steps_is_waited_for_in_those_only() -> None:
    """Rank 3 computes 10 ms more at steps 4 to 6 only (3 of the 10 steps compared: the least
    that makes a straggler); the other ranks wait then, not before or after."""
    slow = {4, 5, 6}
    pod = _pod(gloo_job(4, steps=12, compute_ms=lambda r, s: 14.0 if r == 3 and s in slow else 4))
    [late] = pod.stragglers
    assert (late.host, late.steps, late.reason, late.waiters) == (
        "vm.rank3",
        (4, 5, 6),
        "host_compute",
        3,
    )
    assert pod.late[3].tolist() == [s in slow for s in range(1, 11)]
    assert pod.wait_ns[0].tolist() == [10_500 * US if s in slow else 0 for s in range(1, 11)]
    assert pod.waiting is not None and pod.waiting.tolist() == [True, True, True, False]


def _workers(step_ms: list[float], input_ms: list[float] | None = None) -> list[XSpaceBuilder]:
    """Workers that do not communicate: each step is ``step_ms`` of its worker, 1 ms of input
    (or ``input_ms``) then compute until 1 ms before its end."""
    out = []
    for r, ms in enumerate(step_ms):
        b = XSpaceBuilder(f"w{r}")
        main = b.plane("/host:CPU").line(1, "MainThread")
        step, loading = int(ms * MS), int((input_ms[r] if input_ms else 1.0) * MS)
        for k in range(12):
            main.event("train", k * step, step, {"step_num": k, "_r": 1})
            main.event(INPUT, k * step, loading)
            main.event("aten::addmm", k * step + loading, step - loading - MS)
        out.append(b)
    return out


@pytest.mark.parametrize(
    ("late_ms", "flagged"),
    [(0.4, False), (0.5, True)],  # 8% of the median rank's 5 ms: noise; exactly 10%: late
)
def test_own_time_lateness_threshold(late_ms: float, flagged: bool) -> None:
    pod = _pod(_workers([5.0, 5.0 + late_ms, 5.0, 5.0]))
    assert pod.late_ns[1].tolist() == [late_ms * MS] * 10
    assert [s.host for s in pod.stragglers] == (["w1"] if flagged else [])
    assert pod.late[1].all() == flagged and not pod.late[[0, 2, 3]].any()


def test_two_ranks_are_enough_and_one_is_never_late() -> None:
    """Of two workers, the one 5 ms slower than the other (2.5 ms beyond their median) is
    late; a job of one rank has no one to be late against."""
    pod = _pod(_workers([5.0, 10.0]))
    assert [(s.host, s.late_ns) for s in pod.stragglers] == [("w1", 10 * 2_500_000)]
    alone = _pod(_workers([10.0]))
    assert alone.stragglers == () and not alone.late.any()


def test_the_reason_is_the_first_category_of_equal_excess() -> None:
    """w1's steps are 2 ms longer, as 1 ms more input and 1 ms more compute: equal excesses,
    and input comes first in the breakdown's order."""
    pod = _pod(_workers([6.0, 8.0, 6.0], input_ms=[1.0, 2.0, 1.0]))
    [late] = pod.stragglers
    assert (late.host, late.reason, late.reason_excess_ns) == ("w1", "input", 10 * MS)
    assert late.explanation == (
        "w1 is late at steps 1-10 (10 of 10 steps) by 2.00 ms per step: its input takes "
        "1.00 ms per step longer than the median rank's."
    )


class _Steps:
    """A rank's steps as the own-time rule reads them: time per breakdown category, per step."""

    def __init__(self, category_ns: dict[str, list[float]]) -> None:
        n = len(next(iter(category_ns.values())))
        self._ns = {c: np.asarray(category_ns.get(c, [0.0] * n), float) for c in CATEGORY_NAMES}

    def category_ns(self) -> dict[str, np.ndarray]:
        return self._ns


def test_every_rank_that_waited_for_either_of_two_stragglers_is_waiting() -> None:
    """Four workers of 5 ms steps (10 steps). w0 computes 10 ms at steps 0-2, w1 8 ms at
    steps 5-7: two stragglers, w0 first (15 ms late in all against 9 ms). At step 1, w2 spends
    1 ns in collectives (the others none): it waited 1 ns for w0 -- a wait however
    short, and one the later straggler of other steps does not undo."""
    n = 10
    compute = np.full((4, n), 5.0 * MS)
    compute[0, :3] = 10 * MS
    compute[1, 5:8] = 8 * MS
    coll = np.zeros((4, n))
    coll[2, 1] = 1
    compute[2, 1] -= 1
    ranks = [
        Rank(
            f"w{i}",
            cast(
                StepDb, _Steps({"host_compute": list(compute[i]), "collective_wait": list(coll[i])})
            ),
        )
        for i in range(4)
    ]
    rows = tuple(np.arange(n, dtype=np.int64) for _ in ranks)
    pairing = StepPairing(BY_NUMBER, np.arange(n, dtype=np.int64), rows, (0,) * 4, "by number")
    pod = by_own_time(ranks, pairing, compute + coll)
    assert [(s.host, s.steps, s.late_ns) for s in pod.stragglers] == [
        ("w0", (0, 1, 2), 15 * MS),
        ("w1", (5, 6, 7), 9 * MS),
    ]
    assert [(s.waited_ns, s.waiters) for s in pod.stragglers] == [(1, 1), (0, 0)]
    assert pod.waiting is not None and pod.waiting.tolist() == [False, False, True, False]
    assert pod.method == BY_OWN_TIME


def test_the_text_divides_nanoseconds_by_a_million() -> None:
    """2.505001 ms is 2.51 ms to two places (a divisor 1 ppm too large would say 2.50)."""
    late = _straggler(
        "w0", (1, 2, 3), 3 * 2_505_001, "input", 3 * 2_505_001, 2_505_001, 1, 10, (0, 0)
    )
    assert late.explanation == (
        "w0 is late at steps 1-3 (3 of 10 steps) by 2.51 ms per step: its input takes "
        "2.51 ms per step longer than the median rank's; 1 other rank waits for it in its "
        "collectives (2.51 ms in all)."
    )


def test_untraced_host_work_is_named_as_the_overview_names_it() -> None:
    """The pod_kineto run read "its all others takes 6667.34 ms per step longer": the
    category's label, where the reason's words name what the time is."""
    late = _straggler("w0", (1, 2), 2 * 3 * MS, "other", 2 * 2 * MS, 0, 0, 10, (0, 0))
    assert late.explanation == (
        "w0 is late at steps 1-2 (2 of 10 steps) by 3.00 ms per step: its untraced host work "
        "('All Others': Python, I/O, waits no traced op covers) takes 2.00 ms per step longer "
        "than the median rank's."
    )


def test_the_finding_says_the_same_sentence_with_its_steps_counted() -> None:
    """The finding's sentence is the explanation's, its steps said as a count when the rank
    is late at most of them (built from the parts, not patched)."""
    pod = _pod(_workers([5.0, 10.0, 5.0]))
    (late,) = pod.stragglers
    tail = " by 5.00 ms per step: its host compute takes 5.00 ms per step longer than the"
    assert late.explanation.startswith(f"w1 is late at steps 1-10 (10 of 10 steps){tail}")
    assert finding_summary(pod).startswith(f"w1 is late at 10 of 10 steps{tail}")
