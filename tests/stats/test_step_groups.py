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


def test_every_r_is_a_root_and_level_zero_ranks_last() -> None:
    """XProf's ``IsRoot`` is "has an ``_r`` stat": ``_r=0`` is a root of level 0, and so is
    an ``_r`` that is no integer (its integer value is 0); level 0 ranks after level 1
    (these were no roots: their events reached nothing)."""
    profile = _profile(
        [
            (1, "zero", 0, 10, {"_r": 0}),
            (1, "inside zero", 1, 2, {}),
            (2, "text", 5, 10, {"_r": "1"}),
            (2, "inside text", 6, 2, {}),
            (3, "root", 20, 10, {"_r": 1}),
        ]
    )
    assert _labels(profile) == {
        "zero": 1,
        "inside zero": 1,
        "text": 2,
        "inside text": 2,
        "root": 0,
    }
    assert build_groups(profile, np.zeros(0)).root.tolist() == [4, 0, 2]


def test_a_step_root_without_r_is_level_one() -> None:
    """A caller's step root with no ``_r`` ranks with the level-1 roots, by start, and
    before level 0."""
    profile = _profile(
        [(1, "marker", 10, 5, {}), (2, "root", 0, 5, {"_r": 1}), (3, "zero", 5, 5, {"_r": 0})]
    )
    assert build_groups(profile, np.array([0])).root.tolist() == [1, 0, 2]
