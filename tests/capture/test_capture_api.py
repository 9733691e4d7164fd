"""Session API: start/stop/profile, misuse errors, saved layout and Task Environment."""

from __future__ import annotations

import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import stepscope
from stepscope.capture import session
from stepscope.capture.options import InvalidOptionsError
from stepscope.errors import StepscopeError
from stepscope.vocab.profiler import STARTED_ON_THREAD_STAT
from stepscope.xspace import load_xspace
from stepscope.xspace.proto.profiler_service_pb2 import ProfileOptions
from tests.support.capture import events, load_run, named
from tests.support.clock import ManualAlarms
from tests.support.recorder import FakeClock


def test_start_stop_writes_tensorflow_layout(tmp_path: Path) -> None:
    stepscope.start(tmp_path, hostname="worker:7")
    with stepscope.trace("work"):
        pass
    run_dir = stepscope.stop()
    assert run_dir is not None
    assert run_dir.parent == tmp_path / "plugins" / "profile"
    assert len(run_dir.name) == len("2024_01_01_00_00_00")
    assert [p.name for p in run_dir.iterdir()] == ["worker_7.xplane.pb"]
    space = load_xspace(run_dir / "worker_7.xplane.pb")
    assert list(space.hostnames) == ["worker:7"]
    assert [plane.name for plane in space.planes] == ["/host:CPU", "Task Environment"]


def test_task_environment_plane_matches_tensorflow(tmp_path: Path) -> None:
    before = time.time_ns()
    stepscope.start(tmp_path, stepscope.ProfilerOptions(host_tracer_level=3))
    run_dir = stepscope.stop()
    after = time.time_ns()
    space = load_xspace(next(run_dir.glob("*.xplane.pb")))  # type: ignore[union-attr]
    env = next(p for p in space.planes if p.name == "Task Environment")
    names = {k: m.name for k, m in env.stat_metadata.items()}
    stats = {names[s.metadata_id]: s for s in env.stats}
    assert set(stats) == {"profile_start_time", "profile_stop_time", "profile_options"}
    start = stats["profile_start_time"].uint64_value  # uint64, as TensorFlow writes them
    stop = stats["profile_stop_time"].uint64_value
    assert before <= start <= stop <= after
    options = ProfileOptions.FromString(stats["profile_options"].bytes_value)
    assert (options.host_tracer_level, options.device_tracer_level) == (3, 1)
    assert options.python_tracer_level == 0 and options.version == 1
    assert options.repository_path == str(tmp_path)


def test_line_timestamps_are_relative_to_profile_start(tmp_path: Path, clock: FakeClock) -> None:
    """Times on the fake monotonic clock the events are stamped with: the event begins 2 ms
    of that clock after the start, nothing slept."""
    stepscope.start(tmp_path)
    clock.advance(2_000_000)
    with stepscope.trace("late"):
        clock.advance(5_000)
    profile = load_run(stepscope.stop())
    (late,) = named(profile, "late")
    assert (late["start_ns"], late["end_ns"]) == (2_000_000, 2_005_000)  # since profile start


def test_start_twice_and_stop_without_start_raise_specific_errors(tmp_path: Path) -> None:
    with pytest.raises(stepscope.ProfilerNotRunningError, match="no profiling session"):
        stepscope.stop()
    stepscope.start(tmp_path)
    with pytest.raises(stepscope.ProfilerAlreadyRunningError, match="already running"):
        stepscope.start(tmp_path)
    assert stepscope.stop(save=False) is None
    with pytest.raises(stepscope.ProfilerNotRunningError):
        stepscope.stop()
    assert issubclass(stepscope.ProfilerAlreadyRunningError, StepscopeError)
    assert issubclass(stepscope.ProfilerNotRunningError, StepscopeError)


def test_profile_context_manager_saves_even_when_the_block_raises(tmp_path: Path) -> None:
    ctx = stepscope.profile(tmp_path)
    with pytest.raises(RuntimeError), ctx:
        with stepscope.trace("before-error"):
            pass
        raise RuntimeError("boom")
    assert not session.is_running()
    assert named(load_run(ctx.run_dir), "before-error")


def test_logdir_url_and_bad_options_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(StepscopeError, match="URL"):
        stepscope.start("gs://bucket/logs")
    with pytest.raises(InvalidOptionsError, match="python_tracer_level"):
        stepscope.ProfilerOptions(python_tracer_level=2)
    with pytest.raises(InvalidOptionsError, match="max_events"):
        stepscope.ProfilerOptions(max_events=0)
    with pytest.raises(InvalidOptionsError, match="duration_ms"):
        stepscope.ProfilerOptions(duration_ms=-5)
    with pytest.raises(InvalidOptionsError, match="delay_ms"):
        stepscope.ProfilerOptions(delay_ms=1.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionsError, match="ProfilerOptions"):
        stepscope.start(tmp_path, {"host_tracer_level": 2})  # type: ignore[arg-type]
    assert not session.is_running()


def test_options_are_an_immutable_record() -> None:
    options = stepscope.ProfilerOptions()
    assert (options.host_tracer_level, options.python_tracer_level) == (2, 0)
    assert (options.device_tracer_level, options.delay_ms, options.duration_ms) == (1, 0, None)
    changed = options.replace(python_tracer_level=1)
    assert changed.python_tracer_level == 1 and changed != options
    assert pickle.loads(pickle.dumps(changed)) == changed
    assert "python_tracer_level=1" in repr(changed)
    with pytest.raises(AttributeError):
        options.max_events = 5


def test_host_tracer_level_zero_records_no_annotations(tmp_path: Path) -> None:
    stepscope.start(tmp_path, stepscope.ProfilerOptions(host_tracer_level=0))
    with stepscope.trace("invisible"):
        pass
    assert events(load_run(stepscope.stop())) == []


def test_delay_ms_postpones_recording(tmp_path: Path, alarms: ManualAlarms) -> None:
    stepscope.start(tmp_path, stepscope.ProfilerOptions(delay_ms=150))
    with stepscope.trace("during-delay"):
        pass
    assert alarms.pending() == [0.15]  # recording is set to begin 150 ms after start
    alarms.fire()
    with stepscope.trace("after-delay"):
        pass
    profile = load_run(stepscope.stop())
    assert [e["name"] for e in events(profile)] == ["after-delay"]


def test_stop_during_delay_saves_an_empty_profile_with_a_warning(tmp_path: Path) -> None:
    stepscope.start(tmp_path, stepscope.ProfilerOptions(delay_ms=10_000))
    profile = load_run(stepscope.stop())
    assert profile.n_events == 0
    assert any("delay_ms" in w for w in profile.warnings)


def test_duration_ms_stops_and_saves_by_itself(tmp_path: Path, alarms: ManualAlarms) -> None:
    stepscope.start(tmp_path, stepscope.ProfilerOptions(delay_ms=50, duration_ms=150))
    with stepscope.trace("tick"):  # in the delay: not recorded
        pass
    assert alarms.fire() == 0.05  # the delay ends: recording begins ...
    assert alarms.pending() == [0.15]  # ... and is set to end 150 ms later
    with stepscope.trace("tick"):
        pass
    alarms.fire()  # duration_ms is over
    assert not session.is_running()
    with stepscope.trace("tick"):  # after the end: not recorded
        pass
    saved = list((tmp_path / "plugins" / "profile").glob("*/*.xplane.pb"))
    assert len(saved) == 1  # saved before anyone called stop()
    run_dir = stepscope.stop()  # returns the auto-saved run instead of raising
    assert run_dir == saved[0].parent
    assert len(named(load_run(run_dir), "tick")) == 1
    with pytest.raises(stepscope.ProfilerNotRunningError):
        stepscope.stop()
    stepscope.start(tmp_path)  # a new session may begin
    stepscope.stop(save=False)


def test_failed_save_says_why_and_keeps_the_data(tmp_path: Path) -> None:
    blocker = tmp_path / "plugins"
    blocker.write_text("a file where the profile directory should go")
    stepscope.start(tmp_path)
    with stepscope.trace("precious"):
        pass
    with pytest.raises(StepscopeError, match="could not save the profile to") as info:
        stepscope.stop()
    error = info.value
    assert str(tmp_path) in str(error)
    saved = error.save_to(tmp_path / "elsewhere.xplane.pb")  # type: ignore[attr-defined]
    assert saved.exists()
    assert not session.is_running()


def test_two_runs_in_the_same_second_do_not_overwrite(tmp_path: Path) -> None:
    runs = []
    for _ in range(2):
        stepscope.start(tmp_path, hostname="h")
        runs.append(stepscope.stop())
    assert runs[0] != runs[1]
    assert all((run / "h.xplane.pb").exists() for run in runs if run is not None)


def test_stop_from_another_thread(tmp_path: Path) -> None:
    stepscope.start(tmp_path)
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(stepscope.stop()))
    thread.start()
    thread.join()
    assert isinstance(result[0], Path)


@pytest.mark.parametrize("name", ["server", "client", "data", "keras"])
def test_public_submodules_are_reached_from_import_stepscope(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if only `import stepscope` had run: the sub-module is not yet an attribute.
    monkeypatch.delattr(stepscope, name, raising=False)
    monkeypatch.delitem(sys.modules, f"stepscope.{name}", raising=False)
    module = getattr(stepscope, name)
    assert module.__name__ == f"stepscope.{name}"
    assert name in dir(stepscope) and name in stepscope.__all__
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        stepscope.nothing  # noqa: B018


class _FixedWallClock(session.Clock):
    """The real monotonic clock (events are stamped with it) and a wall clock that starts at a
    known instant: the profile's dates and run name become exact."""

    def __init__(self, wall0_ns: int) -> None:
        self.wall0_ns, self.perf0_ns = wall0_ns, time.perf_counter_ns()

    def wall_ns(self) -> int:
        return self.wall0_ns + (time.perf_counter_ns() - self.perf0_ns)


def test_the_session_reads_its_clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wall0 = 981_173_106 * 10**9  # 2001-02-03 04:05:06 UTC
    monkeypatch.setattr(session, "CLOCK", _FixedWallClock(wall0))
    stepscope.start(tmp_path)
    with stepscope.trace("work"):
        pass
    run_dir = stepscope.stop()
    assert run_dir is not None
    assert run_dir.name == time.strftime("%Y_%m_%d_%H_%M_%S", time.localtime(wall0 / 1e9))
    space = load_xspace(next(run_dir.glob("*.xplane.pb")))
    env = next(p for p in space.planes if p.name == "Task Environment")
    names = {k: m.name for k, m in env.stat_metadata.items()}
    stats = {names[s.metadata_id]: s.uint64_value for s in env.stats if s.uint64_value}
    assert 0 <= stats["profile_start_time"] - wall0 < stats["profile_stop_time"] - wall0
    assert named(load_run(run_dir), "work")  # events stamped by the same monotonic clock


def test_capture_api_is_bound_on_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    from stepscope import capture

    for name in ("trace", "start", "step"):  # as if only `import stepscope` had run
        monkeypatch.delitem(stepscope.__dict__, name, raising=False)
    assert "trace" not in vars(stepscope)
    assert stepscope.trace is capture.trace
    assert vars(stepscope)["start"] is capture.start  # every name bound by the first use
    assert {"trace", "start", "wait"} <= set(dir(stepscope))


@pytest.mark.integration
def test_import_stepscope_does_not_import_capture() -> None:
    code = "import sys, stepscope; print('stepscope.capture' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_profile_names_the_thread_whose_start_began_recording(
    tmp_path: Path, alarms: ManualAlarms
) -> None:
    """A loop on the thread calling `start()` was not cut by the capture: inferred steps
    start where its iterations begin (decision 360). A delayed start begins anywhere."""
    stepscope.start(tmp_path)
    with stepscope.trace("work"):
        pass
    profile = load_run(stepscope.stop())
    assert profile.planes[0].stats[STARTED_ON_THREAD_STAT] == threading.get_native_id()
    stepscope.start(tmp_path, stepscope.ProfilerOptions(delay_ms=50))
    alarms.fire()
    with stepscope.trace("work"):
        pass
    profile = load_run(stepscope.stop())
    assert STARTED_ON_THREAD_STAT not in profile.planes[0].stats


def test_a_capture_records_its_machine_clock(tmp_path: Path) -> None:
    """The host plane names this machine and boot (decision 940); the analysis reads it with
    the capture's start, the time zero of its times, so ranks of one machine share a clock."""
    from stepscope.capture.save import machine_clock
    from stepscope.model.from_xspace import load_profile
    from stepscope.stats.collective_calls import recorded_clock
    from stepscope.vocab.profiler import CLOCK_STAT

    stepscope.start(tmp_path)
    with stepscope.trace("work"):
        pass
    run_dir = stepscope.stop()
    assert run_dir is not None
    profile = load_profile(next(run_dir.glob("*.xplane.pb")))
    host = next(p for p in profile.planes if p.name == "/host:CPU")
    env = next(p for p in profile.planes if p.name == "Task Environment")
    with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:  # Linux
        boot = f.read().strip()
    assert machine_clock().endswith(" boot " + boot)
    assert host.stats[CLOCK_STAT] == machine_clock()
    assert recorded_clock(profile) == (machine_clock(), env.stats["profile_start_time"])
