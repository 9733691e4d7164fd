"""Store entries are written after the answer: the caller gets its profile and trace index
while the entries are still being written, and a later open finds them complete."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from stepscope import workers
from stepscope.model import cache, open_host, open_run
from stepscope.stats.trace_index import index as trace_index
from stepscope.store import background, entries


def _held(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> threading.Event:
    """Make ``owner.name`` (a writer) wait for the returned event before writing."""
    release = threading.Event()
    write = getattr(owner, name)

    def held(*args: object) -> None:
        assert release.wait(30)
        write(*args)

    monkeypatch.setattr(owner, name, held)
    return release


def test_profile_answers_before_its_cache_is_written(
    host_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = _held(monkeypatch, cache, "save")
    host = open_run(str(host_file.parent)).hosts[0]
    first = open_host(host)  # returns while the save waits
    entry = cache.entry_dir(str(host_file))
    assert background.pending(entry) and not entry.exists()
    release.set()
    second = open_host(host)  # waits for this process' own write, then reads it
    assert not background.pending(entry) and entries.verify(entry)
    assert isinstance(second.start_ns.base, np.memmap)
    np.testing.assert_array_equal(first.start_ns, second.start_ns)


def test_trace_index_answers_before_it_is_written(
    host_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = open_host(open_run(str(host_file.parent)).hosts[0], use_cache=False)
    release = _held(monkeypatch, trace_index, "save_index")
    built = trace_index.open_trace_index(profile)
    target = trace_index.index_dir(profile)
    assert target is not None and background.pending(target) and not target.exists()
    release.set()
    background.wait()
    assert entries.verify(target)
    loaded = trace_index.load_index(target)
    assert loaded is not None
    np.testing.assert_array_equal(built.order, loaded.order)


def test_the_index_save_builds_its_name_index_after_the_profiles_write(
    host_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Decision 571: the index's save builds its name index (seconds of CPU at 10M events)
    # only once the converted profile is written, the write the steps' child waits for.
    entry = cache.entry_dir(str(host_file))
    # The profile's write is held until the index's save has shown what it does beside it:
    # begun the names (the bug) or begun waiting for this write (`background.after`). A save
    # that did neither within 2 s would let the write go on unseen.
    shown = threading.Event()
    while_written: list[bool] = []
    save, build, after = cache.save, trace_index.build_name_index, background.after

    def slow_save(*args: object) -> None:
        shown.wait(2)
        save(*args)

    def build_names(profile: object) -> object:
        while_written.append(background.pending(entry))
        shown.set()
        return build(profile)

    def waits_for(target: Path) -> None:
        if target == entry:
            shown.set()
        after(target)

    monkeypatch.setattr(cache, "save", slow_save)
    monkeypatch.setattr(background, "after", waits_for)
    monkeypatch.setattr(trace_index, "build_name_index", build_names)
    profile = open_host(open_run(str(host_file.parent)).hosts[0])  # queues the profile's write
    trace_index.open_trace_index(profile)  # then the index's save
    background.wait()
    assert while_written == [False]
    assert entries.verify(entry) and entries.verify(trace_index.index_dir(profile) or entry)


def test_windows_from_the_index_in_memory_and_in_the_store_are_the_same_bytes(
    host_file: Path,
) -> None:
    # A server answers from the profile and index it built; a later one (or the same after a
    # restart) from the store's copies, memory-mapped: the page must get the same windows.
    from stepscope.tools.trace_viewer import api

    host = open_run(str(host_file.parent)).hosts[0]
    profile = open_host(host)  # converted here; written in the background
    built = trace_index.open_trace_index(profile)
    background.wait()
    target = trace_index.index_dir(profile)
    assert target is not None
    stored_profile = cache.load(cache.entry_dir(str(host_file)))  # the store's copies, read
    stored = trace_index.load_index(target)  # back as a later server reads them
    assert stored_profile is not None and stored is not None
    origin, end = int(built.origin_ns), int(built.end_ns)
    third = (end - origin) // 3
    for t0, t1, res in (
        (origin, end, 8000),
        (origin + 1, end, 1400),
        (origin + third, end - third, 333),
    ):
        for form in ("plain", "compact"):
            answers = [
                api._window_answer(p, index, t0, t1, res, None, True, form)
                for p, index in ((profile, built), (stored_profile, stored))
            ]
            assert answers[0] == answers[1], (t0, t1, res, form)
    assert api.step_columns(built, origin) == api.step_columns(stored, origin)


def test_failed_write_is_a_warning(
    host_file: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refused(*_args: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cache, "save", refused)
    profile = open_host(open_run(str(host_file.parent)).hosts[0])
    background.wait()
    assert profile.n_events > 0
    assert "could not write cache" in caplog.text and "Permission denied" in caplog.text


def test_a_write_that_fails_on_a_bug_is_a_warning_not_a_dead_thread(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Only an OSError was caught: any other error killed the writer thread with a traceback
    # in the middle of the user's output.
    died: list[BaseException | None] = []
    before = threading.excepthook
    threading.excepthook = lambda args: died.append(args.exc_value)
    try:

        def buggy() -> None:
            raise TypeError("Object of type PosixPath is not JSON serializable")

        background.write_later(tmp_path / "entry", buggy, "cache")
        background.wait()
    finally:
        threading.excepthook = before
    assert died == []
    assert "could not write cache" in caplog.text and "PosixPath" in caplog.text


def test_writes_wait_for_the_answer_being_computed(tmp_path: Path) -> None:
    """A write queued in a `foreground` section starts when the section ends (it took CPU
    from the trace viewer's first window); one that is waited for starts at once."""
    answering = [True]
    seen: list[bool] = []
    written = threading.Event()

    def write() -> None:
        seen.append(answering[0])
        written.set()

    with background.foreground():
        background.write_later(tmp_path / "a", write, "test entry")
        assert not written.wait(0.5)  # a bound, not a measurement: it must not start at all
        answering[0] = False
    background.wait()
    assert seen == [False]

    def waits_inside() -> None:  # a reader in a section waiting for its own entry
        with background.foreground():
            background.write_later(tmp_path / "b", lambda: seen.append(True), "test entry")
            background.wait(tmp_path / "b")

    reader = threading.Thread(target=waits_inside)
    reader.start()
    reader.join(30)
    assert not reader.is_alive() and seen == [False, True]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own priority")
def test_a_write_queued_while_answering_runs_below_the_answers(tmp_path: Path) -> None:
    """Windows the page asks for while the entries are written come first on busy cores
    (decision 255): a write queued in a `foreground` section runs on a thread whose nice
    value is the caller's plus `workers.BACKGROUND_NICE` (at most 19); one queued outside
    any section (a command's writes before its exit) keeps the caller's."""
    seen: dict[str, int] = {}

    def write(name: str) -> None:
        seen[name] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    with background.foreground():
        background.write_later(tmp_path / "a", lambda: write("answering"), "test entry")
    background.write_later(tmp_path / "b", lambda: write("plain"), "test entry")
    background.wait()
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert seen == {"answering": min(mine + workers.BACKGROUND_NICE, 19), "plain": mine}


def test_a_write_queued_from_a_daemon_thread_is_finished_before_exit(tmp_path: Path) -> None:
    """A server started in a script (`start_server`) answers on daemon threads; its writes
    must not inherit that, or the interpreter's exit kills them half-way and the next run
    converts and indexes the profile again (decision 401)."""
    release = threading.Event()
    made: list[threading.Thread] = []

    def queue() -> None:
        background.write_later(tmp_path / "from-daemon", lambda: release.wait(30), "test entry")
        made.extend(t for t in threading.enumerate() if t.name == "stepscope-write-from-daemon")

    caller = threading.Thread(target=queue, daemon=True)
    caller.start()
    caller.join(30)
    release.set()
    background.wait()
    assert [t.daemon for t in made] == [False]


def _gated_writer(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[np.ndarray, threading.Event, Callable[[Path], None]]:
    """A store entry's write in 50 pieces (each a place to pause) that starts once ``go`` is
    set: the values it writes, ``go``, and the write."""
    monkeypatch.setattr(entries, "_PIECE", 16)
    values = np.arange(100, dtype=np.int64)
    go = threading.Event()

    def write(target: Path) -> None:
        assert go.wait(30)
        entries.write_arrays(target, {"a": values}, {})

    return values, go, write


def test_a_write_under_way_pauses_while_an_answer_is_computed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store write that has started waits at its next piece while a `foreground` section
    runs (a trace window asked during the trace index's save, decision 795), and goes on when
    the section ends; a section that waits for that very write (`wait`) gets it written."""
    values, go, write = _gated_writer(monkeypatch)
    first, second = tmp_path / "first", tmp_path / "second"
    background.write_later(first, lambda: write(first), "test entry")
    with background.foreground():
        go.set()
        threading.Event().wait(0.5)  # a bound, not a measurement: it must not finish at all
        assert background.pending(first) and not first.exists()
    background.wait(first)
    assert entries.verify(first)
    np.testing.assert_array_equal(entries.array(first, "a"), values)

    monkeypatch.setattr(background, "PAUSE_LIMIT_S", 60.0)  # a pause would outlast the join
    with background.foreground():
        background.write_later(second, lambda: write(second), "test entry")
        waiter = threading.Thread(target=background.wait, args=(second,))
        waiter.start()  # waited for in the section: the write neither waits nor pauses
        waiter.join(20)
        assert not waiter.is_alive()
    assert entries.verify(second)


def test_a_write_waited_for_by_after_still_pauses_and_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`after` waits for a write without hurrying it: the write still pauses at its pieces
    while an answer is computed (the converted profile's write that the steps' child waits
    for, beside the windows the page asks before the child: decision 920), and is written
    whole once the section ends. Called inside a section it hurries the write, whose start
    would wait for that section's end."""
    monkeypatch.setattr(background, "PAUSE_LIMIT_S", 60.0)  # a pause would outlast the bound
    values, go, write = _gated_writer(monkeypatch)
    first, second = tmp_path / "first", tmp_path / "second"
    background.write_later(first, lambda: write(first), "test entry")
    waiter = threading.Thread(target=background.after, args=(first,))
    waiter.start()  # the steps' request, waiting for the converted profile
    with background.foreground():  # a window asked meanwhile
        go.set()
        waiter.join(0.5)  # a bound, not a measurement: the write must not finish at all
        assert waiter.is_alive() and background.pending(first) and not first.exists()
    waiter.join(30)
    assert not waiter.is_alive()
    assert entries.verify(first)  # deferred, not lost
    np.testing.assert_array_equal(entries.array(first, "a"), values)

    def waits_inside() -> None:  # a reader in a section waiting for an entry queued there
        with background.foreground():
            background.write_later(second, lambda: write(second), "test entry")
            background.after(second)

    reader = threading.Thread(target=waits_inside)
    reader.start()
    reader.join(30)
    assert not reader.is_alive() and entries.verify(second)
