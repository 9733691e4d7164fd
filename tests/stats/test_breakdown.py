"""Event typing, priorities, attribution and spans of the step breakdown (REFERENCE §4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stepscope.model import open_file
from stepscope.stats import EventType, build_step_db, classify_events
from stepscope.stats.steps.breakdown import N_TYPES, type_time
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


def test_unlinked_threads_count_by_window_linked_ones_do_not() -> None:
    builder = cpu_training(steps=2)
    host = builder.plane("/host:CPU")
    # a thread with producer/consumer stats that no step reaches: left out, as in XProf
    pool = host.line(3, "tf_data_pool")
    pool.event("ThreadpoolListener::StartRegion", 1_000 * MS, 0, {"_ct": 15, "_c": 9})
    pool.event("background", 1_000 * MS + 6 * MS + MS // 2, 3 * MS)
    loose = build_step_db(build(builder))
    # a plain thread (a data loader, say) counts inside the step windows
    host.line(4, "loader").event("load", 1_000 * MS + 8 * MS + MS // 2, MS)
    with_loader = build_step_db(build(builder))
    assert loose.category_ns()["host_compute"][0] == 2 * MS
    assert with_loader.category_ns()["host_compute"][0] == 3 * MS


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
