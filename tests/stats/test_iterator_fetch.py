"""The loop getting its batch from a Python iterator counts as input (decision 343): the
sampler's ``next_frames`` mark the frame right under the loop's frame that the loop entered
for its next item; the trace times the gap it sits in. Synthetic profiles built in code."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.model import Profile, open_run
from stepscope.stats import build_step_db
from stepscope.stats.bound import bound_by
from stepscope.stats.summary import summarize_steps
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from stepscope.vocab.pytorch import DATALOADER_NEXT
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.io import write_xspace
from tests.support.analysis import MS, build
from tests.support.fetch_loop import (
    FETCH,
    LOOP,
    METRICS,
    STEPS,
    TRAIN,
    Piece,
    fetch_loop_builder,
    sampled_main,
    timed_fetches,
)


def _loop(*pieces: Piece, model_stack: str = TRAIN) -> Profile:
    return build(fetch_loop_builder(*pieces, model_stack=model_stack))


def _limits(profile: Profile) -> tuple[dict[str, float], str]:
    summary = summarize_steps({"h": build_step_db(profile)})
    found = bound_by(summary)
    return {x.key: x.percent for x in found.limits}, found.headline


def test_a_generator_the_loop_pulls_from_is_input() -> None:
    profile = _loop(Piece(FETCH, 6, 6, "2"))
    db = build_step_db(profile)
    fetched = db.fetched
    assert fetched.function == ("batches (data.py)",)
    assert fetched.loop == "main (train.py)"
    assert fetched.samples.tolist() == [6 * (STEPS - 2)]
    assert fetched.ns.tolist() == [6 * MS] * (STEPS - 2)
    limits, headline = _limits(profile)
    assert limits["input"] == 60.0 and "host" not in limits
    assert headline.startswith("Bound by input: 60.0% of the step time")
    assert "loop's Python iterator batches (data.py) (48 samples)" in headline
    # XProf's categories are XProf's: the time stays "All Others" there
    assert db.category_ns()["other"].tolist() == [6 * MS] * (STEPS - 2)
    assert not db.staged_ns.any()


def test_the_chain_of_iterators_is_named_by_the_innermost() -> None:
    """``for x in tqdm(batches())``: the wrapper's generator drives the user's."""
    stack = f"{LOOP};__iter__ (std.py:1180);batches (data.py:12);decode (data.py:30)"
    assert build_step_db(_loop(Piece(stack, 6, 6, "2,3"))).fetched.function == (
        "batches (data.py)",
    )


def test_a_function_the_loop_calls_is_host_not_input() -> None:
    """The same frames without ``next_frames``: the loop called it, it is no fetch."""
    profile = _loop(Piece(METRICS, 6, 6))
    assert build_step_db(profile).fetched.ns.sum() == 0
    limits, headline = _limits(profile)
    assert limits["host"] == 60.0 and "input" not in limits
    assert headline.startswith("Bound by Python / host")


def test_an_iterator_below_the_loops_callee_is_not_the_loops_fetch() -> None:
    """``model.parameters()`` driven by a ``for`` inside a function the loop called: the
    frame right under the loop's frame is that function, which the loop called."""
    stack = f"{LOOP};clip_grads (train.py:60);parameters (module.py:2200)"
    profile = _loop(Piece(stack, 6, 6, "3"))
    assert build_step_db(profile).fetched.ns.sum() == 0
    assert "input" not in _limits(profile)[0]


def test_a_generator_that_is_the_training_loop_is_not_input() -> None:
    """``for loss in train_gen(): print(loss)``: the generator holds the model's work, so
    although the ``for`` enters it for its next item, it is the loop, not a fetch."""
    gen = "<module> (train.py:50);train_gen (train.py:10)"
    model_stack = f"{gen};forward (model.py:8)"
    profile = _loop(
        Piece(f"{gen};numpy_work (train.py:14)", 5, 5, "1"),
        Piece("<module> (train.py:51)", 1, 1),  # the outer body's print: the loop's frame
        model_stack=model_stack,
    )
    db = build_step_db(profile)
    assert db.fetched.loop == "<module> (train.py)"
    assert db.fetched.function == () and db.fetched.ns.sum() == 0
    assert "input" not in _limits(profile)[0]


def test_a_timed_generator_holding_the_model_ops_is_not_input_without_samples_in_them() -> None:
    """Decision 382: the sampler saw none of the model's short ops (``model_stack=""``),
    only the generator's numpy work after them; the capture timed the generator's
    resumptions, and the model's op lies inside each: the generator is the training loop."""
    gen = "<module> (train.py:50);train_gen (train.py:10)"
    builder = fetch_loop_builder(
        Piece(f"{gen};numpy_work (train.py:14)", 5, 5, "1"), model_stack=""
    )
    # each resumption from just before the step's op to the end of its numpy work
    spans = [(k * 10 * MS - MS // 10, 9 * MS) for k in range(1, STEPS)]
    timed_fetches(builder, "train_gen (train.py)", "<module> (train.py)", spans)
    db = build_step_db(build(builder))
    assert db.fetched.loop == "<module> (train.py)"
    assert db.fetched.function == () and db.fetched.ns.sum() == 0


def test_timed_fetches_holding_no_model_op_are_input_whatever_the_samples_say() -> None:
    """The timed fetches hold no model op: a fetch, though 3 of the samples inside the
    model's op saw the generator (clocks apart); the samples alone said "the model"."""
    builder = fetch_loop_builder(Piece(FETCH, 6, 6, "2"), model_stack="")
    samples = builder.plane("/host:CPU").line((1 << 48) + 7, "Python samples")
    stats = {"stack": FETCH, "samples": 1, "next_frames": "2"}
    for k in (3, 5, 7):
        samples.event("decode (data.py:30)", k * 10 * MS + MS, MS // 2, stats)  # in the op
    spans = [(k * 10 * MS + 4 * MS, 6 * MS) for k in range(STEPS)]
    timed_fetches(builder, "batches (data.py)", "main (train.py)", spans)
    db = build_step_db(build(builder))
    assert db.fetched.function == ("batches (data.py)",)
    without = fetch_loop_builder(Piece(FETCH, 6, 6, "2"), model_stack="")
    samples = without.plane("/host:CPU").line((1 << 48) + 7, "Python samples")
    for k in (3, 5, 7):
        samples.event("decode (data.py:30)", k * 10 * MS + MS, MS // 2, stats)
    assert build_step_db(build(without)).fetched.function == ()


def test_one_timed_fetch_is_no_verdict_and_the_samples_decide() -> None:
    """The probe's budget ended in the first iteration (a compile inside it): one timed
    fetch, no model op in it; the samples inside the model's op see the generator."""
    gen = "<module> (train.py:50);train_gen (train.py:10)"
    builder = fetch_loop_builder(
        Piece(f"{gen};numpy_work (train.py:14)", 5, 5, "1"),
        Piece("<module> (train.py:51)", 1, 1),  # the outer body: the loop's frame
        model_stack=f"{gen};forward (model.py:8)",
    )
    timed_fetches(builder, "train_gen (train.py)", "<module> (train.py)", [(4 * MS, MS)])
    db = build_step_db(build(builder))
    assert db.fetched.loop == "<module> (train.py)"
    assert db.fetched.function == ()


def test_only_the_fetchs_share_of_a_shared_gap_is_input() -> None:
    """Metrics then the fetch in one untraced gap: the gap counts in the share of its samples
    that saw the fetch."""
    profile = _loop(Piece(METRICS, 3, 3), Piece(FETCH, 3, 3, "2"))
    db = build_step_db(profile)
    assert db.fetched.ns.tolist() == [3 * MS] * (STEPS - 2)
    limits, _ = _limits(profile)
    assert limits["input"] == 30.0 and limits["host"] == 30.0


def test_a_fetch_beside_other_samples_counts_its_share() -> None:
    """The same gap holds the fetch in some steps and other Python in others (kept steps 1-5
    and 6-8): the fetch's share of the samples there (30 of 48) of its 6 ms, in every step
    (one share per place, not a guess per step from one or two samples)."""
    profile = build(fetch_loop_builder(Piece(FETCH, 6, 6, "2"), fetch_steps=STEPS // 2 + 1))
    db = build_step_db(profile)
    assert db.fetched.ns.tolist() == [3_750_000] * (STEPS - 2)


def test_too_few_samples_move_nothing() -> None:
    """4 samples saw the fetch (fewer than MIN_SAMPLES): no time moved, none named."""
    db = build_step_db(build(fetch_loop_builder(Piece(FETCH, 6, 1, "2"), fetch_steps=5)))
    assert db.fetched.samples.tolist() == [4]  # steps 1-4 (step 0 is dropped)
    assert not db.fetched.counted and db.fetched.ns.sum() == 0
    assert not db.limit_ns()["input"].any()
    assert "iterator" not in bound_by(summarize_steps({"h": db})).headline


def test_fetches_the_capture_timed_place_a_fetch_too_few_samples_saw() -> None:
    """Decision 433: 4 samples saw the fetch (the sampler hardly gets the GIL while a
    generator runs pure Python); the probe timed its first 4 fetches, the whole 6 ms gap of
    their steps: that place counts as fetching in every step."""
    builder = fetch_loop_builder(Piece(FETCH, 6, 1, "2"), fetch_steps=5)
    spans = [(k * 10 * MS + 4 * MS, 6 * MS) for k in range(4)]
    timed_fetches(builder, "batches (data.py)", "main (train.py)", spans)
    profile = build(builder)
    db = build_step_db(profile)
    fetched = db.fetched
    assert fetched.counted and fetched.function == ("batches (data.py)",)
    assert fetched.timed.tolist() == [4] and fetched.samples.tolist() == [4]
    assert fetched.ns.tolist() == [6 * MS] * (STEPS - 2)
    limits, headline = _limits(profile)
    assert limits["input"] == 60.0 and "host" not in limits
    assert "batches (data.py) (its first 4 fetches timed): the capture timed" in headline


def test_timed_fetches_count_their_share_of_the_gap_with_no_sample_in_them() -> None:
    """No sample saw the fetch at all: the timed fetches cover half of the loop's 6 ms
    untraced gap in the steps they were timed in, so half of that place is input."""
    builder = fetch_loop_builder(Piece(METRICS, 6, 6))
    spans = [(k * 10 * MS + 7 * MS, 3 * MS) for k in range(1, 4)]
    timed_fetches(builder, "batches (data.py)", "main (train.py)", spans)
    db = build_step_db(build(builder))
    assert db.fetched.function == ("batches (data.py)",) and db.fetched.samples.tolist() == [0]
    assert db.fetched.ns.tolist() == [3 * MS] * (STEPS - 2)
    # without them, nothing is input
    assert build_step_db(build(fetch_loop_builder(Piece(METRICS, 6, 6)))).fetched.ns.sum() == 0


def test_samples_all_in_the_step_leave_the_loop_to_the_timed_fetches() -> None:
    """Decision 465: a pure-Python fetch hardly gets the GIL to the sampler, so a short
    capture's few samples can all be in ``train_step``, deeper than the loop in ``main``;
    the probe timed the fetches of ``main``'s loop, the whole 6 ms gap: that is the loop,
    and its gap is input (before, the loop was ``train_step`` and nothing was input)."""
    inside = f"{LOOP};train_step (train.py:20);log (train.py:25)"
    builder = fetch_loop_builder(Piece(inside, 6, 1))
    spans = [(k * 10 * MS + 4 * MS, 6 * MS) for k in range(4)]
    timed_fetches(builder, "batches (data.py)", "main (train.py)", spans)
    fetched = build_step_db(build(builder)).fetched
    assert fetched.loop == "main (train.py)"
    assert fetched.function == ("batches (data.py)",)
    assert fetched.ns.tolist() == [6 * MS] * (STEPS - 2)


def test_input_pipeline_analyzer_names_the_iterator(tmp_path: Path) -> None:
    run_dir = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    write_xspace(fetch_loop_builder(Piece(FETCH, 6, 6, "2")).build(), run_dir / "py.xplane.pb")
    run = open_run(str(run_dir))
    ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})
    found = output.to_json(get_tool("input_pipeline_analyzer").build(ctx))
    [row] = found["python_iterators"]
    assert row["function"] == "batches (data.py)" and row["samples"] == 48
    assert row["ms_per_step"] == 6.0 and row["percent"] == 60.0
    assert (
        row["stack"]
        == "<module> (train.py:50);main (train.py:40);batches (data.py:12);decode (data.py:30)"
    )
    assert found["recommendations"][0].startswith(
        "The loop waits on its Python iterator batches (data.py) (60.0% of the step time)"
    )


def test_a_fetch_every_sample_is_in_leaves_the_loop_above_it() -> None:
    """The model's 4 ms unsampled: every sample is inside the fetch, whose frames every
    stack shares; the loop's frame is still the one that asked for the next item."""
    db = build_step_db(_loop(Piece(FETCH, 6, 6, "2"), model_stack=""))
    assert db.fetched.loop == "main (train.py)"
    assert db.fetched.function == ("batches (data.py)",)
    assert db.fetched.ns.tolist() == [6 * MS] * (STEPS - 2)


def test_steps_found_on_another_thread_use_the_sampled_loop_thread() -> None:
    """A jitted JAX loop whose steps come from XLA's client thread (not sampled): the fetch
    is read on the one thread the sampler sampled, outside its own traced work."""
    builder = XSpaceBuilder("py")
    host = builder.plane("/host:CPU")
    main = host.line(7, "MainThread")
    xla = host.line(9, "XLAPjRtCpuClient")
    samples = host.line((1 << 48) + 7, "Python samples", "Python samples: MainThread")
    samples.display_id = 7
    for k in range(STEPS):
        t = k * 10 * MS
        xla.event("train", t, 10 * MS, {"step_num": k, "_r": 1})
        xla.event("fusion", t + MS, 2 * MS)
        main.event("PjitFunction(update)", t, 4 * MS)
        samples.event("x", t, 4 * MS, {"stack": TRAIN, "samples": 4})
        samples.event("y", t + 4 * MS, 6 * MS, {"stack": FETCH, "samples": 6, "next_frames": "2"})
    db = build_step_db(build(builder))
    assert db.fetched.function == ("batches (data.py)",)
    assert db.fetched.ns.tolist() == [6 * MS] * (STEPS - 2)


def test_several_hosts_take_the_iterator_of_the_host_that_fetched_most() -> None:
    fetching = build_step_db(_loop(Piece(FETCH, 6, 6, "2")))
    plain = build_step_db(_loop(Piece(METRICS, 6, 6)))
    summary = summarize_steps({"a": plain, "b": fetching})
    assert summary.fetched.function == ("batches (data.py)",)
    assert summary.fetched.ns.tolist() == [3 * MS] * (STEPS - 2)  # the mean over the hosts
    assert summary.fetched_percent() == 30.0


def test_a_fetch_staged_before_the_first_model_op_is_named_not_counted_twice() -> None:
    """Marked steps that start with the fetch: the input limit counts it already (staged
    before the first model op); the iterator is named there, its time not added again."""
    builder, main, samples = sampled_main()
    for k in range(STEPS):
        t = k * 10 * MS
        main.event("train", t, 10 * MS, {"step_num": k, "_r": 1})
        samples.event("x", t, 6 * MS, {"stack": FETCH, "samples": 6, "next_frames": "2"})
        main.event("aten::mm", t + 6 * MS, 4 * MS)
        samples.event("y", t + 6 * MS, 4 * MS, {"stack": TRAIN, "samples": 4})
    db = build_step_db(build(builder))
    assert db.fetched.function == ("batches (data.py)",) and not db.fetched.ns.any()
    assert db.staged_ns.tolist() == [6 * MS] * (STEPS - 2)
    headline = bound_by(summarize_steps({"h": db})).headline
    assert headline.startswith("Bound by input: 60.0% of the step time")
    assert "fetched from the loop's Python iterator batches (data.py) (48 samples)" in headline


def test_one_fetch_sample_inside_a_model_op_is_no_verdict() -> None:
    """The framework's clock and the sampler's differ by a fraction of a millisecond: a
    fetch sample that lands inside the model's op once does not make the fetch the model."""
    builder = fetch_loop_builder(Piece(FETCH, 6, 6, "2"), model_stack="")
    samples = builder.plane("/host:CPU").line((1 << 48) + 7, "Python samples")
    stats = {"stack": FETCH, "samples": 1, "next_frames": "2"}
    samples.event("decode (data.py:30)", 30 * MS + MS, MS // 2, stats)  # in step 3's op
    db = build_step_db(build(builder))
    assert db.fetched.function == ("batches (data.py)",)
    assert db.fetched.ns.tolist() == [6 * MS] * (STEPS - 2)


def _tf_loop(call: str, stats: dict[str, object], eager_op: str) -> XSpaceBuilder:
    """TensorFlow's eager runtime on the loop's thread in 10 ms marked steps: a 4 ms span
    ``call`` (with ``stats``) holding the runtime's span ``EagerLocalExecute: <eager_op>`` and
    its kernel run, then 5 ms of numpy work in the generator ``train_gen``, which the loop's
    timed fetches hold whole; the sampler never saw the model's part."""
    builder, main, samples = sampled_main()
    gen = "<module> (train.py:50);train_gen (train.py:10)"
    stack = f"{gen};numpy_work (train.py:14)"
    for k in range(STEPS):
        t = k * 10 * MS
        main.event("step", t, 10 * MS, {"step_num": k, "_r": 1})
        main.event(call, t, 4 * MS, stats)
        main.event(f"EagerLocalExecute: {eager_op}", t + MS // 2, 3 * MS)
        main.event("KernelAndDeviceFunc::Run", t + MS, 2 * MS)
        fetch = {"stack": stack, "samples": 5, "next_frames": "1"}
        samples.event("numpy_work (train.py:14)", t + 4 * MS, 5 * MS, fetch)
    spans = [(k * 10 * MS - MS // 10, 9 * MS) for k in range(1, STEPS)]
    timed_fetches(builder, "train_gen (train.py)", "<module> (train.py)", spans)
    return builder


@pytest.mark.parametrize(
    ("call", "stats", "eager_op"),
    [
        # a tf.function call: its Python span (stat tf_function_call) and the runtime's span
        ("train_fn", {"tf_function_call": "notTraced-nonXla"}, "ReadVariableOp"),
        ("TFE_Py_ExecuteCancelable", {}, "__inference_train_fn_9"),
        ("TFE_Py_FastPathExecute_C", {}, "MatMul"),  # an eager layer op
        ("TFE_Py_FastPathExecute_C", {}, "_MklNativeFusedMatMul"),
    ],
)
def test_a_timed_tensorflow_generator_holding_the_model_is_not_input(
    call: str, stats: dict[str, object], eager_op: str
) -> None:
    """A TensorFlow generator that is the training loop (`for loss in train_gen(data)`) read
    as input: 92.7% of its step where the script waited 0% for a batch (decision 415):
    TensorFlow's op names were no model ops to the fetch rule (decision 382's limit)."""
    db = build_step_db(build(_tf_loop(call, stats, eager_op)))
    assert db.fetched.loop == "<module> (train.py)"
    assert db.fetched.function == () and db.fetched.ns.sum() == 0


def test_a_timed_tensorflow_generator_holding_no_model_op_is_input() -> None:
    """The same loop whose generator's resumptions hold only a variable read: it feeds the
    loop (a variable read is no layer)."""
    db = build_step_db(build(_tf_loop("TFE_Py_FastPathExecute_C", {}, "ReadVariableOp")))
    assert db.fetched.function == ("train_gen (train.py)",)


LOADER_NEXT = f"{LOOP};__next__ (dataloader.py:733);_next_data (dataloader.py:1480);get (q.py:9)"


def _dataloader_loop(traced: bool) -> XSpaceBuilder:
    """A plain loop over a DataLoader: per 10 ms step its ``next()`` (5 ms, traced as the
    PyTorch profiler records it when ``traced``), the model op (4 ms), then 1 ms untraced
    where the sampler, a sample late, still sees the DataLoader's ``__next__``."""
    builder, main, samples = sampled_main()
    for k in range(STEPS):
        t = k * 10 * MS
        main.event("train", t, 10 * MS, {"step_num": k, "_r": 1})
        if traced:
            main.event(f"{DATALOADER_NEXT}#_MultiProcessingDataLoaderIter.__next__", t, 5 * MS)
        fetch = {"stack": LOADER_NEXT, "samples": 5, "next_frames": "2"}
        samples.event("get (q.py:9)", t, 5 * MS, fetch)
        main.event("aten::mm", t + 5 * MS, 4 * MS)
        samples.event("forward (model.py:8)", t + 5 * MS, 4 * MS, {"stack": TRAIN, "samples": 4})
        samples.event("get (q.py:9)", t + 9 * MS, MS, {**fetch, "samples": 1})
    return builder


def test_the_dataloaders_own_next_is_its_traced_fetch_not_a_python_iterator(
    tmp_path: Path,
) -> None:
    """Decision 428: the DataLoader's ``__next__ (dataloader.py)`` beside its traced call is
    that call (a plain loop's report read "77.5% waiting for the next batch; ... fetched
    from the loop's Python iterator __next__ (dataloader.py) (25 samples)"): named once,
    counted once."""
    db = build_step_db(build(_dataloader_loop(traced=True)))
    assert db.fetched.function == () and not db.fetched.ns.any()
    limits, headline = _limits(build(_dataloader_loop(traced=True)))
    assert "Python iterator" not in headline and "dataloader.py" not in headline
    assert limits["input"] == 50.0  # the traced wait: nothing added to it
    run_dir = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    write_xspace(_dataloader_loop(traced=True).build(), run_dir / "py.xplane.pb")
    run = open_run(str(run_dir))
    ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})
    found = output.to_json(get_tool("input_pipeline_analyzer").build(ctx))
    assert found["python_iterators"] == []
    assert not any("Python iterator" in r for r in found["recommendations"])
    # without the framework's trace the sampled fetch is the only one: it counts
    untraced = build_step_db(build(_dataloader_loop(traced=False)))
    assert untraced.fetched.function == ("__next__ (dataloader.py)",)
    assert untraced.fetched.ns.any()


def test_python_under_the_loaders_traced_fetch_is_not_named_again() -> None:
    """The staged batch's "Python sampled in the steps" named the DataLoader's queue ``get``
    at the share the traced wait already has (a user loop: "77.5% waiting for the next batch
    ... get (queues.py) 77.5% of the step time"): functions under the loader's own
    ``__next__`` are its traced fetch (decision 428)."""
    builder, main, samples = sampled_main()
    for k in range(STEPS):
        t = k * 10 * MS
        main.event("train", t, 10 * MS, {"step_num": k, "_r": 1})
        main.event(f"{DATALOADER_NEXT}#_MultiProcessingDataLoaderIter.__next__", t, 6 * MS)
        samples.event("get (q.py:9)", t, 6 * MS, {"stack": LOADER_NEXT, "samples": 6})
        main.event("aten::mm", t + 7 * MS, 3 * MS)
        samples.event("forward (model.py:8)", t + 7 * MS, 3 * MS, {"stack": TRAIN, "samples": 3})
    _, headline = _limits(build(builder))
    assert "waiting for the next batch" in headline
    assert "get (q.py)" not in headline and "dataloader.py" not in headline
