"""XProf's step groups (`stepscope.stats.steps.groups`) on profiles built in code: which
events each root reaches (nesting, producer/consumer contexts, executor to iterator, launch to
kernel), which events are roots and in what order, and what reaches nothing. Issue #34: the
survivors of the mutation run of ``groups.py`` (docs/testing.md, "Sixth pass (mutE)")."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from stepscope.model import Profile
from stepscope.stats import build_step_db
from stepscope.stats.steps.groups import build_groups
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build, executor_pair, tf_data_prefetch


def _named(profile: Profile, name: str) -> np.ndarray:
    return np.flatnonzero(profile.name == profile.strings.id_of(name))


def test_tf_data_producer_work_is_no_steps_as_in_xprof() -> None:
    """The prefetch thread's iterator is not reached from the step that consumes its element
    (it was: 5 ms of "host compute" per step that XProf counts as "All others")."""
    profile = build(tf_data_prefetch())
    groups = build_groups(profile, _named(profile, "train"))
    assert groups.label[_named(profile, "Iterator::Root::Prefetch")].tolist() == [0, 1, 2, 3]
    assert groups.label[_named(profile, "Iterator::Root::Prefetch::Map")].tolist() == [-1] * 4
    assert groups.label[_named(profile, "PrefetchProduce")].tolist() == [-1] * 4
    db = build_step_db(profile)
    cats = {k: (v / MS).tolist() for k, v in db.category_ns().items() if v.any()}
    assert cats == {"input": [1.0] * 4, "host_compute": [1.0] * 4, "other": [8.0] * 4}


@pytest.mark.parametrize(
    ("reached", "want"),
    [
        ("last", {"input": [3.0] * 4, "host_compute": [2.0] * 4, "other": [5.0] * 4}),
        ("first", {"host_compute": [2.0] * 4, "other": [8.0] * 4}),
    ],
)
def test_the_iterator_follows_the_last_executor_of_its_key(
    reached: str, want: dict[str, list[float]]
) -> None:
    """Of the Process events sharing an (id, iter_num), XProf links the iterator's wait to
    the last one only (its connect map keeps the last it meets): the wait is the step's when
    that one is reached, and no step's when only an earlier one is (it was the other way)."""
    profile = build(executor_pair(reached))
    groups = build_groups(profile, _named(profile, "train"))
    waits = groups.label[_named(profile, "IteratorGetNextOp::DoCompute")].tolist()
    assert waits == ([0, 1, 2, 3] if reached == "last" else [-1] * 4)
    db = build_step_db(profile)
    assert {k: (v / MS).tolist() for k, v in db.category_ns().items() if v.any()} == want


# --- Profiles given event by event ----------------------------------------------------------

# (line, name, start ms, duration ms, stats); lines 1-3 are host threads, 7 a GPU stream
Event = tuple[int, str, float, float, dict[str, Any]]


def _profile(events: list[Event]) -> Profile:
    builder = XSpaceBuilder("groups")
    host = builder.plane("/host:CPU")
    lines = {k: host.line(k, f"thread {k}") for k in (1, 2, 3)}
    if any(line == 7 for line, *_ in events):
        lines[7] = builder.plane("/device:GPU:0").line(7, "stream 7")
    for line, name, start_ms, dur_ms, stats in events:
        lines[line].event(name, int(start_ms * MS), int(dur_ms * MS), stats)
    return build(builder)


def _labels(profile: Profile, step_roots: Any = ()) -> dict[str, int]:
    """Each event's group by its name (names are unique in these profiles)."""
    groups = build_groups(profile, step_roots)
    return {
        profile.strings[int(name)]: int(label)
        for name, label in zip(profile.name, groups.label, strict=True)
    }


def test_a_profile_without_roots_has_no_groups() -> None:
    profile = _profile([(1, "step", 0, 10, {}), (1, "op", 1, 2, {"_p": 5, "_pt": 1})])
    groups = build_groups(profile, np.zeros(0, np.int64))
    assert groups.label.dtype == np.int64 and groups.label.tolist() == [-1, -1]
    assert groups.root.dtype == np.int64 and groups.root.tolist() == []


def test_every_r_is_a_root_and_level_zero_ranks_last() -> None:
    """XProf's ``IsRoot`` is "has an ``_r`` stat": ``_r=0`` is a root of level 0, and so is
    an ``_r`` that is no integer (its integer value is 0); level 0 ranks after level 1
    (these were no roots: their events reached nothing)."""
    profile = _profile(
        [
            (1, "text", 0, 10, {"_r": "1"}),
            (1, "inside text", 1, 2, {}),
            (2, "zero", 5, 10, {"_r": 0}),
            (2, "inside zero", 6, 2, {}),
            (3, "root", 20, 10, {"_r": 1}),
        ]
    )
    assert _labels(profile) == {
        "text": 1,
        "inside text": 1,
        "zero": 2,
        "inside zero": 2,
        "root": 0,
    }
    assert build_groups(profile, np.zeros(0)).root.tolist() == [4, 0, 2]


def test_step_roots_given_as_a_list_join_the_r_roots() -> None:
    """The caller's step roots may be any sequence of event indices, empty included; a step
    root that is also an ``_r`` root is one root."""
    profile = _profile([(1, "root", 0, 10, {"_r": 1}), (2, "marker", 20, 10, {})])
    assert _labels(profile, []) == {"root": 0, "marker": -1}
    assert _labels(profile, [1, 0]) == {"root": 0, "marker": 1}
    assert build_groups(profile, np.array([0])).root.tolist() == [0]


def test_higher_root_levels_group_first_then_earlier_roots() -> None:
    """XProf sorts roots by level, highest first, then by start: a level-2 root starting
    last is group 0; a level-1 root it reaches (a context) starts no group of its own."""
    profile = _profile(
        [
            (1, "early", 0, 5, {"_r": 1}),
            (1, "second", 10, 5, {"_r": 1, "_ct": 3, "_c": 9}),
            (2, "late, level 2", 20, 5, {"_r": 2, "_pt": 3, "_p": 9}),
            (3, "step", 30, 5, {}),
        ]
    )
    assert _labels(profile, [3]) == {"early": 1, "second": 0, "late, level 2": 0, "step": 2}
    assert build_groups(profile, np.array([3])).root.tolist() == [2, 0, 3]


def test_a_step_root_without_r_is_level_one() -> None:
    """A caller's step root with no ``_r`` ranks with the level-1 roots, by start, and
    before level 0."""
    profile = _profile(
        [(1, "marker", 10, 5, {}), (2, "root", 0, 5, {"_r": 1}), (3, "zero", 5, 5, {"_r": 0})]
    )
    assert build_groups(profile, np.array([0])).root.tolist() == [1, 0, 2]


def test_roots_of_tf_data_functions_start_no_group() -> None:
    """A root whose ``id`` is the id of a tf.data function run
    (``InstantiatedCapturedFunction::Run``) is the pipeline's, not a step: XProf skips it.
    A root with another id, or none, is kept."""
    profile = _profile(
        [
            (1, "InstantiatedCapturedFunction::Run", 0, 1, {"id": 5}),
            (1, "map fn", 2, 8, {"_r": 1, "id": 5}),
            (1, "inside map fn", 3, 2, {}),
            (2, "session", 0, 10, {"_r": 1, "id": 6}),
            (3, "no id", 0, 10, {"_r": 1}),
        ]
    )
    labels = _labels(profile)
    assert labels["map fn"] == -1 and labels["inside map fn"] == -1
    assert labels["session"] >= 0 and labels["no id"] >= 0


def test_an_async_event_is_not_adopted_by_the_event_around_it() -> None:
    """``_a`` marks an async event: XProf leaves it out of the nesting on its thread, so the
    root around it does not reach it; the events after it nest in the root as usual."""
    profile = _profile(
        [
            (1, "root", 0, 10, {"_r": 1}),
            (1, "async", 1, 3, {"_a": 1}),
            (1, "inside async", 2, 1, {}),
            (1, "after", 6, 1, {}),
        ]
    )
    assert _labels(profile) == {"root": 0, "async": -1, "inside async": 0, "after": 0}


def test_an_async_event_on_a_thread_without_roots_is_not_nested_either() -> None:
    """A thread reached only through a context: its async events stay out of the nesting."""
    profile = _profile(
        [
            (1, "root", 0, 10, {"_r": 1, "_pt": 1, "_p": 4}),
            (2, "consumer", 1, 8, {"_ct": 1, "_c": 4}),
            (2, "async", 2, 3, {"_a": 1}),
            (3, "alone", 2, 3, {"_a": 1}),
        ]
    )
    assert _labels(profile) == {"root": 0, "consumer": 0, "async": -1, "alone": -1}


def test_a_context_with_64_producers_and_64_consumers_links_nothing() -> None:
    """XProf skips a context id with at least 64 producers and 64 consumers (a shared
    id, not a link); 63 of either still link."""

    def events(producers: int, consumers: int) -> list[Event]:
        found: list[Event] = [(1, "root", 0, 1000, {"_r": 1})]
        found += [(1, f"p{k}", k, 0.5, {"_pt": 2, "_p": 7}) for k in range(producers)]
        found += [(2, f"c{k}", k, 0.5, {"_ct": 2, "_c": 7}) for k in range(consumers)]
        return found

    assert set(_labels(_profile(events(64, 64))).values()) == {0, -1}
    assert _labels(_profile(events(64, 64)))["c0"] == -1
    assert set(_labels(_profile(events(63, 64))).values()) == {0}
    assert set(_labels(_profile(events(64, 63))).values()) == {0}


def test_context_ids_past_2_to_the_53_stay_apart() -> None:
    """Context and step ids are 64-bit: ids one apart near 2**62 are two contexts (a
    float64 key would merge them)."""
    big = 1 << 62
    profile = _profile(
        [
            (1, "root", 0, 10, {"_r": 1, "_pt": 1, "_p": big}),
            (2, "consumer", 1, 2, {"_ct": 1, "_c": big}),
            (3, "other consumer", 1, 2, {"_ct": 1, "_c": big + 1}),
            (1, "ExecutorState::Process", 5, 2, {"id": big, "iter_num": 0}),
            (2, "IteratorGetNextOp::DoCompute", 5, 2, {"id": big + 1, "iter_num": 0}),
            (3, "IteratorGetNextAsOptionalOp::DoCompute", 5, 2, {"id": big, "iter_num": 0}),
        ]
    )
    assert _labels(profile) == {
        "root": 0,
        "consumer": 0,
        "other consumer": -1,
        "ExecutorState::Process": 0,
        "IteratorGetNextOp::DoCompute": -1,
        "IteratorGetNextAsOptionalOp::DoCompute": 0,
    }


def test_an_iterator_needs_both_stats_on_both_sides() -> None:
    """The executor link needs ``id`` and ``iter_num`` on the Process and on the iterator
    (a missing one is no key, not the value -1)."""
    profile = _profile(
        [
            (1, "root", 0, 10, {"_r": 1}),
            (1, "ExecutorState::Process", 1, 4, {"id": 3}),
            (2, "IteratorGetNextOp::DoCompute", 1, 2, {"id": 3, "iter_num": -1}),
            (1, "IteratorGetNextAsOptionalOp::DoCompute", 6, 2, {"id": 4}),
        ]
    )
    labels = _labels(profile)
    assert labels["ExecutorState::Process"] == 0
    assert labels["IteratorGetNextOp::DoCompute"] == -1
    profile = _profile(
        [
            (1, "root", 0, 10, {"_r": 1}),
            (1, "ExecutorState::Process", 1, 4, {"id": 3, "iter_num": -1}),
            (2, "IteratorGetNextOp::DoCompute", 1, 2, {"id": 3}),
        ]
    )
    assert _labels(profile)["IteratorGetNextOp::DoCompute"] == -1


def test_an_iterator_is_reached_through_an_executor_only() -> None:
    """Without any ``ExecutorState::Process``, an iterator sharing a root's ``id`` and
    ``iter_num`` is not linked to it (the root is no executor)."""
    profile = _profile(
        [
            (1, "root", 0, 10, {"_r": 1, "id": 3, "iter_num": 0}),
            (2, "IteratorGetNextOp::DoCompute", 1, 2, {"id": 3, "iter_num": 0}),
        ]
    )
    assert _labels(profile) == {"root": 0, "IteratorGetNextOp::DoCompute": -1}


def test_a_launch_reaches_its_kernels_and_no_other() -> None:
    """A host event with a ``correlation_id`` reaches the device events with that id."""
    profile = _profile(
        [
            (1, "root", 0, 10, {"_r": 1}),
            (1, "cudaLaunchKernel", 1, 1, {"correlation_id": 11}),
            (7, "kernel", 3, 2, {"correlation_id": 11}),
            (7, "other kernel", 6, 2, {"correlation_id": 12}),
        ]
    )
    assert _labels(profile) == {
        "root": 0,
        "cudaLaunchKernel": 0,
        "kernel": 0,
        "other kernel": -1,
    }


def test_launches_whose_kernels_are_missing_link_nothing() -> None:
    """Correlation ids on the host only (the device trace was lost), beside a context link:
    no edge comes of them, and the event before the root stays out of every group."""
    profile = _profile(
        [
            (1, "before", 0, 1, {}),
            (1, "root", 2, 10, {"_r": 1, "_pt": 1, "_p": 2}),
            (1, "cudaLaunchKernel", 3, 1, {"correlation_id": 11}),
            (2, "consumer", 3, 2, {"_ct": 1, "_c": 2}),
        ]
    )
    assert _labels(profile) == {"before": -1, "root": 0, "cudaLaunchKernel": 0, "consumer": 0}


def test_half_a_context_links_nothing() -> None:
    """A producer type without its id (or an id without its type) is no producer: neither
    the first event of the profile nor the last."""
    profile = _profile(
        [
            (1, "type only, first", 0, 1, {"_pt": 2}),
            (1, "root", 2, 10, {"_r": 1, "_pt": 3, "_p": 5}),
            (2, "consumer", 3, 2, {"_ct": 2, "_c": -1}),
            (2, "id only", 6, 1, {"_p": 1}),
            (3, "type only, last", 20, 1, {"_pt": 4}),
            (3, "consumer of the last", 21, 1, {"_ct": 4, "_c": -1}),
        ]
    )
    labels = _labels(profile)
    assert labels["root"] == 0
    assert labels["consumer"] == -1 and labels["consumer of the last"] == -1
    # no producer id anywhere in the profile
    profile = _profile(
        [(1, "root", 0, 10, {"_r": 1, "_pt": 2}), (2, "consumer", 1, 2, {"_ct": 2, "_c": -1})]
    )
    assert _labels(profile) == {"root": 0, "consumer": -1}
