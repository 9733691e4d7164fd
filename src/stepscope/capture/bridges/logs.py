"""See what a framework's C++ profiler says while it starts and stops.

Kineto, TensorFlow and XLA report CUPTI problems (``CUPTI_ERROR_INSUFFICIENT_PRIVILEGES``, a
missing ``libcupti``) through their C++ loggers, straight to file descriptor 2, where Python's
``warnings`` cannot catch them. `captured_output` points fd 2 at a temporary file for the
duration of the call, hands the text to the bridge (which turns known failures into a fix,
see `base.diagnose`), and writes it through to the real stderr so the user still sees it.
Python ``warnings`` raised meanwhile are collected too.

A framework that aborts the process inside the call (a failed ``CHECK``: SIGABRT) would take
its last words with it: they went to the redirected fd 2. So for the call Python's
``faulthandler`` writes to the real stderr (the Python stack of every thread at the fatal
signal; one the program enabled itself keeps its own file), and the redirected text goes to
a named file that only a completed call removes:
after a crash it is left in the temp directory (``stepscope-stderr-<pid>-*.txt``). A
TensorFlow worker of a two-worker job died this way (exit -6, nothing on stderr at all).
"""

from __future__ import annotations

import faulthandler
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def captured_output(into: list[str]) -> Iterator[None]:
    """Append fd-2 output and Python warnings seen during the block to ``into``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            saved = os.dup(2)
        except OSError:  # no usable fd 2 (embedded interpreters): warnings only
            saved = -1
        if saved < 0:
            try:
                yield
            finally:
                into.extend(str(w.message) for w in caught)
            return
        sink = tempfile.NamedTemporaryFile(  # noqa: SIM115 - removed below, kept on a crash
            prefix=f"stepscope-stderr-{os.getpid()}-", suffix=".txt", delete=False
        )
        try:
            with sink:
                sys.stderr.flush()
                # A fatal signal prints the Python stacks on the real stderr. One enabled
                # already (PYTHONFAULTHANDLER, pytest) is left to its own file, which cannot be
                # read back to restore it; on fd 2 its text is in the kept sink.
                ours = not faulthandler.is_enabled()
                os.dup2(sink.fileno(), 2)
                if ours:
                    faulthandler.enable(saved, all_threads=True)
                try:
                    yield
                finally:
                    sys.stderr.flush()
                    os.dup2(saved, 2)
                    if ours:
                        faulthandler.disable()  # before `saved` closes
                    os.close(saved)
                    sink.seek(0)
                    data = sink.read()
                    if data:
                        os.write(2, data)  # the user still sees what the framework said
                        into.append(data.decode("utf-8", "replace"))
                    into.extend(str(w.message) for w in caught)
        finally:
            os.unlink(sink.name)
    for w in caught:  # give the warnings back too, once collected
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
