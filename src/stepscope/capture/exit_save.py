"""Save a running session when the program ends without `stepscope.stop()`.

An uncaught exception, a ``sys.exit`` or the end of the script run the interpreter's exit
hooks; SIGTERM (a job scheduler's, ``kill``) would end the process without them. The
recording is saved at either, marked as partial with the reason in the profile's warnings,
and the path is printed. A SIGTERM handler is installed only where the program has none
(and only from the main thread, where Python allows it); after saving, the default action
runs, so the exit status is still "terminated by SIGTERM".
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading

from stepscope import log

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:  # annotations only: `import stepscope` must stay cheap (no pathlib)
    from collections.abc import Callable
    from pathlib import Path
    from types import FrameType

_save_partial: Callable[[str], Path | None] | None = None
_install_lock = threading.Lock()


def install(save_partial: Callable[[str], Path | None]) -> None:
    """Register the exit hooks once per process; ``save_partial(reason)`` saves the running
    session, if any (`stepscope.start` passes `session.save_partial`)."""
    global _save_partial
    with _install_lock:
        if _save_partial is not None:
            return
        _save_partial = save_partial
    atexit.register(_at_exit)
    if threading.current_thread() is threading.main_thread():
        try:
            if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
                signal.signal(signal.SIGTERM, _on_sigterm)
        except (ValueError, OSError):  # not the main interpreter, or no signals here
            pass


def _save(reason: str) -> None:
    if _save_partial is None:
        return
    try:
        run_dir = _save_partial(reason)
    except BaseException as exc:  # exiting: say it, never raise from an exit hook
        log.warn(f"stepscope: could not save the partial profile: {exc}")
        return
    if run_dir is not None:
        log.warn(f"stepscope: saved a partial profile ({reason}): {run_dir}")


def _at_exit() -> None:
    error = getattr(sys, "last_value", None)  # set when an uncaught exception was printed
    if error is not None:
        _save(f"the program ended with an uncaught {type(error).__name__}")
    else:
        _save("the program exited")


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    _save("the program received SIGTERM")
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
