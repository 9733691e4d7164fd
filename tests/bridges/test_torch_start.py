"""How the PyTorch bridge starts torch's profiler (decision 455): prepare_trace's work done
with torch's lower-level profiler, so that ``torch._inductor`` is not imported, and torch's
own start where that cannot be done. Stand-ins for torch's two profiler classes (no torch
needed); the real profiler's events on both paths are checked in test_torch_bridge.py."""

from __future__ import annotations

import logging
import sys
import types
from types import SimpleNamespace
from typing import Any

import pytest

from stepscope.capture.bridges import torch_bridge
from stepscope.capture.bridges.torch_bridge import start_profiler

LOGGER = "stepscope.capture.bridges.torch_bridge"


class Lower:
    """``torch.autograd.profiler.profile`` of torch 2.13, as far as the bridge uses it."""

    def __init__(
        self,
        enabled: bool = True,
        *,
        use_device: str | None = None,
        record_shapes: bool = False,
        with_flops: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_modules: bool = False,
        use_kineto: bool = False,
        use_cpu: bool = True,
        experimental_config: Any = None,
        acc_events: bool = False,
    ) -> None:
        self.options = {
            "use_device": use_device,
            "record_shapes": record_shapes,
            "with_flops": with_flops,
            "profile_memory": profile_memory,
            "with_stack": with_stack,
            "with_modules": with_modules,
            "use_kineto": use_kineto,
            "use_cpu": use_cpu,
            "experimental_config": experimental_config,
        }
        self.prepared = 0

    def _prepare_trace(self) -> None:
        self.prepared += 1


class OldLower(Lower):
    """A torch whose lower-level profiler takes ``use_cuda`` (no ``use_device``)."""

    def __init__(
        self,
        enabled: bool = True,
        *,
        use_cuda: bool = False,
        record_shapes: bool = False,
        with_flops: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_modules: bool = False,
        use_kineto: bool = False,
        use_cpu: bool = True,
        experimental_config: Any = None,
    ) -> None:
        raise AssertionError("must not be made")


class NoPrepare:
    def __init__(self, **options: Any) -> None:
        raise AssertionError("must not be made")


class Profiler:
    """``torch.profiler.profile`` as the bridge makes it."""

    def __init__(self, activities: set[str], use_device: str | None = None) -> None:
        self.activities = activities
        self.use_device = use_device
        self.record_shapes = use_device is not None
        self.with_flops = False
        self.profile_memory = use_device is not None  # allocations: when CUDA is traced
        self.with_stack = False
        self.with_modules = False
        self.experimental_config = "trace-only config"
        self.acc_events = False
        self.profiler: Any = None
        self.calls: list[str] = []

    def start(self) -> None:
        self.calls.append("start")

    def start_trace(self) -> None:
        assert self.profiler is not None and self.profiler.prepared == 1
        self.calls.append("start_trace")


def fake_torch(lower: type) -> Any:
    return SimpleNamespace(
        autograd=SimpleNamespace(profiler=SimpleNamespace(profile=lower)),
        profiler=SimpleNamespace(ProfilerActivity=SimpleNamespace(CPU="CPU", CUDA="CUDA")),
    )


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a process that has not imported torch._inductor, nothing said yet."""
    monkeypatch.delitem(sys.modules, "torch._inductor", raising=False)
    monkeypatch.delenv("TORCHINDUCTOR_CUDAGRAPHS", raising=False)
    monkeypatch.setattr(torch_bridge, "_said", set())


def test_cpu_start_makes_the_lower_profiler_from_the_same_options() -> None:
    profiler = Profiler({"CPU"})
    start_profiler(fake_torch(Lower), profiler)
    assert profiler.calls == ["start_trace"]  # torch's own start_trace, after a prepare
    assert profiler.profiler.options == {
        "use_device": None,
        "record_shapes": False,
        "with_flops": False,
        "profile_memory": False,
        "with_stack": False,
        "with_modules": False,
        "use_kineto": True,
        "use_cpu": True,
        "experimental_config": "trace-only config",
    }


@pytest.mark.parametrize("activities", [{"CPU", "CUDA"}, {"CUDA"}])
def test_cuda_start_takes_the_same_path_with_the_device(activities: set[str]) -> None:
    profiler = Profiler(activities, use_device="cuda")
    start_profiler(fake_torch(Lower), profiler)
    assert profiler.calls == ["start_trace"]
    options = profiler.profiler.options
    assert options["use_device"] == "cuda" and options["record_shapes"] is True
    assert options["profile_memory"] is True
    assert options["use_cpu"] is ("CPU" in activities)


@pytest.mark.parametrize(
    ("lower", "why"),
    [
        (NoPrepare, "_prepare_trace is missing"),
        (OldLower, "takes other arguments"),
    ],
)
def test_another_torch_gets_torchs_own_start_said_once(
    lower: type, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    first, second = Profiler({"CPU"}), Profiler({"CPU"})
    start_profiler(fake_torch(lower), first)
    start_profiler(fake_torch(lower), second)
    assert first.calls == second.calls == ["start"] and first.profiler is None
    said = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(said) == 1 and why in said[0] and "torch._inductor" in said[0]


def test_a_profiler_with_options_the_bridge_never_sets_gets_torchs_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    profiler = Profiler({"CPU"})
    profiler.acc_events = True
    start_profiler(fake_torch(Lower), profiler)
    assert profiler.calls == ["start"]
    assert any("default options" in r.getMessage() for r in caplog.records)


def test_imported_inductor_or_its_cudagraphs_setting_keep_torchs_start(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    monkeypatch.setitem(sys.modules, "torch._inductor", types.ModuleType("torch._inductor"))
    imported = Profiler({"CPU"})
    start_profiler(fake_torch(Lower), imported)
    monkeypatch.delitem(sys.modules, "torch._inductor")
    monkeypatch.setenv("TORCHINDUCTOR_CUDAGRAPHS", "1")
    cudagraphs = Profiler({"CPU"})
    start_profiler(fake_torch(Lower), cudagraphs)
    assert imported.calls == cudagraphs.calls == ["start"]
    assert not [r for r in caplog.records if r.name == LOGGER]  # nothing to say: as before
