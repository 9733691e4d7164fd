"""Golden tests against XProf 2.24.2 run here, on profiles built in code: the figures the
default tier asserts for them are XProf's own (issue #27, item 5)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.stats import build_step_db
from stepscope.stats.steps.pairing import HostSteps, xprof_rows
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import (
    MS,
    build,
    executor_pair,
    instant_before_step,
    tf_data_prefetch,
)
from tests.support.xprof_live import step_rows, xprof_hosts_tool, xprof_tool

pytestmark = [pytest.mark.integration, pytest.mark.untimed]


# XProf's overview fields of the step breakdown's categories
XPROF_FIELDS = {
    "input": "infeedTimeMs",
    "host_compute": "hostComputeTimeMs",
    "other": "otherTimeMs",
}


def _matches_xprof(builder: XSpaceBuilder, folder: Path, *categories: str) -> list[str]:
    """Asserts stepscope's steps of ``builder`` are XProf's (names, times, ``categories``);
    returns the step names."""
    reference = step_rows(xprof_tool(builder, "overview_page", folder))
    db = build_step_db(build(builder))
    cats = db.category_ns()
    assert list(db.names) == list(reference)
    for k, step in enumerate(db.names):
        ref = reference[step]
        assert db.dur_ns[k] / 1e6 == pytest.approx(ref["stepTimeMs"], abs=1e-6)
        for category in categories:
            got = cats[category][k] / 1e6
            assert got == pytest.approx(ref[XPROF_FIELDS[category]], abs=1e-6), (step, category)
    return list(db.names)


def test_instant_before_the_step_matches_xprof(tmp_path: Path) -> None:
    pytest.importorskip("xprof")
    _matches_xprof(instant_before_step(), tmp_path, "host_compute", "other")


def test_tf_data_prefetch_matches_xprof(tmp_path: Path) -> None:
    """The prefetch thread's work is in no step (XProf's step grouping never links tf.data
    produce/consume events): the figures test_step_groups asserts are XProf's."""
    pytest.importorskip("xprof")
    _matches_xprof(tf_data_prefetch(), tmp_path, "input", "host_compute", "other")


@pytest.mark.parametrize("reached", ["first", "last"])
def test_the_executor_of_an_iterator_matches_xprof(tmp_path: Path, reached: str) -> None:
    """Two Process events share the iterator's (id, iter_num), one reached from the step:
    XProf links the iterator to the last of them (test_step_groups asserts its figures)."""
    pytest.importorskip("xprof")
    _matches_xprof(executor_pair(reached), tmp_path, "input", "host_compute", "other")


def _tf_host(starts_ms: list[int], durs_ms: list[int]) -> XSpaceBuilder:
    """A TF-like host whose steps (markers with their function run and its ops) start and
    last as given."""
    builder = XSpaceBuilder("synthetic")
    host = builder.plane("/host:CPU")
    main, worker = host.line(1, "python"), host.line(2, "tf_Compute")
    for k, (t, d) in enumerate(zip(starts_ms, durs_ms, strict=True)):
        t0, dur = t * MS, d * MS
        main.event("train", t0, dur, {"step_num": k, "_r": 1})
        main.event("FunctionRun", t0 + dur // 10, dur // 2, {"_r": 1, "_pt": 2, "_p": 100 + k})
        worker.event("ExecutorState::Process", t0 + dur // 10, dur // 2, {"_ct": 2, "_c": 100 + k})
        worker.event("model/dense/MatMul:MatMul", t0 + dur // 5, dur // 4)
    return builder


def test_xprof_pairs_hosts_against_the_one_spanning_the_least_time(tmp_path: Path) -> None:
    """Three hosts: 'late' spans the least (390 ms) but ends last; 'c' is 'a' one step
    later. XProf makes 'late' the chief and pairs every host from its first step (3 pod
    steps); 'a' as the chief would pair 'c' one step off and leave 2."""
    pytest.importorskip("xprof")
    hosts = {
        "a": _tf_host([1000, 1100, 1200, 1300], [100] * 4),
        "late": _tf_host([2000, 2120, 2250], [120, 130, 140]),
        "c": _tf_host([1100, 1200, 1300, 1400], [100, 100, 100, 101]),
    }
    overview = xprof_hosts_tool(hosts, "overview_page", tmp_path)
    dbs = [build_step_db(build(b)) for b in hosts.values()]
    rows = xprof_rows(
        [HostSteps(h, d.step_num, d.start_ns, d.dur_ns) for h, d in zip(hosts, dbs, strict=True)]
    )
    assert [len(r) for r in rows] == [len(step_rows(overview))] * 3 == [3] * 3
    # XProf's step time is the slowest host's per pod step: 120, 130, 140 ms
    slowest = np.max([d.dur_ns[r] for d, r in zip(dbs, rows, strict=True)], axis=0) / MS
    figures = overview[1]["p"]
    assert slowest.mean() == pytest.approx(float(figures["steptime_ms_average"]))
    assert slowest.min() == pytest.approx(float(figures["steptime_ms_minimum"]))
    assert slowest.max() == pytest.approx(float(figures["steptime_ms_maximum"]))


@pytest.mark.parametrize("level", [1, 0, "1"])
def test_step_markers_of_any_root_level_match_xprof(tmp_path: Path, level: object) -> None:
    """XProf makes steps of `train` events whatever their `_r` (0 and a text too)."""
    pytest.importorskip("xprof")
    builder = XSpaceBuilder("synthetic")
    main = builder.plane("/host:CPU").line(1, "python")
    for k in range(4):
        t0 = 1_000 * MS + k * 20 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": level})
        main.event("model/dense/MatMul", t0 + 2 * MS, 6 * MS)
    assert _matches_xprof(builder, tmp_path) == [f"train {k}" for k in range(4)]
