"""The store's size cap (`stepscope.store.budget`): least recently used entries go first,
entries in use and other writers' temporary files never do, and `stepscope cache`."""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from stepscope import result_cache, tmpfiles
from stepscope.cli.main import main
from stepscope.store import budget, entries, location, values

ENTRY_BYTES = 100_000


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    store = tmp_path / "store"
    monkeypatch.setenv(location.ENV_VAR, str(store))
    monkeypatch.delenv(budget.ENV_VAR, raising=False)
    return store


def _value_entry(root: Path, n: int) -> Path:
    path = location.entry("summaries", location.key("summaries", 1, n), root, suffix=".npz")
    assert values.write_value(path, {"n": n, "a": np.zeros(ENTRY_BYTES, dtype=np.uint8)})
    return path


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_over_cap_write_evicts_least_recently_read_first(
    root: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    old = [_value_entry(root, n) for n in range(4)]
    for path, age in zip(old, (400, 300, 200, 100), strict=True):
        _age(path, age)
    assert values.read_value(old[0]) is not None  # the oldest write, read just now
    monkeypatch.setenv(budget.ENV_VAR, str(int(2.5 * ENTRY_BYTES)))
    caplog.set_level(logging.INFO, logger="stepscope")
    newest = _value_entry(root, 4)  # over the cap: this write evicts
    assert [p.exists() for p in old] == [True, False, False, False]
    assert newest.exists()
    assert "removed the 3 least recently used entries (3 summaries" in caplog.text
    assert sum(e.size_bytes for e in budget.scan(root)) <= 2.5 * ENTRY_BYTES


def test_cap_zero_is_unbounded(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(budget.ENV_VAR, "0")
    paths = [_value_entry(root, n) for n in range(3)]
    for path in paths:
        _age(path, 600)
    assert budget.enforce(root) == budget.Removed(0, 0)
    _value_entry(root, 3)
    assert all(p.exists() for p in paths)


def test_entries_in_use_and_other_writers_temp_files_stay(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = _value_entry(root, 0)  # written just now: another process may be about to read it
    fan = entry.parent
    # A save still running in another live process (our parent), older than the grace time.
    writing = fan / f"{tmpfiles.PREFIX}{tmpfiles._host()}-{os.getppid()}-abc"
    writing.write_bytes(b"x" * ENTRY_BYTES)
    _age(writing, 600)
    monkeypatch.setenv(budget.ENV_VAR, "1K")
    assert budget.enforce(root) == budget.Removed(0, 0)
    assert entry.exists() and writing.exists()
    assert [e.path for e in budget.scan(root)] == [entry]
    assert budget.clear(root).count == 1
    assert writing.exists() and not entry.exists()


def test_directory_entries_read_recently_survive(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    targets = [location.entry("profiles", location.key("p", 1, n), root) for n in range(3)]
    for n, target in enumerate(targets):
        entries.write_arrays(target, {"a": np.zeros(ENTRY_BYTES, np.uint8)}, {"n": n})
        _age(target, 300 - n)
    assert entries.verify(targets[0])  # a read: the oldest becomes the newest
    monkeypatch.setenv(budget.ENV_VAR, str(int(1.5 * ENTRY_BYTES)))
    removed = budget.enforce(root)
    assert removed.count == 2 and removed.size_bytes > 2 * ENTRY_BYTES
    assert [t.exists() for t in targets] == [True, False, False]
    assert not any(p.name.startswith(tmpfiles.PREFIX) for p in targets[1].parent.iterdir())


def test_an_entry_used_after_the_scan_is_kept(root: Path) -> None:
    path = _value_entry(root, 0)
    _age(path, 600)
    (scanned,) = budget.scan(root)
    budget.touch(path)  # another process read it meanwhile
    assert not budget.remove(scanned)
    assert path.exists()


def test_cached_answers_are_touched_when_read(root: Path) -> None:
    result_cache.write("k" * 32, b"answer")
    (entry,) = budget.scan(root)
    _age(entry.path, 600)
    aged = entry.path.stat().st_mtime
    assert result_cache.read("k" * 32) == b"answer"
    (rescanned,) = budget.scan(root)
    assert rescanned.used_s > aged  # the read made it recent again: evicted last


def test_default_cap_is_10_gib_or_a_quarter_of_the_space(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    usage = shutil.disk_usage("/")

    def disk(free: int):
        return lambda _path: usage._replace(free=free)

    monkeypatch.setattr(shutil, "disk_usage", disk(4 << 30))
    assert budget.max_bytes(root, 0) == 1 << 30
    assert budget.max_bytes(root, 4 << 30) == 2 << 30  # the store's own size counts as room
    monkeypatch.setattr(shutil, "disk_usage", disk(1 << 40))
    assert budget.max_bytes(root, 0) == budget.DEFAULT_MAX_BYTES
    monkeypatch.setenv(budget.ENV_VAR, "3G")
    assert budget.max_bytes(root, 0) == 3 << 30


def test_cache_command_shows_and_clears(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _value_entry(root, 0)
    _value_entry(root, 1)
    result_cache.write("k" * 32, b"answer")
    (root / "unsaved_captures").mkdir()
    (root / "unsaved_captures" / "host.xplane.pb").write_bytes(b"user data")
    monkeypatch.setenv(budget.ENV_VAR, "2G")
    assert main(["cache"]) == 0
    out = capsys.readouterr().out
    assert f"cache: {root}" in out and "cap:   2.00 GiB ($STEPSCOPE_CACHE_MAX_BYTES)" in out
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[2:]}
    assert rows["summaries"] == "2" and rows["results"] == "1" and rows["total"] == "3"
    assert main(["cache", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["entries"] == 3 and shown["kinds"]["summaries"]["bytes"] > 2 * ENTRY_BYTES
    assert main(["cache", "--clear"]) == 0
    cleared = capsys.readouterr().out
    assert cleared.startswith("removed 3 entries (") and str(root) in cleared
    assert budget.scan(root) == []
    assert (root / "unsaved_captures" / "host.xplane.pb").read_bytes() == b"user data"


def test_cache_command_rejects_a_bad_cap(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(budget.ENV_VAR, "lots")
    assert main(["cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "$STEPSCOPE_CACHE_MAX_BYTES: not a size: 'lots'" in err
