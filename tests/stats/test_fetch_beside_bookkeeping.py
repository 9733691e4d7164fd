"""The loop's own Python beside its fetch (metrics, logging after the optimizer step) is host
work, not input, when the capture timed the fetch (decision 505): the samples alone push it
into the fetch (the sampler waits for the GIL and samples late)."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.stats import build_step_db
from stepscope.stats.bound import bound_by
from stepscope.stats.summary import summarize_steps
from tests.support.analysis import MS, build
from tests.support.fetch_loop import (
    FETCH,
    LOOP,
    STEPS,
    TRAIN,
    Piece,
    fetch_loop_builder,
    timed_fetches,
)


def _biased_loop(
    fetch_stack: str = FETCH, timed_name: str = "batches (data.py)", model_stack: str = TRAIN
) -> Profile:
    """Each step's 6 ms untraced gap: 3 ms of the loop's bookkeeping, then the 3 ms fetch;
    every sample there saw the fetch (the bookkeeping's were taken late). The probe timed
    the first 4 fetches: the gap's last 3 ms."""
    builder = fetch_loop_builder(
        Piece(fetch_stack, 6, 6, "2,3" if "std.py" in fetch_stack else "2"),
        model_stack=model_stack,
    )
    spans = [(k * 10 * MS + 7 * MS, 3 * MS) for k in range(4)]
    timed_fetches(builder, timed_name, "main (train.py)", spans)
    return build(builder)


def test_the_timed_fetches_not_the_late_samples_say_how_much_of_the_gap_is_input() -> None:
    db = build_step_db(_biased_loop())
    fetched = db.fetched
    assert fetched.function == ("batches (data.py)",)
    assert fetched.samples.tolist() == [6 * (STEPS - 2)] and fetched.timed.tolist() == [4]
    assert fetched.ns.tolist() == [3 * MS] * (STEPS - 2)  # the samples alone: 6 ms
    found = bound_by(summarize_steps({"h": db}))
    limits = {x.key: x.percent for x in found.limits}
    assert limits["input"] == 30.0 and limits["host"] == 30.0


def test_the_host_evidence_names_not_the_fetch_but_the_loops_own_python() -> None:
    """Every sample was in the fetch (none in the model's short op): the host line names
    the loop's own code, not the fetch's functions (which are input)."""
    found = bound_by(summarize_steps({"h": build_step_db(_biased_loop(model_stack=""))}))
    [host] = [x for x in found.limits if x.key == "host"]
    assert "batches (data.py)" not in host.evidence
    assert "decode (data.py)" not in host.evidence
    assert "the loop main (train.py)'s own Python or what it calls" in host.evidence


def test_a_wrapper_the_probe_timed_keeps_the_sampled_generators_name() -> None:
    """``for x in tqdm(batches())``: the probe times tqdm's ``__iter__`` (the frame the loop
    entered); the samples name the generator it drives, and the row keeps that name."""
    stack = f"{LOOP};__iter__ (std.py:1180);batches (data.py:12);decode (data.py:30)"
    fetched = build_step_db(_biased_loop(stack, "__iter__ (std.py)")).fetched
    assert fetched.function == ("batches (data.py)",)
    assert fetched.ns.tolist() == [3 * MS] * (STEPS - 2)
    assert fetched.fetch_ns.tolist() == [3 * MS * (STEPS - 2)]
