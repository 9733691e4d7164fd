"""Properties that hold for every input (Hypothesis; issue #34): the union of intervals, the
pairing of several hosts' steps, and the timeline's window queries, each against a brute
force or the rule its module states. Examples are generated from a fixed seed (the settings
profile in tests/conftest.py), so a run is the same on every machine."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from stepscope.model import profile_from_xspace
from stepscope.stats.intervals import merge, overlap_with, union_ns, union_of
from stepscope.stats.steps.pairing import BY_NUMBER, BY_POSITION, HostSteps, pair_host_steps
from stepscope.stats.trace_index.index import build_trace_index
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.windows import assert_window_rule

# ---- interval union ------------------------------------------------------------------------

SPAN = 200  # small times, so the brute force can mark every nanosecond


@st.composite
def intervals(draw: st.DrawFn, min_size: int = 0) -> tuple[np.ndarray, np.ndarray]:
    pairs = draw(
        st.lists(
            st.tuples(st.integers(0, SPAN), st.integers(0, 40)), min_size=min_size, max_size=30
        )
    )
    starts = np.array([s for s, _ in pairs], dtype=np.int64)
    return starts, starts + np.array([d for _, d in pairs], dtype=np.int64)


def _covered(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which nanoseconds [t, t+1) of [0, SPAN + 40) some interval covers."""
    mask = np.zeros(SPAN + 41, dtype=bool)
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        mask[s:e] = True
    return mask


@given(intervals())
def test_union_covers_exactly_what_the_intervals_cover(
    pair: tuple[np.ndarray, np.ndarray],
) -> None:
    starts, ends = pair
    lo, hi = merge(starts, ends)
    assert np.array_equal(_covered(lo, hi), _covered(starts, ends))
    assert np.all(lo[1:] > hi[:-1])  # sorted, disjoint, touching runs merged
    assert union_ns(starts, ends) == int(_covered(starts, ends).sum())


@given(intervals())
def test_union_of_any_order(pair: tuple[np.ndarray, np.ndarray]) -> None:
    starts, ends = pair
    lo, hi = union_of(starts[::-1], ends[::-1])
    assert np.all(hi > lo)  # empty intervals leave nothing behind
    assert np.all(lo[1:] > hi[:-1])
    assert np.array_equal(_covered(lo, hi), _covered(starts, ends))


@given(intervals(), intervals())
def test_overlap_with_a_union_is_the_covered_time_inside_each_interval(
    these: tuple[np.ndarray, np.ndarray], others: tuple[np.ndarray, np.ndarray]
) -> None:
    m_lo, m_hi = merge(*others)
    covered = _covered(m_lo, m_hi)
    got = overlap_with(these[0], these[1], m_lo, m_hi)
    expected = [int(covered[s:e].sum()) for s, e in zip(*(c.tolist() for c in these), strict=True)]
    assert got.tolist() == expected


# ---- step pairing --------------------------------------------------------------------------


@st.composite
def host_steps(draw: st.DrawFn) -> list[HostSteps]:
    """1-4 hosts; each a run of steps (numbers from a shared counter, offset or renumbered,
    with gaps and repeats), times on the host's own clock."""
    hosts = []
    for h in range(draw(st.integers(1, 4))):
        n = draw(st.integers(0, 12))
        first = draw(st.integers(0, 6))
        numbers = [first + k for k in range(n)]
        if n and draw(st.booleans()):  # a counter of its own, or gaps and repeats
            numbers = draw(st.lists(st.integers(0, 30), min_size=n, max_size=n))
        durs = draw(st.lists(st.integers(1, 50), min_size=n, max_size=n))
        gaps = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
        start = draw(st.integers(0, 1000))
        starts = start + np.cumsum(np.array(durs, np.int64) + gaps) - np.array(durs, np.int64)
        hosts.append(
            HostSteps(
                f"h{h}",
                np.array(numbers, np.int64),
                starts.astype(np.int64),
                np.array(durs, np.int64),
            )
        )
    return hosts


@given(host_steps())
def test_pairing_invariants(hosts: list[HostSteps]) -> None:
    pairing = pair_host_steps(hosts)
    n = pairing.n_steps
    assert len(pairing.rows) == len(pairing.left_out) == len(hosts)
    present = [k for k, h in enumerate(hosts) if len(h.step_num)]
    for k, (host, rows) in enumerate(zip(hosts, pairing.rows, strict=True)):
        assert len(rows) == n
        if k not in present:
            assert np.all(rows == -1) and pairing.left_out[k] == 0
            continue
        assert np.all((rows >= 0) & (rows < len(host.step_num)))  # every pod step has it
        assert len(set(rows.tolist())) == n  # no step of a host in two pod steps
        if len(present) > 1:
            assert pairing.left_out[k] == len(host.step_num) - n
    if len(present) > 1:  # by number when the common numbers are most of the fewest
        common = set.intersection(*(set(hosts[k].step_num.tolist()) for k in present))
        fewest = min(len(set(hosts[k].step_num.tolist())) for k in present)
        assert pairing.mode == (BY_NUMBER if 2 * len(common) > fewest else BY_POSITION)
    if pairing.mode == BY_NUMBER:
        assert np.all(np.diff(pairing.step_num) > 0)
        for k in present:
            assert np.array_equal(hosts[k].step_num[pairing.rows[k]], pairing.step_num)
        assert set(pairing.step_num.tolist()) == common
    elif pairing.mode == BY_POSITION:
        assert pairing.step_num.tolist() == list(range(n))
        for k in present:  # consecutive steps of each host
            assert np.array_equal(pairing.rows[k], pairing.rows[k][:1] + np.arange(n))


@given(host_steps(), st.randoms(use_true_random=False))
def test_pairing_by_number_does_not_depend_on_host_order(
    hosts: list[HostSteps], random: object
) -> None:
    pairing = pair_host_steps(hosts)
    order = list(range(len(hosts)))
    random.shuffle(order)  # type: ignore[attr-defined]
    shuffled = pair_host_steps([hosts[k] for k in order])
    assert shuffled.mode == pairing.mode
    if pairing.mode == BY_NUMBER:
        assert np.array_equal(shuffled.step_num, pairing.step_num)
        for new, old in enumerate(order):
            assert np.array_equal(shuffled.rows[new], pairing.rows[old])


# ---- window queries ------------------------------------------------------------------------


@st.composite
def traces(draw: st.DrawFn) -> tuple[object, int, int, int]:
    """A profile of 1-3 lines (nested or overlapping events, instants included) and a window
    anywhere around it (edges on event boundaries included) at 1-60 pixels."""
    base = 1_000_000
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    edges = [base]
    for k in range(draw(st.integers(1, 3))):
        line = plane.line(k + 1, f"thread{k}")
        for start, dur in draw(
            st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 2000)), min_size=1)
        ):
            line.event(f"op{start % 7}", base + start, dur)
            edges += [base + start, base + start + dur]
        line.sort_events()
    t0 = draw(st.one_of(st.sampled_from(edges), st.integers(base - 500, base + 7500)))
    t1 = t0 + draw(st.one_of(st.integers(1, 8000), st.sampled_from([1, 2, 3])))
    return profile_from_xspace(builder.build()), t0, t1, draw(st.integers(1, 60))


@given(traces())
def test_window_rule_on_generated_traces(trace: tuple[object, int, int, int]) -> None:
    profile, t0, t1, res = trace
    assert_window_rule(profile, build_trace_index(profile), t0, t1, res)  # type: ignore[arg-type]
