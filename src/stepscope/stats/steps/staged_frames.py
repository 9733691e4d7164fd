"""Which traced Python functions build the batch inside the step.

The staged input (`staging`) says how long a step spends before its first model op; a trace
recorded with Python frames (PyTorch's ``with_stack=True``: ``path/file.py(12): func``
events; stepscope's Python tracer: ``$path:12 func``) also says where. Only the frames that
lie wholly inside a staged window are the batch's making (the frames around the whole step,
the pipeline's ``__call__``, are not). Of those holding half of the staged time at least
(by total time over the steps; none, nothing is named: a `torch.cuda.synchronize` of 0.05
ms in 0.15 ms of staging is not where the batch was made): the largest (the outermost call
that made the batch) and the smallest (the deepest function most of it went to), e.g. an HF
video pipeline's ``preprocess (video_classification.py:129)`` and within it the image
processor's ``_preprocess_image (image_processing_videomae.py:178)``.
"""

from __future__ import annotations

import re

import numpy as np

from stepscope.distinct import distinct_inverse
from stepscope.model import Profile

_KINETO_FRAME = re.compile(r"^(?:.*/)?([^/]+\.py)\((\d+)\): (.+)$")
_TRACER_FRAME = re.compile(r"^\$(?:.*/)?([^/ ]+\.py):(\d+) (.+)$")
MOST = 0.5  # the deepest function named holds at least this share of the staged time


def frame_label(name: str) -> str | None:
    """``func (file.py:12)`` of a traced Python frame's event name, None for other events."""
    m = _KINETO_FRAME.match(name) or _TRACER_FRAME.match(name)
    return f"{m.group(3)} ({m.group(1)}:{m.group(2)})" if m else None


def staged_frames(
    profile: Profile, lines: tuple[int, ...], w_lo: np.ndarray, w_hi: np.ndarray
) -> tuple[tuple[str, int], ...]:
    """Up to two (function, total ns over the windows) of the traced Python calls inside the
    staged windows [w_lo, w_hi) (sorted, disjoint) on the step ``lines`` that hold `MOST` of
    the staged time: the outermost and, when it is another, the deepest; () without any."""
    if not len(w_lo) or not lines:
        return ()
    ids = profile.strings.ids_matching(lambda s: frame_label(s) is not None)
    if not len(ids):
        return ()
    is_frame = np.zeros(len(profile.strings), bool)
    is_frame[ids] = True
    ev = np.flatnonzero(
        is_frame.take(profile.name) & np.isin(profile.line, np.asarray(lines, np.int64))
    )
    start, end = profile.start_ns.take(ev), profile.end_at(ev)
    k = np.searchsorted(w_lo, start, "right") - 1
    inside = (k >= 0) & (end <= w_hi[np.maximum(k, 0)])
    if not inside.any():
        return ()
    ev, dur = ev[inside], (end - start)[inside]
    names, group = distinct_inverse(profile.name[ev])
    total = np.bincount(group, weights=dur, minlength=len(names)).astype(np.int64)
    holding = np.flatnonzero(total >= MOST * int((w_hi - w_lo).sum()))
    if not len(holding):  # what the frames show is not where the staged time went
        return ()
    outer = int(holding[np.argmax(total[holding])])
    deep = int(holding[np.argmin(total[holding])])
    return tuple(
        (frame_label(profile.strings[int(names[g])]) or "", int(total[g]))
        for g in dict.fromkeys((outer, deep))
    )
