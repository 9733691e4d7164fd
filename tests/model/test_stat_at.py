"""Profile.stat_events, stat_present and stat_at: the dense `stat` column's answers for some events,
without building it (the oracle here is `stat` itself, on every stat key of real fixtures)."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.model import Profile
from stepscope.model.profile import StatColumn
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.gpu_fixtures import build, fixture_profile, tf_profile
from tests.support.native import c_off, c_on


def _keys(profile: Profile) -> list[str]:
    ids = np.union1d(np.unique(profile.stats.key), np.unique(profile.meta_stats.key))
    return [profile.strings[int(i)] for i in ids.tolist()]


def _same(
    profile: Profile, name: str, events: np.ndarray, sparse: StatColumn | None = None
) -> None:
    dense = profile.stat(name)
    sparse = profile.stat_at(name, events) if sparse is None else sparse
    np.testing.assert_array_equal(sparse.present, dense.present[events], err_msg=name)
    np.testing.assert_array_equal(sparse.kind, dense.kind[events], err_msg=name)
    np.testing.assert_array_equal(sparse.value, dense.value[events], err_msg=name)
    np.testing.assert_array_equal(sparse.as_int(), dense.as_int()[events], err_msg=name)


@pytest.mark.parametrize(
    "profile",
    [
        pytest.param(lambda: tf_profile("ctl"), id="tf-ctl"),
        pytest.param(lambda: tf_profile("keras_marked"), id="tf-keras_marked"),
        pytest.param(lambda: fixture_profile("xspace/gpu_jax_fused_attention.xplane.pb"), id="jax"),
        pytest.param(lambda: fixture_profile("kineto/a100_triton_tiny.json.gz"), id="kineto"),
    ],
)
def test_sparse_stats_equal_the_dense_column_for_every_key(profile: object) -> None:
    p: Profile = profile()  # type: ignore[operator]
    rng = np.random.default_rng(7)
    subset = np.sort(rng.choice(p.n_events, size=min(p.n_events, 500), replace=False))
    shuffled_with_repeats = rng.integers(0, p.n_events, size=300)
    keys = _keys(p)
    assert len(keys) > 5
    for name in [*keys, "no such stat"]:
        with_stat = p.stat_events(name)
        np.testing.assert_array_equal(with_stat, np.flatnonzero(p.stat(name).present), name)
        np.testing.assert_array_equal(p.stat_present(name), p.stat(name).present, name)
        for events in (subset, shuffled_with_repeats, with_stat, np.zeros(0, np.int64)):
            _same(p, name, events)
        for events in (subset, np.arange(p.n_events), with_stat):  # ascending, distinct
            expected = np.flatnonzero(p.stat(name).present[events])
            positions, column = p.stat_among(name, events)
            np.testing.assert_array_equal(positions, expected, name)
            _same(p, name, events[expected], column)


def test_metadata_stats_and_an_event_overriding_them() -> None:
    builder = XSpaceBuilder()
    plane = builder.plane("/host:CPU")
    line = plane.line(1, "thread")
    # "op" carries level 3 on its metadata; the second event overrides it
    op = plane.event_metadata_id("op", stats={"level": 3})
    line.add_event(op, 0, 10, None)
    line.add_event(op, 20, 10, {"level": 5})
    line.event("other", 40, 10, stats={"level": 1})
    line.event("other", 60, 10)
    p = build(builder)
    events = np.arange(p.n_events)
    assert p.stat_events("level").tolist() == np.flatnonzero(p.stat("level").present).tolist()
    assert p.stat_present("level").tolist() == [True, True, True, False]
    _same(p, "level", events)
    _same(p, "level", events[::-1])
    _same(p, "level", np.array([3, 1, 1]))
    assert p.stat_at("level", events).as_int().tolist() == [3, 5, 1, -1]
    positions, column = p.stat_among("level", events[1:])
    assert positions.tolist() == [0, 1] and column.as_int().tolist() == [5, 1]


@pytest.mark.parametrize("n_events", [41, 10**9])  # dense position map, binary searches
def test_positions_by_either_method(n_events: int) -> None:
    from stepscope.model.profile import _positions

    events = np.array([2, 5, 9, 30, 31])
    targets = np.array([0, 5, 5, 9, 10, 31, 40])
    pos, found = _positions(events, targets, n_events)
    assert pos.tolist() == [1, 1, 2, 4] and found is not None and found.tolist() == [1, 2, 3, 5]
    pos, found = _positions(events, np.array([5, 9, 9, 31]), n_events)  # all found
    assert pos.tolist() == [1, 2, 2, 4]
    assert found is None if n_events == 41 else found.tolist() == [0, 1, 2, 3]  # type: ignore[union-attr]


@pytest.mark.parametrize("pure", [False, True])
def test_each_keys_rows_know_their_events(pure: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every key's rows of a real fixture (events without stats between them) with the events
    that own them: the C galloping search and NumPy's binary searches."""
    (c_off if pure else c_on)(monkeypatch, "_fastwire")
    profile = tf_profile("ctl")
    profile.__dict__.pop("_stat_rows", None)  # found again under this setting
    counts = np.diff(profile.stat_start)
    owner = np.repeat(np.arange(profile.n_events), counts)
    assert (counts == 0).any() and len(owner) > 1000
    for key in np.unique(profile.stats.key).tolist():
        rows, owners = profile._rows_of(key)
        np.testing.assert_array_equal(rows, np.flatnonzero(profile.stats.key == key))
        np.testing.assert_array_equal(owners, owner[rows])
        assert owners.dtype == rows.dtype == np.int32


def test_events_owning_the_rows_read_their_last_row_even_asked_as_the_rows_owners() -> None:
    """An event with the key twice (its last row counts): asked for the events in the
    order of the key's rows, which repeats that event, `stat_at` does not take the rows as the
    events' own; asked for each event once, it reads the rows; metadata values are
    overridden either way."""
    builder = XSpaceBuilder()
    plane = builder.plane("/host:CPU")
    line = plane.line(1, "thread")
    op = plane.event_metadata_id("op", stats={"level": 3})
    line.add_event(op, 0, 10, {"level": 4})
    line.add_event(op, 20, 10, {"level": 5})
    line.event("other", 40, 10, {"level": 1.5})
    space = builder.build()
    event = space.planes[0].lines[0].events[1]
    event.stats.add(metadata_id=event.stats[0].metadata_id, int64_value=6)  # level again
    from stepscope.model import profile_from_xspace

    p = profile_from_xspace(space)
    key = p.strings.id_of("level")
    assert p._rows_of(key)[1].tolist() == [0, 1, 1, 2]
    _same(p, "level", np.array([0, 1, 1, 2]))
    _same(p, "level", np.array([0, 1, 2]))
    _same(p, "level", np.array([1, 1, 2]))
    assert p.stat_at("level", np.array([0, 1, 1, 2])).as_int().tolist() == [4, 6, 6, 1]
    assert p.stat_at("level", p.stat_events("level")).as_int().tolist() == [4, 6, 1]
