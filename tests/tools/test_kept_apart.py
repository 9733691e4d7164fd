"""The trace viewer's step database of a large profile, built by a child process
(`kept_apart.build_apart`, decision 174): the same steps as built in process; a child that fails or
hangs costs only speed (the caller builds in process) and never outlives the call; a child
whose parent is gone exits.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from stepscope import workers
from stepscope.model import open_run
from stepscope.store import background, entries
from stepscope.tools import _analysis as analysis
from stepscope.tools import kept, kept_apart
from stepscope.tools.context import ProfileStore, ToolContext
from tests.support.analysis import count_step_db_builds

pytestmark = pytest.mark.integration  # each test starts a Python process

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
HANG = "import threading; threading.Event().wait()"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    source = next((FIXTURES / "tf" / "ctl").rglob("*.xplane.pb"))
    target = tmp_path / "logs" / "plugins" / "profile" / "r1" / source.name
    target.parent.mkdir(parents=True)
    shutil.copy(source, target)
    return target.parent


def _steps(run_dir: Path, cache: Path) -> bytes:
    from stepscope.tools.trace_viewer import api

    run = open_run(str(run_dir))
    ctx = ToolContext(run, run.hosts[0].host, ProfileStore(cache_dir=cache))
    api.trace_of(ctx)  # the first window's work: the converted profile's write is held
    body, _ = api.steps(ctx, {})
    background.wait()
    return body


@pytest.fixture
def children(monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen[Any]]:
    """Every process `build_apart` starts, from a trace of any size."""
    started: list[subprocess.Popen[Any]] = []
    popen = subprocess.Popen

    def recorded(*args: Any, **kwargs: Any) -> subprocess.Popen[Any]:
        child = popen(*args, **kwargs)
        started.append(child)
        return child

    monkeypatch.setattr(subprocess, "Popen", recorded)
    monkeypatch.setattr(kept_apart, "APART_MIN_EVENTS", 0)
    return started


def test_a_large_trace_builds_its_steps_in_a_process_of_its_own(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, children: list[Any]
) -> None:
    """Built by another process and read from the store (windows asked meanwhile keep this
    process's GIL): the same steps as built here."""
    monkeypatch.setattr(kept_apart, "APART_MIN_EVENTS", 10**12)
    want = _steps(run_dir, tmp_path / "here")
    assert children == []
    monkeypatch.setattr(kept_apart, "APART_MIN_EVENTS", 0)
    built = count_step_db_builds(monkeypatch, analysis)
    assert _steps(run_dir, tmp_path / "apart") == want
    assert built == []  # not in this process
    assert len(children) == 1 and children[0].returncode == 0
    assert list((tmp_path / "apart" / kept.KIND).rglob("*.npz"))


def test_after_the_child_this_process_reads_the_steps_not_the_step_database(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, children: list[Any]
) -> None:
    """The child keeps the trace viewer's steps on their own beside the step database; this
    process reads those few arrays, never the database's (6.5 ms of CPU to decode at 5,598
    steps, beside the windows asked then: decision 660)."""
    monkeypatch.setattr(kept_apart, "APART_MIN_EVENTS", 10**12)
    want = _steps(run_dir, tmp_path / "here")
    monkeypatch.setattr(kept_apart, "APART_MIN_EVENTS", 0)
    read: list[Path] = []
    reader = kept.read

    def recorded(target: Path) -> Any:
        read.append(target)
        return reader(target)

    monkeypatch.setattr(kept, "read", recorded)
    cache = tmp_path / "apart"
    assert _steps(run_dir, cache) == want
    assert len(children) == 1 and children[0].returncode == 0
    run = open_run(str(run_dir))
    host = run.hosts[0]
    database = kept.entry(host.path, host.host, "step_db:auto", cache)
    steps = kept.entry(host.path, host.host, "trace_steps:auto", cache)
    assert database is not None and database.exists()
    assert steps is not None and steps.exists()
    assert read == [steps]


def test_the_steps_wait_for_the_converted_profiles_write_without_hurrying_it(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, children: list[Any]
) -> None:
    """The child needs the converted profile in the store; the steps' request waits for its
    write without hurrying it, so while windows are computed (a `foreground` section) the
    write waits as every write after an answer does (decision 920: it took p50 41 ms of CPU
    beside each window the page asked before the child), and once they are done it is
    written, the child runs, and the steps are those built in process."""
    from stepscope.model import cache as model_cache
    from stepscope.tools.trace_viewer import api

    monkeypatch.setattr(kept_apart, "APART_MIN_EVENTS", 10**12)
    want = _steps(run_dir, tmp_path / "here")
    monkeypatch.setattr(kept_apart, "APART_MIN_EVENTS", 0)
    monkeypatch.setattr(background, "PAUSE_LIMIT_S", 60.0)  # a pause would outlast the bound
    store_dir = tmp_path / "apart"
    run = open_run(str(run_dir))
    ctx = ToolContext(run, run.hosts[0].host, ProfileStore(cache_dir=store_dir))
    converted = model_cache.entry_dir(run.hosts[0].path, store_dir)
    answered: list[bytes] = []
    asker = threading.Thread(target=lambda: answered.append(api.steps(ctx, {})[0]))
    with background.foreground():  # the page's windows, asked while the steps are built
        api.trace_of(ctx)
        asker.start()
        asker.join(1.0)  # a bound, not a measurement: the write must not happen at all
        assert asker.is_alive() and children == []
        assert background.pending(converted) and not (converted / entries.MANIFEST).exists()
    asker.join(120)
    background.wait()
    assert not asker.is_alive() and answered == [want]
    assert entries.verify(converted)  # deferred, not lost
    assert len(children) == 1 and children[0].returncode == 0


def test_a_failing_child_leaves_the_steps_to_this_process(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, children: list[Any]
) -> None:
    want = _steps(run_dir, tmp_path / "here")  # also apart: the reference is the same steps
    monkeypatch.setattr(kept_apart, "_CHILD", "import sys; sys.exit('broken')")
    built = count_step_db_builds(monkeypatch, analysis)
    assert _steps(run_dir, tmp_path / "failed") == want
    assert built == [1]
    assert children[-1].returncode == 1


def test_a_hanging_child_is_stopped_and_the_steps_built_here(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, children: list[Any]
) -> None:
    monkeypatch.setattr(kept_apart, "APART_MIN_EVENTS", 10**12)
    want = _steps(run_dir, tmp_path / "here")
    monkeypatch.setattr(kept_apart, "APART_MIN_EVENTS", 0)
    monkeypatch.setattr(kept_apart, "_CHILD", HANG)
    monkeypatch.setattr(kept_apart, "APART_BASE_S", 0.5)
    monkeypatch.setattr(kept_apart, "APART_S_PER_EVENT", 0.0)
    assert _steps(run_dir, tmp_path / "hung") == want
    assert len(children) == 1
    assert children[0].poll() is not None  # killed, not left running


def test_a_starved_child_is_not_stopped_for_waiting_for_a_core(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, children: list[Any]
) -> None:
    """The child runs lowered (decision 980): on a busy machine it may wait for a core most
    of the time. Its bound counts its CPU time, not that wait (decision 1020): with readings
    of a child that has used no CPU and waited for a core all along, a bound of nothing
    leaves it to finish (stopped at once by a wall-clock bound), and the steps are its."""
    monkeypatch.setattr(kept_apart, "APART_MIN_EVENTS", 10**12)
    want = _steps(run_dir, tmp_path / "here")
    monkeypatch.setattr(kept_apart, "APART_MIN_EVENTS", 0)
    monkeypatch.setattr(kept_apart, "APART_BASE_S", 0.0)
    monkeypatch.setattr(kept_apart, "APART_S_PER_EVENT", 0.0)
    waited = iter(range(10**15, 10**18, 10**15))  # ns runnable: far more than any interval
    monkeypatch.setattr(kept_apart, "child_times", lambda pid: (0.0, {pid: next(waited)}))
    built = count_step_db_builds(monkeypatch, analysis)
    assert _steps(run_dir, tmp_path / "starved") == want
    assert built == []  # the child's, not rebuilt here
    assert len(children) == 1 and children[0].returncode == 0


def test_a_child_exits_when_its_parent_is_gone(run_dir: Path, tmp_path: Path) -> None:
    """The child watches the pipe on its stdin: when this end closes (the server died or gave
    up), it exits even in the middle of a build."""
    hang_in_build = (
        "import sys, threading; from stepscope.tools import kept_apart as k; "
        "k.KEPT_APART['hang'] = lambda ctx: threading.Event().wait(); "
        "sys.exit(k.child_main(sys.argv[1:]))"
    )
    run = open_run(str(run_dir))
    argv = [sys.executable, "-c", hang_in_build, str(run_dir), run.hosts[0].host]
    child = subprocess.Popen([*argv, str(tmp_path / "store"), "hang"], stdin=subprocess.PIPE)
    try:
        assert child.stdin is not None
        child.stdin.close()
        assert child.wait(timeout=120) == 3
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def _child_says(
    run_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    script: str,
    name: str,
) -> str:
    """Runs ``script`` as the steps' child, asked for ``name``; what it reported as its failure
    (the parent logs it), as the log holds it."""
    monkeypatch.setattr(kept_apart, "_CHILD", script)
    caplog.set_level(logging.INFO, logger=kept_apart.__name__)
    run = open_run(str(run_dir))
    assert not kept_apart.build_apart(str(run_dir), run.hosts[0].host, (name,), None, 60.0)
    return caplog.text


@pytest.mark.skipif(not hasattr(os, "setpriority"), reason="no process priorities here")
def test_the_child_runs_below_the_callers_priority(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Windows asked while the steps are built come first on busy cores (decision 255): the
    child's nice value is the caller's plus `workers.BACKGROUND_NICE` (at most 19). The child
    reports its value once it differs from its parent's (or after a bound, not a measurement:
    the parent sets it just after the start) as its failure, which the parent logs."""
    report = (
        "import os, sys, time; parent = os.getpriority(os.PRIO_PROCESS, os.getppid()); "
        "deadline = time.monotonic() + 10\n"
        "while os.getpriority(os.PRIO_PROCESS, 0) == parent and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "sys.exit(f'nice {os.getpriority(os.PRIO_PROCESS, 0)}')"
    )
    said = _child_says(run_dir, monkeypatch, caplog, report, "x")
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    assert f"nice {min(mine + workers.BACKGROUND_NICE, 19)}" in said


def _autogroups() -> bool:
    try:
        with open(workers.AUTOGROUP_ENABLED) as enabled, open(workers.AUTOGROUP):
            return enabled.read().strip() == "1"
    except OSError:
        return False


@pytest.mark.skipif(not _autogroups(), reason="the kernel groups no sessions here")
def test_the_child_runs_in_a_lowered_scheduling_group_of_its_own(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Linux shares the CPU between sessions' groups before nice values count, so a child
    lowered in its parent's group took a full share from the page's browser while the server
    was idle (decision 980): the child makes a session of its own, whose group runs at
    `workers.BACKGROUND_NICE`. It reports both from inside its build as its failure."""
    report = (
        "import os, sys; from stepscope.tools import kept_apart as k\n"
        "def report(ctx):\n"
        "    group = open('/proc/self/autogroup').read().split()[-1]\n"
        "    sys.exit(f'own session {os.getsid(0) == os.getpid()}, group nice {group}')\n"
        "k.KEPT_APART['report'] = report\n"
        "sys.exit(k.child_main(sys.argv[1:]))"
    )
    with open(workers.AUTOGROUP) as mine:
        before = mine.read()
    said = _child_says(run_dir, monkeypatch, caplog, report, "report")
    assert f"own session True, group nice {workers.BACKGROUND_NICE}" in said
    with open(workers.AUTOGROUP) as mine:  # the caller's own group is left as it was
        assert mine.read() == before


@pytest.mark.skipif(not hasattr(os, "getsid"), reason="no sessions here")
def test_no_session_of_its_own_where_the_kernel_groups_none(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without autogroups a session of its own would gain nothing: nothing is changed (and
    this process, which must keep its session, is never moved)."""
    monkeypatch.setattr(workers, "AUTOGROUP_ENABLED", str(tmp_path / "absent"))
    session = os.getsid(0)
    assert workers.lower_own_group() is False
    assert os.getsid(0) == session
    off = tmp_path / "enabled"
    off.write_text("0\n")
    monkeypatch.setattr(workers, "AUTOGROUP_ENABLED", str(off))
    assert workers.lower_own_group() is False
    assert os.getsid(0) == session
