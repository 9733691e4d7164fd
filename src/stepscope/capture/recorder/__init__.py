"""The flight recorder: record always, keep the last steps, save them when something goes
wrong (docs/flight_recorder.md).

    import stepscope.recorder
    stepscope.recorder.start("logs", keep_steps=50)       # once, before training
    for step, batch in stepscope.steps(loader): ...       # steps as usual
    stepscope.recorder.save("after the eval")             # any time; returns at once

A save is a normal run under ``logs`` marked with its trigger and reason. Triggers: a slow
step, an exception in a step or an uncaught one, SIGUSR1, a hang, a remote request
(`stepscope capture --recent`, another rank), a user `save`.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Any

from stepscope import log
from stepscope.capture.recorder.config import (
    InvalidRecorderConfigError,
    RecorderConfig,
    Triggers,
)
from stepscope.capture.recorder.recorder import EXIT_WAIT_S, PendingSave, Recorder
from stepscope.errors import StepscopeError

__all__ = [
    "InvalidRecorderConfigError",
    "PendingSave",
    "Recorder",
    "RecorderConfig",
    "RecorderNotRunningError",
    "Triggers",
    "current",
    "is_running",
    "save",
    "start",
    "stop",
]


class RecorderNotRunningError(StepscopeError):
    """`save` or `stop` without a running recorder."""


_lock = threading.Lock()
_recorder: Recorder | None = None
_previous_hooks: dict[str, Any] = {}
_atexit_installed = False


def start(
    logdir: str | RecorderConfig,
    keep_steps: int = 50,
    triggers: Triggers | None = None,
    **settings: Any,
) -> Recorder:
    """Start recording into a ring of the last ``keep_steps`` steps; saves go to
    ``logdir``. ``settings`` are `RecorderConfig`'s other fields (``max_bytes``,
    ``history_steps``, ``max_disk_bytes``, ``sampler_hz``, ``hostname``, ``peers``). Or
    ``start(RecorderConfig(...))``: every setting in one object (what the profiler server's
    ``recorder=`` and ``stepscope server --recorder`` pass)."""
    global _recorder, _atexit_installed
    if isinstance(logdir, RecorderConfig):
        if triggers is not None or settings or keep_steps != 50:
            raise InvalidRecorderConfigError(
                "stepscope.recorder.start: give a RecorderConfig or settings, not both"
            )
        config = logdir
    else:
        config = _config(logdir, keep_steps, triggers, settings)
    with _lock:
        if _recorder is not None:
            raise StepscopeError(
                "stepscope.recorder.start: the recorder is already running; call "
                "stepscope.recorder.stop() first"
            )
        recorder = Recorder(config)
        recorder.start()
        _recorder = recorder
        _install_hooks(recorder)
        if not _atexit_installed:
            atexit.register(_at_exit)
            _atexit_installed = True
    return recorder


def _config(
    logdir: Any, keep_steps: int, triggers: Triggers | None, settings: dict[str, Any]
) -> RecorderConfig:

    text = os.fspath(logdir)
    if not isinstance(text, str) or not text or "://" in text:
        raise InvalidRecorderConfigError(
            f"stepscope.recorder.start: logdir must be a local directory, got {logdir!r}"
        )
    unknown = set(settings) - set(RecorderConfig.__dataclass_fields__)
    if unknown:
        raise InvalidRecorderConfigError(
            f"stepscope.recorder.start: unknown setting(s) {sorted(unknown)}; see "
            "stepscope.recorder.RecorderConfig"
        )
    if "peers" in settings:
        settings["peers"] = tuple(settings["peers"])
    return RecorderConfig(text, keep_steps, triggers or Triggers(), **settings)


def save(reason: str = "user request") -> PendingSave:
    """Save the ring now, in the background; ``.result(timeout)`` waits for the run."""
    recorder = _recorder
    if recorder is None:
        raise RecorderNotRunningError(
            "stepscope.recorder.save: the recorder is not running; call "
            "stepscope.recorder.start(logdir) first"
        )
    from stepscope.capture.recorder.config import USER

    return recorder.save(USER, str(reason)[:500])


def stop() -> None:
    """Stop recording (saves already requested are written first)."""
    global _recorder
    with _lock:
        recorder = _recorder
        if recorder is None:
            raise RecorderNotRunningError("stepscope.recorder.stop: the recorder is not running")
        _recorder = None
        _remove_hooks()
    recorder.stop()


def is_running() -> bool:
    return _recorder is not None


def current() -> Recorder | None:
    """The running recorder (the profiler server asks it for saves), or None."""
    return _recorder


# -- process hooks: uncaught exceptions and SIGUSR1 ------------------------------------------


def _install_hooks(recorder: Recorder) -> None:
    if recorder.triggers.on_exception:
        _previous_hooks["sys"] = sys.excepthook
        _previous_hooks["threading"] = threading.excepthook
        sys.excepthook = _excepthook
        threading.excepthook = _thread_excepthook
    main = threading.current_thread() is threading.main_thread()
    if recorder.triggers.on_sigusr1 and hasattr(signal, "SIGUSR1") and main:
        # only where the program has no handler of its own (Python allows it on the main
        # thread only; elsewhere `stepscope capture --recent` still reaches the recorder)
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL:
                signal.signal(signal.SIGUSR1, _on_sigusr1)
                _previous_hooks["signal"] = signal.SIG_DFL


def _remove_hooks() -> None:
    if "sys" in _previous_hooks:
        if sys.excepthook is _excepthook:
            sys.excepthook = _previous_hooks["sys"]
        if threading.excepthook is _thread_excepthook:
            threading.excepthook = _previous_hooks["threading"]
    main = threading.current_thread() is threading.main_thread()
    if "signal" in _previous_hooks and main and signal.getsignal(signal.SIGUSR1) is _on_sigusr1:
        signal.signal(signal.SIGUSR1, _previous_hooks["signal"])
    _previous_hooks.clear()


def _save_uncaught(error: BaseException | None, where: str) -> None:
    recorder = _recorder
    if recorder is None or not isinstance(error, Exception):
        return
    pending = recorder.on_exception(error, where, capture_after=False)  # no step comes
    if pending is not None:
        try:  # the program is ending: wait for the run to be written
            pending.result(EXIT_WAIT_S)
        except Exception as exc:
            log.warn(f"stepscope recorder: could not save the exception: {exc}")


def _excepthook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
    _save_uncaught(error, "the program (uncaught)")
    previous = _previous_hooks.get("sys", sys.__excepthook__)
    previous(kind, error, tb)


def _thread_excepthook(args: threading.ExceptHookArgs) -> None:
    name = args.thread.name if args.thread is not None else "?"
    _save_uncaught(args.exc_value, f"thread {name!r} (uncaught)")
    previous = _previous_hooks.get("threading", threading.__excepthook__)
    previous(args)


def _on_sigusr1(signum: int, frame: FrameType | None) -> None:
    recorder = _recorder
    if recorder is not None:
        from stepscope.capture.recorder.config import SIGNAL

        recorder.request(SIGNAL, "SIGUSR1 received")


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # another thread may have held it at the fork
    recorder = _recorder
    if recorder is not None:
        recorder.forget_in_child(recorder.session.pid)


os.register_at_fork(after_in_child=_after_fork_in_child)


def _at_exit() -> None:
    global _recorder
    recorder = _recorder
    if recorder is None:
        return
    _recorder = None
    _remove_hooks()
    recorder.stop(EXIT_WAIT_S)
