"""A loop fed through a standard-library queue (``x = q.get()``) waits in the queue's ``get``
for its next batch: the sampler's stacks mark that frame as entered for a next item, and the
probe times it, as a generator's ``next()`` (decision 730)."""

from __future__ import annotations

import queue
import sys
import threading
from types import FrameType

from stepscope.capture.fetch_probe import MAX_FETCHES, FetchProbe
from stepscope.capture.fetch_sites import FetchSites
from stepscope.capture.python_sampler import stack_text


def _stack_inside_get() -> tuple[tuple[tuple[object, int], ...], list[int]]:
    """The stack, innermost first, of a thread blocked in ``queue.Queue.get`` under a caller
    that is no fetch site (a plain call), as the sampler takes it."""
    q: queue.Queue[int] = queue.Queue()
    taken: list[tuple[tuple[object, int], int]] = []
    waiting = threading.Event()

    def consumer() -> None:
        q.get()

    t = threading.Thread(target=consumer)
    t.start()
    frame: FrameType | None = None
    for _ in range(100_000):  # until the consumer is inside get (at once, but for the GIL)
        frame = sys._current_frames().get(t.ident or 0)
        while frame is not None and frame.f_code is not queue.Queue.get.__code__:
            frame = frame.f_back
        if frame is not None:
            break
        waiting.wait(0.001)
    assert frame is not None, "the consumer thread never entered queue.Queue.get"
    while frame is not None:
        taken.append(((frame.f_code, frame.f_lineno), frame.f_lasti))
        frame = frame.f_back
    q.put(1)
    t.join()
    return tuple(code_line for code_line, _ in taken), [lasti for _, lasti in taken]


def test_a_queues_get_is_entered_for_the_next_item() -> None:
    stack, lastis = _stack_inside_get()
    _, text, fetched = stack_text(stack, {}, lastis, FetchSites())  # type: ignore[arg-type]
    frames = text.split(";")
    assert frames[-1].startswith("get (queue.py:")
    assert frames[-2].startswith("consumer (test_queue_fetch_sites.py:")
    assert fetched == str(len(frames) - 1)


def test_other_standard_library_calls_are_not() -> None:
    sites = FetchSites()
    assert not sites.gets_from_queue(queue.Queue.put.__code__)
    assert not sites.gets_from_queue(threading.Condition.wait.__code__)
    assert sites.gets_from_queue(queue.Queue.get.__code__)


def test_the_probe_times_the_loops_gets() -> None:
    q: queue.Queue[int] = queue.Queue()
    for i in range(MAX_FETCHES + 2):
        q.put(i)
    probe = FetchProbe(sys._getframe(), FetchSites())
    assert probe.install()
    try:
        for _ in range(MAX_FETCHES + 2):
            q.get()
    finally:
        probe.stop()
    assert [f[0] for f in probe.fetches] == ["get (queue.py)"] * MAX_FETCHES
    assert all(start < end for _, _, start, end, _ in probe.fetches)
