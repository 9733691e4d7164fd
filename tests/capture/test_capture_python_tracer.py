"""python_tracer_level=1: every Python call on every thread, named $file:line function."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import pytest

import stepscope
from stepscope.capture.python_tracer import tracer as python_tracer
from tests.support.capture import events, load_run
from tests.support.clock import ManualAlarms
from tests.support.native import c_off, c_on

HERE = os.path.basename(__file__)


def leaf(n: int) -> int:
    return n + 1


def middle(n: int) -> int:
    return leaf(n) + leaf(n)


def raises() -> None:
    raise ValueError("unwinds")


def _line(func: object) -> int:
    return func.__code__.co_firstlineno  # type: ignore[attr-defined]


@pytest.fixture(params=["c", "pure"])
def implementation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    (c_off if request.param == "pure" else c_on)(monkeypatch, "_pytracer")
    return str(request.param)


def test_calls_on_every_thread_with_file_and_line(tmp_path: Path, implementation: str) -> None:
    stepscope.start(tmp_path, stepscope.ProfilerOptions(python_tracer_level=1))
    with stepscope.trace("annotated"):
        middle(1)
    with contextlib.suppress(ValueError):
        raises()
    thread = threading.Thread(target=middle, args=(2,), name="late-thread")
    thread.start()
    thread.join()
    profile = load_run(stepscope.stop())
    ev = events(profile)
    leaf_name = f"${HERE}:{_line(leaf)} leaf"
    middle_name = f"${HERE}:{_line(middle)} middle"
    main = threading.current_thread().name
    assert [e["line"] for e in ev if e["name"] == middle_name] == [main, "late-thread"]
    assert sum(e["name"] == leaf_name for e in ev) == 4
    assert any(e["name"] == f"${HERE}:{_line(raises)} raises" for e in ev)  # left by exception
    # Python events share the thread's line with annotations and nest inside them.
    annotated = next(e for e in ev if e["name"] == "annotated")
    first_middle = next(e for e in ev if e["name"] == middle_name)
    assert annotated["tid"] == first_middle["tid"]
    assert annotated["start_ns"] <= first_middle["start_ns"] <= first_middle["end_ns"]
    assert first_middle["end_ns"] <= annotated["end_ns"]
    # The caller's frames (this test) were open at start: recorded from start to stop.
    this_test = [e for e in ev if "test_calls_on_every_thread" in e["name"]]
    assert len(this_test) == 1 and this_test[0]["start_ns"] == 0
    # stepscope's own capture code is kept out.
    assert not any("annotations.py" in e["name"] or "session.py" in e["name"] for e in ev)
    # the program's functions are marked so, the standard library's not (decision 1033)
    own = {profile.event_name(e) for e in profile.stat_events("own_code").tolist()}
    assert {leaf_name, middle_name} <= own
    assert any("threading.py" in e["name"] for e in ev)
    assert not any("threading.py" in name for name in own)


def test_python_tracer_respects_max_events(tmp_path: Path, implementation: str) -> None:
    stepscope.start(tmp_path, stepscope.ProfilerOptions(python_tracer_level=1, max_events=50))
    for i in range(200):
        leaf(i)
    profile = load_run(stepscope.stop())
    host = profile.plane_by_name("/host:CPU")
    assert host is not None
    dropped = host.stats["dropped_events"]
    assert isinstance(dropped, int) and dropped >= 150
    # Kept: the 50 admitted calls, plus the frames still open at stop (closed at stop).
    assert 50 <= profile.n_events <= 50 + 40


def test_python_tracer_waits_for_the_delay(
    tmp_path: Path, implementation: str, alarms: ManualAlarms
) -> None:
    stepscope.start(tmp_path, stepscope.ProfilerOptions(python_tracer_level=1, delay_ms=100))
    middle(0)  # during the delay: not recorded
    alarms.fire()
    leaf(0)
    profile = load_run(stepscope.stop())
    names = [e["name"] for e in events(profile)]
    assert f"${HERE}:{_line(leaf)} leaf" in names
    assert f"${HERE}:{_line(middle)} middle" not in names


def test_implementation_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    from stepscope.capture.host_tracer import EventBudget

    c_off(monkeypatch, "_pytracer")
    pure = python_tracer.PythonTracer(EventBudget(10)).implementation
    assert pure in ("setprofile", "monitoring")
    c_on(monkeypatch, "_pytracer")
    default = python_tracer.PythonTracer(EventBudget(10)).implementation
    from stepscope.capture.python_tracer import c_backend as python_tracer_c

    assert default == ("c" if python_tracer_c.available() else pure)
