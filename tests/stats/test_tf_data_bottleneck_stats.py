"""tf.data bottleneck analysis: TF fixtures, synthetic async pipelines, and a stepscope-instrumented
Python pipeline with a deliberately slow stage."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.model import load_profile
from stepscope.stats.input.tf_data import (
    PipelineStats,
    build_tf_data_stats,
    explain_long_name,
    iterator_name,
)
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.gpu_fixtures import build, tf_profile


def _bottleneck(p: PipelineStats):
    return next(it for it in p.iterators if it.id == p.bottleneck_id)


def test_names() -> None:
    assert iterator_name("Iterator::Root::ForeverRepeat[0]::BatchV2::Map") == "Map"
    assert iterator_name("Iterator::Root::ForeverRepeat[0]") == "ForeverRepeat"
    assert explain_long_name("Iterator::Root::Batch::Map") == (
        "Map, read by Batch, read by Root (the pipeline's output)"
    )


@pytest.mark.parametrize("name", ["ctl", "keras_marked", "remote"])
def test_slow_map_is_the_bottleneck(name: str) -> None:
    [pipeline] = build_tf_data_stats(tf_profile(name))
    b = _bottleneck(pipeline)
    assert b.name == "Map" and b.dataset == "MapDataset:1" and b.blocking
    assert b.long_name.startswith("Iterator::Root::ForeverRepeat[")
    assert b.long_name.endswith("]::BatchV2::Map")
    assert pipeline.root_long_name == "Iterator::Root" and pipeline.name == "Host:0"
    assert pipeline.slow_call_count == pipeline.call_count  # every call waits > 50 µs
    assert not pipeline.python_stages
    # Map's self time holds the slow py_function: most of the slowest call.
    assert b.self_ns > 0.9 * pipeline.max_latency_ns
    by_name = {it.name: it for it in pipeline.iterators}
    assert by_name["Map"].calls == 32 and by_name["BatchV2"].calls == 1
    assert by_name["TensorSlice"].self_ns == by_name["TensorSlice"].duration_ns
    assert all(it.blocking for it in pipeline.iterators)


def test_ctl_matches_input_pipeline_counts() -> None:
    # XProf's input_pipeline_analyzer for ctl: Map 192 calls and Root 6 calls over 6 steps.
    [pipeline] = build_tf_data_stats(tf_profile("ctl"))
    assert pipeline.call_count == 6
    assert pipeline.max_latency_ns == 126_463_526  # the first step's long wait


def test_prefetched_pipeline() -> None:
    [pipeline] = build_tf_data_stats(tf_profile("ctl_opt"))
    # The consumer only waits on the prefetch buffer; the producer runs on its own thread.
    assert _bottleneck(pipeline).name == "Prefetch"
    assert pipeline.max_latency_ns < 2_000_000


def _async_space(producer_overlaps: bool) -> XSpaceBuilder:
    b = XSpaceBuilder("h")
    host = b.plane("/host:CPU")
    main = host.line(1, "python")
    worker = host.line(2, "tf_data_iterator_resource")
    main.event("Iterator::Root", 1_000, 100_000, {"id": 1})
    main.event("Iterator::Root::Prefetch", 2_000, 98_000, {"id": 2, "parent_id": 1})
    t = 10_000 if producer_overlaps else 200_000
    worker.event("Iterator::Root::Prefetch::Map", t, 60_000, {"id": 3, "parent_id": 2})
    worker.event(
        "Iterator::Root::Prefetch::Map::TFRecord", t + 1_000, 50_000, {"id": 4, "parent_id": 3}
    )
    return b


def test_async_producer_that_overlaps_is_on_the_critical_path() -> None:
    [pipeline] = build_tf_data_stats(build(_async_space(True)))
    stats = {it.name: it for it in pipeline.iterators}
    assert stats["Map"].blocking and stats["TFRecord"].blocking and stats["Prefetch"].is_async
    assert stats["Prefetch"].self_ns == 98_000 - 60_000
    assert _bottleneck(pipeline).name == "TFRecord"
    assert stats["TFRecord"].start_offset_ns == 10_000


def test_async_producer_done_ahead_is_not_blocking() -> None:
    [pipeline] = build_tf_data_stats(build(_async_space(False)))
    names = {it.name for it in pipeline.iterators}
    assert names == {"Root", "Prefetch"}  # the producer ran outside the analysed call
    assert _bottleneck(pipeline).name == "Prefetch"


def test_two_pipelines_and_slow_calls() -> None:
    b = XSpaceBuilder("h")
    line = b.plane("/host:CPU").line(1, "python")
    for k in range(4):
        line.event("Iterator::Train", k * 1_000_000, 60_000 if k else 10_000, {"id": 7})
    line.event("Iterator::Eval", 9_000_000, 1_000, {"id": 8})
    first, second = build_tf_data_stats(build(b))
    assert (first.name, first.call_count, first.slow_call_count) == ("Host:0", 4, 3)
    assert (first.min_latency_ns, first.max_latency_ns) == (10_000, 60_000)
    assert second.name == "Host:1" and second.call_count == 1 and second.slow_call_count == 0
    assert first.python_stages


def test_no_iterator_events() -> None:
    b = XSpaceBuilder("h")
    b.plane("/host:CPU").line(1, "python").event("train", 0, 10, {"_r": 1})
    assert build_tf_data_stats(build(b)) == ()


class _TickingClock:
    """The monotonic clock events are stamped with, advanced by the test (each reading 1 ns
    later than the one before, so that nested events stay strictly nested)."""

    def __init__(self) -> None:
        self.now = time.perf_counter_ns()

    def __call__(self) -> int:
        self.now += 1
        return self.now

    def advance(self, ns: int) -> None:
        self.now += ns


def test_instrumented_python_pipeline_names_the_slow_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stage times on a clock the test advances (no sleeps: a loaded machine stretches those
    unevenly): Augment takes 4 ms an element, Decode 0.2 ms."""
    from stepscope.capture import annotations

    clock = _TickingClock()
    monkeypatch.setattr(annotations, "perf_counter_ns", clock)
    monkeypatch.setattr(time, "perf_counter_ns", clock)

    @stepscope.data.stage("Augment")
    def augment(x: int) -> int:
        clock.advance(4_000_000)  # the deliberately slow stage
        return x

    @stepscope.data.stage("Decode")
    def decode(x: int) -> int:
        clock.advance(200_000)
        return x + 1

    def batches(source: Iterator[int], size: int) -> Iterator[list[int]]:
        while True:
            yield [augment(decode(next(source))) for _ in range(size)]

    reader = stepscope.data.instrument(iter(range(1000)), name="Reader")
    loader = stepscope.data.instrument(batches(iter(reader), 4), name="Batch")
    stepscope.start(tmp_path)
    for s in range(3):
        with stepscope.step(s):
            next(loader)
            clock.advance(2_000_000)  # the "training step"
    run_dir = stepscope.stop()
    assert run_dir is not None
    profile = load_profile(next(Path(run_dir).glob("*.xplane.pb")))
    [pipeline] = build_tf_data_stats(profile)
    assert pipeline.python_stages and pipeline.root_long_name == "Iterator::Batch"
    assert pipeline.call_count == 3
    bottleneck = _bottleneck(pipeline)
    assert bottleneck.name == "Augment" and bottleneck.long_name == "Iterator::Batch::Augment"
    stats = {it.name: it for it in pipeline.iterators}
    assert set(stats) == {"Batch", "Reader", "Decode", "Augment"}
    assert bottleneck.calls == 4 and bottleneck.self_ns > stats["Decode"].self_ns
    assert stats["Batch"].self_ns < bottleneck.self_ns
    # the slowest call's batch of 4 elements: 4 x 4 ms and 4 x 0.2 ms (and a few 1 ns ticks)
    assert 16_000_000 <= bottleneck.self_ns < 16_000_100
    assert 800_000 <= stats["Decode"].self_ns < 800_100


def test_no_iterator_has_more_time_in_a_call_than_the_call() -> None:
    """A prefetch producer that worked ahead of the call, and parallel map producers running
    side by side, count only while the call lasted and as wall time."""
    builder = XSpaceBuilder("w")
    host = builder.plane("/host:CPU")
    main = host.line(1, "main")
    workers = [host.line(2 + k, f"worker{k}") for k in range(3)]
    us = 1_000
    for call in range(2):
        t0 = 1_000_000 * us + call * 10_000 * us
        main.event("Iterator::Root", t0, 1_000 * us, {"id": 1})
        main.event("Iterator::Root::Prefetch", t0 + 100 * us, 800 * us, {"id": 2, "parent_id": 1})
        for k, line in enumerate(workers):  # started 5 ms before the call, ends inside it
            line.event(
                "Iterator::Root::Prefetch::ParallelMap",
                t0 - 5_000 * us + k * us,
                5_400 * us,
                {"id": 3, "parent_id": 2},
            )
    [pipeline] = build_tf_data_stats(build(builder))
    for it in pipeline.iterators:
        assert it.self_ns <= it.duration_ns <= pipeline.max_latency_ns, it.name
    pmap = next(it for it in pipeline.iterators if it.name == "ParallelMap")
    assert pmap.duration_ns == 402 * us  # inside the call (0..1000 us): its first 402 us


def _link_one_by_one(ev) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The linking as first written: three binary searches per orphan (the oracle)."""
    parent = ev.parent.copy()
    order = np.lexsort((ev.start, ev.iterator))
    keys, starts = ev.iterator[order], ev.start[order]
    for o in np.flatnonzero((ev.parent < 0) & ev.has_parent).tolist():
        pid = int(ev.parent_id[o])
        lo, hi = np.searchsorted(keys, pid, "left"), np.searchsorted(keys, pid, "right")
        k = int(np.searchsorted(starts[lo:hi], ev.end[o], "left")) - 1
        if lo < hi and k >= 0:
            cand = int(order[lo + k])
            if ev.end[cand] > ev.start[o] and cand != o:
                parent[o] = cand
    return parent


@pytest.mark.parametrize("seed", range(6))
def test_producers_linked_by_one_search_as_one_by_one(seed: int) -> None:
    from stepscope.stats.input import tf_data

    rng = np.random.default_rng(seed)
    n = 400
    start = rng.integers(0, 10_000, n)
    end = start + rng.integers(0, 500, n)
    if seed % 2:  # far apart times: the shifted search falls back to one search per orphan
        start[::7] += 1 << 61
        end[::7] += 1 << 61
    ev = tf_data._Events(
        index=np.arange(n),
        iterator=rng.integers(0, 12, n),
        parent_id=rng.integers(-1, 14, n),  # ids with no calls too
        has_parent=rng.random(n) < 0.7,
        start=start,
        end=end,
        parent=np.where(rng.random(n) < 0.3, rng.integers(0, n, n), -1),
    )
    expected = _link_one_by_one(ev)
    tf_data._link_producers(ev)
    assert (ev.parent != -1).sum() > 100
    assert np.array_equal(ev.parent, expected)


def _generator_pipeline(call_ns: int) -> XSpaceBuilder:
    """A Keras-like loop of 8 ms steps whose pipeline reads a Python generator
    (`from_generator`, as Keras's PyDataset adapter): Root -> Prefetch, the producer
    FlatMap -> Generator on a tf.data thread; each call takes ``call_ns``. Each iterator
    names its dataset, as TensorFlow's do (a pipeline with none is one stepscope recorded)."""
    b = XSpaceBuilder("h")
    host = b.plane("/host:CPU")
    main = host.line(1, "python")
    worker = host.line(2, "tf_data_iterator_resource")
    for k in range(8):
        t = k * 8_000_000
        main.event("train", t, 8_000_000, {"step_num": k, "_r": 1})
        main.event("Iterator::Root", t + 1_000, call_ns, {"id": 1, "name": "OptionsDataset:4"})
        main.event(
            "Iterator::Root::Prefetch",
            t + 2_000,
            call_ns - 2_000,
            {"id": 2, "parent_id": 1, "name": "PrefetchDataset:3"},
        )
        worker.event(
            "Iterator::Root::Prefetch::FlatMap",
            t + 3_000,
            call_ns - 5_000,
            {"id": 3, "parent_id": 2, "name": "FlatMapDataset:2"},
        )
        worker.event(
            "Iterator::Root::Prefetch::FlatMap[0]::Generator",
            t + 4_000,
            call_ns - 7_000,
            {"id": 4, "parent_id": 3, "name": "GeneratorDataset:1"},
        )
        main.event("model/dense/MatMul:MatMul", t + call_ns + 10_000, 6_000_000)
    return b


def test_a_call_of_53_us_in_8_ms_steps_is_not_a_bottleneck() -> None:
    """XProf's 50 µs mark makes a 53 µs call "slow"; it is no reason for advice."""
    from stepscope.stats import build_step_db
    from stepscope.tools.tf_data_bottleneck_analysis import not_a_bottleneck

    profile = build(_generator_pipeline(53_000))
    [pipeline] = build_tf_data_stats(profile)
    assert pipeline.slow_call_count == 8
    median = float(np.median(build_step_db(profile).dur_ns))
    assert not_a_bottleneck(pipeline, median).startswith(
        "Not a bottleneck: the slowest call (53.0 µs) is 0.7% of a step"
    )
    assert (
        not_a_bottleneck(build_tf_data_stats(build(_generator_pipeline(3_000_000)))[0], median)
        == ""
    )


def test_a_python_generator_source_gets_pydataset_advice() -> None:
    """A Keras PyDataset bottleneck got tf.data advice (parallel map, prefetch buffer)."""
    from stepscope.stats.input.input_pipeline import advice_for, has_generator
    from stepscope.tools.tf_data_bottleneck_analysis import suggestion

    [pipeline] = build_tf_data_stats(build(_generator_pipeline(3_000_000)))
    assert has_generator(pipeline.iterators)
    text = suggestion(_bottleneck(pipeline), pipeline.python_stages, True)
    assert "PyDataset(workers=N, use_multiprocessing=True" in text
    assert "num_parallel_calls=AUTOTUNE)" not in text.split("otherwise")[0]
    overview = advice_for(_bottleneck(pipeline).name, False, True, True)
    assert "PyDataset(workers=N" in overview


def test_a_generator_stepscope_recorded_gets_python_advice_not_tf_data() -> None:
    """A plain Python generator given to ``stepscope.steps`` (no TensorFlow in the program)
    is recorded as ``Iterator::Generator`` with no tf.data dataset: its advice was Keras's
    PyDataset and tf.data's map, which the user's NumPy or PyTorch loop has neither of."""
    from stepscope.stats.input.input_pipeline import advice_for, has_generator
    from stepscope.tools.tf_data_bottleneck_analysis import suggestion

    b = XSpaceBuilder("h")
    main = b.plane("/host:CPU").line(1, "python")
    for k in range(8):
        t = k * 8_000_000
        main.event("train", t, 8_000_000, {"step_num": k, "_r": 1})
        main.event("Iterator::Generator", t + 1_000, 3_000_000, {"id": 1})
    [pipeline] = build_tf_data_stats(build(b))
    assert pipeline.python_stages and has_generator(pipeline.iterators)
    for text in (
        suggestion(_bottleneck(pipeline), pipeline.python_stages, True),
        advice_for(_bottleneck(pipeline).name, pipeline.python_stages, False, True),
    ):
        assert "DataLoader(num_workers=N" in text
        assert "tf.data" not in text and "PyDataset" not in text
