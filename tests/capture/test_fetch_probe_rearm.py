"""The fetch probe left by a loop with nothing to time waits for a DataLoader's loop and is
installed again where it begins (decision 1006); a single ``next()`` does not keep it in the
loop after it (decision 1007). Synthetic, with a fake DataLoader module hooked as a capture
hooks torch's; the torch loop itself is the integration test at the end."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepscope.capture import fetch_probe, loader_hook
from stepscope.capture.fetch_probe import MAX_ARMS, MAX_FETCHES, MAX_LAPS, MAX_STEPS, FetchProbe
from stepscope.capture.fetch_sites import FetchSites
from stepscope.capture.step import step
from tests.support.capture import load_run
from tests.support.scripts import run_script

THIS = "test_fetch_probe_rearm.py"


def _work() -> int:
    return sum(range(200))


def _items(n: int) -> Iterator[int]:
    for _ in range(n):
        yield _work()


class _FakeLoader:
    """A DataLoader as the hook sees it (no workers): its iterator enters a Python frame."""

    num_workers = 0

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Iterator[int]:
        return _items(self.n)


@pytest.fixture
def loader(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_FakeLoader]]:
    """torch's DataLoader module faked, its ``__iter__`` hooked as a saving capture does."""
    module = types.ModuleType("torch.utils.data.dataloader")
    kind = type("DataLoader", (_FakeLoader,), {"__iter__": _FakeLoader.__iter__})
    module.DataLoader = kind  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch.utils.data.dataloader", module)
    loader_hook.install()
    try:
        yield kind
    finally:
        loader_hook.uninstall()
        assert fetch_probe.dormant is None


def _probe(markers: tuple[Any, ...] = ()) -> FetchProbe:
    probe = FetchProbe(sys._getframe(1), FetchSites(), markers=markers)
    assert probe.install()
    return probe


def _epoch(batches: Any, limit: int) -> None:
    for i, _ in enumerate(batches):
        _work()
        if i == limit:
            break


@pytest.mark.parametrize("warm_up", ["range", "list"])
def test_a_warm_up_then_a_loader_loop_is_timed(loader: Any, warm_up: str) -> None:
    """``for _ in range(20): model(x)`` then ``for batch in loader``: the warm-up's laps end
    the probe (its cost in a loop over ``range``, decision 1004), and the loader's ``iter()``
    installs it again: the loop's fetches are timed, then it leaves by its fetch rule.
    Without the hook's call the loop had no fetch timed."""
    probe = _probe()
    try:
        for _ in range(20) if warm_up == "range" else [0] * 20:
            _work()
        assert sys.getprofile() is None and fetch_probe.dormant is probe
        for i, _ in enumerate(loader(100)):
            _work()
            if i == MAX_FETCHES + 2:
                break
        assert sys.getprofile() is None and fetch_probe.dormant is None  # left: timed
    finally:
        probe.stop()
    here = f"test_a_warm_up_then_a_loader_loop_is_timed ({THIS})"
    assert [(f[0], f[1]) for f in probe.fetches] == [(f"_items ({THIS})", here)] * MAX_FETCHES


def test_a_loader_loop_in_a_function_called_after_the_warm_up_is_timed(loader: Any) -> None:
    """The loop one call below start's caller, called once the probe has left: the frames
    from start's caller to the loop's are watched again (decision 447's depth)."""
    probe = _probe()
    try:
        for _ in range(MAX_LAPS):
            _work()
        assert fetch_probe.dormant is probe
        _epoch(loader(100), 2 * MAX_FETCHES + 1)
        assert sys.getprofile() is None
    finally:
        probe.stop()
    assert [f[1] for f in probe.fetches] == [f"_epoch ({THIS})"] * MAX_FETCHES


def test_a_marked_warm_up_then_a_loader_loop_is_timed(loader: Any) -> None:
    """Marked warm-up steps end the probe at their second marker, no fetch begun (decision
    1008); the marked loop over the loader that follows counts its markers afresh."""
    probe = _probe(markers=(step.__code__,))
    try:
        for i in range(3):
            with step(i):
                _work()
        assert fetch_probe.dormant is probe
        for i, _ in enumerate(loader(100)):
            with step(3 + i):
                _work()
            if i == MAX_FETCHES + 2:
                break
    finally:
        probe.stop()
    assert len(probe.fetches) == MAX_FETCHES


def test_a_loop_that_had_its_fetches_timed_does_not_wait_for_the_next_epoch(loader: Any) -> None:
    """A marked loop below start's caller has its `MAX_FETCHES` timed, then its markers end
    the probe (decision 1000): the loop was timed, and the next epoch's ``iter()`` does not
    install it again (each epoch would pay its first steps)."""
    probe = _probe(markers=(step.__code__,))

    def epoch() -> None:
        for i, _ in enumerate(loader(100)):
            with step(i):
                _work()
            if i == MAX_STEPS + 2:
                break

    try:
        epoch()
        assert sys.getprofile() is None and fetch_probe.dormant is None
        epoch()
        assert sys.getprofile() is None
    finally:
        probe.stop()
    assert len(probe.fetches) == MAX_FETCHES


def test_a_loader_begun_outside_the_watched_frames_does_not_install_it(loader: Any) -> None:
    """A loop that begins in a frame start's caller did not lead to (a library's, or one run
    from another function's frame than the caller's chain) leaves the probe waiting; a
    loader's ``iter()`` while the probe is installed changes nothing."""
    probe = _probe()
    try:
        iter(loader(3))  # installed: nothing to do
        assert sys.getprofile() == probe._probe and fetch_probe.dormant is None
        for _ in range(MAX_LAPS):
            _work()
        assert fetch_probe.dormant is probe
        fetch_probe.loop_begins(sys._getframe().f_back)  # pytest's frame: not watched
        assert sys.getprofile() is None and fetch_probe.dormant is probe
    finally:
        probe.stop()
    assert fetch_probe.dormant is None  # `stop` ends the wait


def test_it_is_installed_again_at_most_max_arms_times(loader: Any) -> None:
    """Each loop over a loader with nothing to time in its frame (its batches gathered by a
    comprehension, not watched) ends it again by the laps; installed again `MAX_ARMS` times,
    it then stays gone."""
    probe = _probe()
    arms = []
    try:
        for _ in range(MAX_ARMS + 2):
            for _ in range(MAX_LAPS):
                _work()
            arms.append(fetch_probe.dormant is probe)
            data = [b for b in loader(2)]  # its batches gathered by a comprehension
            assert data
    finally:
        probe.stop()
    assert arms == [True] * MAX_ARMS + [False] * 2
    assert probe.fetches == []


def test_one_next_then_a_range_loop_ends_the_probe_after_its_laps() -> None:
    """``x = next(it)`` then ``for _ in range(n): step(x)``: the frame began a fetch, but
    not in the loop, which has nothing to time; it ended by the laps no more, and the probe
    stayed for `MAX_EVENTS` (decision 1007)."""
    probe = _probe()
    still = []
    try:
        batches = iter(_FakeLoader(3))
        first = next(batches)
        for _ in range(MAX_LAPS + 1):
            first += _work()
            still.append(sys.getprofile() == probe._probe)
    finally:
        probe.stop()
    assert still == [True] * (MAX_LAPS - 1) + [False] * 2
    assert len(probe.fetches) == 1


def test_a_while_loop_calling_next_with_long_inner_loops_is_still_timed() -> None:
    """``while True: x = next(it)`` and an inner loop of more than `MAX_LAPS` laps: the inner
    loop is inside the loop that fetches, and the probe leaves by its fetch rule."""
    probe = _probe()
    it = _items(100)
    parts = list(range(2 * MAX_LAPS))
    try:
        for _ in range(MAX_FETCHES + 2):  # the outer loop of `while True`, bounded
            next(it)
            for _ in parts:
                _work()
        assert sys.getprofile() is None
    finally:
        probe.stop()
    assert [f[0] for f in probe.fetches] == [f"_items ({THIS})"] * MAX_FETCHES


TORCH_LOOP = """
import json, os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import torch
from torch.utils.data import DataLoader, Dataset
import stepscope

logdir, workers = sys.argv[1], int(sys.argv[2])
torch.set_num_threads(1)

class Items(Dataset):
    def __len__(self):
        return 24 * 8
    def __getitem__(self, i):
        time.sleep(0.0005)  # the fetch (4 ms a batch) longer than the step
        return torch.full((32,), float(i % 5))

model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
loader = DataLoader(Items(), batch_size=8, num_workers=workers)
x = torch.randn(8, 32)
stepscope.start(logdir)
for _ in range(10):  # a warm-up of more laps than the probe's MAX_LAPS
    model(x).sum().backward()
for batch in loader:
    model(batch).sum().backward()
print(json.dumps({"run": str(stepscope.stop())}))
"""


@pytest.mark.integration
@pytest.mark.untimed
@pytest.mark.parametrize("workers", [0, 2])
def test_a_torch_loader_loop_after_a_warm_up_has_its_fetches_timed(
    tmp_path: Path, workers: int
) -> None:
    """The user's loop of decision 1006 under `stepscope.start` defaults: a 10-step warm-up
    over ``range``, then a loop over a DataLoader (with and without workers). Before, the
    probe left in the warm-up and the saved "Python fetches" line held nothing."""
    pytest.importorskip("torch")
    measured = run_script(TORCH_LOOP, str(tmp_path), str(workers))
    profile = load_run(Path(measured["run"]))
    [line] = [ln for ln in profile.lines if ln.name == "Python fetches"]
    events = [i for i in range(profile.n_events) if profile.line[i] == line.index]
    assert {profile.event_name(i) for i in events} == {"__next__ (dataloader.py)"}
    assert len(events) == MAX_FETCHES
    assert {profile.event_stats(i)["loop"] for i in events} == {"<module> (<string>)"}
