"""What each worker of a capture is doing, and the progress line shown while waiting.

`WorkerState` is updated by the thread that talks to the worker and read by whoever shows
progress: the terminal (`ProgressPrinter`), the web UI (`WorkerState.as_dict`).
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from stepscope.records import record

WAITING, CAPTURING, RETRYING, OK, EMPTY, FAILED = (
    "waiting",
    "capturing",
    "retrying",
    "ok",
    "empty",
    "failed",
)
DONE = (OK, EMPTY, FAILED)


def _size(n: int) -> str:
    if not n:
        return ""
    return f", {n / 1e6:.1f} MB" if n >= 1e6 else f", {n / 1e3:.1f} KB"


@record(frozen=False)
class WorkerState:
    """One worker of a capture; the final fields are set once it is done."""

    address: str
    attempts_max: int
    expected_s: float  # delay + duration: when its answer is due, counted from each attempt
    state: str = WAITING
    attempt: int = 0
    started: float = 0.0  # time.monotonic() when the current attempt began
    ended: float = 0.0
    reason: str = ""  # why it failed, or a note (retried, written by the server...)
    path: Path | None = None
    size_bytes: int = 0

    @property
    def done(self) -> bool:
        return self.state in DONE

    @property
    def elapsed_s(self) -> float:
        return self.elapsed_at(time.monotonic())

    def elapsed_at(self, now: float) -> float:
        """Seconds of the current attempt at monotonic time ``now`` (its end once it ended)."""
        if not self.started:
            return 0.0
        return (self.ended or now) - self.started

    def line(self) -> str:
        """The result line printed for this worker."""
        if self.state == OK:
            where = str(self.path) if self.path else "written by the server"
            note = f"; {self.reason}" if self.reason else ""
            size = _size(self.size_bytes)
            return f"{self.address}: ok -> {where}{size}{note}"
        if self.state == EMPTY:
            return f"{self.address}: empty (no trace event was recorded in that window)"
        if self.state == FAILED:
            tries = f" after {self.attempt} attempt(s)" if self.attempt > 1 else ""
            return f"{self.address}: failed{tries}: {self.reason}"
        return f"{self.address}: {self.state}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "address": self.address,
            "state": self.state,
            "attempt": self.attempt,
            "attempts_max": self.attempts_max,
            "elapsed_s": round(self.elapsed_s, 2),
            "expected_s": round(self.expected_s, 2),
            "reason": self.reason,
            "path": str(self.path) if self.path else None,
            "size_bytes": self.size_bytes,
            "line": self.line(),
        }


def progress_text(workers: list[WorkerState], now: float | None = None) -> str:
    """``h1:p1 1.2/2.0 s · h2:p2 retrying (2/3) · h3:p3 ok`` at monotonic time ``now``."""
    now = time.monotonic() if now is None else now
    parts = []
    for w in workers:
        elapsed_s = w.elapsed_at(now)
        if w.state == CAPTURING and elapsed_s > w.expected_s:
            parts.append(f"{w.address} receiving ({elapsed_s:.1f} s)")
        elif w.state == CAPTURING:
            parts.append(f"{w.address} {elapsed_s:.1f}/{w.expected_s:.1f} s")
        elif w.state == RETRYING:
            parts.append(f"{w.address} retrying ({w.attempt + 1}/{w.attempts_max})")
        else:
            parts.append(f"{w.address} {w.state}")
    return " · ".join(parts)


class ProgressPrinter:
    """Shows `progress_text` on ``stream`` until stopped: rewritten in place on a terminal,
    otherwise one line every ``interval_s`` (logs stay readable). ``now`` is the monotonic
    clock the line is computed at (tests pass a fake one and call `show` themselves)."""

    def __init__(
        self,
        workers: list[WorkerState],
        stream: IO[str] | None = None,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.workers = workers
        self.stream = stream or sys.stderr
        self.now = now
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval_s = 0.25 if self.tty else 5.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="stepscope-progress", daemon=True)
        self._width = 0

    def __enter__(self) -> ProgressPrinter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop updating; on a terminal, clear the line."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2.0)
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.show()

    def show(self) -> None:
        """Write the progress line once."""
        text = "capturing: " + progress_text(self.workers, self.now())
        if self.tty:
            text = text[: shutil.get_terminal_size().columns - 1]
            self.stream.write("\r" + text.ljust(self._width))
            self._width = max(self._width, len(text))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
