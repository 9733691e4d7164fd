"""Stack snapshots never deadlock the program (the recorder's hang save hung the default
tier, BOARD 19:45): CPython's sys._current_frames() holds the thread-list lock while it
makes frame objects, and a garbage collection they start can run a finalizer that needs
that lock. `current_frames` keeps the collector off during the call."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

# A finalizer that needs the thread-list lock, a collection at every allocation, and a
# thread whose frames are not objects yet (sys._current_frames makes them): with plain
# sys._current_frames() this hangs within a few hundred calls.
PROGRAM = """
import gc, sys, threading
from stepscope.capture.python_sampler import current_frames
from stepscope.capture.recorder.snapshot import thread_stacks

class Trap:
    def __init__(self):
        self.me = self  # a cycle: only the collector frees it
    def __del__(self):
        sys._current_frames()

stop = False
def spin():
    def inner(n):
        return n + 1
    x = 0
    while not stop:
        x = inner(x)

threading.Thread(target=spin, daemon=True).start()
gc.set_threshold(1)
for i in range(2000):
    Trap()
    current_frames() if i % 2 else thread_stacks()
stop = True
assert gc.isenabled()
print("done")
"""


def test_stack_snapshots_survive_a_finalizer_that_needs_the_thread_lock() -> None:
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("sys._current_frames() deadlocked in a garbage collection")
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr[-2000:]
