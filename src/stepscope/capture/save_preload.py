"""The modules a save off the training thread uses, imported before that thread exists
(decision 430, 432).

A save runs on a thread of its own in three places: the flight recorder's saver,
`stepscope.stop(wait=False)` and the end of ``duration_ms``. Imported lazily there, the
save's modules (about 80 at the recorder's first save, protobuf's among them; 2-23 for a
background `stop`) were imported while the training thread went on and imported its own
(the framework bridges for the recorder's steps after a trigger, a framework's lazy
submodules): Python 3.11's per-module import locks can then raise _DeadlockError in one of
the two threads (CPython gh-91351, a race in their deadlock detection), and the recorder's
steps after were once saved without their framework profilers (tests/capture/
test_recorder_after.py at load 9). `Recorder.start` imports them first, on the starting
thread: about 0.06-0.2 s once per process; so does `stepscope.start` with ``duration_ms``, and
`stepscope.stop(wait=False)` before its saver starts, once the recorders are off (a start
without ``duration_ms`` does not wait for them: decision 1080).
"""

from __future__ import annotations

import importlib

from stepscope import accelerators

SAVE_PATH_MODULES = (
    "stepscope.capture.save",
    "stepscope.capture.bridges",
    "stepscope.capture.fetch_sites",
    "stepscope.capture.job",
    "stepscope.logdir",
    "stepscope.tmpfiles",
    "stepscope.xspace.io",
    "stepscope.xspace.deferred",  # a PyTorch capture's save (decision 910)
    "stepscope.xspace.torch_trace",
    "stepscope.xspace.merge",
    "stepscope.xspace.merge_columns",
    "stepscope.xspace.kineto.importer",
    "stepscope.xspace.proto.profiler_service_pb2",
    "resource",  # the profile size limit's (`stepscope.limits`)
)
# The C accelerators the save uses, loaded through their one loader (which checks the build)
SAVE_PATH_EXTENSIONS = ("_fastwire", "_kscan")


def import_save_path() -> None:
    """Import `SAVE_PATH_MODULES` and `SAVE_PATH_EXTENSIONS` on this thread; one that fails is
    left to the saver, which says why at its first save, as before."""
    for name in SAVE_PATH_MODULES:
        try:
            importlib.import_module(name)
        except Exception:
            continue
    for name in SAVE_PATH_EXTENSIONS:
        if name in accelerators.EXTENSIONS:
            accelerators.built(name)
