"""A one-shot command's process ends without the interpreter's teardown (decisions 232, 256).

Once its answer is printed and kept, a tool command has nothing left to do but exit; the
interpreter's finalization then destroys every module and object the analysis made and
returns the arrays' memory to the system: about 25 ms of CPU of a 0.3 s command at 266k
events (median of 16 alternating runs). `exit_now` does what an exit must still do -- flush
the output streams, wait for the threads that are not daemons (the store's writes,
`stepscope.store.background`), run the `atexit` functions (logging's shutdown, weakref
finalizers, a coverage collector) -- and then ends the process with `os._exit`, skipping only
the teardown. Used by the commands of `cli.main.QUICK_EXIT` (`tool`, `report`, `summary`,
`info`, `diff`: 24-29 ms of a 0.3 s `report` or `summary` of a 0.2M-event Kineto trace)
only when the process is the command's own (`cli.main.main` without ``argv``), never by a
caller of `main` from Python. A `stepscope tool` answered from the result cache ends the same
way (1.1-2.1 ms of its 12-15 ms, decision 303), which is why this module imports neither
`threading` nor `contextlib` (a kept answer's process has loaded neither).
"""

from __future__ import annotations

import atexit
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        # not contextlib.suppress: a kept answer's process imports no contextlib
        try:  # noqa: SIM105
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`) or stream: nothing to write
            pass


def exit_now(status: int) -> NoReturn:
    """Ends this process with ``status`` once its output is out and its writes are done."""
    _flush()
    # What the interpreter's exit does first: thread pools told to stop (their callbacks of
    # `threading._register_atexit`), then every thread that is not a daemon joined. Where
    # `threading` was never imported (a kept answer's command, decision 303) no thread of
    # Python's was started, as the interpreter's own exit assumes: nothing to join, and the
    # module's import is not paid for nothing.
    threading = sys.modules.get("threading")
    if threading is not None:
        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
        else:  # pragma: no cover - CPython has it
            for thread in threading.enumerate():
                if thread is not threading.current_thread() and not thread.daemon:
                    thread.join()
    atexit._run_exitfuncs()
    _flush()  # what the exit functions printed
    os._exit(status)
