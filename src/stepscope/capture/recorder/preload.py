"""The modules the recorder's threads use, imported before they run (decision 430)."""

from __future__ import annotations

import importlib

# What the saver thread and the capture of the steps after a trigger import, imported by
# `Recorder.start` on the thread that starts the recorder, before its threads exist. Imported
# lazily, the saver's first save imported them (about 80 modules, protobuf's among them) while
# the training thread imported the framework bridges for the steps after: Python 3.11's
# per-module import locks can then raise _DeadlockError in one of the two threads (CPython
# gh-91351, a race in their deadlock detection), and the steps after were saved without their
# framework profilers (seen once in tests/capture/test_recorder_after.py at load 9). Costs
# about 0.16 s once, at start.
SAVE_PATH_MODULES = (
    "stepscope.capture.save",
    "stepscope.capture.bridges",
    "stepscope.capture.fetch_sites",
    "stepscope.capture.job",
    "stepscope.logdir",
    "stepscope.tmpfiles",
    "stepscope.xspace.io",
    "stepscope.xspace.merge_columns",
    "stepscope.xspace.kineto.importer",
    "stepscope.xspace.proto.profiler_service_pb2",
)


def import_save_path() -> None:
    """Import `SAVE_PATH_MODULES` on this thread; one that fails is left to the saver, which
    says why at its first save, as before."""
    for name in SAVE_PATH_MODULES:
        try:
            importlib.import_module(name)
        except Exception:
            continue
