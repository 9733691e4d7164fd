"""The step database reads its events' end times without the profile's cached end column
(8 B/event, alive under its peaks otherwise: decision 77)."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.model import Profile, open_file
from stepscope.stats import build_step_db
from tests.support.fixtures import FIXTURES, tf_xplane

TRACES = [tf_xplane("ctl"), next((FIXTURES / "jax" / "cnn_cpu").rglob("*.xplane.pb"))]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.parts[-5])
def test_step_database_makes_no_end_column(path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = build_step_db(open_file(str(path)))
    profile = open_file(str(path))

    def no_column(self: Profile) -> np.ndarray:
        raise AssertionError("the cached end column was made")

    with monkeypatch.context() as m:
        m.setattr(Profile, "end_ns", property(no_column))
        db = build_step_db(profile)
    assert db.n_steps == expected.n_steps > 0
    assert np.array_equal(db.type_ns, expected.type_ns)
    assert np.array_equal(db.start_ns, expected.start_ns)


def test_end_at_reads_the_ends_of_some_events() -> None:
    profile = open_file(str(TRACES[0]))
    events = np.array([5, 0, 5, profile.n_events - 1])
    expected = profile.start_ns[events] + profile.dur_ns[events]
    assert np.array_equal(profile.end_at(events), expected)
    assert "end_ns" not in profile.__dict__
    assert np.array_equal(profile.end_at(events.astype(np.int32)), expected)
    profile.end_ns  # noqa: B018 - cached now: read from it
    assert np.array_equal(profile.end_at(events), expected)
    mask = np.zeros(profile.n_events, dtype=bool)
    mask[events] = True
    del profile.__dict__["end_ns"]
    assert np.array_equal(profile.end_at(mask), profile.start_ns[mask] + profile.dur_ns[mask])
    assert "end_ns" not in profile.__dict__


def test_time_columns_that_are_views_are_read_as_they_are() -> None:
    """Columns with a stride (a view of a wider array) go to the C pairs as copies."""
    expected = build_step_db(open_file(str(TRACES[0])))
    profile = open_file(str(TRACES[0]))
    for name in ("start_ns", "dur_ns"):
        column = getattr(profile, name)
        wide = np.zeros(2 * len(column), np.int64)
        wide[::2] = column
        setattr(profile, name, wide[::2])
    db = build_step_db(profile)
    assert np.array_equal(db.type_ns, expected.type_ns) and db.n_steps == expected.n_steps
