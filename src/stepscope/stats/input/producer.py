"""The thread filling the queue a loop waits on: what the capture traced of it (decision 1024).

A loop whose fetch is a standard-library queue's ``get`` (`Fetched.from_queue`) waits for
another thread or process; the advice is about that producer, not about the loop's iterator.
The stack sampler samples only the steps' threads, so what the capture shows of the producer
is its traced work: a JAX prefetch thread's ``jax.device_put`` (``shard_args`` >
``DevicePutWithSharding``) ends just before each ``get`` returns (decision 1011's loop). The
producer is the program's own thread (not a TensorFlow / XLA pool's ``tf_...`` thread, whose
copies that put triggers end there too) whose traced events end inside the loop's waits most
often; its top-level events, per step, are its traced work, and the rest of each batch there
is Python the capture does not trace.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.steps.breakdown import StepDb

# the lines of a capture's own that are no thread's traced work (`capture.python_sampler`'s
# samples, the fetch probe's, the CPU time sampled per thread) and TSL's pools' threads
_NOT_PRODUCERS = ("Python samples:", "Python fetches:", "Thread CPU:", "tf_")
# at least this many of a thread's traced events end inside the loop's waits: once or twice
# is any thread's work that happened to end then
MIN_ENDS = 3
NAMED = 2  # the producer's top-level events named, most time first
# a line id under this is the thread's own id (Linux's pid_max at most), as
# `threading.get_native_id()` / `Thread.native_id` gives it; TSL's ids for threads it did not
# name are 64-bit hashes (decision 1024)
_NATIVE_IDS = 1 << 22


@record
class Producer:
    """The thread filling the loop's queue, as far as the capture traced it."""

    thread_id: int  # its line's id (the thread's where the tracer records it, else a hash)
    names: tuple[str, ...]  # its top-level traced events, most time first
    counts: tuple[int, ...]
    ns_per_step: int  # its top-level traced time over the steps, per step
    ends_in_waits: int  # its events ending inside the loop's waits
    # each named event's time over the steps, per step, as ``names`` (decision 1028)
    each_per_step: tuple[int, ...] = ()

    def describe(self) -> str:
        """``the thread filling it is traced only in shard_args x80 (0.95 ms per step); the
        rest of each batch's making there is Python the capture does not trace ...`` (no
        thread id: a TSL tracer's line id is a hash, not the thread's id)."""
        work = ", ".join(f"{n} x{c}" for n, c in zip(self.names, self.counts, strict=True))
        return (
            f"the thread filling it is traced only in {work} "
            f"({self.ns_per_step / 1e6:.2f} ms per step); the rest of each batch's making "
            "there is Python the capture does not trace (wrap it in stepscope.trace spans "
            "to see it)"
        )

    def headline(self) -> str:
        """What the steps wait on, for the headline's input evidence (decision 1028): ``the
        steps wait there on the thread filling it (native id 27497, as
        threading.get_native_id() gives it), traced only in shard_args x74 (0.26 ms per
        step), the rest of each batch's making untraced Python``; with more traced work, its
        heaviest named and the traced total. No ";": the headline's parts are so divided."""
        thread = (
            f" (native id {self.thread_id}, as threading.get_native_id() gives it)"
            if 0 < self.thread_id < _NATIVE_IDS
            else ""
        )
        heaviest = self.each_per_step[0] if self.each_per_step else self.ns_per_step
        work = f"{self.names[0]} x{self.counts[0]} ({heaviest / 1e6:.2f} ms"
        traced = (
            f"traced only in {work} per step)"
            if len(self.names) == 1
            else f"its heaviest traced work {work} of its {self.ns_per_step / 1e6:.2f} ms "
            "traced per step)"
        )
        return (
            f"the steps wait there on the thread filling it{thread}, {traced}, the rest of "
            "each batch's making untraced Python"
        )


def _top_level(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Mask of the events (sorted by start) not inside an earlier one on their line."""
    if not len(starts):
        return np.zeros(0, dtype=bool)
    reach = np.maximum.accumulate(ends)
    top = np.ones(len(starts), dtype=bool)
    top[1:] = starts[1:] >= reach[:-1]
    return top


def _untraced(profile: Profile, index: int, first: int, last: int) -> tuple[np.ndarray, np.ndarray]:
    """The gaps between the traced events of the steps' thread from ``first`` to ``last``
    (sorted, disjoint): where it waits in the queue's ``get``, with its other untraced Python
    (the queue's waits hold nearly all of it in such a loop: decision 1011)."""
    line = profile.lines[index]
    events = np.arange(line.first_event, line.first_event + line.event_count)
    starts, ends = profile.start_ns[events], profile.end_at(events)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], np.maximum.accumulate(ends[order])
    lo = np.concatenate([[first], ends])
    hi = np.concatenate([starts, [last]])
    lo, hi = np.maximum(lo, first), np.minimum(hi, last)
    keep = hi > lo
    return lo[keep], hi[keep]


def queue_producer(profile: Profile, db: StepDb) -> Producer | None:
    """The thread filling the queue the steps wait on, or None: no queue's ``get`` counted as
    the fetch, no waits placed, or no thread of the program's own traced ending in them."""
    fetched = db.fetched
    if not (fetched.counted and fetched.from_queue() and db.lines and db.n_steps):
        return None
    first, last = int(db.start_ns[0]), int(db.start_ns[-1] + db.dur_ns[-1])
    lo, hi = _untraced(profile, db.lines[0], first, last)
    plane = profile.lines[db.lines[0]].plane
    best: tuple[int, int, np.ndarray, np.ndarray] | None = None
    for line in profile.lines:
        if (
            line.plane != plane
            or line.index in db.lines
            or line.name.startswith(_NOT_PRODUCERS)
            or line.display_name.startswith(_NOT_PRODUCERS)
            or not line.event_count
        ):
            continue
        events = np.arange(line.first_event, line.first_event + line.event_count)
        events = events[np.argsort(profile.start_ns[events], kind="stable")]
        ends = profile.end_at(events)
        k = np.searchsorted(lo, ends, "right") - 1
        inside = int(((k >= 0) & (ends < hi[np.maximum(k, 0)])).sum())
        if inside >= MIN_ENDS and (best is None or inside > best[1]):
            best = (line.index, inside, events, ends)
    if best is None:
        return None
    index, inside, events, ends = best
    # its work while the steps ran, top-level events only (a put's inner copy is the put's)
    starts = profile.start_ns[events]
    top = _top_level(starts, ends) & (starts >= first) & (ends <= last)
    names = profile.name[events[top]]
    dur = (ends - starts)[top]
    ids, group = np.unique(names, return_inverse=True)
    total = np.bincount(group, weights=dur, minlength=len(ids))
    counts = np.bincount(group, minlength=len(ids))
    order = np.argsort(-total, kind="stable")[:NAMED]
    if not len(order):
        return None
    return Producer(
        int(profile.lines[index].id),
        tuple(profile.strings[int(ids[i])] for i in order.tolist()),
        tuple(int(counts[i]) for i in order.tolist()),
        int(dur.sum()) // max(db.n_steps, 1),
        inside,
        tuple(int(total[i]) // max(db.n_steps, 1) for i in order.tolist()),
    )
