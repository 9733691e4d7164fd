"""The loop's last iteration's untraced end, seen by the stack sampler in the loop's body.

An inferred loop's last step ends with its traced work (`last_step`); what the last iteration
did after it untraced (the file ``torch.save`` writes after its last traced op, 267 ms in
/tmp/loops16 ck_last) is in no step, and the trace cannot tell it from code after the loop
(decision 639). The capture's fetch probe records the ``for`` statement's lines
(docs/formats/python_samples.md, ``loop_first_line``/``loop_last_line``): a sampled stack
whose loop frame stands on a line of the loop's body is the loop's last iteration at work,
one on a later line is code after the loop. So the last step goes on over the runs of such
samples that follow its traced end, up to the first run that is not the body's:

- a line of the body: after the ``for`` line, up to the body's last;
- not the loop asking for its next item or ending (the ``for`` line itself: the fetch that
  finds the data's end, a DataLoader joining its workers there, decision 636);
- not a ``__del__`` the loop frame calls: the loop's iterator dropped at its ``break``, a
  DataLoader's shutting down its workers (26 ms seen), which the script's clock, read before
  the ``break``, does not count.

Its end: halfway from the last such sample to the sample after it (the work ended between
the two; a sampling interval, 40 ms at 25 Hz, bounds the error), at most the capture's end;
only with `MIN_SAMPLES` of the body, so that the loop's own Python after its last op, seen
by one sample by chance, does not stretch a common last step.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.host.python_samples import SAMPLES_LINE, probe_events
from stepscope.vocab.profiler import LOOP_FIRST_LINE_STAT, LOOP_LAST_LINE_STAT

_DEL = "__del__ ("
# Samples of the body after the traced end, at least: one sample may be the loop's own few
# microseconds of Python after its last op (a clock read, a print), and would stretch the
# step by half an interval; two are work that lasted an interval (40 ms at 25 Hz) at least.
MIN_SAMPLES = 2


@record
class LoopTail:
    """The last iteration's sampled untraced end: where it ends (ns) and the function the
    loop's body called in most of its samples ("func (file)": ``save (serialization.py)``)."""

    end_ns: int
    function: str


def _loop_of(profile: Profile, thread_line: int) -> tuple[str, int, int] | None:
    """The loop the capture's probe timed last on the thread: its frame's ``func (file``
    prefix as the sampler's frames begin, and its first and last line."""
    timed = probe_events(profile, [thread_line])
    if not len(timed):
        return None
    last = int(timed[np.argmax(profile.start_ns[timed])])
    stats = profile.event_stats(last)
    loop, first, final = (
        stats.get("loop"),
        stats.get(LOOP_FIRST_LINE_STAT),
        stats.get(LOOP_LAST_LINE_STAT),
    )
    if not isinstance(loop, str) or not loop.endswith(")") or first is None or final is None:
        return None
    return loop[:-1] + ":", int(first), int(final)


def _samples_line(profile: Profile, thread_line: int) -> int | None:
    thread = profile.lines[thread_line]
    for ln in profile.lines:
        if ln.name == SAMPLES_LINE and ln.plane == thread.plane and ln.display_id == thread.id:
            return ln.index
    return None


def _in_body(stack: str, prefix: str, first: int, last: int) -> str | None:
    """What the sampled ``stack`` calls from the loop's body ("func (file)", the loop's own
    line when it calls nothing), or None when it is not in the body: its outermost frame of
    the loop's function not on a line after the ``for`` and up to the body's last, or
    calling a ``__del__``."""
    frames = stack.split(";")
    for k, frame in enumerate(frames):
        if frame.startswith(prefix):
            try:
                line = int(frame[len(prefix) : -1])
            except ValueError:
                return None
            callee = frames[k + 1] if k + 1 < len(frames) else frame
            if not first < line <= last or callee.startswith(_DEL):
                return None
            return callee.rsplit(":", 1)[0] + ")" if ":" in callee else callee
    return None


def sampled_tail(
    profile: Profile, thread_line: int, last_end: int, capture_end: int
) -> LoopTail | None:
    """Where the loop's last iteration, whose traced work ends at ``last_end`` (ns), ends
    by the sampler (module docstring), or None when no sample of its body follows."""
    loop = _loop_of(profile, thread_line)
    samples = _samples_line(profile, thread_line)
    if loop is None or samples is None:
        return None
    prefix, first, last = loop
    span = profile.events_of_line(profile.lines[samples])
    runs = np.arange(span.start, span.stop, dtype=np.int64)
    runs = runs[np.argsort(profile.start_ns[runs], kind="stable")]
    runs = runs[profile.start_ns[runs] >= last_end]
    body: list[int] = []
    weights: dict[str, int] = {}
    for run in runs.tolist():
        stats = profile.event_stats(run)
        called = _in_body(str(stats.get("stack", "")), prefix, first, last)
        if called is None:
            break
        body.append(run)
        weights[called] = weights.get(called, 0) + max(int(stats.get("samples", 1) or 1), 1)
    if not body or sum(weights.values()) < MIN_SAMPLES:
        return None
    final = body[-1]
    start, end = int(profile.start_ns[final]), int(profile.end_ns[final])
    n = max(int(profile.event_stats(final).get("samples", 1) or 1), 1)
    # its samples evenly spread: the last one (n - 1) / n of the way, the run's end a
    # sampling interval after it, or the next run's first sample when that came sooner
    seen = start + (end - start) * (n - 1) // n
    function = max(weights, key=lambda k: weights[k])
    return LoopTail(min((seen + end) // 2, capture_end), function)
