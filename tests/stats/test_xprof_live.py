"""Golden tests against XProf 2.24.2 run here, on profiles built in code: the figures the
default tier asserts for them are XProf's own (issue #27, item 5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.stats import build_step_db
from tests.support.analysis import build, executor_pair, instant_before_step, tf_data_prefetch
from tests.support.xprof_live import step_rows, xprof_tool

pytestmark = pytest.mark.integration


def test_instant_before_the_step_matches_xprof(tmp_path: Path) -> None:
    pytest.importorskip("xprof")
    builder = instant_before_step()
    reference = step_rows(xprof_tool(builder, "overview_page", tmp_path))
    db = build_step_db(build(builder))
    cats = db.category_ns()
    assert list(db.names) == list(reference)
    for k, step in enumerate(db.names):
        ref = reference[step]
        assert db.dur_ns[k] / 1e6 == pytest.approx(ref["stepTimeMs"], abs=1e-6)
        assert cats["host_compute"][k] / 1e6 == pytest.approx(ref["hostComputeTimeMs"], abs=1e-6)
        assert cats["other"][k] / 1e6 == pytest.approx(ref["otherTimeMs"], abs=1e-6)


def test_tf_data_prefetch_matches_xprof(tmp_path: Path) -> None:
    """The prefetch thread's work is in no step (XProf's step grouping never links tf.data
    produce/consume events): the figures test_step_groups asserts are XProf's."""
    pytest.importorskip("xprof")
    builder = tf_data_prefetch()
    reference = step_rows(xprof_tool(builder, "overview_page", tmp_path))
    db = build_step_db(build(builder))
    cats = db.category_ns()
    assert list(db.names) == list(reference)
    for k, step in enumerate(db.names):
        ref = reference[step]
        assert db.dur_ns[k] / 1e6 == pytest.approx(ref["stepTimeMs"], abs=1e-6)
        assert cats["input"][k] / 1e6 == pytest.approx(ref["infeedTimeMs"], abs=1e-6)
        assert cats["host_compute"][k] / 1e6 == pytest.approx(ref["hostComputeTimeMs"], abs=1e-6)
        assert cats["other"][k] / 1e6 == pytest.approx(ref["otherTimeMs"], abs=1e-6)


@pytest.mark.parametrize("reached", ["first", "last"])
def test_the_executor_of_an_iterator_matches_xprof(tmp_path: Path, reached: str) -> None:
    """Two Process events share the iterator's (id, iter_num), one reached from the step:
    XProf links the iterator to the last of them (test_step_groups asserts its figures)."""
    pytest.importorskip("xprof")
    builder = executor_pair(reached)
    reference = step_rows(xprof_tool(builder, "overview_page", tmp_path))
    db = build_step_db(build(builder))
    cats = db.category_ns()
    assert list(db.names) == list(reference)
    for k, step in enumerate(db.names):
        ref = reference[step]
        assert cats["input"][k] / 1e6 == pytest.approx(ref["infeedTimeMs"], abs=1e-6)
        assert cats["host_compute"][k] / 1e6 == pytest.approx(ref["hostComputeTimeMs"], abs=1e-6)
        assert cats["other"][k] / 1e6 == pytest.approx(ref["otherTimeMs"], abs=1e-6)
