"""The capture session: `start`, `stop`, `profile` (TensorFlow's programmatic API).

    stepscope.start("logs")            # or: with stepscope.profile("logs"): ...
    ...training...
    run_dir = stepscope.stop()         # logs/plugins/profile/<run>/

One session per process at a time. `start` while one is active raises
`ProfilerAlreadyRunningError`; `stop` without one raises `ProfilerNotRunningError`.

``delay_ms``: `start` returns at once; recording begins after the delay (a timer thread).
``duration_ms``: recording ends by itself that long after it began and the profile is saved
at once (so it exists even if the program never calls `stop`). The session then counts as
finished: a later `stop()` does not raise but returns that run directory (or raises the
save error the timer met), and `start` may begin a new session. `stop()` before the delay
elapsed saves a profile with no events and a warning saying so.
"""

from __future__ import annotations

import os
import sys
import threading
import time

import stepscope.capture.step as _step
from stepscope import log
from stepscope.capture import annotations as _annotations
from stepscope.capture import exit_save, interrupts, loader_workers
from stepscope.capture.host_tracer import EventBudget, HostTracer
from stepscope.capture.options import ProfilerOptions, resolve_options
from stepscope.capture.save_preload import import_save_path
from stepscope.errors import StepscopeError
from stepscope.logdir import check_logdir

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Protocol

    from stepscope.capture.bridges.base import BridgeSet
    from stepscope.capture.fetch_probe import FetchProbe
    from stepscope.capture.loader_hook import CpuUse
    from stepscope.capture.python_sampler import PythonSampler
    from stepscope.capture.python_tracer.tracer import PythonTracer
    from stepscope.xspace.proto.xplane_pb2 import XSpace

    class Timer(Protocol):
        def cancel(self) -> None: ...


PENDING, RECORDING, FINISHED = "pending", "recording", "finished"


class Clock:
    """The two clocks a session reads: a monotonic one (``perf_ns``, the clock of every event)
    and the wall clock (``wall_ns``, which dates the profile and names its run), and its alarm
    (``call_later``: the ends of ``delay_ms`` and ``duration_ms``). Tests give a session a fake
    one so they assert on known times and fire the alarms themselves instead of sleeping."""

    def perf_ns(self) -> int:
        return time.perf_counter_ns()

    def wall_ns(self) -> int:
        return time.time_ns()

    def call_later(
        self, seconds: float, func: Callable[[Session], None], session: Session
    ) -> Timer:
        """Call ``func(session)`` on another thread ``seconds`` from now (cancellable)."""
        timer = threading.Timer(seconds, func, args=(session,))
        timer.daemon = True
        timer.name = "stepscope-timer"
        timer.start()
        return timer


SYSTEM_CLOCK = Clock()
CLOCK: Clock = SYSTEM_CLOCK  # the clock new sessions read (tests put a fake one here)


class ProfilerAlreadyRunningError(StepscopeError):
    """`start` was called while a profiling session is active."""


class ProfilerNotRunningError(StepscopeError):
    """`stop` was called while no profiling session is active."""


class Session:
    """One capture: its options, state, tracers and (once finished) its result."""

    def __init__(
        self,
        logdir: str,
        options: ProfilerOptions,
        hostname: str | None,
        clock: Clock = SYSTEM_CLOCK,
        run_name: str | None = None,
    ) -> None:
        from stepscope.logdir import default_hostname

        self.clock = clock
        self.logdir = logdir
        self.options = options
        # The host file and run are named when the profile is saved (`capture.job.place`):
        # a rank of `mp.spawn` is known only once its process group is initialized.
        self.given_hostname = hostname
        self.run_name = run_name
        self.hostname = hostname or default_hostname()
        self.state = PENDING
        self.budget = EventBudget(options.max_events)
        self.host = HostTracer(self.budget)
        self.python: PythonTracer | None = None
        self.sampler: PythonSampler | None = None
        self.probe: FetchProbe | None = None  # the first fetches of start's caller, timed
        # threads sampled from the start (the one calling `stepscope.start`); others join
        # when they open a step
        self.sample_from_start: list[tuple[int, int, str]] = []
        self.bridges: BridgeSet | None = None  # framework profilers (install_bridges)
        self.start_wall_ns = 0
        self.start_perf_ns = 0
        # the native id of the thread whose `start` began recording at once (0: none, e.g. a
        # delayed start or a remote capture): its loop was not cut by the capture's start
        self.started_on_thread = 0
        self.start_returned_perf_ns = 0  # when that `start` returned (perf_counter ns)
        self.run_dir: Path | None = None
        self.error: BaseException | None = None
        self.timers: list[Timer] = []
        # False for a remote capture: `finish` keeps the XSpace in `space` instead of writing it.
        self.write = True
        self.space: XSpace | None = None
        self.saver: threading.Thread | None = None  # a background save (stop(wait=False))
        # The process recording. A child forked after `start` inherits the session but not
        # its recording: it saves nothing (the parent does), see `_after_fork_in_child`.
        self.pid = os.getpid()
        self.cpu: CpuUse | None = None  # the machine's cores while recording (workers' advice)
        self.generate_hooked = False  # generate() hooked, now and as transformers loads

    def begin_recording(self) -> None:
        """PENDING -> RECORDING: note the clock pair, then switch the tracers on."""
        if self.bridges is not None:  # first: their start-up is not part of the recording
            self.bridges.start()
        # `stepscope.steps`'s input stages, loaded before the recording: loaded by the loop's
        # first `steps()` call (2.5 ms, 14 ms beside torch's workers) they were time the
        # script counts in its first step that no step held (decision 635)
        from stepscope.capture import data  # noqa: F401

        self.start_perf_ns = self.clock.perf_ns()
        self.start_wall_ns = self.clock.wall_ns()
        if self.options.host_tracer_level > 0:
            _annotations.activate(self.host)
            # each Hugging Face generate() call marked: a serving loop's step (decision 560)
            from stepscope.capture import generate_hook

            generate_hook.install()  # and as transformers' modules load (decision 615)
            self.generate_hooked = True
            # a capture that saves, not the flight recorder's endless one: each pass's
            # workers write a spool only `stop` reads
            loader_workers.arm(self.write)
            if self.write:  # a plain DataLoader's workers too (decision 351)
                from stepscope.capture import loader_hook

                loader_workers.set_sampler_hz(self.options.python_sampler_hz)
                loader_hook.install()
                self.cpu = loader_hook.CpuUse()
        if self.python is not None:
            self.python.record()
        # The samples are host traces: host_tracer_level=0 records none, as it asks.
        if self.options.python_sampler_hz > 0 and self.options.host_tracer_level > 0:
            self._start_sampler()
        self.state = RECORDING

    def _start_sampler(self) -> None:
        from stepscope.capture.python_sampler import PythonSampler, SampledThread

        sampler = PythonSampler(self.options.python_sampler_hz, self.budget)
        for ident, native_id, name in self.sample_from_start:
            sampler.threads[ident] = SampledThread(ident, native_id, name)
        _step._sampled, _step._sample_this_thread = sampler.threads, sampler.add_current_thread
        sampler.start()
        self.sampler = sampler

    def install_fetch_probe(self) -> None:
        """On the thread calling `start`, recording: time the first fetches of the frame
        that called it (`fetch_probe`, decision 382), when the sampler runs (the probe
        completes its reading of the samples) and no Python tracer owns the profile hook."""
        if self.sampler is None or self.python is not None:
            return
        from stepscope.capture.fetch_probe import FetchProbe, caller_frame
        from stepscope.capture.fetch_sites import FetchSites

        loop = caller_frame(sys._getframe(1))
        if loop is None:
            return
        probe = FetchProbe(loop, FetchSites(), markers=(_step.step.__code__,))
        if probe.install():
            self.probe = probe

    def install_python_tracer(self) -> None:
        """On the thread calling `start` (the one sys.setprofile reaches), even with a delay."""
        if self.options.python_tracer_level > 0:
            from stepscope.capture.python_tracer.tracer import PythonTracer

            tracer = PythonTracer(self.budget)
            tracer.install()
            self.python = tracer

    def install_bridges(self) -> None:
        """Framework profilers (PyTorch, TensorFlow, JAX), prepared on the thread calling
        `start`: torch.profiler records only the thread that started it."""
        from stepscope.capture.bridges import bridges_for

        self.bridges = bridges_for(self.options)
        self.bridges.prepare()

    def finish(self, save: bool, partial_reason: str = "", background: bool = False) -> Path | None:
        """-> FINISHED: switch the tracers off and (if ``save``) write the profile; with
        ``partial_reason`` the profile says it was saved without `stop` and why. With
        ``background`` the profile is written on a thread and the run directory returned
        at once. A Ctrl-C meanwhile is delivered once the profile is saved (a second one
        abandons it: `stepscope.capture.interrupts`)."""
        run_dir: Path | None = None
        with interrupts.saving("saving the profile") as deferred:
            try:
                run_dir = self._finish(save, partial_reason, background)
            finally:
                if deferred and run_dir is not None:
                    log.warn(f"stepscope: the profile was saved in {run_dir}")
        interrupts.deliver(deferred)
        return run_dir

    def _finish(self, save: bool, partial_reason: str, background: bool) -> Path | None:
        _step._on_step = _step._on_steps_end = None
        _step._sampled = None
        if self.probe is not None:  # first: the imports below are no part of the recording
            self.probe.stop()
        if self.sampler is not None:
            self.sampler.stop()
        for timer in self.timers:
            timer.cancel()
        was_recording = self.state == RECORDING
        stop_perf = self.clock.perf_ns()
        stop_wall = self.clock.wall_ns()
        _annotations.deactivate()
        if self.generate_hooked:
            from stepscope.capture import generate_hook

            generate_hook.uninstall()
        loader_workers.arm(False)
        if self.cpu is not None:
            from stepscope.capture import loader_hook

            loader_hook.uninstall()
        if self.python is not None:
            stop_perf = self.python.stop()
        if self.bridges is not None:
            self.bridges.stop(keep=save)
        self.budget.close()
        self.state = FINISHED
        workers = loader_workers.collect_all(self.start_perf_ns, stop_perf)  # spools removed
        if not save:
            return None
        # The save's modules, imported once every recorder is off: imported before
        # `stop_perf` they lengthened the recording by their import (decision 1080)
        from stepscope.capture.save import CaptureResult, build_xspace, save_profile
        from stepscope.logdir import run_name_for

        for warning in workers.warnings:  # drops said at once, and kept in the profile
            log.warn(warning)
        warnings = list(workers.warnings)
        if partial_reason:
            warnings.append(
                f"stepscope: partial profile: {partial_reason} before stepscope.stop() was "
                "called; saved what was recorded until then"
            )
        if not was_recording:
            self.start_perf_ns, self.start_wall_ns = stop_perf, stop_wall
            warnings.append(
                f"stepscope: stopped before delay_ms={self.options.delay_ms} elapsed; "
                "nothing was recorded"
            )
        run_name = run_name_for(self.start_wall_ns)
        if self.write:
            from stepscope.capture.job import place

            placement = place(self.logdir, run_name, self.given_hostname, self.run_name)
            self.run_dir, self.hostname = placement.run_dir, placement.hostname
            run_name = placement.run_dir.name
        result = CaptureResult(
            hostname=self.hostname,
            options=self.options,
            logdir=self.logdir,
            run_name=run_name,
            start_wall_ns=self.start_wall_ns,
            start_perf_ns=self.start_perf_ns,
            stop_wall_ns=self.start_wall_ns + (stop_perf - self.start_perf_ns),
            stop_perf_ns=stop_perf,
            host_buffers=self.host.buffers() + workers.buffers,
            python_threads=list(self.python.threads) if self.python is not None else [],
            sampled_threads=(list(self.sampler.threads.values()) if self.sampler else [])
            + workers.sampled,
            dropped_events=self.budget.dropped,
            warnings=warnings,
            bridges=self.bridges,
            # the cores and their idle share, for the loader advice with workers or without
            # (decision 549: 83 workers were advised on a 2-core host)
            host_stats=self.cpu.stats() if self.cpu is not None else {},
            started_on_thread=self.started_on_thread,
            start_returned_perf_ns=self.start_returned_perf_ns,
            fetch_probe=(
                (self.probe.native_id, list(self.probe.fetches)) if self.probe else (0, [])
            ),
        )
        if result.dropped_events:
            log.warn(
                f"stepscope: {result.dropped_events} events dropped (max_events="
                f"{self.options.max_events})"
            )
        if background and self.write:
            # on this thread, before the saver thread exists (decision 432): the training thread
            # goes on importing its own while the saver runs
            import_save_path()
            # Not a daemon: the interpreter waits for it at exit, so the profile is written.
            self.saver = threading.Thread(
                target=self._save_quietly, args=(result,), name="stepscope-save"
            )
            self.saver.start()
            return self.run_dir
        if not self.write:
            self.space = build_xspace(result)
            return None
        self.run_dir = save_profile(result, self.run_dir)
        return self.run_dir

    def _save_quietly(self, result: object) -> None:
        """The background save: errors are kept for `wait` and told on stderr at once."""
        from stepscope.capture.save import CaptureResult, save_profile

        assert isinstance(result, CaptureResult)
        try:
            save_profile(result, self.run_dir)
        except BaseException as exc:
            self.error = exc
            log.warn(f"stepscope: saving the profile failed: {exc}")

    def wait_saved(self) -> Path | None:
        """Block until a background save is done; raises what it met."""
        saver = self.saver
        if saver is not None:
            saver.join()
            if self.error is not None:
                error, self.error = self.error, None
                raise error
        return self.run_dir


_lock = threading.RLock()
_session: Session | None = None
_last: Session | None = None  # the last session stopped: its background save, if any


def start(
    logdir: str | os.PathLike[str],
    options: ProfilerOptions | None = None,
    *,
    hostname: str | None = None,
    run_name: str | None = None,
) -> None:
    """Begin a session writing under ``logdir`` (recording starts after ``delay_ms``).

    The profile is saved as ``<logdir>/plugins/profile/<run>/<host>.xplane.pb``. In a job of
    several processes (torchrun, ``mp.spawn``, SLURM, MPI, JAX, TF_CONFIG) every rank saves
    into one run, as ``<host>.rank<k>.xplane.pb`` (docs/jobs.md); ``run_name`` names the run
    (the same for every rank), ``hostname`` the host file. No profile is ever overwritten."""
    global _session
    resolved = resolve_options(options)
    text = check_logdir(logdir)
    previous = _last
    if previous is not None and previous.saver is not None:
        previous.saver.join()  # one capture at a time, its save included (errors: see wait)
    if resolved.duration_ms is not None:
        # the end of duration_ms saves on the timer's thread while the training thread goes
        # on importing: the save's modules are imported here, before any event is recorded
        # (decision 432). `stop` imports them itself once the recorders are off, before a
        # `stop(wait=False)` starts its saver: a start without duration_ms does not wait for
        # them (60-300 ms, decision 1080)
        import_save_path()
    with _lock:
        if _session is not None and _session.state != FINISHED:
            raise ProfilerAlreadyRunningError(
                f"a profiling session is already running (logdir {_session.logdir!r}); "
                "call stepscope.stop() first"
            )
        if run_name is not None:
            from stepscope.capture.job import check_run_name

            check_run_name(run_name)
        session = Session(text, resolved, hostname, CLOCK, run_name)
        current = threading.current_thread()
        session.sample_from_start.append(
            (threading.get_ident(), threading.get_native_id(), current.name)
        )
        # A program that dies before stop() still leaves its profile.
        exit_save.install(save_partial)
        session.install_python_tracer()
        session.install_bridges()
        _session = session
        if resolved.delay_ns:
            _schedule(session, resolved.delay_ns / 1e9, _delayed_begin)
        else:
            session.begin_recording()
            session.started_on_thread = threading.get_native_id()
            session.install_fetch_probe()
            _schedule_duration(session)
            # the last thing before the caller's code: the start-up is over (decision 1048)
            session.start_returned_perf_ns = session.clock.perf_ns()


def _schedule(session: Session, seconds: float, func: Callable[[Session], None]) -> None:
    session.timers.append(session.clock.call_later(seconds, func, session))


def _schedule_duration(session: Session) -> None:
    if session.options.duration_ms is not None:
        _schedule(session, session.options.duration_ms / 1e3, _auto_stop)


def _delayed_begin(session: Session) -> None:
    with _lock:
        if _session is session and session.state == PENDING:
            session.begin_recording()
            _schedule_duration(session)


def _auto_stop(session: Session) -> None:
    with _lock:
        if _session is not session or session.state != RECORDING:
            return
        try:
            session.finish(save=True)
        except BaseException as exc:  # kept for stop(); also told now, nobody else will
            session.error = exc
            log.warn(f"stepscope: saving the profile after duration_ms failed: {exc}")


def stop(save: bool = True, wait: bool = True) -> Path | None:
    """End the session; returns the run directory written (None when ``save`` is False).

    ``wait=False``: return as soon as the recorders are off (framework profilers are stopped
    on this thread, as they require); converting and writing the profile go on in a
    background thread, so the training loop continues at once. The returned directory is
    final; the file appears in it when the save is done (`wait` blocks until then; the next
    `start` and the interpreter's exit wait for it too).
    """
    global _session, _last
    with _lock:
        session = _session
        if session is None:
            raise ProfilerNotRunningError(
                "no profiling session is running; call stepscope.start(logdir) first"
            )
        _session = None
        if session.pid != os.getpid():
            log.info(
                f"stepscope: this process was forked from process {session.pid} after "
                "stepscope.start(); that process saves the recording, nothing is saved here"
            )
            return None
        if session.state == FINISHED:  # duration_ms ended it already
            if session.error is not None:
                raise session.error
            return session.run_dir
        _last = session
        return session.finish(save, background=not wait)


def wait() -> Path | None:
    """Wait for the profile of the last `stop(wait=False)` to be written; returns its run
    directory (None when nothing was stopped); raises what the save met."""
    with _lock:
        session = _last
    return session.wait_saved() if session is not None else None


def save_partial(reason: str) -> Path | None:
    """Save the running session marked as partial (program exit, SIGTERM); None if there is
    none, or it is a remote capture (its client gets what was recorded)."""
    global _session
    with _lock:
        session = _session
        if session is None or session.state == FINISHED or not session.write:
            return None
        _session = None
        if session.pid != os.getpid():  # a forked child: the parent saves the recording
            return None
        return session.finish(save=True, partial_reason=reason)


def is_running() -> bool:
    """True between `start` and `stop` (including the delay, excluding an auto-stopped one);
    False in a child forked meanwhile (it records nothing)."""
    with _lock:
        return _session is not None and _session.state != FINISHED and _session.pid == os.getpid()


def _after_fork_in_child() -> None:
    """A child forked while a session records (a DataLoader worker, multiprocessing): its
    tracers go off so that it spends no memory on a recording nobody saves; its `stop()`
    and exit save nothing (the parent's recording is the run). Runs with one thread, the
    forking one: `_lock` is made anew (another thread may have held it at the fork, and
    would never release it here)."""
    global _lock
    _lock = threading.RLock()
    session = _session
    if session is None or session.state == FINISHED:
        return
    _step._on_step = _step._on_steps_end = None
    _step._sampled = None
    _annotations.deactivate()
    loader_workers.arm(False)
    if session.python is not None:
        session.python.forget()
    if session.probe is not None:  # the forking thread's copy leaves at its next event
        session.probe.stop()
    for timer in session.timers:  # their threads are gone; the objects must not fire
        timer.cancel()


os.register_at_fork(after_in_child=_after_fork_in_child)


def is_recording() -> bool:
    """True while events are recorded: from the end of ``delay_ms`` until `stop` (or the end
    of ``duration_ms``)."""
    with _lock:
        return _session is not None and _session.state == RECORDING


class profile:
    """``with stepscope.profile(logdir, options):`` -- start on entry, stop and save on exit.

    After the block, ``run_dir`` is the directory written (also when the block raised).
    """

    def __init__(
        self,
        logdir: str | os.PathLike[str],
        options: ProfilerOptions | None = None,
        *,
        hostname: str | None = None,
        run_name: str | None = None,
    ) -> None:
        self.logdir = logdir
        self.options = options
        self.hostname = hostname
        self.run_name = run_name
        self.run_dir: Path | None = None

    def __enter__(self) -> profile:
        start(self.logdir, self.options, hostname=self.hostname, run_name=self.run_name)
        return self

    def __exit__(self, *exc: object) -> None:
        self.run_dir = stop(save=True)


# For a caller that drives a session itself (the remote-capture server): it shares the one
# session slot with `start`, so a local capture and a remote one exclude each other.
def claim(session: Session) -> None:
    """Make ``session`` the process's session; `ProfilerAlreadyRunningError` if one is active."""
    global _session
    with _lock:
        if _session is not None and _session.state != FINISHED:
            raise ProfilerAlreadyRunningError(
                f"a profiling session is already running (logdir {_session.logdir!r})"
            )
        _session = session


def begin(session: Session) -> bool:
    """Start recording a claimed ``session``; False if it was stopped meanwhile."""
    with _lock:
        if _session is session and session.state == PENDING:
            session.begin_recording()
        return session.state == RECORDING


def release(session: Session) -> None:
    """Finish a claimed ``session`` (unless `stop` already did) and free the slot."""
    global _session
    with _lock:
        if _session is session:
            _session = None
        if session.state != FINISHED:
            session.finish(save=True)
