"""The flight recorder finds the steps of an unmarked loop at its loader's fetches (decision
815): a plain ``for x, y in DataLoader(...):`` loop's 445 ms checkpoint step was never saved
(decision 731). A fake iterator class stands for torch's ``_BaseDataLoaderIter``; fake
clock, the ring read by hand."""

from __future__ import annotations

import gc
import itertools
from pathlib import Path
from typing import Any

import pytest

import stepscope
import stepscope.recorder as rec
from stepscope.capture.recorder.fetch_steps import STAGE_NAME, FetchSteps
from stepscope.capture.recorder.ring import StepSummary
from stepscope.vocab.tensorflow import GET_NEXT_KERNELS
from tests.support.recorder import FakeClock

MS = 1_000_000


class FakeLoaderIter:
    """``n`` batches, each fetched in ``fetch_ms`` of the fake clock; ``inner``: an iterator
    this one's fetch reads from (a loader whose dataset reads another loader)."""

    def __init__(self, clock: FakeClock, n: int, fetch_ms: int = 1, inner: Any = None) -> None:
        self.clock, self.n, self.fetch_ms, self.inner, self.i = clock, n, fetch_ms, inner, 0

    def __iter__(self) -> FakeLoaderIter:
        return self

    def __next__(self) -> int:
        if self.i >= self.n:
            raise StopIteration
        self.clock.advance(self.fetch_ms * MS)
        if self.inner is not None:
            next(self.inner)
        self.i += 1
        return self.i - 1


class Grad:
    """`torch.is_grad_enabled` of the fake loop."""

    on = True

    def __call__(self) -> bool:
        return self.on


@pytest.fixture
def hooked(tmp_path: Path, clock: FakeClock) -> Any:
    grad = Grad()
    recorder = rec.start(str(tmp_path), sampler_hz=0, poll_s=10)
    hook = recorder.fetch_steps
    assert isinstance(hook, FetchSteps)
    hook.patch(FakeLoaderIter, grad)
    yield recorder, grad
    if rec.is_running():
        rec.stop()
    assert "__next__" not in vars(FakeLoaderIter) or not hasattr(
        FakeLoaderIter.__next__, "_stepscope_steps"
    )


def _steps(recorder: Any) -> list[StepSummary]:
    return list(recorder.ring.scan())


def _train(clock: FakeClock, batches: Any, body_ms: int = 3, at: Any = None) -> None:
    for i in batches:
        clock.advance(body_ms * MS)
        if at is not None:
            at(i)


def test_each_fetch_after_the_first_closes_a_step(hooked: Any, clock: FakeClock) -> None:
    recorder, _ = hooked
    began = clock.now
    _train(clock, FakeLoaderIter(clock, 5), at=lambda i: clock.advance(40 * MS if i == 3 else 0))
    steps = _steps(recorder)
    assert [s.step_num for s in steps] == [0, 1, 2, 3, 4]
    # from its batch's fetch to the next one's: 1 ms fetch + 3 ms body (+40 ms in step 3)
    assert [s.dur_ns // MS for s in steps] == [4, 4, 4, 44, 4]
    assert steps[0].start_ns == began
    assert all(a.start_ns + a.dur_ns == b.start_ns for a, b in itertools.pairwise(steps))
    # each fetch recorded as an input wait, as `stepscope.data` records one
    buf = next(b for b in recorder.session.host.buffers() if b.events)
    names = [e[0] for e in buf.events]
    assert names.count(GET_NEXT_KERNELS[0]) == 6  # 5 batches and the pass's end
    assert names.count(STAGE_NAME) == 6
    assert recorder.fetch_steps.errors == 0
    # the pass ended: the step its last fetch opened never ran, no hang is looked for
    clock.advance(1000 * 1_000 * MS)
    recorder.tick()
    assert not [p for p in recorder.requested if p.trigger == "hang"]


def test_a_loader_read_inside_a_step_is_the_step_s_work(hooked: Any, clock: FakeClock) -> None:
    recorder, grad = hooked

    def evaluate(i: int) -> None:
        if i == 2:
            grad.on = False  # torch.no_grad() around the evaluation
            _train(clock, FakeLoaderIter(clock, 3), body_ms=10)
            grad.on = True
        if i == 3:  # and one with gradients on: still inside the step
            _train(clock, FakeLoaderIter(clock, 2), body_ms=10)

    _train(clock, FakeLoaderIter(clock, 5), at=evaluate)
    steps = _steps(recorder)
    assert [s.step_num for s in steps] == [0, 1, 2, 3, 4]
    assert [s.dur_ns // MS for s in steps] == [4, 4, 37, 26, 4]


def test_an_evaluation_between_passes_is_no_step(hooked: Any, clock: FakeClock) -> None:
    recorder, grad = hooked
    for _epoch in range(2):
        _train(clock, FakeLoaderIter(clock, 3))
        grad.on = False
        _train(clock, FakeLoaderIter(clock, 4), body_ms=10)
        grad.on = True
    steps = _steps(recorder)
    assert [s.step_num for s in steps] == [0, 1, 2, 3, 4, 5]
    assert [s.dur_ns // MS for s in steps] == [4] * 6


def test_a_sanity_check_before_the_training_gives_way(hooked: Any, clock: FakeClock) -> None:
    recorder, grad = hooked
    grad.on = False
    sanity = FakeLoaderIter(clock, 10)
    next(sanity), next(sanity)  # two validation batches, the iterator kept
    grad.on = True
    _train(clock, FakeLoaderIter(clock, 3))
    steps = _steps(recorder)
    assert [s.dur_ns // MS for s in steps] == [1, 1, 4, 4, 4]  # its two, then the training's
    del sanity


def test_a_fetch_inside_a_fetch_is_the_outer_one_s(hooked: Any, clock: FakeClock) -> None:
    recorder, _ = hooked
    _train(clock, FakeLoaderIter(clock, 3, inner=FakeLoaderIter(clock, 10, fetch_ms=2)))
    assert [s.dur_ns // MS for s in _steps(recorder)] == [6, 6, 6]


def test_a_break_ends_the_step_where_the_loop_ends(hooked: Any, clock: FakeClock) -> None:
    recorder, _ = hooked
    for i in FakeLoaderIter(clock, 10):
        clock.advance(3 * MS)
        if i == 2:
            break
    gc.collect()  # CPython freed it at the break already
    steps = _steps(recorder)
    assert [s.dur_ns // MS for s in steps] == [4, 4, 4]


def test_a_marked_step_stands_the_hook_down(hooked: Any, clock: FakeClock) -> None:
    recorder, _ = hooked
    _train(clock, FakeLoaderIter(clock, 2))
    for i in range(2):
        with stepscope.step(100 + i):
            _train(clock, FakeLoaderIter(clock, 2))
    steps = _steps(recorder)
    assert [s.step_num for s in steps] == [0, 1, 100, 101]  # no fetch step after the marked
    assert recorder.fetch_steps.stood_down
    assert not hasattr(FakeLoaderIter.__next__, "_stepscope_steps")


def test_its_own_errors_never_reach_the_loop(hooked: Any, clock: FakeClock) -> None:
    recorder, _ = hooked

    def broken() -> bool:
        raise RuntimeError("stepscope's own bug")

    recorder.fetch_steps._grad = broken
    got = list(FakeLoaderIter(clock, 3))
    assert got == [0, 1, 2]
    assert recorder.fetch_steps.errors == 4  # each fetch's, the pass's end too
    rec.stop()
    assert "_stepscope_steps" not in vars(FakeLoaderIter.__next__)  # removed at the stop
    assert list(FakeLoaderIter(clock, 2)) == [0, 1]


def test_other_threads_fetch_no_step(hooked: Any, clock: FakeClock) -> None:
    import threading

    recorder, _ = hooked
    worker = threading.Thread(target=lambda: list(FakeLoaderIter(clock, 4)))
    worker.start()
    worker.join()
    assert _steps(recorder) == []


def test_off_when_the_config_says_so(tmp_path: Path, clock: FakeClock) -> None:
    recorder = rec.start(str(tmp_path), sampler_hz=0, poll_s=10, loader_steps=False)
    assert recorder.fetch_steps is None
    with stepscope.step(0):  # the recorder's own step hook is set all the same
        clock.advance(MS)
    assert recorder.open_ns


def test_a_save_of_such_steps_says_whose_they_are(hooked: Any, clock: FakeClock) -> None:
    from stepscope.cli.report_render import recorder_lines

    del hooked  # the recorder and its hook on the fake loader
    _train(clock, FakeLoaderIter(clock, 3))
    run_dir = rec.save("look").result(60)
    assert run_dir is not None
    (marker,) = Path(run_dir).glob("*.recorder.json")
    assert '"steps_from": "dataloader_fetches"' in marker.read_text()
    saved = {"trigger": "user", "reason": "look", "steps_from": "dataloader_fetches"}
    text = " ".join(recorder_lines(saved, 200))
    assert "the recorder took each fetch of its DataLoader as a step's start" in text
