"""A recorder save says the framework the program imported (decision 784): it holds none of
the framework's ops, so the pages read "unknown" and spelled their advice for every framework
(tf.data first) on a PyTorch loop's save."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

import stepscope.recorder as rec
from stepscope.capture.save import imported_framework
from stepscope.stats.gpu.device import framework_of
from tests.support.capture import load_run
from tests.support.recorder import FakeClock, run_steps

FRAMEWORKS = ("torch", "tensorflow", "jax")


def _only(monkeypatch: pytest.MonkeyPatch, *imported: str) -> None:
    for name in FRAMEWORKS:
        if name in imported:
            monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
        else:
            monkeypatch.delitem(sys.modules, name, raising=False)


def test_a_recorder_save_says_the_framework_the_program_imported(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _only(monkeypatch, "torch")
    rec.start(str(tmp_path), sampler_hz=0, poll_s=10)
    try:
        run_steps(clock, 0, 4)
        run = rec.save("now").result(30)
    finally:
        rec.stop()
    assert framework_of(load_run(run)) == "pytorch"


@pytest.mark.parametrize(
    ("imported", "said"),
    [(("torch",), "pytorch"), (("jax",), "jax"), ((), ""), (("torch", "tensorflow"), "")],
)
def test_one_framework_imported_is_said_none_or_several_are_not(
    monkeypatch: pytest.MonkeyPatch, imported: tuple[str, ...], said: str
) -> None:
    _only(monkeypatch, *imported)
    assert imported_framework() == said
