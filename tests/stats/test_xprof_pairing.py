"""XProf's step intersection across hosts (`stepscope.stats.steps.pairing.xprof_rows`): the
host whose steps span the least time is the chief, every other host is shifted to overlap
it the most, and the pod steps are the chief's steps every host covers."""

from __future__ import annotations

import numpy as np

from stepscope.stats.steps.pairing import (
    BY_NUMBER,
    BY_POSITION,
    SINGLE,
    HostSteps,
    pair_host_steps,
    xprof_rows,
)


def _host(name: str, spans: list[tuple[int, int]], first: int = 0) -> HostSteps:
    lo = np.array([a for a, _ in spans], np.int64)
    hi = np.array([b for _, b in spans], np.int64)
    return HostSteps(name, np.arange(first, first + len(spans), dtype=np.int64), lo, hi - lo)


def _rows(hosts: list[HostSteps]) -> list[list[int]]:
    out = xprof_rows(hosts)
    assert all(r.dtype == np.int64 for r in out)
    return [r.tolist() for r in out]


CHIEF = _host("chief", [(100, 200), (200, 300), (300, 400)])  # spans 300: the least


def test_a_host_starting_a_step_earlier_is_shifted_back_by_one() -> None:
    early = _host("early", [(0, 100), (100, 200), (200, 300), (300, 400), (400, 500)])
    assert _rows([early, CHIEF]) == [[1, 2, 3], [0, 1, 2]]
    assert _rows([CHIEF, early]) == [[0, 1, 2], [1, 2, 3]]


def test_a_host_starting_later_covers_the_chiefs_last_steps() -> None:
    late = _host("late", [(200, 300), (300, 400), (400, 500), (500, 600)])
    assert _rows([CHIEF, late]) == [[1, 2], [0, 1]]


def test_overlaps_are_summed_per_shift_and_the_first_best_shift_wins() -> None:
    # steps half a step off: shifts 0 and -1 overlap alike (50 each); 0 is tried first
    half = _host("half", [(50, 150), (150, 250), (250, 350), (350, 450)])
    assert _rows([CHIEF, half]) == [[0, 1, 2], [0, 1, 2]]
    # shift 0 overlaps 10 + 100 + 90 ns, shift -1 90 + 10: shift 0
    skew = _host("skew", [(0, 110), (110, 300), (300, 390), (390, 600)])
    assert _rows([CHIEF, skew]) == [[0, 1, 2], [0, 1, 2]]


def test_instant_steps_are_skipped_and_hosts_without_steps_get_no_rows() -> None:
    blips = _host("blips", [(0, 100), (150, 150), (100, 200), (200, 300), (300, 400), (400, 500)])
    empty = _host("empty", [])
    assert _rows([empty, CHIEF, blips]) == [[], [0, 1, 2], [2, 3, 4]]
    assert _rows([empty, empty]) == [[], []]


def test_hosts_with_other_counters_pair_by_the_shift_that_overlaps_the_most() -> None:
    early = _host("early", [(0, 100), (100, 200), (200, 300), (300, 400), (400, 500)], 50)
    pairing = pair_host_steps([CHIEF, early])
    assert pairing.mode == BY_POSITION
    assert pairing.step_num.dtype == np.int64 and pairing.step_num.tolist() == [0, 1, 2]
    assert [r.tolist() for r in pairing.rows] == [[0, 1, 2], [1, 2, 3]]
    assert pairing.left_out == (0, 2)
    assert pairing.description == (
        "paired by position (the hosts share no step number): 3 pod steps, the first being "
        "chief 0, early 51; left out, not on every host: early: 2 (steps 50-54)"
    )


def test_hosts_whose_steps_never_overlap_pair_from_their_first_steps() -> None:
    far = _host("far", [(10_000, 10_100), (10_100, 10_200), (10_200, 10_300), (10_300, 10_400)], 9)
    pairing = pair_host_steps([CHIEF, far])
    assert pairing.mode == BY_POSITION
    assert [r.tolist() for r in pairing.rows] == [[0, 1, 2], [0, 1, 2]]
    assert pairing.left_out == (0, 1)


def test_the_host_spanning_the_least_time_is_the_reference() -> None:
    # the late host spans less: the chief-like host is shifted against it
    late = _host("late", [(300, 400), (400, 500)], 70)
    pairing = pair_host_steps([CHIEF, late])
    assert [r.tolist() for r in pairing.rows] == [[2], [0]]


def test_no_steps_or_one_host_with_steps_pair_nothing_or_its_own() -> None:
    empty, other = _host("empty", []), _host("other", [])
    pairing = pair_host_steps([empty, other])
    assert (pairing.mode, pairing.description) == (SINGLE, "no steps; no steps on empty, other")
    assert pairing.n_steps == 0 and [len(r) for r in pairing.rows] == [0, 0]
    alone = pair_host_steps([CHIEF])
    assert (alone.mode, alone.description) == (SINGLE, "")
    pairing = pair_host_steps([CHIEF, empty])
    assert pairing.mode == SINGLE
    assert pairing.description == "steps of chief only; no steps on empty"
    assert [r.tolist() for r in pairing.rows] == [[0, 1, 2], [-1, -1, -1]]
    assert all(r.dtype == np.int64 for r in pairing.rows)


def test_by_number_names_what_each_host_leaves_out() -> None:
    a = _host("a", [(0, 100), (100, 200), (200, 300), (300, 400)], 10)  # steps 10-13
    b = _host("b", [(0, 100), (100, 200), (200, 300), (300, 400)], 11)  # steps 11-14
    c = _host("c", [(0, 100), (100, 200), (200, 300)], 11)  # steps 11-13
    pairing = pair_host_steps([a, b, _host("idle", []), c])
    assert pairing.mode == BY_NUMBER
    assert pairing.step_num.dtype == np.int64 and pairing.step_num.tolist() == [11, 12, 13]
    assert [r.tolist() for r in pairing.rows] == [[1, 2, 3], [0, 1, 2], [-1, -1, -1], [0, 1, 2]]
    assert all(r.dtype == np.int64 for r in pairing.rows)
    assert pairing.left_out == (1, 1, 0, 0)
    assert pairing.description == (
        "paired by step number: 3 steps every host has; left out, not on every host: "
        "a: 1 (steps 10), b: 1 (steps 14); no steps on idle"
    )


def test_the_chief_spans_the_least_time_from_its_first_step_not_from_zero() -> None:
    """XProf's chief is the host whose steps span the least time from its first step's start
    to its last step's end (XProf 2.24.2 on the same hosts in ms: 3 pod steps,
    test_xprof_live). ``late`` spans 390 ns but ends last: measured from 0 it would lose to
    ``a`` (ends at 1400), and ``a`` as the chief pairs ``c``, ``a`` one step later, one step
    off, which leaves 2 pod steps."""
    a = _host("a", [(1000, 1100), (1100, 1200), (1200, 1300), (1300, 1400)])
    late = _host("late", [(2000, 2120), (2120, 2250), (2250, 2390)])
    c = _host("c", [(1100, 1200), (1200, 1300), (1300, 1400), (1400, 1501)])
    assert _rows([a, late, c]) == [[0, 1, 2], [0, 1, 2], [0, 1, 2]]
    # an instant step long after late's last one does not widen its span
    blip = _host("late", [(2000, 2120), (2120, 2250), (2250, 2390), (9000, 9000)])
    assert _rows([a, blip, c]) == [[0, 1, 2, 3]] * 3
    # a host whose steps are all instants spans nothing: it is the chief, and nothing
    # overlaps it, so every host pairs from its first step
    blips = _host("blips", [(5000, 5000), (5100, 5100)])
    assert _rows([a, blips, c]) == [[0, 1], [0, 1], [0, 1]]


def _pair(*spans: list[tuple[int, int]]) -> list[list[int]]:
    return _rows([_host(f"h{k}", s) for k, s in enumerate(spans)])


def test_the_walk_starts_at_both_first_steps_and_moves_on_the_one_ending_first() -> None:
    # the chief's first step ends before the other's starts: the chief alone moves on, and
    # its second step overlaps the other's first (shift 1)
    assert _pair([(40, 70)], [(30, 31), (41, 51)]) == [[0], [1]]
    # a shift overlapping 1 ns beats shifts overlapping nothing
    assert _pair([(40, 60)], [(20, 30), (40, 41)]) == [[0], [1]]
    # the other host's step ends first: it moves on, then ends with the chief's
    assert _pair([(0, 30)], [(0, 10), (10, 30)]) == [[0], [1]]
    # nothing overlaps: every host from its first step; one step each
    assert _pair([(0, 20)], [(60, 65)]) == [[0], [0]]


def test_instant_steps_of_either_side_are_passed_over() -> None:
    # h0 and h1 both span 20 ns (instants aside): h0, listed first, is the chief; h1's
    # instant first step is passed over and its second overlaps h0's step
    assert _pair([(20, 40)], [(20, 20), (30, 50)]) == [[0], [1]]
    # an instant among the chief's steps: the walk goes on after it
    four = [(0, 100), (100, 200), (200, 300), (300, 400)]
    assert _pair(four, [(100, 200), (200, 200), (200, 300)]) == [[0, 1, 2], [0, 1, 2]]
    # an instant first step of the other host
    assert _pair([(20, 20), (20, 30)], [(50, 80)]) == [[0], [0]]


def test_overlaps_add_up_per_shift_and_equal_ends_move_both_sides_on() -> None:
    # shift 0 overlaps 20 + 5 ns, shift 1 only 10: shift 0
    assert _pair([(40, 70), (75, 85)], [(30, 60), (60, 80)]) == [[0, 1], [0, 1]]
    # steps ending together: both move on (the chief's second step pairs h0's third)
    assert _pair([(20, 40), (40, 50), (50, 51)], [(30, 50), (50, 51)]) == [[1, 2], [0, 1]]
    # steps of one host overlapping each other: after equal ends the next step of either
    # side is not paired with the step just left (XProf's walk)
    assert _pair([(50, 70), (55, 75)], [(50, 55), (60, 70)]) == [[0], [1]]
    assert _pair([(20, 25), (20, 40), (20, 40)], [(20, 30), (30, 40)]) == [[0, 1], [0, 1]]


def test_the_pod_steps_are_those_every_host_covers() -> None:
    # h0 a step early: its second step pairs the chief's first, and it has one left
    assert _pair([(10, 20), (25, 55)], [(40, 50), (50, 60)]) == [[1], [0]]
    # h0 covers only the chief's second step, h1 only its first: no pod step
    assert _pair([(60, 65)], [(40, 40), (45, 46)], [(40, 60)]) == [[], [], []]


def test_by_position_the_reference_spans_the_least_time_from_its_first_start() -> None:
    def rows(*spans: list[tuple[int, int]]) -> list[list[int]]:
        hosts = [_host(f"h{k}", s, 100 * k) for k, s in enumerate(spans)]
        pairing = pair_host_steps(hosts)
        assert pairing.mode == BY_POSITION
        return [r.tolist() for r in pairing.rows]

    # h1 spans 1 ns: the reference; h2's second step would pair h0's step
    assert rows([(50, 60)], [(10, 11)], [(40, 40), (50, 80)]) == [[0], [0], [0]]
    # spans from the first start to the last end, instants included: h0 0 ns (the
    # reference), h2 15 ns, h1 30 ns
    assert rows([(50, 50)], [(40, 70)], [(30, 40), (40, 45)]) == [[0], [0], [0]]
    # a shift overlapping 1 ns beats one overlapping nothing
    assert rows([(40, 60)], [(20, 30), (40, 41)]) == [[0], [1]]


def test_by_number_with_nothing_left_out_says_only_how() -> None:
    a = _host("a", [(0, 100), (100, 200)], 5)
    b = _host("b", [(0, 90), (100, 190)], 5)
    pairing = pair_host_steps([a, b])
    assert pairing.left_out == (0, 0)
    assert pairing.description == "paired by step number: 2 steps every host has"


def test_the_chief_span_counts_1_ns_steps_and_instants_span_nothing() -> None:
    # h0's 1 ns first step counts: it spans 21 ns, more than h2 (20) and h1 (10, the chief)
    assert _pair([(0, 1), (11, 21)], [(10, 20)], [(50, 70)]) == [[1], [0], [0]]
    # h2, all instants, spans 0 ns: less than h1's 1 ns step, so h2 is the chief
    assert _pair([(40, 41), (51, 61)], [(40, 40), (40, 41)], [(0, 0)]) == [[0], [0], [0]]
