"""Helpers of the analysis tests (steps, breakdown, op metrics, overview...): real fixtures
parsed once per session, XProf's reference figures read from the fixtures, synthetic traces."""

from __future__ import annotations

import dataclasses
import re
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TypeVar

import numpy as np
import pytest

from stepscope.model import Profile, profile_from_xspace
from stepscope.model.profile import Stats
from stepscope.xspace.builder import XSpaceBuilder

# Shared with the other stats/tools tests, so each fixture is parsed once per session.
from tests.support.gpu_fixtures import fixture_profile, tf_profile

__all__ = ["fixture_profile", "tf_profile"]

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
TF_WITH_STEPS = ("ctl", "ctl_opt", "keras_marked", "remote")
MS = 1_000_000
T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class XprofSummary:
    steps: int
    avg_ms: float
    input_percent: float | None  # None when XProf found no steps
    classification: str  # "high" | "moderate" | "potential" | "no" | "unknown"


_CLASSES = {"HIGHLY": "high", "MODERATELY": "moderate", "POTENTIALLY": "potential", "NOT": "no"}


@cache
def xprof_summary(name: str) -> XprofSummary:
    """XProf's figures for a TF fixture, read from its ``xprof_reference/summary.txt``."""
    text = (FIXTURES / "tf" / name / "xprof_reference" / "summary.txt").read_text()
    steps = int(re.search(r"^\s*steps: (\d+)", text, re.M).group(1))  # type: ignore[union-attr]
    avg = float(re.search(r"steptime_ms_average: ([\d.]+)", text).group(1))  # type: ignore[union-attr]
    conclusion = re.search(r"input_conclusion: (.*)", text).group(1)  # type: ignore[union-attr]
    kind = re.search(r"Your program is (\w+)", conclusion)
    classification = _CLASSES[kind.group(1)] if kind else "unknown"
    percent = None
    if classification in ("high", "moderate"):
        percent = float(re.search(r"([\d.]+)% of the total step time", conclusion).group(1))  # type: ignore[union-attr]
    elif classification == "potential":
        infeed = float(re.search(r"infeed_time_ms_avg: ([\d.]+)", text).group(1))  # type: ignore[union-attr]
        percent = 100.0 * infeed / avg
    return XprofSummary(steps, avg, percent, classification)


def without_events(profile: Profile, drop: np.ndarray) -> Profile:
    """A copy of ``profile`` without the events where ``drop`` is True."""
    keep = ~drop
    counts = np.diff(profile.stat_start)
    keep_rows = np.repeat(keep, counts)
    new_counts = counts[keep]
    stat_start = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
    np.cumsum(new_counts, out=stat_start[1:])
    per_line = np.bincount(profile.line[keep], minlength=len(profile.lines))
    first = np.concatenate([[0], np.cumsum(per_line)[:-1]])
    lines = [
        dataclasses.replace(
            ln, first_event=int(first[ln.index]), event_count=int(per_line[ln.index])
        )
        for ln in profile.lines
    ]
    stats = Stats(
        profile.stats.key[keep_rows], profile.stats.kind[keep_rows], profile.stats.value[keep_rows]
    )
    return dataclasses.replace(
        profile,
        lines=lines,
        line=profile.line[keep],
        meta=profile.meta[keep],
        name=profile.name[keep],
        start_ns=profile.start_ns[keep],
        dur_ns=profile.dur_ns[keep],
        stat_start=stat_start,
        stats=stats,
    )


def build(builder: XSpaceBuilder) -> Profile:
    return profile_from_xspace(builder.build(), source="<synthetic>", hostname="synthetic")


def cpu_training(
    steps: int = 4,
    step_ms: int = 10,
    input_ms: int = 6,
    markers: bool = True,
    marker_name: str = "train",
    marker_stats: bool = True,
) -> XSpaceBuilder:
    """A TF-like CPU loop: per step, a marker spanning IteratorGetNext (input_ms) then a
    function call whose ops run on a worker thread linked by a producer/consumer context."""
    builder = XSpaceBuilder("synthetic")
    host = builder.plane("/host:CPU")
    main = host.line(1, "python")
    worker = host.line(2, "tf_Compute")
    for k in range(steps):
        t0 = 1_000 * MS + k * step_ms * MS
        if markers:
            stats = {"step_num": k, "_r": 1} if marker_stats else {}
            main.event(marker_name, t0, step_ms * MS, stats)
        main.event("IteratorGetNextOp::DoCompute", t0, input_ms * MS)
        main.event("FunctionRun", t0 + input_ms * MS, MS // 10, {"_r": 1, "_pt": 2, "_p": 100 + k})
        worker.event(
            "ExecutorState::Process",
            t0 + input_ms * MS + MS // 5,
            2 * MS,
            {"_ct": 2, "_c": 100 + k},
        )
        worker.event("model/dense/MatMul:MatMul", t0 + input_ms * MS + MS // 4, MS)
    return builder


def instant_before_step(steps: int = 4) -> XSpaceBuilder:
    """A TF-like loop whose executor, linked to each step by its context, also ran 6 ms before
    the step opened, with a 0 ns `ThreadpoolListener::StartRegion` in it (as TensorFlow's
    Eigen pool threads record): the instant is the step's, but outside its span. XProf 2.24.2
    gives each 10 ms step 6 ms host compute, 4 ms "All Others" (test_xprof_live)."""
    builder = XSpaceBuilder("synthetic")
    host = builder.plane("/host:CPU")
    main = host.line(1, "python")
    worker = host.line(2, "tf_Compute")
    for k in range(steps):
        t0 = 1_000 * MS + k * 20 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("FunctionRun", t0 + 2 * MS, 6 * MS, {"_r": 1, "_pt": 2, "_p": 100 + k})
        worker.event("ExecutorState::Process", t0 + 2 * MS, 6 * MS, {"_ct": 2, "_c": 100 + k})
        worker.event("model/dense/MatMul:MatMul", t0 + 3 * MS, 4 * MS)
        worker.event("ExecutorState::Process", t0 - 6 * MS, MS, {"_ct": 2, "_c": 100 + k})
        worker.event("ThreadpoolListener::StartRegion", t0 - 6 * MS + MS // 2, 0)
    return builder


def count_step_db_builds(monkeypatch: pytest.MonkeyPatch, *also: ModuleType) -> list[int]:
    """Counts the calls of ``build_step_db`` (one entry each in the returned list), patched in
    its own module and in the modules ``also`` that imported it by name."""
    from stepscope.stats.steps import breakdown

    built: list[int] = []
    build = breakdown.build_step_db

    def counted(*args: object, **kwargs: object) -> breakdown.StepDb:
        built.append(1)
        return build(*args, **kwargs)  # type: ignore[arg-type]

    for module in (breakdown, *also):
        monkeypatch.setattr(module, "build_step_db", counted)
    return built


def tf_data_prefetch(steps: int = 4) -> XSpaceBuilder:
    """A TensorFlow CPU loop fed by a tf.data prefetch: each 10 ms step waits 1 ms in
    ``IteratorGetNext`` for the prefetch iterator (``id`` 7) to hand over element ``k``
    (``PrefetchConsume``), which a background thread made 2-7 ms into the step
    (``PrefetchProduce``, holding its input iterator, ``parent_id`` 7); then a 1 ms MatMul.
    XProf 2.24.2 gives each step 1 ms input, 1 ms host compute, 8 ms "All others": its step
    grouping does not link produce to consume, so the background thread's work is no step's
    (tests/stats/test_xprof_live.py runs it)."""
    builder = XSpaceBuilder("synthetic")
    host = builder.plane("/host:CPU")
    main = host.line(1, "python")
    prefetch = host.line(3, "tf_data_private_threadpool")
    for k in range(steps):
        t0 = 1_000 * MS + k * 10 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("IteratorGetNextOp::DoCompute", t0, MS)
        main.event("Iterator::Root::Prefetch", t0 + MS // 10, MS // 2, {"id": 7})
        main.event("PrefetchConsume", t0 + MS // 5, MS // 5, {"element_id": k})
        main.event("FunctionRun", t0 + 8 * MS, 2 * MS)
        main.event("model/dense/MatMul:MatMul", t0 + 8 * MS, MS)
        prefetch.event("PrefetchProduce", t0 + 2 * MS, 6 * MS, {"element_id": k})
        prefetch.event(
            "Iterator::Root::Prefetch::Map", t0 + 2 * MS, 5 * MS, {"id": 8, "parent_id": 7}
        )
    return builder


def executor_pair(reached: str, steps: int = 4) -> XSpaceBuilder:
    """A TensorFlow loop whose step runs two ``ExecutorState::Process`` with the same ``id``
    and ``iter_num`` (on two threads), only the ``first`` or the ``last`` (in event order)
    consuming the step's context, and an ``IteratorGetNextOp::DoCompute`` (3 ms) with that
    ``id``/``iter_num`` on a third thread. XProf 2.24.2 links the iterator to the last
    Process of its key only: with the last reached, each 10 ms step has 3 ms input, 2 ms host
    compute, 5 ms "All others"; with the first, 2 ms host compute and 8 ms "All others"."""
    builder = XSpaceBuilder("synthetic")
    host = builder.plane("/host:CPU")
    main = host.line(1, "python")
    first, last = host.line(2, "tf_Compute_a"), host.line(3, "tf_Compute_b")
    get_next = host.line(4, "tf_inter_op")
    # last in event order, a Process of a key of its own that no step reaches (so that the
    # last Process of each step's key is not simply the one at the mirror position)
    host.line(5, "tf_Compute_c").event(
        "ExecutorState::Process", 1_000 * MS, MS, {"id": 9, "iter_num": 0}
    )
    for k in range(steps):
        t0 = 1_000 * MS + k * 10 * MS
        key = {"id": 50 + k, "iter_num": 0}
        context = {"_ct": 2, "_c": 100 + k}
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("FunctionRun", t0, MS, {"_pt": 2, "_p": 100 + k})
        first.event(
            "ExecutorState::Process", t0 + MS, MS, key | (context if reached == "first" else {})
        )
        last.event(
            "ExecutorState::Process", t0 + 2 * MS, MS, key | (context if reached == "last" else {})
        )
        get_next.event("IteratorGetNextOp::DoCompute", t0 + 4 * MS, 3 * MS, key)
        main.event("model/dense/MatMul:MatMul", t0 + 8 * MS, MS)
    return builder
