"""A loop fed through a queue another thread fills: its first fetches find the queue full
(filled while the loop warmed up) and say nothing of the later ones, which wait for the
producer; the samples in those later gaps place the fetch there (decision 730)."""

from __future__ import annotations

from stepscope.stats import build_step_db
from stepscope.stats.bound import bound_by
from stepscope.stats.summary import summarize_steps
from tests.support.analysis import MS, build
from tests.support.fetch_loop import LOOP, sampled_main, timed_fetches

STEPS = 10
GET = f"{LOOP};get (queue.py:180);wait (threading.py:327)"


def _queue_fed_loop(late_ms: int = 20, producer: bool = False):
    """Marked steps: a 4 ms model op, 1 ms of the loop's own Python, then the queue's get:
    1 ms in the first 4 steps (timed by the probe), ``late_ms`` in the others. Every sample
    in the gaps saw the get (the loop's own Python is seen late, in the wait). With
    ``producer``, the producer thread's traced ``jax.device_put`` of the batch (two 0.2 ms
    events, 0.3 ms apart) ends 0.3 ms before each later get returns, and each step ends with
    0.1 ms of the loop thread's traced argument handling, as in a JAX loop whose producer
    puts its batches on the device (decision 1011)."""
    builder, main, samples = sampled_main()
    thread = builder.plane("/host:CPU").line(9, "producer") if producer else None
    t = 0
    spans = []
    for k in range(STEPS):
        get_ms = 1 if k < 4 else late_ms
        dur = (4 + 1 + get_ms) * MS + (MS // 10 if producer else 0)
        main.event("train", t, dur, {"step_num": k, "_r": 1})
        main.event("aten::mm", t, 4 * MS)
        samples.event("forward", t, 4 * MS, {"stack": f"{LOOP};forward (model.py:8)", "samples": 4})
        gap = t + 4 * MS
        samples.event(
            "wait",
            gap,
            (1 + get_ms) * MS,
            {"stack": GET, "samples": 1 + get_ms, "next_frames": "2"},
        )
        if k < 4:
            spans.append((gap + MS, get_ms * MS))
        if producer:
            end = t + dur - MS // 10
            main.event("Wait for usage holds", end, MS // 10)
            if k >= 4 and thread is not None:
                thread.event("shard_args", end - MS, MS // 5)
                thread.event("DevicePutWithSharding", end - MS // 2, MS // 5)
        t += dur
    timed_fetches(builder, "get (queue.py)", "main (train.py)", spans)
    return build(builder)


def test_the_later_waits_are_the_queues_not_the_first_fetches_share() -> None:
    db = build_step_db(_queue_fed_loop())
    fetched = db.fetched
    assert fetched.function == ("get (queue.py)",)
    # steps 1-3 (timed): half of their 2 ms gap; steps 4-8: the whole 21 ms gap (the
    # samples'), not half of it (the first fetches' share)
    assert fetched.ns.tolist() == [1 * MS] * 3 + [21 * MS] * 5


def test_a_producer_event_cutting_the_later_waits_leaves_them_the_queues() -> None:
    """The producer's events cut each later wait in three pieces of the same place (20.0,
    0.3 and 0.3 ms): the wait a step spends there, not its pieces' median (0.3 ms, like the
    timed steps' 2 ms), tells it from the timed ones; each later step's 20.6 ms untraced
    is the queue's, as the samples say, not the first fetches' half."""
    db = build_step_db(_queue_fed_loop(producer=True))
    assert db.fetched.function == ("get (queue.py)",)
    later = 21 * MS - 2 * (MS // 5)
    assert db.fetched.ns.tolist() == [1 * MS] * 3 + [later] * 5


def test_like_gaps_keep_the_timed_share() -> None:
    """The later gaps no longer than twice the timed ones: the timed share holds (the
    loop's own Python beside the get, decision 505)."""
    db = build_step_db(_queue_fed_loop(late_ms=1))
    assert db.fetched.ns.tolist() == [1 * MS] * 8


def test_the_headline_and_fix_speak_of_the_queue() -> None:
    summary = summarize_steps({"h": build_step_db(_queue_fed_loop())})
    found = bound_by(summary)
    assert found.limits[0].key == "input"
    text = found.limits[0].evidence
    assert "a queue another thread or process fills, get (queue.py)" in text
    assert "Python iterator" not in text
