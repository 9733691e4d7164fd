"""XProf's step groups (`stepscope.stats.steps.groups`) on profiles built in code: which
events each root reaches (nesting, producer/consumer contexts, executor to iterator, launch to
kernel), which events are roots and in what order, and what reaches nothing. Issue #34: the
survivors of the mutation run of ``groups.py`` (docs/testing.md, "Sixth pass (mutE)")."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.model import Profile
from stepscope.stats import build_step_db
from stepscope.stats.steps.groups import build_groups
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
