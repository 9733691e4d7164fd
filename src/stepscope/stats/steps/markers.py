"""Step detection: where each step starts and ends, and how we know.

Sources, tried in this order unless one is asked for:

- ``marker``: host events with an ``_r`` (root level) stat, whatever its value (XProf 2.24.2
  makes steps of ``_r=0`` and of a text ``_r`` too), other than XProf's implicit roots
  (FunctionRun, SessionRun, ...), i.e. ``Trace('train', step_num=s, _r=1)`` in TensorFlow and
  ``stepscope.step``. Their work is found by reachability (`groups`), and, as in
  XProf, when there are more than 5 steps the first and the last are dropped as possibly
  incomplete.
- ``profiler_step``: PyTorch's ``ProfilerStep#N`` annotations (with or without the ``_r`` a
  Kineto import writes for XProf).
- ``keras_batch``: Keras 3's ``Profiled batch`` traces (``step_num`` but no ``_r``, so XProf
  finds no step in them).
- ``device``: a device plane's ``Steps`` line (XProf's derived step line, TPU profiles).
- ``serving``: an inference framework's own per-batch calls (vLLM's ``execute_model``, Hugging
  Face's ``generate``; `stepscope.stats.steps.serving`).
- ``inferred``: no markers at all; steps are found in the repeating structure of the trace
  (`stepscope.stats.steps.infer`).

Keras batches, ProfilerStep spans and serving calls are complete by construction (the
profiler starts and stops on step boundaries; a call is whole when traced), and inferred steps
are bounded by observed events at both ends, so only ``marker`` and ``device`` steps follow
XProf's drop rule.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from stepscope.distinct import distinct, distinct_inverse
from stepscope.errors import StepscopeError
from stepscope.model import Profile
from stepscope.stats.events import host_lines
from stepscope.stats.steps.infer import infer_steps
from stepscope.stats.steps.recorded import within_recording
from stepscope.stats.steps.serving import serving_calls
from stepscope.stats.steps.types import SOURCES, StepMarkers
from stepscope.vocab.profiler import (
    FIRST_STEP_WHOLE_STAT,
    LAST_STEP_WHOLE_STAT,
    STEP_ANCHOR,
    STEPS_BEFORE_STAT,
)
from stepscope.vocab.pytorch import is_profiler_step
from stepscope.vocab.serving import is_serving_annotation
from stepscope.vocab.tensorflow import IMPLICIT_ROOTS, KERAS_BATCH
from stepscope.vocab.xla import STEPS_LINE
from stepscope.words import counted

_DIGITS = re.compile(r"(\d+)\s*$")


def _from_events(
    profile: Profile,
    events: np.ndarray,
    source: str,
    description: str,
    step_num: np.ndarray,
    use_groups: bool,
    drop_incomplete: bool,
    last_whole: bool = False,
    first_whole: bool = False,
) -> StepMarkers:
    order = np.lexsort((events, profile.start_ns[events]))
    events, step_num = events[order], step_num[order]
    names = []
    for event, num in zip(events.tolist(), step_num.tolist(), strict=True):
        name = profile.event_name(event)
        names.append(name if name.endswith(str(num)) else f"{name} {num}")
    return StepMarkers(
        source,
        description,
        events.astype(np.int64),
        step_num.astype(np.int64),
        tuple(names),
        profile.start_ns[events].copy(),
        profile.end_at(events),
        use_groups,
        drop_incomplete,
        tuple(distinct(profile.line[events]).tolist()),
        last_whole,
        first_whole,
    )


def _numbers(profile: Profile, events: np.ndarray, *stats: str) -> np.ndarray:
    """The first of ``stats`` each event has, else a number at the end of its name, else
    its position."""
    out = np.full(len(events), -1, dtype=np.int64)
    missing = np.ones(len(events), dtype=bool)
    for stat in stats:
        column = profile.stat_at(stat, events)
        have = missing & column.present
        out[have] = column.as_int()[have]
        missing &= ~have
    for k in np.flatnonzero(missing).tolist():
        match = _DIGITS.search(profile.event_name(int(events[k])))
        out[k] = int(match.group(1)) if match else k
    return out


def began_mid_run(profile: Profile) -> bool:
    """Whether the recording began mid-run, the capture says: a flight recorder save whose
    first step came after others it saw (`vocab.profiler.STEPS_BEFORE_STAT`)."""
    for plane in profile.planes:
        value = plane.stats.get(STEPS_BEFORE_STAT)
        if isinstance(value, (int, float)) and value > 0:
            return True
    return False


def _host_events(profile: Profile) -> np.ndarray:
    return host_lines(profile)[profile.line] if profile.n_events else np.zeros(0, bool)


def _is_marker(name: str) -> bool:
    return (
        name not in IMPLICIT_ROOTS
        and not is_profiler_step(name)
        and not is_serving_annotation(name)
    )


def _all_own(profile: Profile, events: np.ndarray) -> bool:
    """Whether every marker of ``events`` is stepscope's own: its anchor (`STEP_ANCHOR`)
    begins with it on its line. A framework's markers (a Keras callback's, a
    StepTraceAnnotation) have none."""
    anchor = profile.strings.id_of(STEP_ANCHOR)
    if anchor < 0:
        return False
    anchors = np.flatnonzero(profile.name == anchor)
    line, start = profile.line, profile.start_ns
    at = set(zip(line[anchors].tolist(), start[anchors].tolist(), strict=True))
    return all(k in at for k in zip(line[events].tolist(), start[events].tolist(), strict=True))


def _marker_steps(profile: Profile) -> StepMarkers | None:
    events = profile.stat_events("_r")  # few: no dense column over every event
    events = events[host_lines(profile)[profile.line[events]]]
    # XProf's implicit roots are no markers; a Kineto import's ProfilerStep#N and serving
    # annotation carry `_r` for XProf (decision 617): they stay ``profiler_step`` /
    # ``serving`` steps, whole by construction (no step dropped as incomplete). Only the
    # markers' few names are read, not every string of the profile.
    names, of_event = distinct_inverse(profile.name[events])
    kept = np.array([_is_marker(profile.strings[n]) for n in names.tolist()], dtype=bool)
    events = events[kept[of_event]]
    if not events.size:
        return None
    label = profile.event_name(int(events[0]))
    # The save's stats say stepscope's own markers are whole (decision 671): a framework's
    # among them (begun before the start, perhaps) leaves the ends to XProf's rule
    own = _all_own(profile, events)
    return _from_events(
        profile,
        events,
        "marker",
        f"{counted(len(events), 'step marker')} ('{label}' with _r and step_num)",
        _numbers(profile, events, "step_num", "iter_num"),
        use_groups=True,
        drop_incomplete=True,
        last_whole=own and any(LAST_STEP_WHOLE_STAT in p.stats for p in profile.planes),
        first_whole=own and any(FIRST_STEP_WHOLE_STAT in p.stats for p in profile.planes),
    )


def _named_steps(
    profile: Profile,
    ids: np.ndarray,
    source: str,
    noun: str,
    need_step_num: bool,
    note: str = "",
) -> StepMarkers | None:
    """The steps of the host events named one of ``ids``, described as their count of
    ``noun`` ("3 PyTorch ProfilerStep#N annotations", "1 ... annotation") and ``note``."""
    events = np.flatnonzero(_host_events(profile) & np.isin(profile.name, ids))
    if need_step_num:
        events = events[profile.stat_at("step_num", events).present]
    if not events.size:
        return None
    return _from_events(
        profile,
        events,
        source,
        counted(len(events), noun) + note,
        _numbers(profile, events, "step_num"),
        use_groups=True,
        drop_incomplete=False,
    )


def _device_steps(profile: Profile) -> StepMarkers | None:
    lines = [
        ln for ln in profile.lines if profile.planes[ln.plane].is_device and ln.name == STEPS_LINE
    ]
    lines = [ln for ln in lines if ln.event_count]
    if not lines:
        return None
    line = lines[0]  # every core has one; the first device's steps define the step times
    sl = profile.events_of_line(line)
    events = np.arange(sl.start, sl.stop, dtype=np.int64)
    plane = profile.planes[line.plane].name
    return _from_events(
        profile,
        events,
        "device",
        f"{len(events)} steps from the 'Steps' line of {plane}",
        _numbers(profile, events, "group_id", "step_num"),
        use_groups=False,
        drop_incomplete=True,
    )


def _serving_steps(profile: Profile) -> StepMarkers | None:
    found = serving_calls(profile)
    if found is None:
        return None
    events, description = found
    steps = _from_events(
        profile,
        events,
        "serving",
        description,
        np.arange(len(events), dtype=np.int64),
        use_groups=True,
        drop_incomplete=False,
    )
    # a call is handed its batch: its work before the model is the framework's (decision 542)
    return dataclasses.replace(steps, staged=False)


def find_step_markers(profile: Profile, source: str = "auto") -> StepMarkers:
    """The steps of ``profile`` from ``source`` ("auto": the first source that has any)."""
    if source not in ("auto", *SOURCES):
        raise StepscopeError(
            f"unknown step source {source!r}; use auto or one of {', '.join(SOURCES)}"
        )
    finders = {
        "marker": lambda: _marker_steps(profile),
        "profiler_step": lambda: _named_steps(
            profile,
            profile.strings.ids_matching(is_profiler_step),
            "profiler_step",
            "PyTorch ProfilerStep#N annotation",
            need_step_num=False,
        ),
        "keras_batch": lambda: _named_steps(
            profile,
            np.array([profile.strings.id_of(KERAS_BATCH)]),
            "keras_batch",
            "Keras 'Profiled batch' trace",
            need_step_num=True,
            note=" (they have no _r, so XProf finds no step in them)",
        ),
        "device": lambda: _device_steps(profile),
        "serving": lambda: _serving_steps(profile),
        "inferred": lambda: infer_steps(profile),
    }
    for name in SOURCES if source == "auto" else (source,):
        found = finders[name]()
        if found is not None:  # what was recorded of them (decision 1075)
            found = within_recording(profile, found)
        if found is not None and len(found):
            return found
    if source == "auto":
        return StepMarkers.none(
            "no step markers (_r/step_num, ProfilerStep#N, Profiled batch, device Steps line), "
            "no inference framework's per-batch call (vLLM execute_model, Hugging Face "
            "generate) and no repeating top-level event from which to infer steps"
        )
    return StepMarkers.none(f"no steps from source {source!r}")
