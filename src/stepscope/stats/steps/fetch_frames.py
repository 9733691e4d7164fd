"""Reading a sampled Python stack for the loop's fetch (decisions 343, 382, 587).

A stack sample is the frames of one thread, outermost first (``stack``), and the depths at
which a frame was entered for a next item (``next_frames``: a ``for`` loop's or ``next()``'s
call into an iterator). The loop's frame is the deepest that every sample of its thread
shares; what it fetched from is the chain of fetching frames right under it, past
stepscope's own ``steps()`` wrapper (which calls the user's iterator through a variable, no
fetch site) to the frame it drives.
"""

from __future__ import annotations

from stepscope.stats.host.python_samples import function_key
from stepscope.vocab.profiler import STAGE_FRAME, STEPS_FRAME, WRAPPER_FRAMES


def stack_frames(text: str) -> list[str]:
    return [function_key(f) for f in text.split(";")] if text else []


def fetch_depths(text: str) -> frozenset[int]:
    return frozenset(int(x) for x in text.split(",") if x.isdigit()) if text else frozenset()


def loop_depth(frames: list[list[str]], fetching: list[frozenset[int]]) -> int:
    """How many outer frames are the loop's: those every stack shares (same function at the
    same depth), up to the first of them that every sample saw entered for a next item (when
    every sample is inside the fetch, or inside a generator that is the training loop)."""
    depth = min((len(f) for f in frames), default=0)
    for d in range(depth):
        if len({f[d] for f in frames}) > 1:
            depth = d
            break
    for d in range(1, depth):
        if all(d in fetch for fetch in fetching):
            return d
    return depth


def fetch_names(frames: list[list[str]], fetching: list[frozenset[int]], depth: int) -> list[str]:
    """Per stack: the iterator the loop's frame was asking for a next item (the innermost of
    the chain of such frames from right under it), '' when it was not."""
    named = []
    for f, fetch in zip(frames, fetching, strict=True):
        k = depth
        if k >= len(f) or k not in fetch:
            named.append("")
            continue
        while True:
            while k + 1 < len(f) and k + 1 in fetch:
                k += 1
            # stepscope's wrapper calls the user's iterator through a variable (``func(*args)``
            # in ``_run_stage``), no fetch site: step over its frames to the one it drives
            below = _past_wrapper(f, k)
            if below == k:
                break
            k = below
        # a sample inside the wrapper's own code (its markers, its bookkeeping) saw stepscope
        # at work, not the user's iterator: no iterator of the loop's is named for it
        named.append(f[k] if k < len(f) else "")
    return named


def _is_wrapper_run(run: list[str]) -> bool:
    """Whether the frames ``run`` (each one of `WRAPPER_FRAMES`) are stepscope's wrapper:
    they reach its stage call, or begin at the ``_steps`` generator. A user's own
    ``__next__`` in a ``data.py`` is neither."""
    return bool(run) and (STAGE_FRAME in run or run[0] == STEPS_FRAME)


def _past_wrapper(f: list[str], k: int) -> int:
    """The depth of the first frame below stepscope's wrapper frames from ``f[k]`` on
    (``len(f)`` when the stack ends inside them); ``k`` when ``f[k]`` is not the wrapper's."""
    j = k
    while j < len(f) and f[j] in WRAPPER_FRAMES:
        j += 1
    return j if _is_wrapper_run(f[k:j]) else k
