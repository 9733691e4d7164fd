"""`PendingSave`: a save the recorder was asked for, done later on its saver thread."""

from __future__ import annotations

import threading
from pathlib import Path


class PendingSave:
    """A save requested: ``result()`` waits for it and returns the run directory (None when
    a rate limit or the recorder's end skipped it; ``skipped`` says why)."""

    def __init__(self, trigger: str, reason: str) -> None:
        self.trigger = trigger
        self.reason = reason
        self.run_dir: Path | None = None
        self.error: BaseException | None = None
        self.skipped = ""
        self._done = threading.Event()

    def finish(self, run_dir: Path | None = None, error: BaseException | None = None) -> None:
        self.run_dir, self.error = run_dir, error
        self._done.set()

    def skip(self, why: str) -> None:
        self.skipped = why
        self._done.set()

    def done(self) -> bool:
        return self._done.is_set()

    def result(self, timeout: float | None = None) -> Path | None:
        if not self._done.wait(timeout):
            raise TimeoutError(f"the recorder's save ({self.trigger}) is still being written")
        if self.error is not None:
            raise self.error
        return self.run_dir


def chain(source: PendingSave, target: PendingSave) -> None:
    """Complete ``target`` when ``source`` completes (a request served by the watchdog)."""

    def wait() -> None:
        source._done.wait()
        if source.skipped:
            target.skip(source.skipped)
        else:
            target.finish(source.run_dir, source.error)

    if source.done():
        wait()
    else:
        threading.Thread(target=wait, name="stepscope-save-wait", daemon=True).start()
