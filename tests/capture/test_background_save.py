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
