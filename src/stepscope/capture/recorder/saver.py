"""The flight recorder's saver: one thread that builds and writes each run from its snapshot,
so a trigger never costs the training step more than copying a few lists, and the record of
when it worked, for the slow-step trigger (a step the saver overlapped was slowed by the
recorder itself: its thread takes the GIL for the first save's imports, the profile's build
and write)."""

from __future__ import annotations

import collections
import logging
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path

from stepscope.capture.recorder import config as cfg
from stepscope.capture.recorder import snapshot as snap
from stepscope.capture.recorder.pending import PendingSave

log = logging.getLogger("stepscope.recorder")


class Saver:
    """The saver thread, its queue of snapshots, the runs it wrote and when it worked."""

    def __init__(self, config: cfg.RecorderConfig, hostname: Callable[[], str]) -> None:
        self.config = config
        self._hostname = hostname
        self._queue: queue.SimpleQueue[tuple[snap.Snapshot, PendingSave] | None] = (
            queue.SimpleQueue()
        )
        # When it worked (perf_counter_ns spans; `busy_since` = the start of the current
        # one, 0 when idle)
        self.busy_since = 0
        self.spans: collections.deque[tuple[int, int]] = collections.deque(maxlen=32)
        self.saved: list[Path] = []
        self.thread = threading.Thread(target=self._loop, name="stepscope-saver", daemon=True)

    def put(self, snapshot: snap.Snapshot, pending: PendingSave) -> None:
        self._queue.put((snapshot, pending))

    def finish(self, timeout: float) -> None:
        """Write what is queued (up to ``timeout``), then end the thread."""
        self._queue.put(None)
        if self.thread.is_alive():
            self.thread.join(timeout)

    def time_in(self, start_ns: int, end_ns: int) -> int:
        """How long it worked within [start_ns, end_ns) (ns); a save at work still counts
        until ``end_ns`` at least."""
        # Asked for every step the watchdog judges: the spans are in time order, so when the
        # saver is idle and its latest span ended before the step, none overlaps it (a save
        # beginning after the idle check began after the step, which had ended).
        if not self.busy_since and (not self.spans or self.spans[-1][1] <= start_ns):
            return 0
        spans = list(self.spans)
        busy = self.busy_since
        if busy:
            spans.append((busy, end_ns))
        return sum(max(0, min(end_ns, stop) - max(start_ns, begin)) for begin, stop in spans)

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            snapshot, pending = item
            self.busy_since = time.perf_counter_ns()
            try:
                self._save_one(snapshot, pending)
            finally:
                self.spans.append((self.busy_since, time.perf_counter_ns()))
                self.busy_since = 0

    def _save_one(self, snapshot: snap.Snapshot, pending: PendingSave) -> None:
        try:
            run_dir = snap.write(snapshot, self.config.logdir)
            snap.enforce_disk_cap(
                self.config.logdir, self._hostname(), self.config.max_disk_bytes, run_dir
            )
        except BaseException as exc:  # told now and kept for result(); never raised here
            log.warning("stepscope recorder: could not save (%s): %s", snapshot.trigger, exc)
            pending.finish(error=exc)
            return
        self.saved.append(run_dir)
        log.warning(
            "stepscope recorder: saved %s (%s): %s", snapshot.trigger, snapshot.reason, run_dir
        )
        pending.finish(run_dir)
        if self.config.peers and snapshot.trigger not in (cfg.PEER, cfg.REMOTE):
            self._ask_peers(snapshot, run_dir)

    def _ask_peers(self, snapshot: snap.Snapshot, run_dir: Path) -> None:
        """The other ranks save the same span of time (from this save's first event until
        now) under this run's name."""
        from stepscope.capture.recorder.peers import ask_peers

        window_ms = (time.perf_counter_ns() - snapshot.start_perf_ns) // 1_000_000 + 1
        ask_peers(
            self.config.peers,
            run_dir.name,
            int(window_ms),
            self._hostname(),
            snapshot.trigger,
            self.config.peer_token,
        )
