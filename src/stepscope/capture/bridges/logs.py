"""See what a framework's C++ profiler says while it starts and stops.

Kineto, TensorFlow and XLA report CUPTI problems (``CUPTI_ERROR_INSUFFICIENT_PRIVILEGES``, a
missing ``libcupti``) through their C++ loggers, straight to file descriptor 2, where Python's
``warnings`` cannot catch them. `captured_output` points fd 2 at a temporary file for the
duration of the call, hands the text to the bridge (which turns known failures into a fix,
see `base.diagnose`), and writes it through to the real stderr so the user still sees it.
Python ``warnings`` raised meanwhile are collected too.
"""

from __future__ import annotations

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
        with tempfile.TemporaryFile() as sink:
            sys.stderr.flush()
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                os.close(saved)
                sink.seek(0)
                data = sink.read()
                if data:
                    os.write(2, data)  # the user still sees what the framework said
                    into.append(data.decode("utf-8", "replace"))
                into.extend(str(w.message) for w in caught)
    for w in caught:  # give the warnings back too, once collected
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
