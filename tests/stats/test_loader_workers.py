"""DataLoader worker processes captured into the rank's profile (issue #26): the spool the
workers write and `collect` reads, and the input pipeline analyzer's rows built from it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from stepscope.capture import loader_workers as capture
from stepscope.stats import build_step_db
from stepscope.stats.input.loader_workers import loader_workers
from tests.support.analysis import MS, build
from tests.support.loader import LOADER_ID, STAGE, loader_space


def _job(made_ms: list[tuple[int, int, int, int]], asks_ms: list[tuple[int, int]]) -> Any:
    return build(loader_space(made_ms, asks_ms))


def test_ready_waited_and_transfer_per_worker() -> None:
    """Worker 0 makes batches 0 and 2 late (the step waits 5 and 3 ms, then 1 ms each to get
    them); worker 1's batches 1 and 3 are done before the step asks (1 ms to get each)."""
    profile = _job(
        made_ms=[(0, 14, 15, 15), (0, 8, 9, 9), (15, 28, 30, 30), (10, 18, 20, 20)],
        asks_ms=[(10, 16), (17, 18), (27, 31), (32, 33)],
    )
    db = build_step_db(profile)
    [found] = loader_workers(profile, db)
    assert found.loader == STAGE
    w0, w1 = found.rows
    assert (w0.worker, w0.batches, w0.ready_batches, w0.waited_batches) == (
        "DataLoader worker 0 (pid 100)", 2, 0, 2)  # fmt: skip
    assert (w0.wait_ms, w0.transfer_ms) == (5.0 + 3.0, 1.0 + 1.0)
    assert (w0.get_item_ms, w0.collate_ms, w0.busy_ms) == (14.0 + 13.0, 1.0 + 2.0, 30.0)
    assert (w1.ready_batches, w1.waited_batches, w1.wait_ms, w1.transfer_ms) == (2, 0, 0.0, 2.0)
    # worker 1 made batch 3 over 10..20 ms, within the steps' span (from 10 ms)
    span_ns = int((db.start_ns + db.dur_ns).max() - db.start_ns.min())
    assert int(db.start_ns.min()) == 10 * MS
    assert w1.busy_percent == pytest.approx(100 * 10 * MS / span_ns, abs=1e-3)
    assert found.slowest_stage == "GetItem"
    assert (found.ready_batches, found.waited_batches) == (2, 2)
    # every ask's time is either waiting for the batch to be made or getting it
    total = sum(r.wait_ms + r.transfer_ms for r in found.rows)
    assert total == (16 - 10) + (18 - 17) + (31 - 27) + (33 - 32)


def test_a_profile_without_workers_has_none() -> None:
    profile = _job(made_ms=[], asks_ms=[(10, 16)])
    assert loader_workers(profile, build_step_db(profile)) == ()


class DataLoader:  # the name and attributes `is_worker_loader` looks for, without torch
    def __init__(self, num_workers: int) -> None:
        self.num_workers = num_workers
        self.worker_init_fn = None


def test_workers_spool_is_read_back_and_removed(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(capture.tempfile, "tempdir", str(tmp_path))
    loader = DataLoader(num_workers=2)
    assert capture.is_worker_loader(loader) and not capture.is_worker_loader(DataLoader(0))
    seen = []
    loader.worker_init_fn = seen.append  # the user's own hook
    user_fn = loader.worker_init_fn
    with capture.capturing(loader, "DataLoader", LOADER_ID):
        hook = loader.worker_init_fn
        assert isinstance(hook, capture.WorkerHook)
    assert loader.worker_init_fn is user_fn  # back once the workers are started
    hook.user_fn(1)  # what the worker calls first
    assert seen == [1]
    log = capture._WorkerLog(hook.path, 1)
    log.write(100, 150, 160, 170)
    log.write(200, 250, 260, 270)
    log.write(10_000, 10_001, 10_002, 10_003)  # after the recording
    with open(log.path, "a") as f:
        f.write("[3, 300, 35")  # cut by the worker's exit
    log.file.close()
    [buf] = capture.collect(0, 1_000)
    assert buf.native_id == os.getpid() and buf.name == f"DataLoader worker 1 (pid {os.getpid()})"
    names = [e[0] for e in buf.events]
    assert (
        names == [f"{STAGE}::Worker", f"{STAGE}::Worker::GetItem", f"{STAGE}::Worker::Collate"] * 2
    )
    assert [e[4]["batch"] for e in buf.events[::3]] == [1, 3]  # worker 1's 1st and 2nd batch
    assert buf.events[0][1:4] == (100, 170, 0) and buf.events[2][1:3] == (150, 160)
    assert list(tmp_path.iterdir()) == []  # the spool is gone
    assert capture.collect(0, 1_000) == []


def test_a_worker_outliving_the_session_stops_writing(tmp_path: Path) -> None:
    """A persistent worker keeps making batches after `stop()` removed its spool: it stops
    writing within `CHECK_EVERY` batches instead of filling a file nobody reads."""
    log = capture._WorkerLog(str(tmp_path), 0)
    log.write(1, 2, 3, 4)
    os.unlink(log.path)
    for k in range(capture.CHECK_EVERY):
        log.write(k, k, k, k)
    assert log.broken and log.file.closed and not os.path.exists(log.path)
