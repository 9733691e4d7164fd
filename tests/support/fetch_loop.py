"""A synthetic training loop whose Python stack samples see it getting its batch from a
Python generator (decision 343's ``next_frames``), for the stats and page tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stepscope.vocab.profiler import FETCHES_LINE, FETCHES_LINE_OFFSET, STARTED_ON_THREAD_STAT
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS

STEPS = 10
LOOP = "<module> (train.py:50);main (train.py:40)"
TRAIN = f"{LOOP};train_step (train.py:20);forward (model.py:8)"
FETCH = f"{LOOP};batches (data.py:12);decode (data.py:30)"
METRICS = f"{LOOP};update_metrics (train.py:31)"


@dataclass
class Piece:
    """Per step, after 4 ms of a traced model op: ``ms`` untraced ms the sampler saw as
    ``stack`` (``samples`` samples), ``fetch``: the ``next_frames`` stat ('' for none)."""

    stack: str
    ms: int
    samples: int
    fetch: str = ""


def sampled_main() -> tuple[XSpaceBuilder, Any, Any]:
    """A host with the loop's thread and the stack sampler's line for it."""
    builder = XSpaceBuilder("py")
    host = builder.plane("/host:CPU")
    main = host.line(7, "MainThread")
    samples = host.line((1 << 48) + 7, "Python samples", "Python samples: MainThread")
    samples.display_id = 7
    return builder, main, samples


def fetch_loop_builder(
    *pieces: Piece, model_stack: str = TRAIN, fetch_steps: int = STEPS
) -> XSpaceBuilder:
    """Marked 10 ms steps: the model op (4 ms, the sampler in ``model_stack``), then the
    pieces' untraced time one after the other: the fetch of the next batch ends the step, as
    in a loop whose steps are inferred from the model's work. Pieces with ``fetch`` are
    seen in the first ``fetch_steps`` steps only (the others' samples see update_metrics)."""
    builder, main, samples = sampled_main()
    for k in range(STEPS):
        t = k * 10 * MS
        main.event("train", t, 10 * MS, {"step_num": k, "_r": 1})
        main.event("aten::mm", t, 4 * MS)
        if model_stack:  # else the sampler never saw the model's op
            stats = {"stack": model_stack, "samples": 4}
            samples.event(model_stack.rsplit(";", 1)[-1], t, 4 * MS, stats)
        at = t + 4 * MS
        for p in pieces:
            if p.fetch and k >= fetch_steps:
                p = Piece(METRICS, p.ms, p.samples)
            stats: dict[str, object] = {"stack": p.stack, "samples": p.samples}
            if p.fetch:
                stats["next_frames"] = p.fetch
            samples.event(p.stack.rsplit(";", 1)[-1], at, p.ms * MS, stats)
            at += p.ms * MS
    return builder


def timed_fetches(
    builder: XSpaceBuilder, name: str, loop: str, spans: list[tuple[int, int]]
) -> None:
    """The capture's "Python fetches" line of the loop's thread (decision 382): the frame
    ``name`` ("func (file)") entered for the next item of ``loop``, over (start, dur) ns."""
    host = builder.plane("/host:CPU")
    line = host.line(FETCHES_LINE_OFFSET + 7, FETCHES_LINE, f"{FETCHES_LINE}: MainThread")
    line.display_id = 7
    for start, dur in spans:
        line.event(name, start, dur, {"loop": loop})


def jitted_loop(
    iterations: int,
    fetch_ms: float,
    dispatch_ms: float,
    compute_ms: Callable[[int], float],
    wait: str = "",
) -> tuple[XSpaceBuilder, list[float]]:
    """A jitted JAX loop over a Python generator, and each iteration's time as the script's
    clock reads it. Each iteration: the fetch (untraced; the sampler sees the generator, the
    probe times the first 4), the jitted call (``dispatch_ms``), and XLA's work on its client
    thread from the call's end (``compute_ms(k)``). ``wait``: "" the loop goes on at once;
    "await" it then waits for XLA, a ``CommonPjRtBuffer::Await`` ending the wait; "untraced"
    it waits with nothing traced (JAX's CPU client, decision 1064)."""
    builder, main, samples = sampled_main()
    host = builder.plane("/host:CPU")
    host.stats[STARTED_ON_THREAD_STAT] = 7
    xla = host.line(2, "tf_XLAPjRtCpuClient/-7")
    t, timed, clock = 0.0, [], []
    for k in range(iterations):
        began = t
        if k < 4:  # the probe times the first fetches only
            timed.append((int(t * MS), int(fetch_ms * MS)))
        fetch = {"stack": FETCH, "samples": 2, "next_frames": "2"}
        samples.event("decode (data.py:30)", int((t + 1) * MS), int(4 * MS), fetch)
        t += fetch_ms
        main.event("PjitFunction(train_step)", int(t * MS), int(dispatch_ms * MS))
        t += dispatch_ms
        xla.event("ThunkExecutor::Execute", int(t * MS), int(compute_ms(k) * MS))
        if wait:
            t += compute_ms(k)
        if wait == "await":
            main.event("CommonPjRtBuffer::Await", int(t * MS), int(0.01 * MS))
            t += 0.01
        clock.append(t - began)
    timed_fetches(builder, "batches (data.py)", "main (train.py)", timed)
    return builder, clock
