"""Issue #28 item 4: recordings are never lost or duplicated."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stepscope.capture.remote.client import TraceResult
from stepscope.capture.remote.progress import FAILED, OK, WorkerState
from stepscope.cli.commands.capture import saved_lines
from tests.support.native import c_on


def _worker(address: str, state: str, path: Path | None) -> WorkerState:
    return WorkerState(address, 1, 1.0, state=state, path=path)


def test_capture_summary_names_only_directories_written(tmp_path: Path) -> None:
    """The log directory could not be written: every file went to the fallback directory,
    and the summary named the run directory all the same."""
    run = tmp_path / "logs" / "plugins" / "profile" / "s"
    fallback = tmp_path / "cache" / "unsaved" / "s"
    result = TraceResult(
        "s",
        run,
        [
            _worker("a:1", OK, fallback / "a_1.xplane.pb"),
            _worker("b:2", FAILED, None),
        ],
    )
    assert saved_lines(result) == [
        f"{fallback}  (1 of 2 worker(s) saved, not in the log directory)"
    ]
    result.workers.append(_worker("c:3", OK, run / "c_3.xplane.pb"))
    assert saved_lines(result)[0] == f"{run}  (1 of 3 worker(s) saved)"


def _dead_pid() -> int:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_capture_removes_what_a_killed_save_left(tmp_path: Path) -> None:
    """A save killed mid-write (SIGKILL) left its .tmp file in a run directory that nothing
    writes to again; the next capture in the log directory removes it (and the directory it
    alone was in), never a live save's file nor a run's own files."""
    import stepscope
    from stepscope import tmpfiles

    root = tmp_path / "logs" / "plugins" / "profile"
    killed = root / "2026_01_01_00_00_00"
    killed.mkdir(parents=True)
    dead = tmpfiles.tmp_prefix().replace(f"-{os.getpid()}-", f"-{_dead_pid()}-")
    (killed / f"{dead}abc").write_bytes(b"x" * 1000)
    kept = root / "2026_01_01_00_00_01"
    kept.mkdir()
    (kept / "h.xplane.pb").write_bytes(b"profile")
    (kept / f"{dead}def").write_bytes(b"y")
    alive = kept / f"{tmpfiles.tmp_prefix()}ghi"  # this process's: a save under way
    alive.write_bytes(b"z")
    stepscope.start(str(tmp_path / "logs"), hostname="h")
    with stepscope.trace("work"):
        pass
    run = stepscope.stop()
    assert run is not None and (run / "h.xplane.pb").exists()
    assert not killed.exists()
    assert sorted(p.name for p in kept.iterdir()) == sorted(["h.xplane.pb", alive.name])


def _interrupting_build(monkeypatch: pytest.MonkeyPatch, presses: int) -> None:
    """Ctrl-C pressed ``presses`` times while the profile is built (it takes seconds for a
    big recording: a natural moment to press it)."""
    import signal

    from stepscope.capture import save as save_module

    real = save_module.build_profile

    def build(result: Any) -> Any:
        for _ in range(presses):
            signal.raise_signal(signal.SIGINT)
        return real(result)

    monkeypatch.setattr(save_module, "build_profile", build)


@pytest.fixture
def sigint_handler() -> Iterator[Callable[[Any], None]]:
    """``set(handler)``: SIGINT's handler for the test, put back after it. The Ctrl-C tests
    set Python's own (a KeyboardInterrupt), as an interactive program has it: a test run
    started where SIGINT is ignored (a background job of a shell without job control) gives
    every test SIG_IGN instead."""
    import signal

    before = signal.getsignal(signal.SIGINT)
    yield lambda handler: signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGINT, before)


def _record(logdir: Path) -> None:
    import stepscope

    stepscope.start(str(logdir), hostname="h")
    for step in range(3):
        with stepscope.step(step), stepscope.trace("work"):
            pass


def test_ctrl_c_during_stop_keeps_the_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sigint_handler: Callable[[Any], None]
) -> None:
    import signal

    import stepscope
    from stepscope.capture import session

    sigint_handler(signal.default_int_handler)
    _record(tmp_path)
    _interrupting_build(monkeypatch, 1)
    with pytest.raises(KeyboardInterrupt):  # delivered, once the profile is saved
        stepscope.stop()
    saved = list(tmp_path.rglob("h.xplane.pb"))
    assert len(saved) == 1 and saved[0].stat().st_size > 0
    assert not session.is_running()


def test_a_second_ctrl_c_abandons_the_save_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sigint_handler: Callable[[Any], None]
) -> None:
    import signal

    import stepscope
    from stepscope.capture import session

    sigint_handler(signal.default_int_handler)
    _record(tmp_path)
    _interrupting_build(monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt):
        stepscope.stop()
    assert not list(tmp_path.rglob("*.xplane.pb"))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    assert not session.is_running()


def test_a_program_ignoring_ctrl_c_saves_and_keeps_ignoring_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sigint_handler: Callable[[Any], None]
) -> None:
    """A program that ignores SIGINT (as a background job does) is not made to take it:
    Ctrl-C during the save changes nothing and the profile is saved."""
    import signal

    import stepscope

    sigint_handler(signal.SIG_IGN)
    _record(tmp_path)
    _interrupting_build(monkeypatch, 2)
    run = stepscope.stop()
    assert run is not None and (run / "h.xplane.pb").stat().st_size > 0
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_after_start_saves_no_duplicate_run(tmp_path: Path) -> None:
    """A child forked while recording (a DataLoader worker, multiprocessing) used to save a
    second run of the parent's recording at its own stop() or exit."""
    import stepscope
    from stepscope.capture import session

    _record(tmp_path)
    pid = os.fork()
    if pid == 0:  # the child: stop() and the exit hooks must save nothing
        code = 0
        try:
            with stepscope.trace("child work"):
                pass
            code = 3 if session.is_running() else 0
            code = code or (4 if stepscope.stop() is not None else 0)
            session.save_partial("the program exited")
        except BaseException:
            code = 5
        os._exit(code)
    _pid, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    run = stepscope.stop()
    assert run is not None
    assert [p.parent for p in tmp_path.rglob("*.xplane.pb")] == [run]  # one run: the parent's


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_from_a_recording_process_saves_nothing_and_never_waits(
    tmp_path: Path,
) -> None:
    """The flight recorder's saver thread does not exist in a forked child: a save there
    (an uncaught exception in a DataLoader worker) waited 60 s at exit for nothing."""
    import stepscope
    import stepscope.recorder

    stepscope.recorder.start(str(tmp_path), keep_steps=5)
    try:
        for step in range(3):
            with stepscope.step(step):
                pass
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                pending = stepscope.recorder.save("in the child")
                code = 0 if pending.done() and "forked" in pending.skipped else 3
            except BaseException:
                code = 4
            os._exit(code)
        _pid, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert stepscope.recorder.save("in the parent").result(30) is not None
    finally:
        stepscope.recorder.stop()
    assert len(list(tmp_path.rglob("*.recorder.json"))) == 1


@pytest.mark.parametrize("backend", ["c", "setprofile", "monitoring"])
def test_max_events_is_spent_only_on_saved_events(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Python tracer took budget for stepscope's own frames (an annotation's enter and
    exit, the steps loader), which the saver drops: max_events=200000 "reached" with 40,204
    events saved."""
    import sys

    import stepscope
    from stepscope.capture.python_tracer import c_backend, tracer
    from stepscope.model import open_host, open_run

    if backend == "c":
        c_on(monkeypatch, "_pytracer")
        assert c_backend.available()
    if backend == "monitoring" and sys.version_info < (3, 12):
        pytest.skip("sys.monitoring needs Python 3.12")
    monkeypatch.setattr(tracer, "_choose", lambda force_pure_python: backend)

    def user_function(x: int) -> int:
        return x + 1

    limit = 3000
    options = stepscope.ProfilerOptions(
        python_tracer_level=1, python_sampler_hz=0, max_events=limit
    )
    stepscope.start(str(tmp_path), options, hostname="h")
    for i in range(4000):
        with stepscope.trace("work"):
            user_function(i)
    run = stepscope.stop()
    profile = open_host(open_run(str(run)).hosts[0], use_cache=False)
    assert any("were dropped because max_events" in w for w in profile.warnings)
    # every event the budget admitted was saved (and the frames still open at stop, which
    # take no budget: this test's and pytest's)
    assert limit <= profile.n_events <= limit + 100
