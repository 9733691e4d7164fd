"""trace() and step(): nesting, threads, exceptions, decorators, stats encoding, no-op cost."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import stepscope
from stepscope.capture import annotations as capture_annotations
from stepscope.errors import StepscopeError
from stepscope.model import load_profile
from tests.support.capture import events, load_run, named
from tests.support.fixtures import tf_xplane


def test_nested_spans_nest_in_time_on_one_line(tmp_path: Path) -> None:
    """The spans alone, whatever else the session recorded: the stack sampler reads the
    thread's CPU at each of its ticks, and a session that spans two of them has a "Thread
    CPU" line (a loaded machine stretched this one past 80 ms once: an extra 'cpu' event,
    decision 742). A 30 ms pause at 200 Hz spans several ticks every time."""
    stepscope.start(tmp_path, stepscope.ProfilerOptions(python_sampler_hz=200))
    with stepscope.trace("outer"):
        with stepscope.trace("middle"), stepscope.trace("inner"):
            pass
        time.sleep(0.03)
        with stepscope.trace("sibling"):
            pass
    profile = load_run(stepscope.stop())
    ev = {e["name"]: e for e in events(profile)}
    assert list(ev) == ["outer", "middle", "inner", "sibling"]  # sorted parents first
    assert len({e["tid"] for e in ev.values()}) == 1
    outer, middle, inner, sibling = (ev[n] for n in ("outer", "middle", "inner", "sibling"))
    assert outer["start_ns"] <= middle["start_ns"] <= inner["start_ns"]
    assert inner["end_ns"] <= middle["end_ns"] <= sibling["start_ns"] <= outer["end_ns"]
    assert profile.lines[0].name == threading.current_thread().name
    assert profile.lines[0].id == threading.get_native_id()


def test_threads_get_their_own_lines_including_threads_started_during_the_session(
    tmp_path: Path,
) -> None:
    barrier = threading.Barrier(3)

    def work(n: int) -> None:
        barrier.wait()
        with stepscope.trace("thread-work", n=n):
            pass

    stepscope.start(tmp_path)
    threads = [threading.Thread(target=work, args=(n,), name=f"worker-{n}") for n in range(3)]
    for thread in threads:
        thread.start()
    native_ids = set()
    for thread in threads:
        thread.join()
        native_ids.add(thread.native_id)
    profile = load_run(stepscope.stop())
    spans = named(profile, "thread-work")
    assert {e["line"] for e in spans} == {"worker-0", "worker-1", "worker-2"}
    assert {e["tid"] for e in spans} == native_ids
    assert sorted(e["stats"]["n"] for e in spans) == [0, 1, 2]


def test_an_exception_inside_a_span_still_closes_it(tmp_path: Path) -> None:
    stepscope.start(tmp_path)
    with pytest.raises(ValueError, match="inside"), stepscope.trace("failing"):
        raise ValueError("inside")
    with stepscope.trace("after"):
        pass
    profile = load_run(stepscope.stop())
    failing, after = named(profile, "failing")[0], named(profile, "after")[0]
    assert failing["end_ns"] <= after["start_ns"]  # closed, and not the parent of "after"


def test_inactive_trace_is_a_shared_noop_that_lets_exceptions_through() -> None:
    assert not capture_annotations.is_active()
    assert stepscope.trace("x") is stepscope.trace("x")
    with pytest.raises(KeyError), stepscope.trace("x"):
        raise KeyError("propagates")
    with stepscope.trace("y", k=1) as value:
        assert value == ""


def test_decorator_defined_while_inactive_records_calls_while_active(tmp_path: Path) -> None:
    @stepscope.trace("decorated", kind="fn")
    def add(a: int, b: int) -> int:
        return a + b

    assert add(1, 2) == 3  # nothing records yet
    stepscope.start(tmp_path)
    assert add(2, 3) == 5
    profile = load_run(stepscope.stop())
    (event,) = named(profile, "decorated")
    assert event["stats"] == {"kind": "fn"}
    assert add.__name__ == "add"


def test_metadata_values_are_encoded_as_tensorflow_does(tmp_path: Path) -> None:
    stepscope.start(tmp_path)
    with stepscope.trace("meta", count=3, big=2**63 + 1, ratio=0.5, label="abc", flag=True):
        pass
    with stepscope.trace("encoded#k=7,s=text#"):
        pass
    profile = load_run(stepscope.stop())
    (meta,) = named(profile, "meta")
    assert meta["stats"] == {
        "count": 3,
        "big": 2**63 + 1,
        "ratio": 0.5,
        "label": "abc",
        "flag": "True",
    }
    (encoded,) = named(profile, "encoded")
    assert encoded["stats"] == {"k": 7, "s": "text"}


def test_step_is_encoded_exactly_like_tensorflows_trace(tmp_path: Path) -> None:
    stepscope.start(tmp_path)
    with stepscope.step(7):
        pass
    with stepscope.step(8, name="test"):
        pass
    ours = load_run(stepscope.stop())
    tf = load_profile(tf_xplane("ctl"))
    tf_train = named(tf, "train")[0]
    our_train = named(ours, "train")[0]
    assert list(our_train["stats"]) == list(tf_train["stats"]) == ["step_num", "_r"]
    assert our_train["stats"] == {"step_num": 7, "_r": 1}
    assert named(ours, "test")[0]["stats"] == {"step_num": 8, "_r": 1}
    # Same XStat oneof (int64) as TensorFlow for both stats, and no display name.
    key_kinds = {}
    for profile in (tf, ours):
        i = next(j for j in range(profile.n_events) if profile.event_name(j) == "train")
        rows = range(int(profile.stat_start[i]), int(profile.stat_start[i + 1]))
        key_kinds[id(profile)] = [
            (profile.strings[int(profile.stats.key[r])], int(profile.stats.kind[r])) for r in rows
        ]
    assert key_kinds[id(tf)] == key_kinds[id(ours)]
    with pytest.raises(StepscopeError, match="step_num must be an int"):
        stepscope.step("3")  # type: ignore[arg-type]


def test_max_events_overflow_is_counted_reported_and_saved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # no stack sampler: its runs take from the same budget, at moments the test cannot know
    stepscope.start(tmp_path, stepscope.ProfilerOptions(max_events=10, python_sampler_hz=0))

    def burst() -> None:
        for _ in range(20):
            with stepscope.trace("e"):
                pass

    threads = [threading.Thread(target=burst) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    burst()
    profile = load_run(stepscope.stop())
    assert profile.n_events == 10
    host = profile.plane_by_name("/host:CPU")
    assert host is not None and host.stats["dropped_events"] == 70
    assert any("70 events were dropped" in w and "max_events=10" in w for w in profile.warnings)
    err = capsys.readouterr().err
    assert "max_events=10 reached" in err  # told when it happens...
    assert "70 events dropped" in err  # ...and at stop


def test_span_open_at_stop_is_not_recorded_and_does_not_fail(tmp_path: Path) -> None:
    stepscope.start(tmp_path)
    span = stepscope.trace("open")
    span.__enter__()
    profile = load_run(stepscope.stop())
    span.__exit__(None, None, None)
    assert named(profile, "open") == []
