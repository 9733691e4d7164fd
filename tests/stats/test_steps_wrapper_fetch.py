"""Decision 587: a loop over ``stepscope.steps(batches())`` fetches through stepscope's own
frames (``_steps`` -> ``__next__`` -> ``_run_stage`` -> the user's generator); the loop's
Python iterator is the user's generator, never stepscope's wrapper."""

from __future__ import annotations

from stepscope.stats import build_step_db
from tests.support.analysis import MS, build
from tests.support.fetch_loop import LOOP, METRICS, STEPS, Piece, fetch_loop_builder, timed_fetches

# the sampler's stack of the loop (2 frames) fetching through `stepscope.steps`: `_steps`
# (2) and the wrapper's `__next__` (3) are entered for a next item; `_run_stage` calls the
# user's generator through a variable, which the fetch sites do not mark
WRAPPED = (
    f"{LOOP};_steps (step.py:155);__next__ (data.py:129);_run_stage (data.py:94);"
    "batches (train.py:12);decode (train.py:30)"
)


def test_the_generator_steps_wraps_is_the_loops_iterator() -> None:
    fetched = build_step_db(build(fetch_loop_builder(Piece(WRAPPED, 6, 6, "2,3")))).fetched
    assert fetched.function == ("batches (train.py)",)
    assert fetched.samples.tolist() == [6 * (STEPS - 2)]
    assert fetched.ns.tolist() == [6 * MS] * (STEPS - 2)


def test_its_timed_fetches_are_named_after_the_users_generator() -> None:
    """The probe times the frame the loop resumes, stepscope's ``_steps``: the samples name
    the generator it drives."""
    builder = fetch_loop_builder(Piece(WRAPPED, 6, 1, "2,3"), fetch_steps=5)
    spans = [(k * 10 * MS + 4 * MS, 6 * MS) for k in range(4)]
    timed_fetches(builder, "_steps (step.py)", "main (train.py)", spans)
    fetched = build_step_db(build(builder)).fetched
    assert fetched.function == ("batches (train.py)",)
    assert fetched.timed.tolist() == [4]


def test_stepscopes_frames_alone_name_no_iterator() -> None:
    """Samples in the wrapper's own code, and timed fetches of ``_steps`` no sample tied to
    a generator of the user's, are stepscope at work, not an iterator of the loop's."""
    inside = f"{LOOP};_steps (step.py:150)"
    builder = fetch_loop_builder(Piece(inside, 6, 6, "2"))
    spans = [(k * 10 * MS + 4 * MS, 6 * MS) for k in range(4)]
    timed_fetches(builder, "_steps (step.py)", "main (train.py)", spans)
    fetched = build_step_db(build(builder)).fetched
    assert fetched.function == ()
    assert fetched.ns.sum() == 0
    # timed alone, no sample in the fetch
    only = fetch_loop_builder(Piece(METRICS, 6, 6))
    timed_fetches(only, "_steps (step.py)", "main (train.py)", spans)
    assert build_step_db(build(only)).fetched.function == ()


# step 0's fetch begins the loader's pass (decision 635): `_first` and `_run_stage` call
# `_begin_then_next`, which calls `_begin`, which calls the DataLoader's `iter()` through the
# loader hook's wrapper
BEGINNING = (
    f"{LOOP};_steps (step.py:155);__next__ (data.py:145);_first (data.py:150);"
    "_run_stage (data.py:94);_begin_then_next (data.py:156);_begin (data.py:181);"
    "__iter__ (loader_hook.py:60);__iter__ (dataloader.py:480);_get_iterator (dataloader.py:420)"
)


def test_the_pass_begun_in_the_first_fetch_is_named_after_the_loader() -> None:
    """Samples in the pass's beginning pass stepscope's frames to the DataLoader's: the
    first page read "getting the next batch from the loop's Python iterator __next__
    (data.py)", stepscope's own file (decision 639)."""
    fetched = build_step_db(build(fetch_loop_builder(Piece(BEGINNING, 6, 6, "2,3")))).fetched
    assert fetched.function == ("__iter__ (dataloader.py)",)


def test_the_fetch_probe_at_work_names_no_iterator() -> None:
    """A sample of the probe's profile function, run as the loop enters ``_steps``, is
    stepscope at work: the first page named "_probe (fetch_probe.py)" the loop's iterator."""
    probing = f"{LOOP};_steps (step.py:150);_probe (fetch_probe.py:160)"
    fetched = build_step_db(build(fetch_loop_builder(Piece(probing, 6, 6, "2")))).fetched
    assert fetched.function == ()


def test_a_users_own_next_in_a_data_py_is_still_named() -> None:
    """Only stepscope's wrapper run is stepped over: a class of the user's in ``data.py``
    whose ``__next__`` reads the batch is the loop's iterator."""
    stack = f"{LOOP};__next__ (data.py:5);read (data.py:9)"
    fetched = build_step_db(build(fetch_loop_builder(Piece(stack, 6, 6, "2")))).fetched
    assert fetched.function == ("__next__ (data.py)",)


def test_the_steps_own_bookkeeping_names_no_iterator() -> None:
    """A sample in what `_steps`' inline stage calls each step (its event buffer's
    `admit`) is stepscope at work: the slow-steps finding named "the loop's Python iterator
    admit (annotations.py)" (a DataLoader with workers under `stepscope.steps`)."""
    booking = f"{LOOP};_steps (step.py:268);admit (annotations.py:95)"
    fetched = build_step_db(build(fetch_loop_builder(Piece(booking, 6, 6, "2")))).fetched
    assert fetched.function == ()
