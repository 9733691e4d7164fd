"""Steps inferred from the repeating structure of a trace without step markers
(`stepscope.stats.steps.infer`): which event repeats as the step, on which thread, and the
markers it makes."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.steps.infer import infer_steps
from stepscope.xspace.builder import LineBuilder, XSpaceBuilder
from tests.support.analysis import MS, build

LOADER_NEXT = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _repeat(line: LineBuilder, name: str, times_ms: list[float], dur_ms: float) -> None:
    for t in times_ms:
        line.event(name, int(t * MS), int(dur_ms * MS))


def _host(*threads: str) -> tuple[XSpaceBuilder, list[LineBuilder]]:
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    return builder, [plane.line(k, name) for k, name in enumerate(threads, start=1)]


def _inferred(profile: Profile) -> tuple[str, list[float]]:
    found = infer_steps(profile)
    assert found is not None
    return found.description, [s / MS for s in found.start_ns.tolist()]


def test_five_repeats_are_four_steps_from_one_to_the_next() -> None:
    builder, (main,) = _host("main")
    _repeat(main, "train_step", [0, 10, 20, 30, 40], 8)
    main.event("aten::mm", 1 * MS, MS)  # inside a step: not top-level
    profile = build(builder)
    found = infer_steps(profile)
    assert found is not None
    assert found.source == "inferred"
    assert found.description == (
        "5 repeats of top-level event 'train_step' every 10.0 ms (no step markers in the profile)"
    )
    assert found.event.dtype == np.int64 and found.event.tolist() == [-1] * 4
    assert found.step_num.dtype == np.int64 and found.step_num.tolist() == [0, 1, 2, 3]
    assert found.names == ("step 0", "step 1", "step 2", "step 3")
    assert found.start_ns.tolist() == [0, 10 * MS, 20 * MS, 30 * MS]
    assert found.end_ns.tolist() == [10 * MS, 20 * MS, 30 * MS, 40 * MS]
    assert found.use_groups is False and found.drop_incomplete is False
    assert found.lines == (0,)


def test_three_repeats_are_enough_and_two_are_not() -> None:
    builder, (main,) = _host("main")
    _repeat(main, "train_step", [0, 10, 20], 8)
    assert _inferred(build(builder))[1] == [0, 10]
    builder, (main,) = _host("main")
    _repeat(main, "train_step", [0, 10], 8)
    main.event("other", 30 * MS, MS)
    assert infer_steps(build(builder)) is None


def test_an_op_repeating_in_bursts_is_no_step() -> None:
    # four calls 1 ms apart, then a long wait: its periods are mostly irregular
    builder, (main,) = _host("main")
    _repeat(main, "aten::add", [0, 1, 2, 3, 100, 101, 102, 103], 0.5)
    assert infer_steps(build(builder)) is None


def test_periods_from_half_to_twice_the_median_are_regular() -> None:
    # periods 5, 10, 10, 20 ms: all within [0.5, 2] x the 10 ms median
    builder, (main,) = _host("main")
    _repeat(main, "train_step", [0, 5, 15, 25, 45], 4)
    assert _inferred(build(builder))[1] == [0, 5, 15, 25]
    # one period past twice the median, with half of the time: still regular (exactly half)
    builder, (main,) = _host("main")
    _repeat(main, "train_step", [0, 10, 20, 30, 40, 50, 100], 4)
    assert _inferred(build(builder))[1] == [0, 10, 20, 30, 40, 50]


def test_the_coarsest_period_wins_then_waiting_for_input() -> None:
    builder, (main,) = _host("main")
    for k in range(5):
        t = k * 10
        _repeat(main, LOADER_NEXT, [t], 1)  # fetching the batch: 1 ms of 10
        _repeat(main, "forward", [t + 1], 7)
        _repeat(main, "cudaLaunchKernel", [t + 8.1, t + 8.4, t + 8.7], 0.1)  # finer
    description, starts = _inferred(build(builder))
    assert f"'{LOADER_NEXT}'" in description
    assert starts == [0, 10, 20, 30]


def test_the_event_filling_more_of_its_period_wins_then_the_first_named() -> None:
    builder, (main,) = _host("main")
    for k in range(5):
        _repeat(main, "log", [k * 10], 0.5)
        _repeat(main, "step", [k * 10 + 1], 8)
    assert "'step'" in _inferred(build(builder))[0]
    builder, (main,) = _host("main")
    for k in range(5):  # a tie: the first name of the table wins
        _repeat(main, "first", [k * 10], 4)
        _repeat(main, "second", [k * 10 + 5], 4)
    assert "'first'" in _inferred(build(builder))[0]


def test_the_thread_with_roots_is_tried_first_else_the_busiest() -> None:
    builder, (main, loader) = _host("main", "loader")
    _repeat(main, "train_step", [0, 10, 20, 30], 8)
    # more events, less time, a coarser period: the busiest thread is tried first
    _repeat(loader, "read", [k * 20 for k in range(24)], 0.1)
    assert "'train_step'" in _inferred(build(builder))[0]
    builder, (main, loader) = _host("main", "loader")
    _repeat(main, "train_step", [0, 10, 20, 30], 8)
    for k in range(20):
        loader.event("read", k * 2 * MS, MS // 10, {"_r": 0})
    assert "'read'" in _inferred(build(builder))[0]


def test_another_thread_is_tried_when_the_busiest_has_no_repeats() -> None:
    builder, (main, loader) = _host("main", "loader")
    main.event("setup", 0, 50 * MS)
    _repeat(loader, "read", [0, 10, 20, 30], 1)
    description, starts = _inferred(build(builder))
    assert "'read'" in description and starts == [0, 10, 20]


def test_device_work_is_no_candidate() -> None:
    builder, (main,) = _host("main")
    _repeat(main, "train_step", [0, 10, 20, 30], 2)
    stream = builder.plane("/device:GPU:0").line(7, "stream")
    _repeat(stream, "gemm", [k * 5 for k in range(8)], 4.5)  # busier, and finer
    assert "'train_step'" in _inferred(build(builder))[0]


def test_an_empty_profile_has_no_inferred_steps() -> None:
    builder, (main,) = _host("main")
    main.event("tick", 0, 0)
    assert infer_steps(build(builder)) is None


def test_names_that_do_not_qualify_are_passed_over() -> None:
    # two names before the step's in the string table: one too rare, one in bursts
    builder, (main,) = _host("main")
    main.event("rare", 0, MS // 10)
    main.event("bursty", MS // 5, MS // 10)
    _repeat(main, "train_step", [1, 11, 21, 31], 8)
    main.event("rare", 50 * MS, MS // 10)
    _repeat(main, "bursty", [50.5, 50.7, 50.9, 200], 0.1)
    description, starts = _inferred(build(builder))
    assert "'train_step'" in description and starts == [1, 11, 21]


def test_periods_at_the_bounds_of_regular() -> None:
    # 20, 20, 40, 40, 10 ms: median 20; 40 (twice it) and 10 (half) are regular
    builder, (main,) = _host("main")
    _repeat(main, "train_step", [0, 20, 40, 80, 120, 130], 4)
    assert _inferred(build(builder))[1] == [0, 20, 40, 80, 120]
    # 5, 10, 10, 25: the 5 ms period (half the median) makes the regular half exactly
    builder, (main,) = _host("main")
    _repeat(main, "train_step", [0, 5, 15, 25, 50], 2)
    assert _inferred(build(builder))[1] == [0, 5, 15, 25]
    # 10, 10, 10, 25, 25: the two periods past twice the median are most of the time
    builder, (main,) = _host("main")
    _repeat(main, "train_step", [0, 10, 20, 30, 55, 80], 2)
    assert infer_steps(build(builder)) is None
    # 4, 4, 10, 10, 10, 30: under half the median is no regular period either
    builder, (main,) = _host("main")
    _repeat(main, "train_step", [0, 4, 8, 18, 28, 38, 68], 2)
    assert infer_steps(build(builder)) is None


def test_periods_within_20_percent_tie_and_the_busier_share_then_wins() -> None:
    # 'short' every 11.5 ms is within 1.2x of 'wide' every 10 ms: the same granularity, and
    # 'wide' fills more of its period (it lost before: 11.5 ms was a coarser log bucket of
    # 1.2x, as 19.4 ms is than 19.1 ms, decision 412); every 12.5 ms, 'short' is coarser
    for every, wins in ((11.5, "wide"), (12.5, "short")):
        builder, (main,) = _host("main")
        _repeat(main, "wide", [0, 10, 20, 30, 40], 2)
        _repeat(main, "short", [3 + every * k for k in range(5)], 1)
        assert f"'{wins}'" in _inferred(build(builder))[0]
    # same period: 'dense' fills 0.86 of its span (3 repeats), 'long' 0.53 (10), though
    # 'long' is busier in all
    builder, (main,) = _host("main")
    _repeat(main, "dense", [0, 10, 20], 8)
    _repeat(main, "long", [30 + 10 * k for k in range(10)], 5)
    assert "'dense'" in _inferred(build(builder))[0]


def test_once_a_step_events_with_bimodal_periods_are_the_same_granularity() -> None:
    """Two passes of 6 iterations, some waiting 3 ms for their batch: the fetch's periods and
    the optimizer step's hold the same iterations, shifted by the wait, and the fetch has
    two more (each pass's StopIteration call). Their medians fall in different modes (4.2
    against 7.2 ms), their means do not (5.3 against 5.9): compared on medians the optimizer
    step was the coarser and the steps began mid-iteration (decision 464)."""
    builder, (main,) = _host("main")
    fetches, steps = [], []
    t = 0.0
    for _ in range(2):
        for wait in (0, 0, 3, 3, 3, 0):
            main.event(LOADER_NEXT, int(t * MS), int((wait + 0.2) * MS))
            fetches.append(t)
            t += wait + 0.2
            main.event("Optimizer.step#SGD.step", int((t + 3) * MS), int(0.5 * MS))
            steps.append(t + 3)
            t += 4
        main.event(LOADER_NEXT, int(t * MS), int(0.1 * MS))  # raises StopIteration
        fetches.append(t)
        t += 0.6
    medians = [float(np.median(np.diff(times))) for times in (fetches, steps)]
    assert medians[1] > 1.2 * medians[0]  # what the choice must not go by
    assert f"'{LOADER_NEXT}'" in _inferred(build(builder))[0]


def test_tf_data_threads_are_no_steps_though_their_map_functions_are_roots() -> None:
    """A MultiWorkerMirroredStrategy worker's custom loop, only `start`/`stop` around it:
    tf.data's thread runs the map function (a ``FunctionRun`` root) once an element, more
    roots than the loop's own thread has, and every other step's all-reduce runs on one of
    two collective threads. The steps were those roots' thread's (or, none regular there,
    the collective thread's: 16 steps of 153 ms for 40 of 75 ms); they are the loop's
    ``train_step`` (decision 466)."""
    builder, (python, pipeline, collective) = _host(
        "python", "tf_data_multi_device_iterator_resource/1", "collective_ops/2"
    )
    for k in range(10):
        python.event("train_step", k * 20 * MS, 18 * MS)
        python.event("FunctionRun", k * 20 * MS + MS, 16 * MS, {"_r": 1})
        if k % 2 == 0:
            collective.event("CollectiveReduceV2", k * 20 * MS + 10 * MS, 5 * MS)
    for k in range(50):
        pipeline.event("MapAndBatchProduce", k * 4 * MS, MS)
        pipeline.event("FunctionRun", k * 4 * MS, MS // 2, {"_r": 1})
    description, starts = _inferred(build(builder))
    assert "'train_step'" in description, description
    assert len(starts) == 9


def test_instants_are_no_candidates() -> None:
    builder, (main,) = _host("main")
    _repeat(main, "train_step", [0, 10, 20, 30, 40], 8)
    _repeat(main, "tick", [9, 29, 49, 69], 0)  # coarser, but instants
    assert "'train_step'" in _inferred(build(builder))[0]


def test_a_step_of_a_minute_is_described_in_ms() -> None:
    builder, (main,) = _host("main")
    _repeat(main, "epoch_step", [0, 60_000, 120_000, 180_000], 50_000)
    assert "every 60000.0 ms" in _inferred(build(builder))[0]


def test_of_two_other_threads_the_better_candidate_wins() -> None:
    builder, (main, reader, poller) = _host("main", "reader", "poller")
    main.event("setup", 0, 500 * MS)  # the busiest: no repeats
    _repeat(reader, "read", [0, 20, 40, 60], 1)
    _repeat(poller, "poll", [k * 5 for k in range(12)], 1)
    assert "'read'" in _inferred(build(builder))[0]


def test_the_share_of_the_period_is_rounded_to_a_tenth_then_the_busier_wins() -> None:
    """'early' fills 19 of its 27 ms (first start to last end: 0.70), 'late' 21 of 32 ms
    (0.66): both 0.7 to a tenth, so the busier 'late' wins. The share is measured from the
    first start to the last start plus the last event's own duration."""
    builder, (main,) = _host("main")
    for t, d in zip([0, 10, 20], [8, 4, 7], strict=True):
        _repeat(main, "early", [t], d)
    for t, d in zip([50, 60, 70, 80], [9, 6, 4, 2], strict=True):
        _repeat(main, "late", [t], d)
    description, starts = _inferred(build(builder))
    assert "'late'" in description and starts == [50, 60, 70]


def test_events_of_1_ns_every_ns_are_steps_of_1_ns() -> None:
    builder, (main,) = _host("main")
    for t in range(5):
        main.event("tick", t, 1)
    found = infer_steps(build(builder))
    assert found is not None
    assert found.start_ns.tolist() == [0, 1, 2, 3] and found.end_ns.tolist() == [1, 2, 3, 4]


def test_events_inside_the_first_event_are_not_top_level() -> None:
    # 'load' repeats every 30 ms (coarser than 'train_step') but inside 'warmup', the
    # thread's first event: only top-level events are candidates
    builder, (main,) = _host("main")
    main.event("warmup", 0, 100 * MS)
    _repeat(main, "load", [0, 30, 60, 90], 5)
    _repeat(main, "train_step", [110, 120, 130, 140], 8)
    description, starts = _inferred(build(builder))
    assert "'train_step'" in description and starts == [110, 120, 130]


def test_each_other_thread_offers_its_own_events_only() -> None:
    """The busiest thread has no repeats; two others repeat 'read' alike (a tie: the first
    thread's wins). Each thread's candidates are its own events, not the other threads'."""
    builder, (main, first, second) = _host("main", "first", "second")
    main.event("setup", 0, 500 * MS)
    _repeat(first, "read", [0, 20, 40, 60], 1)
    _repeat(second, "read", [10, 30, 50, 70], 1)
    found = infer_steps(build(builder))
    assert found is not None
    assert found.lines == (1,)
    assert found.start_ns.tolist() == [0, 20 * MS, 40 * MS]


def _loop(main: LineBuilder, periods_ms: list[float]) -> None:
    """A PyTorch loop's top-level events, one fetch and the same ops every step."""
    t = 0.0
    for period in periods_ms:
        _repeat(main, LOADER_NEXT, [t], 0.2 * period)
        _repeat(main, "aten::linear", [t + 0.3 * period], 0.1 * period)
        _repeat(main, "Optimizer.step#SGD.step", [t + 0.5 * period], 0.1 * period)
        t += period


def test_steps_of_uneven_length_with_the_same_work_each_are_steps() -> None:
    """A loop on a busy machine: its steps took 19 to 250 ms (seen on a 2-core machine
    shared with other jobs), so no event repeats at a steady period, but every period
    holds the same work: the fetch and the same ops. Those are steps (it said 'no steps')."""
    periods = [65, 151, 224, 58, 175, 52, 100, 25, 51, 255, 29, 159, 164, 68, 21, 155]
    periods += [19] * 16
    builder, (main,) = _host("main")
    _loop(main, periods)
    description, starts = _inferred(build(builder))
    assert description == (
        f"{len(periods)} repeats of top-level event '{LOADER_NEXT}' every 65.7 ms on average "
        "(19.0 to 255.0 ms apart, the same work each time) (no step markers in the profile)"
    )
    assert np.diff(starts).round(3).tolist() == periods[:-2]  # 32 fetches: 31 steps


def test_uneven_periods_of_changing_work_are_no_steps() -> None:
    """The same uneven periods, but what runs between two occurrences changes from one to
    the next (an op in bursts between other work): neither regular in time nor in content."""
    builder, (main,) = _host("main")
    t = 0.0
    for k, period in enumerate([65, 151, 224, 58, 175, 52, 100, 25, 51, 255, 29, 159]):
        _repeat(main, "aten::add", [t], 1)
        _repeat(main, "other", [t + 2 + 0.1 * j for j in range(k % 4)], 0.05)
        t += period
    assert infer_steps(build(builder)) is None


def test_a_rank_waiting_in_gloo_takes_its_steps_from_the_loop_not_the_all_reduces() -> None:
    """A DDP rank that waits for a slower one spends most of its step in gloo's all-reduce,
    on gloo's thread: that thread is busier than the loop's, but its all-reduces start in
    the middle of a step (after the backward pass), and the other rank, busy in its own
    loop, takes its steps from its forward: the two ranks' steps were a step apart."""
    builder, (main, gloo) = _host("python", "pt_gloo_runloop")
    for k in range(6):
        t = k * 40
        _repeat(main, "DistributedDataParallel.forward", [t], 2)
        _repeat(main, "autograd::engine::evaluate_function: AddmmBackward0", [t + 3], 2)
        _repeat(main, "Optimizer.step#SGD.step", [t + 37], 1)
        _repeat(gloo, "gloo:all_reduce", [t + 5], 31)
    description, starts = _inferred(build(builder))
    assert "'DistributedDataParallel.forward'" in description
    assert starts == [0, 40, 80, 120, 160]


def test_a_thread_of_collectives_alone_still_gives_steps() -> None:
    builder, (gloo,) = _host("pt_gloo_runloop")
    _repeat(gloo, "gloo:all_reduce", [0, 40, 80, 120], 31)
    assert "'gloo:all_reduce'" in _inferred(build(builder))[0]


MP_NEXT = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def _passes(main: LineBuilder, sampler_ms: list[float], epochs: int, steps: int) -> None:
    """A loop over a DataLoader for ``epochs`` passes of ``steps`` iterations of 30 ms (the
    fetch, the forward, the optimizer's step), each pass after its sampler's ``aten::randperm``
    at ``sampler_ms[e]``; a last fetch ends each pass (it raises StopIteration)."""
    for e in range(epochs):
        t = sampler_ms[e] + 1
        _repeat(main, "aten::randperm", [sampler_ms[e]], 0.2)
        for _ in range(steps):
            _repeat(main, MP_NEXT, [t], 5)
            _repeat(main, "aten::linear", [t + 6], 10)
            _repeat(main, "Optimizer.step#SGD.step", [t + 20], 5)
            t += 30
        _repeat(main, MP_NEXT, [t], 0.5)


def test_a_name_called_once_a_pass_over_the_data_is_no_step() -> None:
    """A persistent-workers loop over 2 epochs: a sampler's op called at the start, before
    the first fetch, and before the second pass (3 calls: two periods, 82 ms and 1,578 ms in
    the user's run) was the coarsest rhythm and made 3 steps for the script's 60; with 3
    passes (3 calls 2.4 s apart) 2 steps for 90. Its periods take many batches each: it is a
    multiple of the loop's iteration (decision 410)."""
    for sampler_ms, epochs in (([0, 82, 1000], 2), ([0, 1000, 2000], 3)):
        builder, (main,) = _host("main")
        if epochs == 2:  # the first pass's sampler runs twice (the iterator made twice)
            _repeat(main, "aten::randperm", [0], 0.2)
            sampler_ms = sampler_ms[1:]
        _passes(main, sampler_ms, epochs, 30)
        description, starts = _inferred(build(builder))
        assert f"'{MP_NEXT}'" in description, description
        assert len(starts) == 30 * epochs  # the ends of passes are no steps (decision 413)


def test_a_burst_after_a_long_start_does_not_outrank_the_loops_fetch() -> None:
    """DataLoader workers starting for 1.5 s before the loop: an op called once at the start
    and then 8 times 10 ms apart averaged 196 ms apart and outranked the loop's 40 fetches
    every 30 ms (a persistent-workers loop read as 8 steps of 'aten::empty' for its 60). Its
    leading period is judged a warm-up, but unlike a compile's its rhythm stops 70 ms after:
    no loop's (decision 411)."""
    builder, (main,) = _host("main")
    _repeat(main, LOADER_NEXT, [1500 + 30 * k for k in range(40)], 5)
    _repeat(main, "aten::empty", [0, *(1505.5 + 10 * k for k in range(8))], 0.1)
    description, starts = _inferred(build(builder))
    assert LOADER_NEXT in description
    assert starts[:2] == [1500.0, 1530.0] and len(starts) == 39  # 40 repeats: 39 periods


def test_a_first_period_that_compiles_keeps_its_rhythm_to_the_end() -> None:
    """The other side of the burst's rule: a step function whose first call compiles for
    2 s, then comes every 2 ms until the loop ends, is the loop's step; a garbage
    collection called 3 times during the compile and then once a step is not coarser."""
    builder, (main,) = _host("main")
    calls = [0.0, *(2000 + 2 * k for k in range(30))]
    _repeat(main, "PjitFunction(update)", calls, 1.5)
    _repeat(main, "CollectGarbage", [500, 1000, 1500, *(2001.6 + 2 * k for k in range(30))], 0.1)
    description, starts = _inferred(build(builder))
    assert "'PjitFunction(update)'" in description and len(starts) == 30


def test_the_end_of_a_pass_is_no_step() -> None:
    """Two passes of 30 steps: 62 fetches, the last of each pass raising StopIteration. From
    the first pass's last fetch to the second pass's first, the loop makes its next iterator
    and runs no step: that period was a 61st step (the script counts 60; 0.42 ms in a
    `num_workers=0` loop, the workers' start with workers per pass). It is left out, the
    steps on either side kept whole (decision 413)."""
    builder, (main,) = _host("main")
    _passes(main, [0, 1000], 2, 30)
    found = infer_steps(build(builder))
    assert found is not None
    starts, ends = found.start_ns / MS, found.end_ns / MS
    assert len(starts) == 60 and "1 period without the steps' work left out" in found.description
    assert ends[29] == 901 and starts[30] == 1001  # the pass's last step ends at its last fetch
    assert (ends[:29] == starts[1:30]).all() and (ends[30:-1] == starts[31:]).all()


def _transient(slow: range, steps: int = 35) -> XSpaceBuilder:
    """A DDP rank's loop of ``steps`` steps of 4 ms (the forward, the loss, the optimizer's
    step) but the steps in ``slow``, which also run 60 matmuls and a mean over them: 80 ms."""
    builder, (main,) = _host("main")
    t = 0.0
    for k in range(steps):
        _repeat(main, "DistributedDataParallel.forward", [t], 1)
        t += 1.2
        if k in slow:
            _repeat(main, "aten::matmul", [t + 1.2 * j for j in range(60)], 1)
            _repeat(main, "aten::mean", [t + 72.5], 0.1)
            t += 80 - 4
        _repeat(main, "aten::mse_loss", [t], 0.3)
        _repeat(main, "Optimizer.step#SGD.step", [t + 1], 1.5)
        t += 4 - 1.2
    return builder


def test_a_few_steps_doing_20x_the_work_keep_the_loops_period() -> None:
    """Decision 500: a transient straggler's 5 slow steps of 35 (80 ms against 4) hold 78%
    of the time, so the forward's periods were neither steady nor the same work for half of
    it, and the mean called only in those steps, steady there, made 5 steps (j3.py's rank
    0 read as 5 steps of 'aten::mean'). The slow periods hold the loop's work and more; the
    mean's periods each hold a forward, but its span fewer than half of the forward's: a
    phase of the loop."""
    description, starts = _inferred(build(_transient(range(10, 15))))
    assert description == (
        "35 repeats of top-level event 'Optimizer.step#SGD.step' every 15.2 ms on average "
        "(4.0 to 80.0 ms apart, the same work each time, and more in 5 of them) (no step "
        "markers in the profile)"
    )
    periods = np.diff(starts).round(3).tolist()  # from the optimizer's step 9 on: slow
    assert len(starts) == 34 and periods[9:14] == [80.0] * 5 and periods.count(4.0) == 28


def test_periods_each_holding_a_little_more_work_are_no_slow_steps() -> None:
    """The other side: periods holding the common work and more are a few slow steps only
    while most periods (by count) hold exactly the common work. An op whose periods, at
    uneven lengths, hold another op and, in 8 of 13, a third one each time different, has
    no step that most periods are: neither regular in time nor in content."""
    builder, (main,) = _host("main")
    t = 0.0
    periods = [5, 300, 250, 8, 400, 200, 3, 90, 150, 12, 30, 40, 20]
    for k, period in enumerate(periods):
        _repeat(main, "aten::add", [t], 1)
        _repeat(main, "aten::mul", [t + 2], 0.05)
        if k % 3:
            _repeat(main, f"aten::op{k}", [t + 2.1], 0.05)
        t += period
    _repeat(main, "aten::add", [t], 1)
    assert infer_steps(build(builder)) is None
