"""Issue #13 item 11: a damaged cache entry is rebuilt, never read; killed saves are swept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from stepscope import tmpfiles
from stepscope.model import Profile, cache, open_host, open_run
from stepscope.stats.trace_index.index import index_dir, open_trace_index
from stepscope.store import background, entries


def _open(path: Path) -> Profile:
    profile = open_host(open_run(str(path.parent)).hosts[0])
    background.wait()  # the entry is written after the answer
    return profile


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) - 9] ^= 0x40  # inside the array data, after the .npy header
    path.write_bytes(bytes(data))


def _swap_for_another_array(path: Path) -> None:
    array = np.load(path)
    np.save(path, np.zeros_like(array))  # same shape and size: only a checksum sees it


def _edit_header(path: Path) -> None:
    header = json.loads(path.read_text())
    header["hostname"] = "someone-else"
    path.write_text(json.dumps(header))


DAMAGES: dict[str, tuple[str, Callable[[Path], None]]] = {
    "truncated npy": ("start_ns.npy", _truncate),
    "flipped byte": ("dur_ns.npy", _flip_a_byte),
    "zeroed array of the same size": ("start_ns.npy", _swap_for_another_array),
    "edited header": ("header.json", _edit_header),
    "missing manifest": ("manifest.json", Path.unlink),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_damaged_entry_is_rebuilt_with_the_same_numbers(host_file: Path, damage: str) -> None:
    first = _open(host_file)
    entry = cache.entry_dir(str(host_file))
    name, damage_it = DAMAGES[damage]
    damage_it(entry / name)
    assert not entries.verify(entry)
    second = _open(host_file)  # was EOFError (truncated) or silently different numbers
    np.testing.assert_array_equal(first.start_ns, second.start_ns)
    np.testing.assert_array_equal(first.dur_ns, second.dur_ns)
    assert second.hostname == first.hostname
    assert entries.verify(entry)  # rewritten
    assert isinstance(_open(host_file).start_ns.base, np.memmap)  # read from the cache again


def test_damaged_trace_index_is_rebuilt(host_file: Path) -> None:
    profile = _open(host_file)
    built = open_trace_index(profile)
    background.wait()
    target = index_dir(profile)
    assert target is not None
    _swap_for_another_array(target / "start_ns.npy")
    again = open_trace_index(profile)
    np.testing.assert_array_equal(built.start_ns, again.start_ns)
    background.wait()
    assert entries.verify(target)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_stale_temporary_entries_are_removed(host_file: Path) -> None:
    entry = cache.entry_dir(str(host_file))
    parent = entry.parent
    parent.mkdir(parents=True)
    host = tmpfiles.tmp_prefix().split("-")[1]
    killed = parent / f".tmp-{host}-{_dead_pid()}-abc"  # a save killed by SIGKILL
    killed.mkdir()
    (killed / "start_ns.npy").write_bytes(b"x" * 1000)
    old = parent / ".tmp-k3j2h1"  # an older stepscope's name, two hours old
    old.mkdir()
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    running = parent / f".tmp-{host}-{os.getppid()}-def"  # a save still in progress
    running.mkdir()
    _open(host_file)
    assert not killed.exists() and not old.exists()
    assert running.exists()
    assert entry.is_dir()
