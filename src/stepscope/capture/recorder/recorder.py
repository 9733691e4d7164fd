"""The flight recorder: an always-on recording cut to the last steps, saved on a trigger.

Threads record exactly as in a capture (annotations, step markers, `stepscope.data`, the
Python sampler); the recorder adds one Python call per step opened (noting when it opened,
for the hang trigger) and two threads of its own:
- the watchdog wakes every ``poll_s`` (or after `WAKE_STEPS` steps, or as a step opens
  after one that looks slow): it reads the steps finished since (slow-step trigger),
  checks for a step open too long (hang trigger), serves SIGUSR1 and remote requests, and
  trims the ring;
- the saver builds and writes each run from its snapshot, so a trigger never costs the
  training step more than copying a few lists.
"""

from __future__ import annotations

import collections
import itertools
import logging
import os
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from stepscope.capture import session as _session
from stepscope.capture.options import ProfilerOptions
from stepscope.capture.recorder import config as cfg
from stepscope.capture.recorder import fetch_steps as loader_steps
from stepscope.capture.recorder import snapshot as snap
from stepscope.capture.recorder.after import RECORDING, AfterCapture
from stepscope.capture.recorder.hang import HangWatch
from stepscope.capture.recorder.pending import PendingSave, chain
from stepscope.capture.recorder.ring import Ring, StepSummary, save_window
from stepscope.capture.recorder.saver import Saver
from stepscope.capture.recorder.slow import (
    RATE_LIMITED,
    MissedSteps,
    SlowStep,
    SlowStepTrigger,
    missed_text,
    slow_reason,
)
from stepscope.capture.recorder.unmarked import UnmarkedWatch
from stepscope.capture.save_preload import import_save_path

_get_ident = threading.get_ident
log = logging.getLogger("stepscope.recorder")

# Events are bounded by the ring, not by a capture's budget: a count that is never reached.
_UNBOUNDED = 1 << 62
EXIT_WAIT_S = 60.0  # how long an exiting program waits for its last save
# The watchdog also wakes after this many steps (steps shorter than poll_s / WAKE_STEPS):
# the ring then exceeds its bounds by at most what so many steps record.
WAKE_STEPS = 1000
# No early wake-up armed (`Recorder._slow_ns`): longer than any step.
_NEVER = 1 << 62


class Recorder:
    """One process's recorder (see `stepscope.capture.recorder.start`)."""

    def __init__(self, config: cfg.RecorderConfig) -> None:
        from stepscope.logdir import default_hostname

        self.config = config
        self.triggers = config.triggers
        self.machine = default_hostname()
        options = ProfilerOptions(
            host_tracer_level=2,
            device_tracer_level=0,
            max_events=_UNBOUNDED,
            python_sampler_hz=config.sampler_hz,
        )
        self.session = _session.Session(config.logdir, options, self.hostname)
        self.session.write = False  # exit hooks must not save the whole recording
        self.ring = Ring(
            self.session.host,
            config.keep_steps + max(self.triggers.after_steps, self.triggers.capture_next_steps),
            config.max_bytes,
            config.history_steps,
        )
        self.slow = SlowStepTrigger(self.triggers)
        self.missed = MissedSteps()  # slow steps seen and not saved (decision 320)
        self._last_look = False  # stop() judges the steps that ended since the last tick
        self.open_ns: dict[int, int] = {}  # thread ident -> when its current step opened
        self._unmarked = UnmarkedWatch()  # says once when the loop marks no step
        self.fetch_steps: loader_steps.FetchSteps | None = None  # a DataLoader's (dec. 815)
        self._hang = HangWatch()
        self._last_save: dict[str, float] = {}
        # (due: steps seen when it saves, trigger, reason, details, pending, the history row
        # of the step the save is for or None: the last steps at the trigger)
        self._deferred: list[tuple[int, str, str, dict[str, Any], PendingSave, int | None]] = []
        self._requests: collections.deque[tuple[str, str, dict[str, Any], PendingSave]] = (
            collections.deque()
        )
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._stopped_why = "the recorder is stopped"
        # Steps opened, and the count at which the step hook wakes the watchdog before its
        # poll: many short steps must not grow the ring past its bounds for a whole poll_s.
        self._opened = 0
        self._wake_at = WAKE_STEPS
        self._wake = threading.Event()
        # A step that opens this long (ns) after the previous one on its thread wakes the
        # watchdog at once: the last step looks slow to the armed trigger, and it is judged
        # (and saved, with the steps just before it) a few steps after it ended rather than
        # up to ``poll_s`` later. Armed by the watchdog after a regular wake-up, disarmed by
        # the early wake-up it makes (decision 516).
        self._slow_ns = _NEVER
        self._woke_early = False
        self._last_exception: BaseException | None = None
        self._unchecked: list[StepSummary] = []  # scanned by a save, not checked yet
        self._after: AfterCapture | None = None  # the capture of the steps after a trigger
        self._trigger_ids = itertools.count(1)
        self.requested: collections.deque[PendingSave] = collections.deque(maxlen=100)
        self._watchdog = threading.Thread(
            target=self._watch, name="stepscope-recorder", daemon=True
        )
        # builds and writes the runs; a step it overlapped was slowed by the recorder itself
        self._saver = Saver(config, lambda: self.hostname)

    @property
    def saved(self) -> list[Path]:
        """The runs saved so far."""
        return self._saver.saved

    # -- life cycle -------------------------------------------------------------------------

    @property
    def hostname(self) -> str:
        """The host name of this process's saves: ``hostname=``, else the machine's with the
        process's rank in its job (read at each save: `mp.spawn` ranks are known only once
        their process group is initialized; docs/jobs.md)."""
        from stepscope.capture import job

        return self.config.hostname or job.detect().host_name(self.machine)

    def start(self) -> None:
        import_save_path()  # before any event is recorded
        current = threading.current_thread()
        self.session.sample_from_start.append(
            (threading.get_ident(), threading.get_native_id(), current.name)
        )
        _session.claim(self.session)  # one recording per process: capture or recorder
        try:
            _session.begin(self.session)
        except BaseException:
            _session.release(self.session)
            raise
        self.ring.sampler = self.session.sampler
        self._unmarked.started()
        on_error = self._on_step_error if self.triggers.on_exception else None
        self.fetch_steps = loader_steps.attach(self, on_error)  # the recorder's step hooks set too
        self._watchdog.start()
        self._saver.thread.start()

    def stop(self, timeout: float = EXIT_WAIT_S) -> None:
        """Stop recording; saves already requested are finished first (up to ``timeout``)."""
        self._stop.set()
        self._wake.set()
        if self._watchdog.is_alive() and threading.current_thread() is not self._watchdog:
            self._watchdog.join(timeout)
        if self._saver.thread.is_alive() and not self._watchdog.is_alive():
            self._judge_last_steps()
        saver = self._saver.thread.is_alive()
        with self._lock:
            for _due, trigger, reason, details, pending, row in self._deferred:
                if saver:  # the steps after will not come: keep the ones before (dec. 320)
                    more = self.triggers.after_steps
                    self._enqueue(trigger, reason, details, pending, None, more, None, False, row)
                else:
                    pending.skip(f"the recorder stopped before the steps after the {trigger}")
            self._deferred.clear()
            after, self._after = self._after, None
        if after is not None:
            if after.state == RECORDING:
                after.stop()
                self._enqueue_after(after)
            else:
                after.pending.skip("the recorder stopped before the steps after the trigger")
        self._saver.finish(timeout)
        self._unmarked.check(bool(self.open_ns), at_stop=True)
        loader_steps.detach(self)
        self.session.finish(save=False)
        _session.release(self.session)

    def _judge_last_steps(self) -> None:
        """The watchdog ends without judging the steps finished since its last wake-up (up
        to ``poll_s`` of them): a stall just before `stop` or the program's end was neither
        saved nor told (decision 320). Judged here, their saves still go to the saver."""
        self._last_look = True
        try:
            self._check_steps()
        except Exception:  # the recorder must never take the training down
            log.exception("stepscope recorder: error judging the last steps")
        finally:
            self._last_look = False

    def status(self) -> dict[str, Any]:
        """What the recorder did and did not save: the slow-step trigger's arming, the runs
        saved, the saves skipped and the slow steps seen but not saved, by reason."""
        missed = self.missed.as_dict()
        with self._lock:
            return {
                "armed": self.slow.armed,
                "armed_note": self.slow.armed_note,
                "steps_judged": self.slow.seen,
                "saved": [str(p) for p in self.saved],
                "skipped": [(p.trigger, p.reason, p.skipped) for p in self.requested if p.skipped],
                "missed_slow_steps": missed,
            }

    def forget_in_child(self, parent_pid: int) -> None:
        """In a child forked while recording: the recorder's threads are gone and the ring is
        the parent's to save. Every save is skipped here (at once: an exiting child must not
        wait for a saver that does not exist), and no step hook runs."""
        self._lock = threading.RLock()  # another thread may have held it at the fork
        self._stopped_why = (
            f"this process was forked from process {parent_pid} while its recorder ran: "
            "that process saves the recording"
        )
        self._stop.set()
        self._deferred.clear()
        self._after = None
        loader_steps.detach(self)

    # -- triggers ---------------------------------------------------------------------------

    def save(
        self,
        trigger: str,
        reason: str,
        details: dict[str, Any] | None = None,
        *,
        at_once: bool = False,
        run_name: str | None = None,
        window_ns: int | None = None,
        capture_after: bool = True,
        force: bool = False,
        step_row: int | None = None,
    ) -> PendingSave:
        """Snapshot now (or after ``after_steps`` more steps) and save in the background;
        automatic triggers honour ``min_interval_s`` (unless ``force``: an escalation).
        ``run_name`` names the run (a save several ranks share); ``window_ns`` keeps only
        what ended that recently;
        ``capture_after``: with ``capture_next_steps``, capture the next steps in full (not
        for a hang or an exception ending the program: no step is coming);
        ``step_row``: the history row (`StepHistory.row`) of the step the save is for (a slow
        step, judged up to ``poll_s`` after it ended): the run then holds ``keep_steps``
        steps up to it and ``after_steps`` after it, not the last steps (decision 515)."""
        pending = PendingSave(trigger, reason)
        self.requested.append(pending)
        details = dict(details or {})
        with self._lock:
            if self._stop.is_set() and not self._last_look:
                pending.skip(self._stopped_why)
                return pending
            now = time.monotonic()
            last = self._last_save.get(trigger)
            limit = self.triggers.min_interval_s
            limited = trigger not in cfg.UNLIMITED and not force
            if limited and last is not None and now - last < limit:
                why = f"rate limit: one {trigger} save per {limit:g} s"
                log.info("stepscope recorder: %s not saved (%s): %s", trigger, why, reason)
                pending.skip(why)
                return pending
            self._last_save[trigger] = now
            after = self.triggers.after_steps
            if after and not at_once and trigger in (cfg.SLOW_STEP, cfg.SIGNAL, cfg.REMOTE):
                # counted from the step the save is for: it may have ended many steps ago
                seen = self.ring.steps_seen if step_row is None else step_row + 1
                self._deferred.append((seen + after, trigger, reason, details, pending, step_row))
                return pending
            self._enqueue(
                trigger, reason, details, pending, run_name, 0, window_ns, capture_after, step_row
            )
        return pending

    def request(
        self, trigger: str, reason: str, details: dict[str, Any] | None = None
    ) -> PendingSave:
        """Ask the watchdog to save at its next wake-up (safe in a signal handler: no lock)."""
        pending = PendingSave(trigger, reason)
        self._requests.append((trigger, reason, dict(details or {}), pending))
        return pending

    def _enqueue(
        self,
        trigger: str,
        reason: str,
        details: dict[str, Any],
        pending: PendingSave,
        run_name: str | None,
        steps_after: int,
        window_ns: int | None = None,
        capture_after: bool = True,
        step_row: int | None = None,
    ) -> None:
        # the steps that ended since the watchdog's last wake-up too, so the save keeps
        # exactly ``keep_steps`` (the watchdog checks them later; the lock is held)
        self._unchecked.extend(self.ring.scan())
        if self.fetch_steps is not None and self.fetch_steps.marking:
            details["steps_from"] = loader_steps.LOADER_FETCHES  # the report says so
        if capture_after:
            self._arm_after(trigger, reason, details, pending)
        cutoff, end_ns, through = save_window(
            self.ring.history, self.config.keep_steps, step_row, steps_after
        )
        history = self.ring.history.copy(through)
        if window_ns is not None:
            recent = time.perf_counter_ns() - window_ns
            cutoff = recent if cutoff is None else max(cutoff, recent)
        snapshot = snap.take(
            trigger,
            reason,
            self.hostname,
            self.session.host,
            self.session.sampler,
            history,
            details,
            cutoff,
            end_ns,
            self.ring.dropped_end_ns,
        )
        snapshot.run_name = run_name
        self._saver.put(snapshot, pending)

    def _arm_after(
        self, trigger: str, reason: str, details: dict[str, Any], before: PendingSave
    ) -> None:
        """With ``capture_next_steps``: the next steps will be captured in full (one such
        capture at a time; a trigger while one runs saves its ring only). Called with the
        lock held; marks the ring's save as the "before" part."""
        steps = self.triggers.capture_next_steps
        if not steps:
            return
        trigger_id = f"{self.hostname}-{os.getpid()}-{next(self._trigger_ids)}"
        details["trigger_id"] = trigger_id
        if self._after is not None:
            details["capture_next_steps"] = "skipped: the steps after an earlier trigger are"
            details["capture_next_steps"] += " being captured"
            return
        details.update(part="before", capture_next_steps=steps)
        pending = PendingSave(trigger, f"the {steps} steps after: {reason}")
        self.requested.append(pending)
        self._after = AfterCapture(trigger, reason, trigger_id, steps, before, pending)

    def _after_step(self, after: AfterCapture, ident: int) -> None:
        """The step hook's part of an after capture (the training thread, a step opening)."""
        try:
            if after.on_step(ident):
                with self._lock:
                    if self._after is after:
                        self._after = None
                self._enqueue_after(after)
        except Exception as exc:  # never the training step's problem
            log.warning("stepscope recorder: the capture of the steps after failed: %s", exc)
            with self._lock:
                if self._after is after:
                    self._after = None
            after.pending.finish(error=exc)

    def _enqueue_after(self, after: AfterCapture) -> None:
        """Snapshot the after capture's steps from the ring (list copies) for the saver."""
        with self._lock:  # the watchdog appends to the history under the lock
            history = self.ring.history.copy()
        snapshot = snap.take(
            after.trigger,
            after.describe(),
            self.hostname,
            self.session.host,
            self.session.sampler,
            history,
            {},
            after.start_perf_ns,
        )
        snapshot.after = after
        self._saver.put(snapshot, after.pending)

    def _on_step_open(self) -> None:
        """Called by `stepscope.step` as a step opens (the only per-step cost added)."""
        ident = _get_ident()
        open_ns = self.open_ns
        try:  # when this thread's last step opened (a new thread is the rare case)
            last = open_ns[ident]
        except KeyError:  # a new step thread: the sampler samples it from now on
            sampler = self.session.sampler
            if sampler is not None:
                sampler.add_current_thread()
            last = _NEVER
        after = self._after
        if after is not None:
            self._after_step(after, ident)
        opened = self._opened = self._opened + 1
        now = time.perf_counter_ns()  # looked up: tests put a fake clock there
        if opened >= self._wake_at or now - last > self._slow_ns:
            self._wake_now(opened)
        open_ns[ident] = now

    def _on_steps_end(self) -> None:
        """Called on a loop's thread as its pass of steps ends (decisions 815, 825)."""
        self._hang.ended(self.open_ns, _get_ident())

    def _wake_now(self, opened: int) -> None:
        """Wake the watchdog from the step hook: many steps opened, or the last one looked
        slow (then no other early wake-up until the watchdog's next regular one)."""
        if opened < self._wake_at:
            self._slow_ns = _NEVER
            self._woke_early = True
        self._wake.set()

    def _on_step_error(self, error: BaseException, step_num: int) -> None:
        self.on_exception(error, f"step {step_num}")

    def on_exception(
        self, error: BaseException, where: str, capture_after: bool = True
    ) -> PendingSave | None:
        """Save for an exception (once per exception object, wherever it is seen again)."""
        if error is self._last_exception:
            return None
        self._last_exception = error
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        reason = f"{type(error).__name__} in {where}: {error}"[:500]
        return self.save(
            cfg.EXCEPTION,
            reason,
            {"exception": f"{type(error).__name__}: {error}", "traceback": text},
            at_once=True,
            capture_after=capture_after,
        )

    # -- the watchdog -----------------------------------------------------------------------

    def _watch(self) -> None:
        while True:
            self._wake.wait(self.config.poll_s)
            self._wake.clear()
            if self._stop.is_set():
                return
            self._wake_at = self._opened + WAKE_STEPS
            early, self._woke_early = self._woke_early, False
            try:
                self.tick()
            except Exception:  # the recorder must never take the training down
                log.exception("stepscope recorder: watchdog error (recording goes on)")
            # One early wake-up per regular one: a run of slow steps (or of long gaps between
            # steps) must not make the watchdog wake, and take the GIL, every step.
            self._slow_ns = _NEVER if early else self._slow_threshold_ns()

    def _slow_threshold_ns(self) -> int:
        """The time between two step openings above which the step hook wakes the watchdog:
        what the armed slow-step trigger calls slow now (the interval holds the step, so a
        slow step always exceeds it; a long gap between steps only wakes it early)."""
        threshold = self.slow.threshold_ns()
        return _NEVER if threshold is None else int(threshold)

    def tick(self) -> None:
        """One wake-up of the watchdog (tests call it directly)."""
        while True:
            try:  # not `while self._requests`: a tick on another thread may pop the last one
                trigger, reason, details, pending = self._requests.popleft()
            except IndexError:
                break
            done = self.save(trigger, reason, details)
            chain(done, pending)
        self._check_steps()
        self._check_hang()
        self._unmarked.check(bool(self.open_ns))
        self._release_deferred()
        # Under the lock: the watchdog's wake-up and a direct call (a save, a test) may trim
        # at once, and a trim bisects a buffer another trim is cutting (an IndexError), or
        # moves a scan's cursor while the scan reads it (steps never seen).
        with self._lock:
            self.ring.trim()

    def _check_steps(self) -> None:
        """Hand each finished step to the slow-step trigger (`recorder.slow`: warm-up,
        arming, the running median, escalation)."""
        if not self.triggers.slow_step_factor:
            with self._lock:
                self._unchecked = []
                self.ring.scan()
            return
        with self._lock:
            found, self._unchecked = self._unchecked + self.ring.scan(), []
            # the rows the scans appended since the last check, in order: found[k]'s row
            first_row = self.ring.history.total - len(found)
        if found and self.slow.armed and not self._saver_time_in_any(found):
            # The usual wake-up: steady steps, the trigger armed, no save overlapping them.
            # Judged in one loop (`observe_armed`), each slow one then handled in order, as
            # below (handling one changes nothing the judging of the next reads).
            nums = [summary.step_num for summary in found]
            durs = [summary.dur_ns for summary in found]
            for k, slow_step in self.slow.observe_armed(nums, durs):
                self._slow(slow_step, first_row + k)
            self._tell_arming()
            return
        for k, summary in enumerate(found):
            saver_ns = self._saver_time_in(summary)
            if saver_ns:  # never part of the baseline; judged without the save's time
                slow = self.slow.judge(summary.step_num, summary.dur_ns - saver_ns)
                if slow is not None:
                    slow = SlowStep(
                        slow.step_num,
                        summary.dur_ns,
                        slow.median_ns,
                        slow.window,
                        slow.unarmed,
                        saver_ns,
                        slow.tail_ns,
                    )
            else:
                slow = self.slow.observe(summary.step_num, summary.dur_ns)
            if slow is not None and slow.unarmed:
                self._missed(slow, slow.unarmed, f"the slow-step trigger is {self.slow.armed_note}")
            elif slow is not None:
                self._slow(slow, first_row + k)
        self._tell_arming()

    def _saver_time_in(self, step: StepSummary) -> int:
        """How long the saver worked while ``step`` ran (ns). Its thread takes the GIL from
        the training thread (imports at the first save, the profile's build and write), so
        such a step may be slow by the recorder's own doing: judged whole, it made the
        trigger save again, each save slowing the next steps (a cascade of escalations on a
        loaded machine, decision 196). The save cannot have taken the step more than this
        time, so the step is judged without it (decision 517): a 301 ms stall that a 21 ms
        save overlapped is still a stall."""
        return self._saver.time_in(step.start_ns, step.start_ns + step.dur_ns)

    def _saver_time_in_any(self, steps: list[StepSummary]) -> int:
        """How long the saver worked while any of ``steps`` ran (ns; 0: it overlapped
        none of them, and `_saver_time_in` is 0 for each)."""
        start = min(step.start_ns for step in steps)
        end = max(step.start_ns + step.dur_ns for step in steps)
        return self._saver.time_in(start, end)

    def _tell_arming(self) -> None:
        news = self.slow.arming_news()
        if news:
            log.info("stepscope recorder: slow-step trigger %s", news)

    def _slow(self, found: SlowStep, row: int) -> None:
        now = time.monotonic()
        worse = self.slow.escalation(found.ratio, now)
        reason, details = slow_reason(found, self.triggers, worse)
        pending = self.save(cfg.SLOW_STEP, reason, details, force=worse is not None, step_row=row)
        if not pending.skipped:
            self.slow.saved(found.ratio, now)
        elif pending.skipped.startswith("rate limit"):
            factor = self.triggers.escalation_factor
            why = pending.skipped
            if factor:
                why += f" and not {factor:g}x worse than the slow step saved before it"
            self._missed(found, RATE_LIMITED, why)

    def _missed(self, found: SlowStep, kind: str, why: str) -> None:
        """A slow step seen and not saved: at WARNING when `MissedSteps.add` says so."""
        text = f"stepscope recorder: {missed_text(found, kind, why)}"
        if self.missed.add(found, kind, why):
            log.warning("%s; all such steps are counted in Recorder.status()", text)
        else:
            log.info("%s", text)

    def _check_hang(self) -> None:
        limit = self.triggers.hang_s
        if not limit:
            return
        now = time.perf_counter_ns()
        hung = self._hang.hung(self.open_ns, self.ring.last_step_start, now, limit * 1e9)
        for ident, opened in hung:
            name = next((t.name for t in threading.enumerate() if t.ident == ident), "?")
            reason = f"a step on thread {name!r} has been open for {(now - opened) / 1e9:.1f} s"
            stacks = snap.thread_stacks()
            warnings = [f"stepscope flight recorder: stack of {k}:\n{v}" for k, v in stacks.items()]
            # `hung_thread`: which of the stacks is the hung step's (the report shows it)
            details = {"stacks": stacks, "hung_thread": f"{name} ({ident})", "warnings": warnings}
            self.save(cfg.HANG, reason, details, at_once=True, capture_after=False)

    def _release_deferred(self) -> None:
        with self._lock:
            ready = [d for d in self._deferred if d[0] <= self.ring.steps_seen]
            for item in ready:
                self._deferred.remove(item)
                _due, trigger, reason, details, pending, row = item
                more = self.triggers.after_steps
                self._enqueue(trigger, reason, details, pending, None, more, step_row=row)
