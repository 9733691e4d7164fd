"""The ring: the recording's thread buffers cut to the last steps, and step summaries.

Threads keep appending to their own buffers exactly as in a capture (no extra cost on the
hot path); only the recorder's thread reads and trims them. Each thread's events are in
the order they ended, so everything that ended before a time is a prefix, found by
bisection and removed with one ``del events[:k]`` (a single C call under the GIL, safe next
to the owning thread's appends). Sampler runs are trimmed the same way.

The bound by bytes uses fixed estimates (`EVENT_BYTES`, `RUN_BYTES`), measured for typical
events and stacks (`benchmarks/bench_recorder.py` checks the process's memory against it).
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple, cast

from stepscope.capture.host_tracer import HostTracer, ThreadBuffer
from stepscope.capture.python_sampler import PythonSampler

EVENT_BYTES = 250  # an event tuple, its ints and (often) a small stats dict
RUN_BYTES = 1200  # a sampled run: the list, its ints and a stack of ~15 frames


def _end(event: Any) -> int:
    return int(event[2])


def _run_end(run: Any) -> int:
    return int(run[1])


class StepSummary(NamedTuple):
    """One finished step, kept long after its events are gone."""

    step_num: int
    start_ns: int  # perf_counter_ns
    dur_ns: int
    thread_id: int  # OS thread id of the step's thread


class StepHistory:
    """Step summaries as four int64 columns, a ring of ``capacity`` rows: 32 bytes a step
    (a tuple per step took ~170), and a snapshot copies four arrays, not 100,000 objects.
    One thread appends (the recorder's, under its lock); readers see whole rows."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._cols = tuple(array("q") for _ in StepSummary._fields)
        self._total = 0  # rows ever appended
        # a copy's rows the original held before its first (a save's history starts where
        # the recorder's did: `rows_before`)
        self.older = 0

    def __len__(self) -> int:
        return min(self._total, self.capacity)

    @property
    def total(self) -> int:
        """Rows ever appended: row ``k`` (counted from the first) stays row ``k`` as the ring
        turns, while the ring still holds it (`row`)."""
        return self._total

    def row(self, number: int) -> StepSummary | None:
        """Row ``number`` counted from the first ever appended; None once overwritten."""
        if not self._total - len(self) <= number < self._total:
            return None
        slot = number % self.capacity
        return StepSummary(*(col[slot] for col in self._cols))

    def append(self, row: StepSummary) -> None:
        total = self._total
        if total < self.capacity:
            for col, value in zip(self._cols, row, strict=True):
                col.append(value)
        else:
            slot = total % self.capacity
            for col, value in zip(self._cols, row, strict=True):
                col[slot] = value
        self._total = total + 1

    def extend(self, rows: Iterable[StepSummary]) -> None:
        """`append` each row, a column slice at a time (the watchdog adds every step it
        scans: a Python loop over four columns per row was a third of its work)."""
        rows = list(rows)
        if not rows:
            return
        values = [array("q", column) for column in zip(*rows, strict=True)]
        done, count = 0, len(rows)
        while done < count:
            total = self._total
            if total < self.capacity:
                take = min(count - done, self.capacity - total)
                for col, new in zip(self._cols, values, strict=True):
                    col.extend(new[done : done + take])
            else:
                slot = total % self.capacity
                take = min(count - done, self.capacity - slot)
                for col, new in zip(self._cols, values, strict=True):
                    col[slot : slot + take] = new[done : done + take]
            self._total = total + take  # after the columns: readers see whole rows
            done += take

    def __getitem__(self, index: int) -> StepSummary:
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError(f"step history index {index} out of range ({size} rows)")
        slot = (self._total - size + index) % self.capacity
        return StepSummary(*(col[slot] for col in self._cols))

    def column(self, name: str, last: int | None = None) -> list[int]:
        """One field of the newest ``last`` rows (all by default), oldest first."""
        col = self._cols[StepSummary._fields.index(name)]
        size = len(self)
        count = size if last is None else min(last, size)
        first = self._total - count
        if self._total <= self.capacity:
            return col[first : self._total].tolist()
        start, end = first % self.capacity, self._total % self.capacity
        if start < end:
            return col[start:end].tolist()
        return col[start:].tolist() + col[:end].tolist()

    def __iter__(self) -> Iterator[StepSummary]:
        columns = [self.column(name) for name in StepSummary._fields]
        return (StepSummary(*row) for row in zip(*columns, strict=True))

    def copy(self, through: int | None = None) -> StepHistory:
        """The rows in order (up to row ``through``, counted as in `row`, when given), as a
        history of their own (a few array copies)."""
        count = len(self)
        if through is not None:
            count = max(0, min(count, through + 1 - (self._total - count)))
        twin = StepHistory(self.capacity)
        twin._cols = tuple(array("q", self.column(name)[:count]) for name in StepSummary._fields)
        twin._total = count
        twin.older = self.older + self._total - len(self)
        return twin

    def rows_before(self, start_ns: int) -> int:
        """Steps the recorder saw that started before ``start_ns``: the rows held that did,
        and every row older than those held (a save's `older`, the ring turned)."""
        starts = self._cols[StepSummary._fields.index("start_ns")]
        return self.older + self._total - len(self) + sum(1 for s in starts if s < start_ns)


class Ring:
    """Scan new events for finished steps; trim to ``keep_steps`` and ``max_bytes``."""

    def __init__(
        self,
        host: HostTracer,
        keep_steps: int,
        max_bytes: int,
        history_steps: int,
    ) -> None:
        self.host = host
        self.sampler: PythonSampler | None = None
        self.keep_steps = keep_steps
        self.max_events = max(1, max_bytes // EVENT_BYTES)
        self.history = StepHistory(history_steps)
        self._cursor: dict[int, int] = {}  # id(buffer) -> first event not scanned yet
        self.last_step_start: dict[int, int] = {}  # thread ident -> start of its last step
        self.steps_seen = 0
        self.trimmed_events = 0
        # The latest end of anything dropped: a save's first step is whole when it started
        # at or after it (cuts are at step starts; the byte bound may cut inside a step)
        self.dropped_end_ns = -1

    def scan(self) -> list[StepSummary]:
        """Steps finished since the last scan, in the order they started."""
        found: list[StepSummary] = []
        for buf in self.host.buffers():
            events = buf.events
            end = len(events)
            start = self._cursor.get(id(buf), 0)
            # the step markers among the new events (a step-group root has ``_r``): one
            # comprehension over a slice, not an indexed loop, as this runs for every event
            markers = cast(
                "list[tuple[str, int, int, int, dict[str, Any]]]",
                [e for e in events[start:end] if e[4] is not None and "_r" in e[4]],
            )
            native_id = buf.native_id
            for _name, begin, finish, _depth, stats in markers:
                number = int(stats.get("step_num", -1))
                found.append(StepSummary(number, begin, finish - begin, native_id))
            if markers:
                self.last_step_start[buf.ident] = markers[-1][1]
            self._cursor[id(buf)] = end
        found.sort(key=lambda summary: summary.start_ns)
        self.history.extend(found)
        self.steps_seen += len(found)
        return found

    def trim(self) -> None:
        """Drop what ended before the oldest kept step, then the oldest steps (or events)
        until the estimated bytes fit; then the CPU readings older than what is kept."""
        self._trim_events()
        self._trim_cpu()

    def _trim_cpu(self) -> None:
        """Each sampled thread's CPU readings (`SampledThread.cpu`, three numbers a sample,
        oldest first) from its oldest kept run on, or its latest alone: kept for as long as
        the recorder ran, they grew by 24 bytes a sample and thread without bound."""
        if self.sampler is None:
            return
        for thread in list(self.sampler.threads.values()):
            cpu = thread.cpu
            times = cpu[0::3]
            runs = thread.runs
            k = bisect.bisect_left(times, int(runs[0][0])) if runs else len(times) - 1
            if k > 0:
                del cpu[: 3 * k]

    def _trim_events(self) -> None:
        if len(self.history) >= self.keep_steps:
            self._cut(self.history[-self.keep_steps].start_ns)
        if self.n_events() <= self.max_events:
            return
        # Over the byte bound: give up whole steps, oldest first, while one is left; the
        # first start that fits is found by bisection (events left after a cut at a start
        # only fall as the start moves later).
        starts = self.history.column("start_ns", self.keep_steps)
        low, high = 1, len(starts)  # cutting at starts[high - 1] keeps one step
        while low < high:
            mid = (low + high) // 2
            if self._events_after(starts[mid]) <= self.max_events:
                high = mid
            else:
                low = mid + 1
        if low < len(starts):
            self._cut(starts[low])
            if self.n_events() <= self.max_events:
                return
        # One step alone is too big: each thread keeps its newest share.
        buffers = self.host.buffers()
        share = max(1, self.max_events // max(1, len(buffers) + self._n_sampled()))
        for buf in buffers:
            self._drop(buf, len(buf.events) - share)
        for runs in self._sampled_runs():
            excess = len(runs) - share
            if excess > 0:
                self.dropped_end_ns = max(self.dropped_end_ns, _run_end(runs[excess - 1]))
                del runs[:excess]
                self.trimmed_events += excess

    def n_events(self) -> int:
        """Events in the ring, sampler runs counted at their larger size."""
        events = sum(len(buf.events) for buf in self.host.buffers())
        runs = sum(len(r) for r in self._sampled_runs())
        return events + runs * RUN_BYTES // EVENT_BYTES

    def _events_after(self, cutoff_ns: int) -> int:
        """`n_events` as it would be after ``_cut(cutoff_ns)``."""
        events = sum(
            len(buf.events) - bisect.bisect_right(buf.events, cutoff_ns, key=_end)
            for buf in self.host.buffers()
        )
        runs = sum(
            len(r) - bisect.bisect_right(r, cutoff_ns, key=_run_end) for r in self._sampled_runs()
        )
        return events + runs * RUN_BYTES // EVENT_BYTES

    def estimated_bytes(self) -> int:
        return self.n_events() * EVENT_BYTES

    def _cut(self, cutoff_ns: int) -> None:
        for buf in self.host.buffers():
            self._drop(buf, bisect.bisect_right(buf.events, cutoff_ns, key=_end))
        for runs in self._sampled_runs():
            k = bisect.bisect_right(runs, cutoff_ns, key=_run_end)
            if k > 0:
                self.dropped_end_ns = max(self.dropped_end_ns, _run_end(runs[k - 1]))
                del runs[:k]
                self.trimmed_events += k

    def _drop(self, buf: ThreadBuffer, k: int) -> None:
        if k <= 0:
            return
        # events are in the order they ended: the last one dropped ended last
        self.dropped_end_ns = max(self.dropped_end_ns, _end(buf.events[k - 1]))
        del buf.events[:k]
        self.trimmed_events += k
        cursor = self._cursor.get(id(buf), 0)
        self._cursor[id(buf)] = max(0, cursor - k)

    def _sampled_runs(self) -> list[list[Any]]:
        if self.sampler is None:
            return []
        return [t.runs for t in list(self.sampler.threads.values())]

    def _n_sampled(self) -> int:
        return 0 if self.sampler is None else len(self.sampler.threads)


def save_window(
    history: StepHistory, keep_steps: int, step_row: int | None, steps_after: int
) -> tuple[int | None, int | None, int | None]:
    """What a save keeps: (the start of its first step: events that ended by then are left
    out; the end of its last step: events that started after it are left out; the last
    history row it keeps), None where unbounded. Without ``step_row``, the last
    ``keep_steps + steps_after`` steps. With it, ``keep_steps`` up to that step and up to
    ``steps_after`` after it: a slow step is judged when the watchdog wakes, up to
    ``poll_s`` (or `WAKE_STEPS` steps) after it ended, and a save cut at the detection
    missed it (decision 515)."""
    last = history.total - 1
    step = None if step_row is None else history.row(step_row)
    if step_row is None or step is None:  # not a step's save (or its row is gone)
        first = history.row(last - keep_steps - steps_after + 1)
        return (None if first is None else first.start_ns), None, None
    last = min(step_row + steps_after, last)
    first = history.row(step_row - keep_steps + 1)
    end = history.row(last) or step
    return (None if first is None else first.start_ns), end.start_ns + end.dur_ns, last
