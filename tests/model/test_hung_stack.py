"""Where a hung step's thread was (`stepscope.model.hung_stack`) and how the report says it:
the user's innermost frames of the hung thread, stepscope's own left out."""

from __future__ import annotations

from stepscope.cli.report_render import recorder_lines
from stepscope.model.hung_stack import hung_thread_stack, parse_stack

MAIN = (
    '  File "/home/u/train.py", line 13, in <module>\n'
    "    for i, (x, y) in stepscope.steps(batches()):\n"
    '  File "/venv/lib/python3.11/site-packages/stepscope/capture/step.py", line 306, in _steps\n'
    "    batch = next(it._source)\n"
    '  File "/home/u/data.py", line 40, in batches\n'
    "    rows = fetch(shard)\n"
    '  File "/home/u/data.py", line 9, in fetch\n'
    "    time.sleep(2.5)\n"
    '  File "/gone/file.py", line 3, in vanished\n'
)
OTHER = '  File "/x/threading.py", line 1002, in _bootstrap\n    self._bootstrap_inner()\n'


def test_frames_are_read_with_their_code_and_a_frame_without_code() -> None:
    frames = parse_stack(MAIN)
    assert [(f.function, f.line) for f in frames] == [
        ("<module>", 13),
        ("_steps", 306),
        ("batches", 40),
        ("fetch", 9),
        ("vanished", 3),
    ]
    assert frames[3].code == "time.sleep(2.5)" and frames[4].code == ""


def test_the_hung_threads_user_frames_and_its_fetch() -> None:
    stacks = {"loader (7)": OTHER, "MainThread (12)": MAIN}
    marker = {"trigger": "hang", "stacks": stacks, "hung_thread": "MainThread (12)"}
    hung = hung_thread_stack(marker)
    assert hung is not None
    assert hung["thread"] == "MainThread" and hung["in_fetch"]
    assert [f["function"] for f in hung["frames"]] == ["<module>", "batches", "fetch", "vanished"]
    # a marker written before `hung_thread`: the thread named in the reason
    old = {"stacks": stacks, "reason": "a step on thread 'MainThread' has been open for 5.0 s"}
    assert hung_thread_stack(old) == hung
    # no stack to show: none, or a name that is not (or not once) among them
    assert hung_thread_stack({"reason": old["reason"]}) is None
    assert hung_thread_stack({**old, "reason": "a step on thread 'T' has been open"}) is None


def test_the_report_says_where_the_hung_thread_was() -> None:
    stacks = {"MainThread (12)": MAIN}
    hung = hung_thread_stack({"stacks": stacks, "hung_thread": "MainThread (12)"})
    saved = {
        "trigger": "hang",
        "reason": "a step on thread 'MainThread' has been open for 5.0 s",
        "step": 59,
        "part": "before",
        "steps": [30, 59],
        "steps_before": 30,
        "hung": hung,
    }
    text = "\n".join(recorder_lines(saved, 200))
    assert (
        "Thread 'MainThread' was fetching the next batch for stepscope.steps (the loader is "
        "what hangs), here (innermost last):\n"
        "    train.py:13 in <module>: for i, (x, y) in stepscope.steps(batches()):\n"
        "    data.py:40 in batches: rows = fetch(shard)\n"
        "    data.py:9 in fetch: time.sleep(2.5)\n"
        "    file.py:3 in vanished\n"
    ) in text + "\n"
    assert "step.py" not in text  # stepscope's own frame is left out
    assert "innermost last" not in "\n".join(recorder_lines({**saved, "hung": None}, 200))
