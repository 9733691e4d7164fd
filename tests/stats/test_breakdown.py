"""Event typing, priorities, attribution and spans of the step breakdown (XProf's
event_span.h rules)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.model import open_file
from stepscope.stats import EventType, build_step_db, classify_events
from stepscope.stats.steps.breakdown import N_TYPES, type_time
from stepscope.stats.steps.sweep import held_spans
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build, cpu_training


def test_cpu_loop_breakdown_follows_groups() -> None:
    db = build_step_db(build(cpu_training(steps=4)))
    assert db.attribution == "group" and db.n_steps == 4
    cats = db.category_ns()
    assert cats["input"].tolist() == [6 * MS] * 4
    assert cats["host_compute"].tolist() == [2 * MS] * 4  # the worker's executor, linked by _p/_c
    assert cats["other"].tolist() == [2 * MS] * 4
    total = sum(cats.values())
    assert np.array_equal(total, db.dur_ns)


def test_priority_sweep_gives_each_instant_to_the_highest_type() -> None:
    step = np.zeros(4, np.int64)
    lo = np.array([0, 10, 20, 50])
    hi = np.array([100, 40, 30, 60])
    types = np.array(
        [
            EventType.HOST_COMPUTE,
            EventType.HOST_WAIT_INPUT,
            EventType.DEVICE_COMPUTE_16,
            EventType.HOST_COMPUTE,
        ],
        dtype=np.int64,
    )
    table = type_time(step, lo, hi, types, 1)
    assert table.shape == (1, N_TYPES)
    got = {EventType(t * 10).name: int(v) for t, v in enumerate(table[0]) if v}
    assert got == {"HOST_COMPUTE": 70, "HOST_WAIT_INPUT": 20, "DEVICE_COMPUTE_16": 10}


def test_tensorflow_profiles_follow_the_grouping_strictly() -> None:
    """A TensorFlow (or JAX) profile counts only what its steps reach, as XProf: neither a
    linked pool thread nor a plain loader thread that no step reaches adds to a step."""
    builder = cpu_training(steps=2)
    host = builder.plane("/host:CPU")
    pool = host.line(3, "tf_data_pool")
    pool.event("ThreadpoolListener::StartRegion", 1_000 * MS, 0, {"_ct": 15, "_c": 9})
    pool.event("background", 1_000 * MS + 6 * MS + MS // 2, 3 * MS)
    host.line(4, "loader").event("load", 1_000 * MS + 8 * MS + MS // 2, MS)
    db = build_step_db(build(builder))
    assert db.category_ns()["host_compute"][0] == 2 * MS


def test_other_profiles_count_unreached_threads_by_window() -> None:
    """Elsewhere (PyTorch imports, stepscope's own captures), a thread that no step reaches
    and that declares no links (an autograd or loader thread) counts inside the step
    windows."""
    builder = XSpaceBuilder("synthetic")
    host = builder.plane("/host:CPU")
    main, other = host.line(1, "python"), host.line(2, "autograd")
    for k in range(2):
        t0 = 1_000 * MS + k * 10 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("forward", t0 + MS, 2 * MS)
        other.event("backward", t0 + 4 * MS, 3 * MS)
    db = build_step_db(build(builder))
    assert db.attribution == "group"
    assert db.category_ns()["host_compute"].tolist() == [5 * MS] * 2


def test_zero_length_event_holds_its_type_until_the_next_one_starts() -> None:
    """XProf's sweep: a 0 ns event with no event of its type (or higher) active keeps its
    type current until the next such event starts; inside an active event it adds nothing."""
    builder = XSpaceBuilder("synthetic")
    host = builder.plane("/host:CPU")
    main, pool = host.line(1, "python"), host.line(2, "pool")
    for k in range(2):
        t0 = 1_000 * MS + k * 10 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("dispatch", t0, MS)
        main.event("ThreadpoolListener::Record", t0 + MS // 2, 0, {"_pt": 15, "_p": 20 + k})
        # reached through the Record: 0 ns at 2 ms, nothing else running until 7 ms
        pool.event("ThreadpoolListener::StartRegion", t0 + 2 * MS, 0, {"_ct": 15, "_c": 20 + k})
        main.event("await", t0 + 7 * MS, MS)
    db = build_step_db(build(builder))
    # dispatch 1 ms + held 2..7 ms + await 1 ms
    assert db.category_ns()["host_compute"].tolist() == [7 * MS] * 2


def test_device_classification_and_launch_attribution() -> None:
    builder = XSpaceBuilder("gpu")
    main = builder.plane("/host:CPU").line(1, "main")
    stream = builder.plane("/device:GPU:0").line(7, "Stream #7")
    annotations = builder.plane("/device:GPU:0").line(1 << 28, "GPU annotations (Stream #7)")
    for k in range(2):
        t0 = k * 10 * MS
        main.event(f"ProfilerStep#{k}", t0, 10 * MS)
        main.event("cudaLaunchKernel", t0 + MS, MS // 10, {"correlation_id": 10 * k + 1})
        main.event("cudaMemcpyAsync", t0 + 2 * MS, MS // 10, {"correlation_id": 10 * k + 2})
        main.event("cudaLaunchKernel", t0 + 3 * MS, MS // 10, {"correlation_id": 10 * k + 3})
        annotations.event(f"ProfilerStep#{k}", t0, 10 * MS)
        stream.event("volta_sgemm_128x64", t0 + 2 * MS, 3 * MS, {"correlation_id": 10 * k + 1})
        stream.event("MEMCPYHToD", t0 + 5 * MS, MS, {"correlation_id": 10 * k + 2})
        stream.event("ncclKernel_AllReduce", t0 + 6 * MS, 2 * MS, {"correlation_id": 10 * k + 3})
    profile = build(builder)
    types = classify_events(profile)
    names = [profile.event_name(i) for i in range(profile.n_events)]
    assert types[names.index("cudaLaunchKernel")] == EventType.HOST_PREPARE
    assert types[names.index("MEMCPYHToD")] == EventType.HOST_TO_DEVICE
    assert types[names.index("ncclKernel_AllReduce")] == EventType.DEVICE_COLLECTIVES
    db = build_step_db(profile)
    cats = db.category_ns()
    assert db.has_device and db.n_steps == 2
    assert cats["device_compute"].tolist() == [3 * MS] * 2
    assert cats["input"].tolist() == [MS] * 2  # host-to-device copy
    assert cats["device_collectives"].tolist() == [2 * MS] * 2
    # launches hidden under device work do not count; the ProfilerStep copy on the device's
    # annotation line is not device work
    assert cats["kernel_launch"].tolist() == [MS // 10] * 2
    assert int(cats["other"][0]) == 10 * MS - 3 * MS - MS - 2 * MS - MS // 10


def test_late_device_work_extends_the_step_but_steps_never_overlap() -> None:
    builder = XSpaceBuilder("async")
    main = builder.plane("/host:CPU").line(1, "main")
    stream = builder.plane("/device:GPU:0").line(7, "Stream #7")
    for k in range(3):
        t0 = k * 4 * MS
        main.event(f"ProfilerStep#{k}", t0, 4 * MS)
        main.event("cudaLaunchKernel", t0 + MS, MS // 10, {"correlation_id": k + 1})
        # the GPU runs behind: each kernel takes 6 ms
        stream.event("gemm_fp16", 2 * MS + k * 6 * MS, 6 * MS, {"correlation_id": k + 1})
    db = build_step_db(build(builder))
    starts, ends = db.start_ns, db.start_ns + db.dur_ns
    assert np.all(starts[1:] >= ends[:-1])
    assert ends[-1] == 20 * MS  # the last step ends with its kernel
    assert db.category_ns()["device_compute"].sum() == 18 * MS
    assert db.type_time(EventType.DEVICE_COMPUTE_16).sum() == 18 * MS


def test_steps_without_compute_are_not_steps() -> None:
    builder = XSpaceBuilder("idle")
    main = builder.plane("/host:CPU").line(1, "main")
    for k in range(3):
        main.event("train", k * 10 * MS, 10 * MS, {"step_num": k, "_r": 1})
        if k != 1:
            main.event("model/op:Relu", k * 10 * MS + MS, MS)
    db = build_step_db(build(builder))
    assert db.step_num.tolist() == [0, 2] and db.dropped_ill_formed == 1


def test_producer_threads_input_work_is_not_the_step_waiting() -> None:
    """A Python pipeline's producers run IteratorGetNext-like events in the background; when
    the step's own thread shows its waits, only those count as input."""
    builder = XSpaceBuilder("pipeline")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    producer = builder.plane("/host:CPU").line(2, "producer")
    for k in range(3):
        t0 = k * 10 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("IteratorGetNextOp::DoCompute", t0, 2 * MS)
        main.event("forward", t0 + 2 * MS, 8 * MS)
        producer.event("IteratorGetNextOp::DoCompute", t0, 10 * MS)
    cats = build_step_db(build(builder)).category_ns()
    assert cats["input"].tolist() == [2 * MS] * 3
    assert cats["host_compute"].tolist() == [8 * MS] * 3


def test_stepscope_capture_demo(tmp_path: Path) -> None:
    from stepscope.cli.demo_workload import DemoConfig, run_demo
    from stepscope.model import open_run

    run = open_run(str(run_demo(tmp_path, DemoConfig.fast()).run_dir))
    profile = open_file(run.hosts[0].path, use_cache=False)
    db = build_step_db(profile)
    assert db.source == "marker" and db.n_steps >= 3
    share = db.category_ns()["input"].sum() / db.dur_ns.sum()
    assert 0 < share < 1


def test_held_spans_follow_xprof_current_type_rules() -> None:
    """Inside an active event a 0 ns event holds nothing; a higher type takes over a held
    one, a lower type does not; a hold ends where the next event of its type (or higher)
    starts, or never (clipped to the step later)."""
    hc, wait = int(EventType.HOST_COMPUTE), int(EventType.HOST_WAIT_INPUT)
    step = np.zeros(2, np.int64)
    lo, hi = np.array([0, 50]), np.array([10, 60])
    types = np.array([hc, hc])
    z_ns = np.array([5, 20, 25, 30, 70])
    z_type = np.array([hc, hc, hc - 10, wait, hc])
    got = held_spans(step, lo, hi, types, np.zeros(5, np.int64), z_ns, z_type)
    spans = list(zip(*(a.tolist() for a in got), strict=True))
    big = np.iinfo(np.int64).max
    # 5 lies inside [0, 10); 20 holds HC; 25 (lower) changes nothing; the wait at 30 takes
    # over and holds until an event of a type >= wait starts (none: the HC at 50 and the 0 ns
    # HC at 70 are lower)
    assert spans == [(0, 20, 30, hc), (0, 30, big, wait)]


def test_step_pairs_and_released_end_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pair steps come in int32 from the attribution; the breakdown's sort runs without the
    profile's cached end times (summed again, equal, when next read)."""
    from stepscope.stats.steps import breakdown

    profile = build(cpu_training(steps=4))
    end = profile.end_ns.copy()
    seen: list[object] = []
    attribute, sweep = breakdown._attribute, breakdown.type_time

    def spy_attribute(*args):  # type: ignore[no-untyped-def]
        got = attribute(*args)
        seen.append(got[1].dtype)
        return got

    def spy_sweep(*args):  # type: ignore[no-untyped-def]
        seen.append("end_ns" in profile.__dict__)
        return sweep(*args)

    monkeypatch.setattr(breakdown, "_attribute", spy_attribute)
    monkeypatch.setattr(breakdown, "type_time", spy_sweep)
    build_step_db(profile)
    assert seen == [np.dtype(np.int32), False]
    assert np.array_equal(profile.end_ns, end)
