"""Inferred steps of a loop over a Python generator begin where the loop asks for their batch
(decision 506), not at the batch's conversion at the fetch's end: each step holds its own
batch's making and the loop's own Python after its work, as the script's steps do."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats import build_step_db
from stepscope.stats.bound import bound_by
from stepscope.stats.steps.fetch import Fetched
from stepscope.stats.steps.fetch_bounds import NOTE, fetch_first
from stepscope.stats.steps.types import StepMarkers
from stepscope.stats.summary import summarize_steps
from stepscope.vocab.profiler import STARTED_ON_THREAD_STAT
from tests.support.analysis import MS, build
from tests.support.fetch_loop import FETCH, LOOP, sampled_main, timed_fetches

TRAIN = [  # one eager PyTorch iteration from its batch's conversion (name, ms)
    ("aten::lift_fresh", 0.02),
    ("Optimizer.zero_grad#SGD.zero_grad", 0.1),
    ("aten::linear", 0.2),
    ("aten::relu", 0.03),
    ("aten::linear", 0.03),
    ("aten::mse_loss", 0.1),
    ("autograd::engine::evaluate_function: MseLossBackward0", 0.05),
    ("autograd::engine::evaluate_function: AddmmBackward0", 0.1),
    ("Optimizer.step#SGD.step", 0.2),
]
ITERATIONS = 12


def _loop(book_ms: float = 3.0, marked: bool = False) -> tuple[Profile, list[float], float]:
    """Each iteration: the fetch (6 ms of untraced Python, then the conversion), the model's
    work, then ``book_ms`` of the loop's own Python (metrics). The capture timed the first 4
    fetches; the sampler saw the fetch and the bookkeeping once each an iteration. Returns
    the profile, the fetches' starts (ms) and the end of the last iteration's work (ms)."""
    builder, main, samples = sampled_main()
    builder.plane("/host:CPU").stats[STARTED_ON_THREAD_STAT] = 7
    t, fetches, timed = 0.0, [], []
    for k in range(ITERATIONS):
        fetches.append(t)
        if k < 4:  # the probe times the first fetches only, the conversion inside them
            timed.append((int(t * MS), int(6.05 * MS)))
        fetch = {"stack": FETCH, "samples": 1, "next_frames": "2"}
        samples.event("decode (data.py:30)", int((t + 1) * MS), int(4 * MS), fetch)
        t += 6.0
        for name, dur in TRAIN:
            main.event(name, int(t * MS), int(dur * MS))
            t += dur + 0.02
        end = t - 0.02
        if book_ms:
            stack = {"stack": f"{LOOP[: LOOP.rindex(':')]}:45)", "samples": 1}
            samples.event("main (train.py:45)", int((t + 0.5) * MS), int(MS), stack)
        t += book_ms
    timed_fetches(builder, "batches (data.py)", "main (train.py)", timed)
    return build(builder), fetches, end


def test_each_step_begins_at_its_batchs_fetch() -> None:
    profile, fetches, end = _loop()
    db = build_step_db(profile)
    starts = db.start_ns / MS
    assert db.n_steps == ITERATIONS
    # the first 4 where the capture timed them, the others where the fetch's share of the
    # gap before the conversion puts them (before: at each batch's conversion, 6 ms later)
    assert np.allclose(starts, fetches, atol=1e-3)
    assert np.allclose(db.dur_ns[:-1] / MS, np.diff(fetches), atol=1e-3)
    assert abs((starts[-1] + db.dur_ns[-1] / MS) - end) < 1e-3  # the last ends with its work
    assert NOTE in db.description


def test_the_fetch_at_the_steps_start_is_the_iterators_input_and_the_rest_host() -> None:
    db = build_step_db(_loop()[0])
    assert np.allclose(db.fetched.ns / MS, 6.0, atol=1e-3)  # step 0's too: the capture timed it
    limits = db.limit_ns()
    # with the conversion and the two 0.02 ms gaps around the optimizer's zero_grad (left out)
    # before the first model op
    assert np.allclose(limits["input"] / MS, 6.06, atol=0.005)
    # the bookkeeping after the step's work (3.02 ms) and the model's six 0.02 ms gaps
    assert np.allclose(limits["host"][:-1] / MS, 3.14, atol=0.005)
    headline = bound_by(summarize_steps({"h": db})).headline
    assert "getting the next batch from the loop's Python iterator batches (data.py)" in headline


def test_a_loop_without_bookkeeping_begins_at_its_fetch_too() -> None:
    profile, fetches, _ = _loop(book_ms=0.0)
    db = build_step_db(profile)
    assert np.allclose(db.start_ns / MS, fetches, atol=1e-3)


def test_a_fetch_seen_only_in_the_last_step_moves_no_bound() -> None:
    """Two inferred steps, the fetch's time only in a gap inside the last one (no gap ends
    where a step begins): no step moves. `_tail` found no gap at a bound and read the first
    of no candidates (an IndexError) where it meant "none"."""
    builder, main, _ = sampled_main()
    main.event("aten::linear", 0, MS)
    profile = build(builder)
    markers = StepMarkers(
        "inferred",
        "inferred",
        np.full(2, -1, np.int64),
        np.arange(2, dtype=np.int64),
        ("0", "1"),
        np.array([0, 10 * MS], np.int64),
        np.array([10 * MS, 20 * MS], np.int64),
        False,
        False,
        lines=(0,),
    )
    gap = np.array([12 * MS], np.int64)
    fetched = Fetched(
        function=(FETCH,),
        samples=np.array([100]),
        loop=LOOP,
        gap_lo=gap,
        gap_hi=gap + 3 * MS,
        gap_ns=np.array([2 * MS], np.int64),
    )
    span_lo, span_hi = markers.start_ns, markers.end_ns
    assert fetch_first(profile, markers, np.arange(2), span_lo, span_hi, fetched) is None
