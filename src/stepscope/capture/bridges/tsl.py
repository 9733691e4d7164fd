"""What the TensorFlow and JAX bridges share: both run TSL's profiler, which writes an XSpace.

``start(tmpdir)`` / ``stop()`` of the framework write ``<tmpdir>/plugins/profile/<run>/<host>
.xplane.pb``; the bridge reads it back and hands its planes to the merge:

- Clock: TensorFlow 2.x and JAX store times relative to their ``profile_start_time`` (older
  writers stored absolute ones); marker events (``Trace`` / ``TraceAnnotation`` bracketed by
  ``perf_counter_ns``, see `sync`) map whatever the file stores to stepscope's clock, so the
  two conventions need no telling apart. Without markers (host_tracer_level=0) the file's
  convention is detected (line timestamps far below ``profile_start_time`` are relative)
  and Unix time is assumed.
- Threads: TSL names host lines by a hash, not the OS thread id stepscope uses. The line
  holding the markers a thread emitted is renamed to that thread's id, so the framework's
  ops on the training thread share a line with ``stepscope.step`` and nest in it. The hash
  is libstdc++'s ``std::hash<std::thread::id>`` of the thread's ``pthread_self``, which is
  Python's ``threading.get_ident()`` (`tsl_line_id`): when the markers' lines confirm it, the
  lines of every Python thread alive at start or stop are renamed the same way. That matters
  for a remote capture, whose markers come from the server's thread, not the training loop.

The profiler is process-wide: it may be started and stopped from any thread.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stepscope.capture.bridges.base import Bridge, BridgeError, BridgeOutput, diagnose
from stepscope.capture.bridges.logs import captured_output
from stepscope.capture.bridges.sync import ClockSync, find_markers
from stepscope.capture.options import ProfilerOptions

HOST_PLANE = "/host:CPU"


class TslBridge(Bridge, ABC):
    """Subclasses provide `start_profiler`, `stop_profiler` and `annotation`."""

    def __init__(self, options: ProfilerOptions) -> None:
        super().__init__(options)
        self.tmpdir: str | None = None
        self.running = False
        self.sync = ClockSync()
        self.logs: list[str] = []
        self.idents: dict[int, int] = {}  # threading ident -> OS thread id, of Python threads
        self._mark: Callable[[str], Any] = self._not_started

    @staticmethod
    def _not_started(name: str) -> Any:
        raise RuntimeError("the profiler is not started")

    @abstractmethod
    def start_profiler(self, logdir: str) -> None:
        """Start/stop the framework's profiler (writing under ``logdir``)."""

    @abstractmethod
    def stop_profiler(self) -> None:
        """Start/stop the framework's profiler (writing under ``logdir``)."""

    @abstractmethod
    def annotation(self) -> Callable[[str], Any]:
        """The framework's ``TraceMe`` context manager factory (name -> context manager)."""

    def start(self) -> None:
        self.tmpdir = tempfile.mkdtemp(prefix=f"stepscope-{self.name}-")
        with captured_output(self.logs):
            self.start_profiler(self.tmpdir)
        self.running = True
        self._mark = self.annotation()
        self.sync.emit(self._probe, batch=0)
        self._note_threads()

    def _note_threads(self) -> None:
        for thread in threading.enumerate():
            if thread.ident is not None and thread.native_id is not None:
                self.idents[thread.ident] = thread.native_id

    def _probe(self, name: str) -> tuple[int, int]:
        mark = self._mark
        before = time.perf_counter_ns()
        with mark(name):
            pass
        return before, time.perf_counter_ns()

    def stop(self) -> None:
        if not self.running:
            return
        self.sync.emit(self._probe, batch=1)
        self._note_threads()
        self.running = False
        with captured_output(self.logs):
            self.stop_profiler()

    def collect(self) -> BridgeOutput | None:
        from stepscope.xspace.formats import load_xspace
        from stepscope.xspace.merge import ClockMap  # here: protobuf's, at the save (1080)

        if self.tmpdir is None:
            return None
        files = sorted(Path(self.tmpdir).rglob("*.xplane.pb"))
        if not files:
            hints = diagnose(self.logs)
            raise BridgeError(
                f"{self.title}'s profiler wrote no profile" + (f": {hints[0]}" if hints else "")
            )
        space = load_xspace(files[-1])
        del space.hostnames[:]
        host = next((p for p in space.planes if p.name == HOST_PLANE), None)
        found = find_markers(host) if host is not None else None
        clock, how = self.sync.clock_map(found.stamps if found else {})
        warnings = diagnose([*self.logs, *space.errors])
        if how.startswith("unix"):
            clock = ClockMap(clock.offset_ns + _relative_base(space))
            warnings.append(f"clock aligned by {how}; events may be off by a few microseconds")
        line_ids: dict[str, dict[int, int]] = {}
        if found is not None:
            line_ids[HOST_PLANE] = self._line_ids(found.lines)
        return BridgeOutput(space, clock, line_ids, warnings)

    def _line_ids(self, marker_lines: dict[str, int]) -> dict[int, int]:
        """TSL host line id -> OS thread id: the markers' lines, and (when the markers show
        that TSL's ids are `tsl_line_id` of the thread's ident) every Python thread's."""
        threads, idents = self.sync.threads(), self.sync.idents()
        renames = {line: threads[name] for name, line in marker_lines.items() if name in threads}
        checked = [(line, idents[name]) for name, line in marker_lines.items() if idents.get(name)]
        if checked and all(line == tsl_line_id(ident) for line, ident in checked):
            for ident, native_id in self.idents.items():
                renames.setdefault(tsl_line_id(ident), native_id)
        return renames

    def close(self) -> None:
        if self.running:  # never stopped (stop(save=False) before recording began)
            self.running = False
            with captured_output([]):
                self.stop_profiler()
        if self.tmpdir is not None:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None


_MASK = (1 << 64) - 1
_MUL = 0xC6A4A7935BD1E995
_SEED = 0xC70F6907


def tsl_line_id(ident: int) -> int:
    """The line id TSL gives the thread whose ``pthread_self`` is ``ident``: libstdc++'s
    ``std::hash<std::thread::id>`` (``_Hash_bytes`` of the 8 bytes, seed 0xc70f6907), signed."""

    def shift_mix(v: int) -> int:
        return v ^ (v >> 47)

    value = _SEED ^ ((8 * _MUL) & _MASK)
    value = ((value ^ (shift_mix((ident & _MASK) * _MUL & _MASK) * _MUL & _MASK)) * _MUL) & _MASK
    value = shift_mix(shift_mix(value) * _MUL & _MASK)
    return value - (1 << 64) if value >> 63 else value


def _relative_base(space: Any) -> int:
    """``profile_start_time`` when the file stores times relative to it, else 0."""
    from stepscope.xspace.merge import env_stats

    start = env_stats(space).get("profile_start_time")
    if not isinstance(start, int) or start <= 0:
        return 0
    stamps = [line.timestamp_ns for plane in space.planes for line in plane.lines if line.events]
    return start if stamps and min(stamps) < start // 2 else 0
