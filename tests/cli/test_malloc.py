"""One-shot CLI commands keep freed memory in glibc's malloc; nothing else does (decision 68)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from stepscope.cli import main as cli_main
from stepscope.cli import malloc, quick_exit
from tests.support.fixtures import FIXTURES, REPO

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests


class _Mallopt:
    def __init__(self, answer: int) -> None:
        self.calls: list[tuple[int, int]] = []
        self.answer = answer

    def __call__(self, param: int, value: int) -> int:
        self.calls.append((param, value))
        return self.answer


class _FakeLibc:
    def __init__(self, answer: int) -> None:
        self.mallopt = _Mallopt(answer)
        self.calls = self.mallopt.calls


def test_thresholds_set_unless_the_user_tuned_malloc(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in malloc._USER_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    libc = _FakeLibc(1)
    monkeypatch.setattr(malloc.ctypes, "CDLL", lambda name: libc)
    assert malloc.keep_freed_memory()
    assert libc.calls == [(-3, 2**31 - 1), (-1, 2**31 - 1)]  # mmap, then trim threshold
    libc.calls.clear()
    assert malloc.keep_freed_memory(32 << 20, 128 << 20, False, 1)  # the serve program's
    assert libc.calls == [(-3, 32 << 20), (-1, 128 << 20), (-8, 1)]  # ... and one arena
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")  # the user's choice of arenas wins too
    libc.calls.clear()
    assert not malloc.keep_freed_memory(32 << 20, 128 << 20, False, 1) and libc.calls == []
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    monkeypatch.setattr(malloc.ctypes, "CDLL", lambda name: _FakeLibc(0))  # musl: no-op
    assert not malloc.keep_freed_memory()
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "1000000")  # the user's setting wins
    libc = _FakeLibc(1)
    monkeypatch.setattr(malloc.ctypes, "CDLL", lambda name: libc)
    assert not malloc.keep_freed_memory() and libc.calls == []


def test_numpy_is_asked_for_plain_pages_unless_the_user_chose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Decision 261: before NumPy loads, a one-shot command turns off its transparent huge
    pages (a fault waiting on memory compaction); a user's own setting stays, and a NumPy
    already loaded (a caller's process) is left alone."""
    monkeypatch.setattr(malloc.ctypes, "CDLL", lambda name: _FakeLibc(1))
    numpy = sys.modules["numpy"]
    monkeypatch.delitem(sys.modules, "numpy")
    monkeypatch.delenv(malloc.NUMPY_HUGEPAGE, raising=False)
    malloc.keep_freed_memory()
    assert os.environ[malloc.NUMPY_HUGEPAGE] == "0"
    monkeypatch.setenv(malloc.NUMPY_HUGEPAGE, "1")
    malloc.keep_freed_memory()
    assert os.environ[malloc.NUMPY_HUGEPAGE] == "1"
    monkeypatch.setitem(sys.modules, "numpy", numpy)
    monkeypatch.delenv(malloc.NUMPY_HUGEPAGE)
    malloc.keep_freed_memory()
    assert malloc.NUMPY_HUGEPAGE not in os.environ


def test_only_one_shot_commands_of_their_own_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = cli_main.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(commands.choices) >= cli_main.ONE_SHOT
    assert not {"serve", "server", "capture", "demo"} & cli_main.ONE_SHOT
    assert cli_main.QUICK_EXIT <= cli_main.ONE_SHOT
    calls: list[bool] = []
    monkeypatch.setattr(malloc, "keep_freed_memory", lambda: calls.append(True) or True)
    ended: list[int] = []  # decision 256: these commands' own processes skip the teardown
    monkeypatch.setattr(quick_exit, "exit_now", ended.append)
    ctl = str(FIXTURES / "tf" / "ctl")
    assert cli_main.main(["info", ctl]) == 0  # a caller's process (a test, a script): untouched
    assert calls == [] and ended == []
    monkeypatch.setattr(sys, "argv", ["stepscope", "info", ctl])
    assert cli_main.main() == 0  # the console script's own process
    monkeypatch.setattr(sys, "argv", ["stepscope", "runs", str(FIXTURES / "tf")])
    assert cli_main.main() == 0
    assert calls == [True] and ended == [0]
    capsys.readouterr()


def test_the_serve_program_keeps_freed_memory_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decision 335: `stepscope serve` as its own process keeps up to 128 MiB of freed memory
    and takes blocks up to 32 MiB from the heap (its worker threads' heaps were trimmed and
    faulted back in at every computed trace viewer window); called with an argument list (a
    test, a script) it leaves the caller's malloc alone, and NumPy's pages stay as they are."""
    import stepscope.serve.app as serve_app

    calls: list[tuple[object, ...]] = []

    def keep(*args: object) -> bool:
        calls.append(args)
        return True

    monkeypatch.setattr(malloc, "keep_freed_memory", keep)
    monkeypatch.setattr(serve_app, "serve", lambda *a, **k: None)
    logdir = str(FIXTURES / "tf" / "ctl")
    cli_main.main(["serve", logdir, "-q"])
    assert calls == []
    monkeypatch.setattr(sys, "argv", ["stepscope", "serve", logdir, "-q"])
    cli_main.main()
    assert calls == [(32 << 20, 128 << 20, False, 1)]  # and one arena (decision 328)


@pytest.mark.integration
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_freed_arrays_are_reused_without_page_faults() -> None:
    """The effect itself: a second 64 MB array after freeing the first faults no pages in."""
    code = (
        "import resource, sys, numpy as np\n"
        "from stepscope.cli.malloc import keep_freed_memory\n"
        "if sys.argv[1] == 'keep': assert keep_freed_memory()\n"
        "np.ones(8 << 20).sum()\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "np.ones(8 << 20).sum()\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "NUMPY_MADVISE_HUGEPAGE": "0"}
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"):
        env.pop(name, None)
    faults = {
        mode: int(
            subprocess.run(
                [sys.executable, "-c", code, mode], env=env, capture_output=True, text=True
            ).stdout
        )
        for mode in ("keep", "default")
    }
    assert faults["default"] > 10_000  # 64 MB of fresh 4 KiB pages
    assert faults["keep"] < 1_000


def test_quick_exit_commands_run_without_cyclic_gc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decision 297: a one-shot command ending with its answer runs with the cyclic garbage
    collector off in its own process; a caller's process keeps it, and so does this one once
    `main` returns (here, where `exit_now` returns instead of ending the process)."""
    import gc

    seen: list[bool] = []

    def command(argv: list[str], own_process: bool) -> int:
        seen.append(gc.isenabled())
        return 0

    monkeypatch.setattr(cli_main, "_run", command)
    monkeypatch.setattr(quick_exit, "exit_now", lambda status: None)
    assert gc.isenabled()
    assert cli_main.main(["summary", "x"]) == 0  # a caller's process
    monkeypatch.setattr(sys, "argv", ["stepscope", "summary", "x"])
    assert cli_main.main() == 0  # the console script's own process
    monkeypatch.setattr(sys, "argv", ["stepscope", "runs", "x"])  # not a quick-exit command
    assert cli_main.main() == 0
    assert seen == [True, False, True]
    assert gc.isenabled()


def test_exit_now_imports_no_threading_where_none_was_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Decision 303: a kept answer's process never imported `threading` (no Python thread
    was started): `exit_now` flushes, runs the exit functions and ends without importing it;
    where it is loaded, its threads are joined as the interpreter's exit would."""
    import atexit
    import types

    class Ended(Exception):
        pass

    def end(status: int) -> None:
        raise Ended(status)

    ran: list[str] = []
    monkeypatch.setattr(os, "_exit", end)
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: ran.append("exit functions"))
    with monkeypatch.context() as patch:
        patch.delitem(sys.modules, "threading")
        with pytest.raises(Ended) as ended:
            quick_exit.exit_now(3)
        assert "threading" not in sys.modules
        loaded = types.ModuleType("threading")
        loaded._shutdown = lambda: ran.append("threads joined")  # type: ignore[attr-defined]
        patch.setitem(sys.modules, "threading", loaded)
        with pytest.raises(Ended):
            quick_exit.exit_now(0)
    assert ended.value.args == (3,)
    assert ran == ["exit functions", "threads joined", "exit functions"]
