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
        "paired by position (the hosts share 0 step numbers): 3 pod steps, the first being "
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
    # a host whose steps are all instants spans nothing: it is the chief, and nothing
    # overlaps it, so every host pairs from its first step
    blips = _host("blips", [(5000, 5000), (5100, 5100)])
    assert _rows([a, blips, c]) == [[0, 1], [0, 1], [0, 1]]
