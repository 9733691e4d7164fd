"""Ctrl-C while a profile is saved: the recording is kept, the interrupt delivered after.

Building and writing a large profile takes seconds (15-20 s for 1.6 M events), and Ctrl-C
during it is a natural reaction; raised in the middle of the build it used to lose the whole
recording. While `saving` is active on the main thread, a first SIGINT only says that the
profile is being saved; when the save is done the handler that was there before is put back
and the signal raised again, so the program is interrupted exactly as it would have been
(a KeyboardInterrupt by default, after the profile is on disk). A second SIGINT gives up:
the previous handler gets it at once and the save is abandoned (nothing half-written is
left: the writer removes its temporary file).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from stepscope import log


@contextlib.contextmanager
def saving(what: str) -> Iterator[list[int]]:
    """Defer a first Ctrl-C until the block ends (see the module's docs). The list it gives
    holds the signals deferred so far (empty: none)."""
    deferred: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield deferred  # signals reach the main thread only: nothing to defer here
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous in (signal.SIG_IGN, None):  # ignored, or a handler not set from Python
        yield deferred
        return

    def defer(signum: int, frame: FrameType | None) -> None:
        if deferred:  # the second: the user insists
            signal.signal(signal.SIGINT, previous)
            log.warn(f"stepscope: interrupted again: {what} abandoned")
            signal.raise_signal(signal.SIGINT)
            return
        deferred.append(signum)
        log.warn(f"stepscope: {what} first (Ctrl-C again to abandon it)")

    signal.signal(signal.SIGINT, defer)
    try:
        yield deferred
    finally:
        if signal.getsignal(signal.SIGINT) is defer:
            signal.signal(signal.SIGINT, previous)


def deliver(deferred: list[int]) -> None:
    """Raise the interrupt `saving` deferred, now that the handler before it is back."""
    if deferred:
        signal.raise_signal(signal.SIGINT)
