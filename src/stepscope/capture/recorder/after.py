"""The steps after a trigger, captured in full: ``Triggers(capture_next_steps=K)``.

The ring holds what the recorder can afford to record always (annotations, step markers,
input events, a slow stack sampler). When a trigger fires, the steps before it are saved
from the ring at once; with ``capture_next_steps=K`` the recorder then also runs the
framework bridges (PyTorch, JAX, TensorFlow profilers where imported, their device tracers
included) for the next K steps and saves them as a second run, the "after" run, marked
with the same trigger id as the "before" run.

Thread rules: ``torch.profiler`` records the thread that started it and must be stopped
there, so both ends happen on the training thread, at a step boundary (the recorder's step
hook): the capture starts as the first step after the trigger opens and stops as step K+1
opens. Converting and writing happen on the recorder's saver thread. Everything here is
guarded: a bridge that fails is reported in the after run (and the log) and the ring's save
stands; an error of this module's own ends the after capture, never the training step.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from stepscope.capture.options import ProfilerOptions
from stepscope.capture.recorder.pending import PendingSave

if TYPE_CHECKING:
    from stepscope.capture.bridges.base import BridgeSet

log = logging.getLogger("stepscope.recorder")

ARMED, RECORDING, DONE = "armed", "recording", "done"
# What the after capture records besides the ring: TensorFlow's defaults (host tracer 2,
# device tracers on) for the bridges.
FULL_OPTIONS = ProfilerOptions()


class AfterCapture:
    """One after capture: armed by a trigger, started and stopped by the step hook."""

    def __init__(
        self,
        trigger: str,
        reason: str,
        trigger_id: str,
        steps: int,
        before: PendingSave,
        pending: PendingSave,
    ) -> None:
        self.trigger = trigger
        self.reason = reason
        self.trigger_id = trigger_id
        self.steps = steps
        self.before = before  # the ring's save of the same trigger
        self.pending = pending  # this capture's own save
        self.state = ARMED
        self.thread = 0  # ident of the thread that started it (the bridges' owner)
        self.bridges: BridgeSet | None = None
        self.start_perf_ns = 0
        self.stop_perf_ns = 0
        self.steps_left = steps
        self.warnings: list[str] = []
        self._starting = threading.Lock()

    def on_step(self, ident: int) -> bool:
        """A step opens on thread ``ident``; True when the capture just ended (K steps)."""
        if self.state == ARMED:
            with self._starting:  # two step threads: one starts the profilers
                if self.state == ARMED:
                    self._start(ident)
                    return False
        if self.state != RECORDING or ident != self.thread:
            return False
        self.steps_left -= 1
        if self.steps_left > 0:
            return False
        self.stop()
        return True

    def _start(self, ident: int) -> None:
        self.thread = ident
        try:
            from stepscope.capture.bridges import bridges_for

            bridges = bridges_for(FULL_OPTIONS)
            bridges.prepare()  # on this (the training) thread: torch.profiler's rule
            bridges.start()
            self.bridges = bridges
        except Exception as exc:  # guarded by BridgeSet already; this is a last resort
            self._fail("starting the framework profilers", exc)
        self.start_perf_ns = time.perf_counter_ns()
        self.state = RECORDING

    def stop(self) -> None:
        """End the capture (K steps done, or the recorder stops); idempotent."""
        if self.state != RECORDING:
            self.state = DONE
            return
        self.stop_perf_ns = time.perf_counter_ns()
        self.state = DONE
        if self.bridges is not None:
            try:
                if threading.get_ident() != self.thread:
                    self.warnings.append(
                        "stepscope flight recorder: the capture of the steps after the "
                        "trigger was ended by another thread than the training thread (the "
                        "recorder stopped): framework profilers may be missing"
                    )
                self.bridges.stop()
            except Exception as exc:
                self._fail("stopping the framework profilers", exc)

    def describe(self) -> str:
        return f"the {self.steps} steps after: {self.reason}"

    def details(self) -> dict[str, Any]:
        """What the after run's marker says besides trigger and reason."""
        before = self.before.run_dir
        bridge_warnings = list(self.bridges.warnings) if self.bridges is not None else []
        return {
            "trigger_id": self.trigger_id,
            "part": "after",
            "before_run": before.name if before is not None else None,
            "capture_next_steps": self.steps,
            "bridges": [b.title for b in self.bridges.bridges] if self.bridges else [],
            "bridge_warnings": bridge_warnings + self.warnings,
            "warnings": self.warnings,
        }

    def _fail(self, what: str, exc: BaseException) -> None:
        line = f"stepscope flight recorder: {what} for the steps after the trigger failed: {exc}"
        log.warning("%s", line)
        self.warnings.append(line)
