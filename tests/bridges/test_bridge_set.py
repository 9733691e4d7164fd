"""The collector interface in a real session, with fake bridges: merge, clocks, failures."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

import stepscope
from stepscope.capture import bridges
from stepscope.capture.bridges import Bridge, BridgeError, BridgeOutput, bridges_for
from stepscope.capture.bridges.base import INSUFFICIENT_PRIVILEGES, diagnose
from stepscope.errors import StepscopeError
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.merge import ClockMap
from stepscope.xspace.wire import decode_columns
from tests.support.capture import events, load_run, named

SKEW_NS = 6_500  # the fake framework's clock runs 6.5 us ahead of perf_counter


class FakeFramework(Bridge):
    """Records an op per `op()` call on its own clock, and a GPU kernel for each."""

    name = "fake"
    title = "Fake"
    instance: FakeFramework | None = None
    columns = False  # give raw columns (as the PyTorch bridge does) instead of an XSpace

    def __init__(self, options: stepscope.ProfilerOptions) -> None:
        super().__init__(options)
        self.ops: list[tuple[int, int, int]] = []
        self.phases: list[str] = []
        FakeFramework.instance = self

    def prepare(self) -> None:
        self.phases.append("prepare")

    def start(self) -> None:
        self.phases.append("start")

    def stop(self) -> None:
        self.phases.append("stop")

    def op(self) -> None:
        start = time.perf_counter_ns()
        time.sleep(0.002)
        self.ops.append(
            (threading.get_native_id(), start + SKEW_NS, time.perf_counter_ns() - start)
        )

    def collect(self) -> BridgeOutput:
        builder = XSpaceBuilder(hostname="ignored")
        host, gpu = builder.plane("/host:CPU"), builder.plane("/device:GPU:0")
        for n, (tid, start, dur) in enumerate(self.ops):
            host.line(tid, "python").event("fake::op", start, dur, {"correlation_id": n})
            gpu.line(7, "Stream #7").event("kernel", start + 100_000, 50_000, {"correlation_id": n})
        builder.plane("Task Environment").stats["framework"] = "fake"
        space = builder.build()
        if self.columns:
            return BridgeOutput(decode_columns(space.SerializeToString()), ClockMap(-SKEW_NS))
        return BridgeOutput(space, ClockMap(-SKEW_NS), warnings=["converted"])


class FakeColumnar(FakeFramework):
    name = "fake_columns"
    columns = True


@pytest.mark.parametrize("kind", [FakeFramework, FakeColumnar])
def test_bridge_events_merge_on_stepscope_clock(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    kind: type[FakeFramework],
) -> None:
    # Only the fake framework: earlier tests may have imported the real ones.
    for module in ("torch", "tensorflow", "jax"):
        monkeypatch.setitem(sys.modules, module, None)
    bridges.register(kind)
    stepscope.start(tmp_path)
    fake = FakeFramework.instance
    assert fake is not None and fake.phases == ["prepare", "start"]
    for s in range(3):
        with stepscope.step(s):
            time.sleep(0.001)
            fake.op()
    profile = load_run(stepscope.stop())
    assert fake.phases[-1] == "stop"
    steps, ops = named(profile, "train"), named(profile, "fake::op")
    assert len(ops) == 3 and len(named(profile, "kernel")) == 3
    for step, op in zip(steps, ops, strict=True):
        assert op["tid"] == step["tid"]  # one line per thread
        assert step["start_ns"] < op["start_ns"] and op["end_ns"] < step["end_ns"]
    assert {p.name for p in profile.planes} >= {"/host:CPU", "/device:GPU:0", "Task Environment"}
    assert profile.planes[-1].name == "Task Environment"
    assert profile.planes[-1].stats["framework"] == "fake"
    if not kind.columns:
        assert "stepscope: Fake bridge: converted" in capsys.readouterr().err


def test_a_failing_columnar_merge_keeps_stepscopes_own_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from stepscope.xspace import merge_columns

    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("bad columns")

    for module in ("torch", "tensorflow", "jax"):
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setattr(merge_columns, "merge_columns", broken)
    bridges.register(FakeColumnar)
    stepscope.start(tmp_path)
    fake = FakeFramework.instance
    assert fake is not None
    with stepscope.step(0):
        fake.op()
    run_dir = stepscope.stop()
    profile = load_run(run_dir)
    assert len(named(profile, "train")) == 1 and not named(profile, "fake::op")
    assert "framework bridge failed while merging its trace" in capsys.readouterr().err


@pytest.mark.parametrize("phase", ["prepare", "start", "stop", "collect"])
def test_a_failing_bridge_keeps_the_rest_of_the_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], phase: str
) -> None:
    class Broken(Bridge):
        name, title = "broken", "Broken"

    def fail(self: Bridge) -> None:
        raise RuntimeError(f"boom in {phase}")

    setattr(Broken, phase, fail)
    bridges.register(Broken)
    stepscope.start(tmp_path)
    with stepscope.step(0):
        time.sleep(0.001)
    run_dir = stepscope.stop()
    profile = load_run(run_dir)
    assert len(named(profile, "train")) == 1
    err = capsys.readouterr().err
    assert "stepscope: Broken bridge failed while" in err and f"boom in {phase}" in err
    from stepscope.xspace.formats import load_xspace

    space = load_xspace(next(Path(run_dir).glob("*.xplane.pb")))
    assert any(
        f"boom in {phase}" in w and "rest of the profile is kept" in w for w in space.warnings
    )


def test_cupti_privileges_error_says_how_to_fix_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    class NoCounters(Bridge):
        name, title = "nocounters", "GPU"

        def start(self) -> None:
            raise RuntimeError("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (35) in cuptiActivityEnable")

    bridges.register(NoCounters)
    stepscope.start(tmp_path)
    with stepscope.step(0):
        pass
    profile = load_run(stepscope.stop())
    assert len(named(profile, "train")) == 1
    err = capsys.readouterr().err
    assert "NVreg_RestrictProfilingToAdminUsers=0" in err and "SYS_ADMIN" in err


def test_diagnose_knows_cupti_failures() -> None:
    assert diagnose(["E1122 cupti_tracer.cc] CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"]) == [
        INSUFFICIENT_PRIVILEGES
    ]
    missing = diagnose(["libcupti.so.12: cannot open shared object file: No such file"])
    assert len(missing) == 1 and "CUPTI" in missing[0] and "LD_LIBRARY_PATH" in missing[0]
    assert diagnose(["all good"]) == []


def test_a_requested_framework_that_is_missing_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "jax", None)  # import jax -> ImportError
    bridges.configure(["jax"])
    stepscope.start(tmp_path)
    with stepscope.step(0):
        pass
    profile = load_run(stepscope.stop())
    assert len(named(profile, "train")) == 1
    err = capsys.readouterr().err
    assert "JAX bridge: not run: it was asked for but jax cannot be imported" in err
    assert "pip install jax" in err


def test_auto_mode_runs_only_imported_frameworks(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("torch", "tensorflow", "jax"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    assert len(bridges_for(stepscope.ProfilerOptions())) == 0
    for module in ("torch", "tensorflow", "jax"):
        assert module not in sys.modules  # never imported just because it is installed


def test_a_framework_imported_after_the_start_is_said_at_the_stop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script calling stepscope.start() before `import torch` read "unknown, CPU" with no
    op and no step, and nothing said why (decision 621)."""
    for module in ("torch", "tensorflow", "jax"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    stepscope.start(tmp_path)
    monkeypatch.setitem(sys.modules, "jax", type(sys)("jax"))  # the program imports it now
    profile = load_run(stepscope.stop())
    said = (
        "JAX was imported after stepscope.start(): its ops were not recorded (a framework's "
        "bridge starts with the session); import jax before stepscope.start(), or set "
        "STEPSCOPE_BRIDGES=jax to have the session import it"
    )
    assert said in capsys.readouterr().err
    assert any(said in line for line in profile.warnings)
    assert not any("PyTorch" in line or "TensorFlow" in line for line in profile.warnings)
    # one imported before the start is not said (it ran, or did not want these options)
    stepscope.start(tmp_path / "again")
    stepscope.stop()
    assert "imported after" not in capsys.readouterr().err


def test_bridge_choice_from_configure_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert bridges.requested() == "auto"
    monkeypatch.setenv(bridges.ENV_VAR, "Torch, tf")
    assert bridges.requested() == ("pytorch", "tensorflow")
    monkeypatch.setenv(bridges.ENV_VAR, "none")
    bridges.register(FakeFramework)
    assert len(bridges_for(stepscope.ProfilerOptions())) == 0
    bridges.configure("fake")
    assert bridges.requested() == ("fake",)
    with pytest.raises(StepscopeError, match="unknown framework bridge 'mxnet'"):
        bridges.configure(["mxnet"])
    monkeypatch.setattr(bridges, "_frameworks", None)
    monkeypatch.setenv(bridges.ENV_VAR, "mxnet")
    chosen = bridges_for(stepscope.ProfilerOptions())
    assert len(chosen) == 0 and "unknown framework bridge" in chosen.warnings[0]


def test_stop_without_saving_discards_bridges(tmp_path: Path) -> None:
    closed = []

    class Tidy(Bridge):
        name, title = "tidy", "Tidy"

        def close(self) -> None:
            closed.append(True)

    bridges.register(Tidy)
    stepscope.start(tmp_path)
    assert stepscope.stop(save=False) is None
    assert closed == [True]


def test_bridge_error_messages_are_shown_as_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    class Declines(Bridge):
        name, title = "declines", "Declines"

        def prepare(self) -> None:
            raise BridgeError("not run: because; do this instead")

    bridges.register(Declines)
    stepscope.start(tmp_path)
    profile = load_run(stepscope.stop())
    assert events(profile) == []
    assert (
        "stepscope: Declines bridge: not run: because; do this instead" in capsys.readouterr().err
    )


@pytest.mark.integration
def test_xprof_reads_a_profile_with_merged_framework_planes(tmp_path: Path) -> None:
    raw_to_tool_data = pytest.importorskip("xprof.convert.raw_to_tool_data")
    import json

    bridges.register(FakeFramework)
    stepscope.start(tmp_path)
    fake = FakeFramework.instance
    assert fake is not None
    for s in range(4):
        with stepscope.step(s):
            fake.op()
    run_dir = stepscope.stop()
    assert run_dir is not None
    paths = [str(p) for p in Path(run_dir).glob("*.xplane.pb")]
    data, _ = raw_to_tool_data.xspace_to_tool_data(
        paths, "overview_page", {"use_saved_result": False}
    )
    labels = [row["c"][0]["v"] for row in json.loads(data)[1]["rows"]]
    # With a device plane XProf labels steps by number, from the kernels each step launched.
    assert [label.split()[-1] for label in labels] == ["0", "1", "2", "3"]


def test_torch_records_shapes_by_default_only_when_cuda_is_traced() -> None:
    from stepscope.capture.bridges.torch_bridge import TorchSettings, record_shapes_for

    assert record_shapes_for(TorchSettings(), cuda=True)
    assert not record_shapes_for(TorchSettings(), cuda=False)
    assert record_shapes_for(TorchSettings(record_shapes=True), cuda=False)
    assert not record_shapes_for(TorchSettings(record_shapes=False), cuda=True)


def test_torch_records_allocations_by_default_only_when_cuda_is_traced(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from stepscope.capture.bridges import torch_bridge
    from stepscope.capture.bridges.torch_bridge import (
        PROFILE_MEMORY_ENV,
        TorchSettings,
        profile_memory_for,
    )

    monkeypatch.delenv(PROFILE_MEMORY_ENV, raising=False)
    monkeypatch.setattr(torch_bridge, "_said", set())
    assert profile_memory_for(TorchSettings(), cuda=True)
    assert not profile_memory_for(TorchSettings(), cuda=False)
    assert profile_memory_for(TorchSettings(profile_memory=True), cuda=False)
    assert not profile_memory_for(TorchSettings(profile_memory=False), cuda=True)
    # the variable decides where the settings leave it open, and only there
    for on in ("1", "on", " TRUE ", "yes"):
        monkeypatch.setenv(PROFILE_MEMORY_ENV, on)
        assert profile_memory_for(TorchSettings(), cuda=False)
        assert not profile_memory_for(TorchSettings(profile_memory=False), cuda=False)
    for off in ("0", "off", "False", "no"):
        monkeypatch.setenv(PROFILE_MEMORY_ENV, off)
        assert not profile_memory_for(TorchSettings(), cuda=True)
        assert profile_memory_for(TorchSettings(profile_memory=True), cuda=True)
    monkeypatch.setenv(PROFILE_MEMORY_ENV, "sometimes")
    with caplog.at_level("WARNING", logger=torch_bridge.logger.name):
        assert profile_memory_for(TorchSettings(), cuda=True)
        assert not profile_memory_for(TorchSettings(), cuda=False)
    said = [r.getMessage() for r in caplog.records if PROFILE_MEMORY_ENV in r.getMessage()]
    assert len(said) == 1 and "'sometimes'" in said[0]  # said once, the value named
