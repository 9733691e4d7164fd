"""Where a hung step's thread was: the Python stack the flight recorder wrote at a hang.

The recorder's marker (``<host>.recorder.json``) of a hang holds every thread's stack as
``traceback.format_stack`` printed it (``stacks``: label -> text) and which label is the
thread whose step hung (``hung_thread``; markers written before it had only the reason,
"a step on thread 'NAME' has been open ..."). The report shows the user's innermost frames
of that thread, not stepscope's own: a reader asks "where is my loop stuck", and the answer is
the loader's ``time.sleep`` or a collective, not the ``stepscope.steps`` frame around it.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from stepscope.records import record

# '  File "/path/x.py", line 11, in batches\n    time.sleep(2.5)\n' (the code line may be
# missing: a frame of a file that is not there)
_FRAME = re.compile(r'^  File "(?P<file>[^"]*)", line (?P<line>\d+), in (?P<function>.*)$')
_REASON_THREAD = re.compile(r"on thread '(?P<name>[^']*)'")
# stepscope's own frames between the user's (`stepscope.steps` fetching the next batch, a
# DataLoader instrumented by `stepscope.data`); matched on the path, which is the writer's
_OWN = ("/stepscope/capture/",)
# the steps' iterator fetching a batch: the thread hangs in its input
_FETCH = "/stepscope/capture/step.py"
KEEP_FRAMES = 6


@record
class Frame:
    """One frame of a Python stack."""

    file: str
    line: int
    function: str
    code: str


def parse_stack(text: str) -> list[Frame]:
    """The frames of a ``traceback.format_stack`` text, outermost first."""
    frames: list[Frame] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _FRAME.match(line)
        if m is None:
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        code = nxt.strip() if nxt.startswith("    ") and not _FRAME.match(nxt) else ""
        frames.append(Frame(m["file"], int(m["line"]), m["function"], code))
    return frames


def hung_thread_stack(marker: dict[str, Any]) -> dict[str, Any] | None:
    """``{"thread", "frames", "in_fetch"}`` of a hang's marker: the hung thread's label, its
    innermost `KEEP_FRAMES` frames outside stepscope (outermost first, as dicts), and whether
    it was fetching a batch for `stepscope.steps`; None when the marker holds no such stack."""
    stacks = marker.get("stacks")
    if not isinstance(stacks, dict):
        return None
    label = marker.get("hung_thread")
    if not isinstance(label, str) or label not in stacks:
        m = _REASON_THREAD.search(str(marker.get("reason", "")))
        named = [k for k in stacks if m is not None and k.startswith(f"{m['name']} (")]
        if len(named) != 1:
            return None
        label = named[0]
    text = stacks[label]
    frames = parse_stack(text) if isinstance(text, str) else []
    if not frames:
        return None
    own = [any(o in f.file for o in _OWN) for f in frames]
    in_fetch = any(f.file.endswith(_FETCH) for f in frames)
    user = [f for f, is_own in zip(frames, own, strict=True) if not is_own]
    return {
        "thread": label.rsplit(" (", 1)[0],
        "frames": [dataclasses.asdict(f) for f in user[-KEEP_FRAMES:]],
        "in_fetch": in_fetch,
    }
