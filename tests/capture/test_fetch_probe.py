"""The capture times the first fetches of the frame that called `start` (decision 382,
`stepscope.capture.fetch_probe`): bounded, never replacing another profile function, never
raising into the program, saved as the "Python fetches" line."""

from __future__ import annotations

import inspect
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.capture.fetch_probe import (
    MAX_DEPTH,
    MAX_FETCHES,
    MAX_LAPS,
    MAX_STEPS,
    FetchProbe,
    caller_frame,
    is_program_code,
)
from stepscope.capture.fetch_sites import FetchSites
from stepscope.capture.step import step
from stepscope.stats.events import host_lines
from tests.support.capture import load_run


def _work() -> int:
    return sum(range(200))


def _gen() -> Iterator[int]:
    while True:
        _work()  # a call the generator makes: not the loop's fetch
        yield 1


def test_the_probe_times_the_callers_fetches_then_removes_itself() -> None:
    probe = FetchProbe(sys._getframe(), FetchSites())
    assert probe.install()
    try:
        for i, _ in enumerate(_gen()):  # a `for` over enumerate: the generator resumed
            _work()  # the body's call: no fetch
            if i == MAX_FETCHES + 3:
                break
        assert sys.getprofile() is None  # removed itself after MAX_FETCHES
    finally:
        probe.stop()
    assert len(probe.fetches) == MAX_FETCHES
    here = "test_the_probe_times_the_callers_fetches_then_removes_itself (test_fetch_probe.py)"
    assert {(f[0], f[1]) for f in probe.fetches} == {("_gen (test_fetch_probe.py)", here)}
    assert all(start < end for _, _, start, end, _ in probe.fetches)
    assert all(a[3] <= b[2] for a, b in zip(probe.fetches, probe.fetches[1:], strict=False))
    # the loop's lines, the `for` first, the body's last (its `break`): decision 681
    lines, first = inspect.getsourcelines(
        test_the_probe_times_the_callers_fetches_then_removes_itself
    )
    at = first + next(k for k, text in enumerate(lines) if "enumerate(_gen())" in text)
    assert {f[4] for f in probe.fetches} == {(at, at + 3)}


def test_next_called_by_the_frame_is_a_fetch_and_other_calls_are_not() -> None:
    probe = FetchProbe(sys._getframe(), FetchSites())
    it = _gen()
    assert probe.install()
    try:
        next(it)
        _work()
        next(it)
    finally:
        probe.stop()
    assert [f[0] for f in probe.fetches] == ["_gen (test_fetch_probe.py)"] * 2
    assert sys.getprofile() is None


def _epoch(batches: Iterator[int], steps: int) -> None:
    for i, _ in enumerate(batches):  # the loop, one call below the frame that started
        _inner_loop()
        if i == steps:
            break


def _inner_loop() -> None:
    for _ in zip(range(3), _gen(), strict=False):  # a helper's loop, deeper: not the loop
        pass


def test_a_loop_in_a_function_the_caller_calls_is_timed_and_ends_the_probe() -> None:
    """``start(); epoch(loader)``: the loop one call below (decision 447). The helper's
    deeper loop fetches 3 times a step, 12 before the loop's own fourth, yet the probe leaves
    only once the shallowest loop has `MAX_FETCHES` and went on as long again (8 fetches)."""
    probe = FetchProbe(sys._getframe(), FetchSites())
    assert probe.install()
    try:
        _epoch(_gen(), MAX_FETCHES + 3)
        assert sys.getprofile() is None
    finally:
        probe.stop()
    loop = [f for f in probe.fetches if f[1] == "_epoch (test_fetch_probe.py)"]
    assert len(loop) == MAX_FETCHES
    assert {f[0] for f in loop} == {"_gen (test_fetch_probe.py)"}
    inner = [f for f in probe.fetches if f[1] == "_inner_loop (test_fetch_probe.py)"]
    assert len(inner) == MAX_FETCHES  # each loop keeps at most MAX_FETCHES


def _gather(batches: Iterator[int], n: int) -> list[int]:
    got = []
    for _ in range(n):  # a setup loop below the caller: a few batches, then it returns
        got.append(next(batches))
    return got


def test_setup_loops_before_the_callers_loop_do_not_end_the_probe() -> None:
    """Batches gathered first, by a comprehension and by a helper, then the caller's own
    loop: that loop is timed (before, the comprehension's 4 fetches ended the probe and the
    training loop was never timed)."""
    probe = FetchProbe(sys._getframe(), FetchSites())
    batches = _gen()
    assert probe.install()
    try:
        data = [next(batches) for _ in range(MAX_FETCHES)]
        data += _gather(batches, MAX_FETCHES + 1)
        assert sys.getprofile() == probe._probe
        for i, _ in enumerate(_gen()):
            if i == MAX_FETCHES + 1:
                break
        assert sys.getprofile() is None
    finally:
        probe.stop()
    here = "test_setup_loops_before_the_callers_loop_do_not_end_the_probe (test_fetch_probe.py)"
    loops = [f[1] for f in probe.fetches]
    assert loops.count(here) == MAX_FETCHES
    assert "<listcomp> (test_fetch_probe.py)" not in loops  # a comprehension is not watched
    assert loops.count("_gather (test_fetch_probe.py)") == MAX_FETCHES
    assert len(data) == 2 * MAX_FETCHES + 1


def _nested(depth: int, batches: Iterator[int]) -> None:
    if depth:
        _nested(depth - 1, batches)
    else:
        for _, _ in zip(range(3), batches, strict=False):
            pass


def test_loops_deeper_than_max_depth_are_not_watched() -> None:
    probe = FetchProbe(sys._getframe(), FetchSites())
    assert probe.install()
    try:
        _nested(MAX_DEPTH, _gen())  # its loop: MAX_DEPTH + 1 calls below
        assert probe.fetches == []
        _nested(MAX_DEPTH - 1, _gen())  # MAX_DEPTH calls below: watched
    finally:
        probe.stop()
    assert [f[1] for f in probe.fetches] == ["_nested (test_fetch_probe.py)"] * 3


def test_a_librarys_loop_is_neither_timed_nor_watched() -> None:
    """A loop in installed code (here compiled under a site-packages path) is the library's:
    its fetches are not the training loop's, and the program code it calls is not watched."""
    library: dict[str, Any] = {}
    source = "def drive(it, body):\n    for x in it:\n        body(x)\n"
    exec(compile(source, "/venv/lib/site-packages/lib/loop.py", "exec"), library)
    seen: list[int] = []

    def body(x: int) -> None:  # program code called by the library: not watched
        for _, _ in zip(range(2), _gen(), strict=False):
            seen.append(x)

    probe = FetchProbe(sys._getframe(), FetchSites())
    assert probe.install()
    try:
        library["drive"](iter(range(3)), body)
        library["drive"](_gen_n(3), body)
        assert sys.getprofile() == probe._probe  # still there: nothing of ours fetched
    finally:
        probe.stop()
    assert probe.fetches == [] and len(seen) == 12


def _gen_n(n: int) -> Iterator[int]:
    yield from range(n)


def test_program_code_is_neither_the_standard_library_nor_installed_packages() -> None:
    assert is_program_code(__file__)
    assert is_program_code("<string>")
    assert not is_program_code(os.__file__)
    assert not is_program_code("<frozen runpy>")
    assert not is_program_code(stepscope.__file__)
    assert not is_program_code("/usr/lib/python3/dist-packages/numpy/core.py")
    assert not is_program_code("/venv/lib/python3.11/site-packages/torch/nn/module.py")


def test_a_profile_function_already_set_is_kept() -> None:
    def theirs(frame: Any, event: str, arg: Any) -> None:
        return None

    sys.setprofile(theirs)
    try:
        probe = FetchProbe(sys._getframe(), FetchSites())
        assert not probe.install()
        assert sys.getprofile() is theirs
        probe.stop()
        assert sys.getprofile() is theirs
    finally:
        sys.setprofile(None)


class _Broken(FetchSites):
    def at(self, code: Any, lasti: int) -> bool:
        raise RuntimeError("a bug of the probe's")


def test_an_error_of_its_own_ends_the_probe_not_the_program() -> None:
    probe = FetchProbe(sys._getframe(), _Broken())
    assert probe.install()
    total = sum(x for _, x in zip(range(5), _gen(), strict=False))
    assert total == 5
    assert sys.getprofile() is None and probe.done
    probe.stop()


def test_stopped_from_another_thread_it_leaves_at_its_next_event() -> None:
    probe = FetchProbe(sys._getframe(), FetchSites())
    assert probe.install()
    stopper = threading.Thread(target=probe.stop)
    stopper.start()
    stopper.join()
    _work()  # the next event on this thread removes it
    assert sys.getprofile() is None


def test_the_caller_is_the_first_frame_outside_stepscope() -> None:
    assert caller_frame(sys._getframe()) is sys._getframe()


def test_a_capture_saves_the_fetches_line_as_no_work(tmp_path: Path) -> None:
    stepscope.start(tmp_path, stepscope.ProfilerOptions(device_tracer_level=0))
    for i, _ in enumerate(_gen()):
        with stepscope.trace("model"):
            _work()
        if i == 3:
            break
    run = stepscope.stop()
    assert sys.getprofile() is None
    profile = load_run(run)
    [line] = [ln for ln in profile.lines if ln.name == "Python fetches"]
    thread = [ln for ln in profile.lines if ln.id == line.display_id and ln is not line]
    assert len(thread) == 1  # under the thread it watched (display_id = its line id)
    names = {
        profile.event_name(i) for i in range(profile.n_events) if profile.line[i] == line.index
    }
    assert names == {"_gen (test_fetch_probe.py)"}
    first = next(i for i in range(profile.n_events) if profile.line[i] == line.index)
    loop = profile.event_stats(first)["loop"]
    assert loop == "test_a_capture_saves_the_fetches_line_as_no_work (test_fetch_probe.py)"
    assert not host_lines(profile)[line.index]  # an observation, not work


def test_a_child_forked_while_probing_runs_without_it(tmp_path: Path) -> None:
    """A DataLoader worker forked by the loop's thread inherits its profile function: the
    child drops the probe at once (its recording is the parent's)."""
    stepscope.start(tmp_path, stepscope.ProfilerOptions(device_tracer_level=0))
    try:
        assert sys.getprofile() is not None  # the probe, waiting for the loop's fetches
        pid = os.fork()
        if pid == 0:  # the child: report through the exit status only
            os._exit(0 if sys.getprofile() is None else 3)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        stepscope.stop(save=False)
    assert sys.getprofile() is None


class _Asked(FetchSites):
    """Notes when the probe asks whether a frame stands at a fetch."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[int] = []

    def at(self, code: Any, lasti: int) -> bool:
        self.asked.append(time.perf_counter_ns())
        return super().at(code, lasti)


def test_a_fetch_is_timed_from_before_the_probe_reads_the_loops_sites() -> None:
    """Reading a code's fetch sites the first time takes about 1 ms (``dis`` of the whole
    module): a fetch timed from after it began that late, and step 0, from the first fetch,
    was 1 ms short of the script's (decision 507). The question about the fetch's own
    frame is asked inside the timed fetch."""
    sites = _Asked()
    probe = FetchProbe(sys._getframe(), sites)
    assert probe.install()
    try:
        for _ in zip(range(2), _gen(), strict=False):
            pass
    finally:
        probe.stop()
    _, _, start, end, _ = probe.fetches[0]
    assert any(start <= t <= end for t in sites.asked)


class _Read(FetchSites):
    """Notes when each code's sites are read (its ``dis``)."""

    def __init__(self) -> None:
        super().__init__()
        self.read_at: dict[Any, int] = {}

    def at(self, code: Any, lasti: int) -> bool:
        self.read_at.setdefault(code, time.perf_counter_ns())
        return super().at(code, lasti)


def test_the_callers_sites_are_read_when_the_probe_is_installed() -> None:
    """Read at the caller's first call after `start`, the sites of a script's module (1-1.5
    ms of ``dis``) fell between the script's clock read and its first step: a streamed
    pipeline's first item read 1.47 ms short (decision 684). `start` reads them."""
    sites = _Read()
    probe = FetchProbe(sys._getframe(), sites)
    assert probe.install()
    installed = time.perf_counter_ns()
    try:
        _work()
    finally:
        probe.stop()
    code = sys._getframe().f_code
    assert code in sites.read_at and sites.read_at[code] <= installed


def test_a_loop_whose_iterator_enters_no_frame_ends_the_probe_after_its_steps() -> None:
    """``for i in range(n): with stepscope.step(i)``: nothing to time (``range`` enters no
    frame), and the probe, a Python call on each event, stayed for `MAX_EVENTS`: ~850 steps
    of a PyTorch loop at +25-30% each (decision 1000), then until `MAX_STEPS` markers. With
    no fetch begun by the second marker it leaves there (decision 1008)."""
    probe = FetchProbe(sys._getframe(), FetchSites(), markers=(step.__code__,))
    assert probe.install()
    try:
        with step(0):
            _work()
        assert sys.getprofile() == probe._probe  # still there after one marker
        with step(1):
            _work()
        assert sys.getprofile() is None  # gone at the second
    finally:
        probe.stop()
    assert probe.fetches == []


def test_a_marked_loop_that_fetches_inside_its_step_keeps_the_probe_to_its_fetches() -> None:
    """``with stepscope.step(i): batch = next(it)``: the fetch begins after the first marker,
    before the second, so the second marker does not end the probe; a fetch in each marked
    step has its `MAX_FETCHES` timed before `MAX_STEPS` markers."""
    probe = FetchProbe(sys._getframe(), FetchSites(), markers=(step.__code__,))
    batches = _gen()
    assert probe.install()
    try:
        for i in range(MAX_STEPS + 2):
            with step(i):
                next(batches)
                _work()
    finally:
        probe.stop()
    assert [f[0] for f in probe.fetches] == ["_gen (test_fetch_probe.py)"] * MAX_FETCHES


def test_a_marked_loop_that_fetches_is_timed_before_the_steps_bound() -> None:
    """A loop below start's caller that fetches through a generator each marked step: timed
    `MAX_FETCHES` times, the probe gone by `MAX_STEPS` (or the fetch rule's 8 fetches)."""
    probe = FetchProbe(sys._getframe(), FetchSites(), markers=(step.__code__,))

    def epoch(batches: Iterator[int]) -> None:
        for i, _ in enumerate(batches):
            with step(i):
                _work()
            if i == MAX_STEPS + 4:
                break

    assert MAX_STEPS >= MAX_FETCHES
    assert probe.install()
    try:
        epoch(_gen())
        assert sys.getprofile() is None
    finally:
        probe.stop()
    assert len(probe.fetches) == MAX_FETCHES and probe._steps <= MAX_STEPS + 1


def test_an_unmarked_loop_with_nothing_to_time_ends_the_probe_after_its_laps() -> None:
    """``for i in range(n): step()`` with no `stepscope.step`: nothing fetches through a frame
    and nothing counts the steps, and the probe stayed for `MAX_EVENTS` (~850 steps of a
    PyTorch loop at +25-28% each, decision 1004). It leaves in the loop's `MAX_LAPS`-th lap."""
    probe = FetchProbe(sys._getframe(), FetchSites())
    assert probe.install()
    still: list[bool] = []
    try:
        for _ in range(MAX_LAPS + 2):
            _work()
            still.append(sys.getprofile() == probe._probe)
    finally:
        probe.stop()
    assert still == [True] * (MAX_LAPS - 1) + [False] * 3
    assert probe.fetches == []


def test_a_loop_of_builtin_calls_only_ends_the_probe_too() -> None:
    """A body that calls only C functions makes no Python call from the loop's frame: its
    builtins' calls are the laps."""
    probe = FetchProbe(sys._getframe(), FetchSites())
    assert probe.install()
    try:
        for _ in range(MAX_LAPS):
            time.perf_counter_ns()
        assert sys.getprofile() is None
    finally:
        probe.stop()


class _Loader:
    """A DataLoader-like iterable: its iterator's ``__next__`` is Python, entered each step."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> _LoaderIter:
        return _LoaderIter(self.n)


class _LoaderIter:
    def __init__(self, n: int) -> None:
        self.left = n

    def __next__(self) -> int:
        if not self.left:
            raise StopIteration
        self.left -= 1
        return _work()


def _micro_steps(parts: list[int]) -> None:
    for _ in parts:  # a helper's loop inside the step, longer than MAX_LAPS
        _work()


def test_a_loader_loop_with_long_inner_loops_is_still_timed() -> None:
    """The loop that fetches has inner loops of more than `MAX_LAPS` laps between its
    fetches, in its own frame and in a helper it calls: they are its step's work, not a loop
    with nothing to time, and the probe leaves by its fetch rule, `MAX_FETCHES` timed."""
    probe = FetchProbe(sys._getframe(), FetchSites())
    parts = list(range(2 * MAX_LAPS))
    assert probe.install()
    try:
        for i, _ in enumerate(_Loader(100)):
            for _ in parts:  # the step's own inner loop
                _work()
            _micro_steps(parts)
            if i == MAX_FETCHES + 2:
                break
        assert sys.getprofile() is None
    finally:
        probe.stop()
    assert [f[0] for f in probe.fetches] == ["__next__ (test_fetch_probe.py)"] * MAX_FETCHES


@pytest.mark.parametrize("warm_up", [MAX_LAPS - 1, 20])
def test_a_warm_up_over_range_before_the_loader_loop(warm_up: int) -> None:
    """A warm-up of fewer than `MAX_LAPS` steps over ``range`` keeps the probe for the loop
    over the loader, whose fetches are timed; one of 20 steps ends it in the warm-up, and the
    loader's fetches are left to the stack samples' rule (decision 1004: what the probe costs
    every loop over ``range`` outweighs it)."""
    probe = FetchProbe(sys._getframe(), FetchSites())
    assert probe.install()
    try:
        for _ in range(warm_up):
            _work()
        assert (sys.getprofile() == probe._probe) is (warm_up < MAX_LAPS)
        for i, _ in enumerate(_Loader(100)):
            _work()
            if i == MAX_FETCHES:
                break
    finally:
        probe.stop()
    assert len(probe.fetches) == (MAX_FETCHES if warm_up < MAX_LAPS else 0)


def test_batches_gathered_by_a_helper_then_a_range_loop_end_the_probe() -> None:
    """A helper fetches a few batches first (timed), then start's caller loops over
    ``range`` on them: the helper's frame is gone and the caller's loop fetches nothing."""
    probe = FetchProbe(sys._getframe(), FetchSites())
    assert probe.install()
    try:
        data = _gather(_gen(), 2)
        for k in range(MAX_LAPS):
            data[k % 2] += _work()
        assert sys.getprofile() is None
    finally:
        probe.stop()
    assert [f[1] for f in probe.fetches] == ["_gather (test_fetch_probe.py)"] * 2


def _train(loader: _Loader) -> None:
    for _ in loader:  # the loop, one call below start's caller
        _micro_steps(list(range(2 * MAX_LAPS)))


def test_a_loader_loop_in_a_function_after_a_short_warm_up_is_timed() -> None:
    """``for i in range(3): step()`` then ``train(loader)``: the loop below start's caller
    is timed (decision 447) and leaves by the fetch rule (`MAX_FETCHES` and as many again)."""
    probe = FetchProbe(sys._getframe(), FetchSites())
    assert probe.install()
    try:
        for _ in range(3):
            _work()
        _train(_Loader(2 * MAX_FETCHES + 1))
        assert sys.getprofile() is None
    finally:
        probe.stop()
    assert [f[1] for f in probe.fetches] == ["_train (test_fetch_probe.py)"] * MAX_FETCHES
