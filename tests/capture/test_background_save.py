"""`stepscope.stop(wait=False)`: the profile is converted and written off the calling thread."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.capture import save as save_module
from stepscope.capture import session
from stepscope.errors import StepscopeError
from tests.support.capture import load_run, named
from tests.support.scripts import run_script


def _blocked_save(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[str]]:
    """Make the save wait for an event; records the thread that builds the profile."""
    release = threading.Event()
    threads: list[str] = []
    real = save_module.build_profile

    def build(result: Any) -> Any:
        threads.append(threading.current_thread().name)
        assert release.wait(30)
        return real(result)

    monkeypatch.setattr(save_module, "build_profile", build)
    return release, threads


def test_stop_returns_before_the_save_and_wait_gives_the_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release, threads = _blocked_save(monkeypatch)
    stepscope.start(tmp_path, hostname="h")
    with stepscope.trace("work"):
        pass
    run_dir = stepscope.stop(wait=False)
    assert run_dir is not None
    assert not (run_dir / "h.xplane.pb").exists()  # still being saved: stop did not wait
    assert not session.is_running()
    release.set()
    assert stepscope.wait() == run_dir
    assert threads == ["stepscope-save"]
    assert len(named(load_run(run_dir), "work")) == 1


def test_next_start_waits_for_the_previous_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release, _ = _blocked_save(monkeypatch)
    stepscope.start(tmp_path, hostname="h")
    first = stepscope.stop(wait=False)
    threading.Timer(0.2, release.set).start()
    stepscope.start(tmp_path, hostname="h")  # returns once the first save is written
    assert first is not None and (first / "h.xplane.pb").exists()
    second = stepscope.stop()
    assert second != first


def test_a_failed_background_save_is_raised_by_wait(tmp_path: Path) -> None:
    blocker = tmp_path / "plugins"
    blocker.write_text("a file where the profile directory should go")
    stepscope.start(tmp_path)
    with stepscope.trace("precious"):
        pass
    stepscope.stop(wait=False)
    with pytest.raises(StepscopeError, match="could not save the profile to") as info:
        stepscope.wait()
    saved = info.value.save_to(tmp_path / "elsewhere.xplane.pb")  # type: ignore[attr-defined]
    assert saved.exists()
    assert stepscope.wait() is not None  # the error is raised once


# A fresh interpreter: which modules a save thread imports first, after the capture started
OFF_MAIN_IMPORTS_SCRIPT = """
import glob, json, sys, threading, time

import stepscope
from stepscope.capture.session import is_running

late = []


def hook(event, args):
    if event == "import" and threading.current_thread() is not threading.main_thread():
        if args[0] not in sys.modules:
            late.append(args[0])


def loop():
    for _ in stepscope.steps(range(4)):
        sum(range(10000))


stepscope.start(sys.argv[1], hostname="bg")
sys.addaudithook(hook)
loop()
stepscope.stop(wait=False)
saved = [str(stepscope.wait())]
stepscope.start(sys.argv[1], stepscope.ProfilerOptions(duration_ms=50), hostname="timed")
loop()
while is_running() or not glob.glob(sys.argv[1] + "/plugins/profile/*/timed.xplane.pb"):
    time.sleep(0.01)  # the timer's thread saves
saved.append(str(stepscope.stop()))
print(json.dumps({"late": sorted(set(late)), "saved": saved}))
"""


@pytest.mark.integration
def test_saves_off_the_calling_thread_import_nothing_the_training_thread_may_import(
    tmp_path: Path,
) -> None:
    """`stop(wait=False)` and the end of ``duration_ms`` save on threads of their own while
    the training thread goes on: the modules they import were imported on that thread while
    it went on importing its own (Python 3.11's import locks can raise _DeadlockError,
    decision 432). `stepscope.start` imports them first."""
    out = run_script(OFF_MAIN_IMPORTS_SCRIPT, str(tmp_path))
    assert all(s != "None" for s in out["saved"]), out
    assert out["late"] == [], out["late"]


# A fresh interpreter, torch imported when installed (its bridge runs): what `start` imports,
# and when the save's modules come in
START_IMPORTS_SCRIPT = """
import glob, json, sys, time

try:
    import torch  # noqa: F401
except ImportError:
    pass
import stepscope
from stepscope.capture import session

stepscope.start(sys.argv[1], hostname="quick")
after_start = sorted(
    m for m in ("stepscope.capture.save", "google.protobuf") if m in sys.modules
)
imported_at = []


def hook(event, args):
    if event == "import" and args[0] == "stepscope.capture.save" and not imported_at:
        imported_at.append(time.perf_counter_ns())


sys.addaudithook(hook)
for _ in stepscope.steps(range(3)):
    sum(range(1000))
stepscope.stop()
from stepscope.xspace.formats import load_xspace
from stepscope.xspace.merge import env_stats

(saved,) = glob.glob(sys.argv[1] + "/plugins/profile/*/quick.*pb")  # deferred with torch
env = env_stats(load_xspace(saved))
recorded = int(env["profile_stop_time"]) - int(env["profile_start_time"])
stop_perf = session._last.start_perf_ns + recorded
print(json.dumps({"after_start": after_start, "imported_at": imported_at, "stop": stop_perf}))
"""


@pytest.mark.integration
def test_start_leaves_the_save_to_stop_which_imports_it_after_the_recording(
    tmp_path: Path,
) -> None:
    """A capture without ``duration_ms`` saves on the thread calling `stop` (or after it, once
    `stop(wait=False)` imported the save path): `start` does not wait for the save's modules
    nor, with torch's bridge, for protobuf (60-300 ms, decision 1080), and `stop` imports them
    once the recording has ended, not inside it."""
    out = run_script(START_IMPORTS_SCRIPT, str(tmp_path))
    assert out["after_start"] == [], out
    assert len(out["imported_at"]) == 1, out
    assert out["imported_at"][0] > out["stop"], out
