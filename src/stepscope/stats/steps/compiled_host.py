"""How much of the steps' traced host time, with a device, is inside compiled calls
(decision 1083).

With a device, the "host" limit's traced part is the host events' time outside any launch
and any higher limit (`limits`). A torch.compile'd step's is mostly its ``Torch-Compiled
Region``: Dynamo's guards, the compiled graph's Python wrapper, the launcher around each
kernel (a100_triton_tiny: 1.35 ms a step around one 1.8 us kernel). Its words said "traced host
events that launch nothing" and its advice "compile the step". The time of the compiled
calls' pairs (`vocab.compiled`) that no pair of a higher limit covers, per kept step, over
the host column gives the share the words and the advice read.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from stepscope.distinct import member
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.arrays import distinct_ids
from stepscope.stats.intervals import intersect_sets, subtract_sets, union_of
from stepscope.stats.steps.limits import LimitType
from stepscope.vocab.compiled import compiled_framework
from stepscope.vocab.tensorflow import FUNCTION_CALL_STAT

_HOST = int(LimitType.HOST)
_KINDS = ("pytorch", "jax", "tensorflow")


@record
class CompiledHost:
    """The share (0 to 1) of the kept steps' traced host limit (its column) spent inside
    compiled calls, the framework compiling them ("" with none) and the name of the compiled
    event holding the most of it."""

    framework: str = ""
    share: float = 0.0
    name: str = ""


@record
class CompiledTime:
    """The compiled calls' host time no higher limit takes: sorted, disjoint intervals."""

    framework: str = ""
    name: str = ""  # the compiled event with the most time
    lo: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    hi: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def compiled_time(
    profile: Profile,
    events: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    ltypes: np.ndarray,
    has_device: bool,
) -> CompiledTime:
    """Of the pairs (``events``, [``lo``, ``hi``), limit ``ltypes``), the host limit's compiled
    calls, less what the pairs of higher limits cover; none without a device (there the
    compiled code runs on the host: compute)."""
    if not has_device or not len(events):
        return CompiledTime()
    strings = profile.strings
    kind = np.zeros(len(strings), np.int8)
    used = distinct_ids(profile.name[events], len(strings))
    kind[used] = [_code(compiled_framework(strings[i])) for i in used.tolist()]
    code = kind.take(profile.name.take(events))
    called = profile.stat_events(FUNCTION_CALL_STAT)  # a tf.function's call from Python
    if len(called):
        code[member(events, called)] = _code("tensorflow")
    mine = (code > 0) & (ltypes == _HOST)
    if not mine.any():
        return CompiledTime()
    counts = np.bincount(code[mine], minlength=len(_KINDS) + 1)
    framework = _KINDS[int(np.argmax(counts[1:]))]
    names = profile.name.take(events[mine])
    held = np.bincount(names, weights=hi[mine] - lo[mine], minlength=len(strings))
    c_lo, c_hi = union_of(lo[mine], hi[mine])
    # only the higher limits' pairs overlapping the compiled time take any of it: the union
    # of those few, not of every device pair (a sort of them all; the same intervals)
    above = np.flatnonzero(ltypes > _HOST)
    if len(c_lo) and len(above):
        a_lo, a_hi = lo[above], hi[above]
        k = np.minimum(np.searchsorted(c_hi, a_lo, "right"), len(c_hi) - 1)
        touch = above[(a_hi > a_lo) & (a_lo < c_hi[k]) & (c_lo[k] < a_hi)]
        c_lo, c_hi = subtract_sets(c_lo, c_hi, *union_of(lo[touch], hi[touch]))
    return CompiledTime(framework, strings[int(np.argmax(held))], c_lo, c_hi)


def _code(framework: str) -> int:
    return _KINDS.index(framework) + 1 if framework else 0


def compiled_host(
    found: CompiledTime, s_lo: np.ndarray, s_hi: np.ndarray, host_ns: np.ndarray
) -> CompiledHost:
    """The share of the kept steps' (sorted spans [``s_lo``, ``s_hi``)) host column
    ``host_ns`` (per step) that ``found`` holds, at most all of it in each step."""
    if not found.framework or not len(s_lo):
        return CompiledHost()
    c_lo, c_hi = intersect_sets(found.lo, found.hi, s_lo, s_hi)
    k = np.searchsorted(s_lo, c_lo, "right") - 1
    ns = np.bincount(k, weights=c_hi - c_lo, minlength=len(s_lo)).astype(np.int64)
    total = int(host_ns.sum())
    inside = int(np.minimum(ns, host_ns).sum())
    return CompiledHost(found.framework, inside / total if total else 0.0, found.name)
