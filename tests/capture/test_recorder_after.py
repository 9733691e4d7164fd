"""The flight recorder's capture of the steps after a trigger (``capture_next_steps``): a
second run with the framework profilers on, linked to the ring's save by the trigger id.

A fake bridge stands for the frameworks here (no torch import in this process: it would
change what the other capture tests record); the real PyTorch bridge runs in a subprocess
(integration).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

import stepscope
import stepscope.recorder as rec
from stepscope.capture import bridges
from stepscope.capture.bridges import Bridge
from stepscope.xspace.formats import load_xspace
from tests.support.capture import load_run, named
from tests.support.scripts import run_script

NO_SLOW = rec.Triggers(slow_step_factor=0, capture_next_steps=3)


class Recording(Bridge):
    """Notes which thread ran each phase; ``fail_in`` makes that phase raise."""

    name, title = "recording", "Recording"
    fail_in = ""
    calls: ClassVar[list[tuple[str, int]]] = []

    def _phase(self, phase: str) -> None:
        Recording.calls.append((phase, threading.get_ident()))
        if phase == Recording.fail_in:
            raise RuntimeError(f"boom in {phase}")

    def prepare(self) -> None:
        self._phase("prepare")

    def start(self) -> None:
        self._phase("start")

    def stop(self) -> None:
        self._phase("stop")


@pytest.fixture(autouse=True)
def _only_the_fake_bridge(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for module in ("torch", "tensorflow", "jax"):
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.delenv(bridges.ENV_VAR, raising=False)
    monkeypatch.setattr(bridges, "_registered", [Recording])
    Recording.calls, Recording.fail_in = [], ""
    yield
    if rec.is_running():
        rec.stop()


def _markers(logdir: Path) -> list[dict[str, Any]]:
    found = []
    for path in sorted(logdir.glob("plugins/profile/*/*.recorder.json")):
        data = json.loads(path.read_text())
        data["run_dir"] = path.parent
        found.append(data)
    return found


def _loop(first: int, count: int) -> None:
    for n in range(first, first + count):
        with stepscope.step(n), stepscope.trace("compute"):
            pass


def test_the_next_steps_are_captured_with_the_bridges_as_a_linked_after_run(
    tmp_path: Path,
) -> None:
    recorder = rec.start(str(tmp_path), triggers=NO_SLOW, sampler_hz=0, poll_s=10)
    _loop(0, 5)
    before = rec.save("loss spike")
    assert before.result(30) is not None  # the ring's save does not wait for the steps after
    _loop(5, 6)
    after = recorder.requested[-1]
    assert after is not before and after.result(30) is not None
    by_part = {m.get("part"): m for m in _markers(tmp_path)}
    first, second = by_part["before"], by_part["after"]
    assert first["trigger_id"] == second["trigger_id"]
    assert first["capture_next_steps"] == 3 and first["steps"] == [0, 4]
    assert second["trigger"] == "user" and second["reason"] == "the 3 steps after: loss spike"
    assert second["before_run"] == first["run_dir"].name
    assert second["steps"] == [5, 7]  # the 3 steps after the trigger, not the ring's
    assert second["bridges"] == ["Recording"] and second["bridge_warnings"] == []
    # the framework profiler started and stopped on the training thread, at step bounds
    main = threading.get_ident()
    assert Recording.calls == [("prepare", main), ("start", main), ("stop", main)]
    steps = [m["stats"]["step_num"] for m in named(load_run(second["run_dir"]), "train")]
    assert steps == [5, 6, 7]
    rec.stop()


def test_a_failing_bridge_keeps_the_ring_save_and_is_reported(tmp_path: Path) -> None:
    Recording.fail_in = "start"
    recorder = rec.start(str(tmp_path), triggers=NO_SLOW, sampler_hz=0, poll_s=10)
    _loop(0, 3)
    before = rec.save("look")
    _loop(3, 5)  # the training steps go on
    assert before.result(30) is not None
    after = recorder.requested[-1]
    assert after.result(30) is not None
    second = next(m for m in _markers(tmp_path) if m.get("part") == "after")
    assert any("boom in start" in w for w in second["bridge_warnings"])
    space = load_xspace(next(second["run_dir"].glob("*.xplane.pb")))
    assert any("Recording bridge failed while starting" in w for w in space.warnings)
    assert second["steps"] == [3, 5]  # the host events are still there


def test_one_after_capture_at_a_time_and_none_for_a_hang_or_at_stop(tmp_path: Path) -> None:
    recorder = rec.start(str(tmp_path), triggers=NO_SLOW, sampler_hz=0, poll_s=10)
    _loop(0, 2)
    rec.save("first")
    _loop(2, 1)  # the after capture is recording now
    second = rec.save("second")
    assert second.result(30) is not None
    marker = next(m for m in _markers(tmp_path) if "second" in m["reason"])
    assert marker["capture_next_steps"].startswith("skipped")
    rec.save("third")  # armed but no step comes before the recorder stops
    _loop(3, 3)  # ends the first after capture; arms nothing more
    waiting = rec.save("last")
    rec.stop()
    assert recorder.requested[-1].skipped.startswith("the recorder stopped")
    assert waiting.result(30) is not None
    parts = [m.get("part") for m in _markers(tmp_path)]
    assert parts.count("after") == 1


TORCH_SCRIPT = """
import json, sys
import torch, torch.nn as nn
import stepscope, stepscope.recorder as rec

logdir = sys.argv[1]
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
recorder = rec.start(logdir, triggers=rec.Triggers(slow_step_factor=0, capture_next_steps=2))
for step, x in stepscope.steps(torch.randn(8, 4, 16)):
    if step == 3:
        before = rec.save("checking the optimizer")
    loss = model(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
after = recorder.requested[-1]
print(json.dumps({"before": str(before.result(60)), "after": str(after.result(60))}))
rec.stop()
"""


@pytest.mark.integration
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_pytorch_ops_of_the_steps_after_are_captured(tmp_path: Path) -> None:
    out = run_script(TORCH_SCRIPT, str(tmp_path))
    before, after = load_run(out["before"]), load_run(out["after"])
    assert not named(before, "aten::addmm")  # the ring: no framework profiler
    steps = [m["stats"]["step_num"] for m in named(after, "train")]
    assert steps == [4, 5]
    mm = named(after, "aten::addmm")
    assert len(mm) >= 4  # 2 linear layers x 2 steps, forward
    first, last = named(after, "train")[0], named(after, "train")[-1]
    assert all(first["start_ns"] <= m["start_ns"] <= last["end_ns"] for m in mm)


def test_only_the_steps_of_the_thread_that_started_it_count(tmp_path: Path) -> None:
    recorder = rec.start(str(tmp_path), triggers=NO_SLOW, sampler_hz=0, poll_s=10)
    _loop(0, 2)
    rec.save("two step threads")
    _loop(2, 1)  # this thread starts the capture
    other = threading.Thread(target=_loop, args=(100, 5), name="second-trainer")
    other.start()
    other.join()
    after = recorder.requested[-1]
    assert not after.done()  # the other thread's 5 steps are not this capture's steps
    _loop(3, 3)
    assert after.result(30) is not None
    assert [phase for phase, _ in Recording.calls] == ["prepare", "start", "stop"]


OFF_MAIN_IMPORTS_SCRIPT = """
import json, sys, threading

import stepscope, stepscope.recorder as rec

late = []  # modules first imported by a recorder thread, once the recorder started


def hook(event, args):
    if event == "import" and threading.current_thread() is not threading.main_thread():
        name = args[0]
        if name.split(".")[0] in ("stepscope", "google") and name not in sys.modules:
            late.append(name)


recorder = rec.start(sys.argv[1], triggers=rec.Triggers(slow_step_factor=0, capture_next_steps=2))
sys.addaudithook(hook)
for step, _ in stepscope.steps(range(6)):
    if step == 2:
        rec.save("a user's save")
after = recorder.requested[-1]
saved = [str(recorder.requested[0].result(60)), str(after.result(60))]
rec.stop()
print(json.dumps({"late": sorted(set(late)), "saved": saved}))
"""


@pytest.mark.integration
def test_recorder_threads_import_nothing_the_training_thread_may_import(tmp_path: Path) -> None:
    """The saver's first save imported ~80 modules (protobuf's among them) while the training
    thread imported the framework bridges for the steps after a trigger; Python 3.11's import
    locks then raised _DeadlockError in one of them. `rec.start` imports them first."""
    out = run_script(OFF_MAIN_IMPORTS_SCRIPT, str(tmp_path))
    assert all(s != "None" for s in out["saved"]), out
    assert out["late"] == [], out["late"]
