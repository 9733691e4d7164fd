"""A plain DataLoader's workers reached while a session records (decision 351): the
``DataLoader.__iter__`` hook, the workers' stack samples file, and how both land in the
XSpace. No torch here (a fake DataLoader module): the real loops are in
tests/capture/test_plain_loader_workers.py (integration)."""

from __future__ import annotations

import json
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.capture import loader_hook, loader_workers, worker_sampler
from stepscope.capture.save import CaptureResult, build_xspace
from stepscope.vocab.profiler import CPU_COUNT_STAT, CPU_IDLE_STAT
from stepscope.vocab.pytorch import (
    DATALOADER_BATCH_CPU_STAT,
    DATALOADER_BATCH_CPU_WAIT_STAT,
    DATALOADER_ITER,
)
from tests.support.capture import load_run, named

MS = 1_000_000


class DataLoader:
    """What the hook looks at: ``num_workers``, ``worker_init_fn``, ``persistent_workers``."""

    def __init__(self, num_workers: int = 2, persistent: bool = False) -> None:
        self.num_workers = num_workers
        self.worker_init_fn: Any = None
        self.persistent_workers = persistent
        self._iterator: Any = None
        self.dataset = [1, 2]
        self.seen: list[Any] = []  # worker_init_fn while the workers start

    def __iter__(self) -> Iterator[int]:
        self.seen.append(self.worker_init_fn)
        if self.persistent_workers:
            self._iterator = object()
        return iter(self.dataset)


@pytest.fixture
def fake_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[type[DataLoader]]:
    module = types.ModuleType("torch.utils.data.dataloader")
    kind = type("DataLoader", (DataLoader,), {"__iter__": DataLoader.__iter__})
    module.DataLoader = kind  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch.utils.data.dataloader", module)
    monkeypatch.setattr(loader_workers.tempfile, "tempdir", str(tmp_path))
    try:
        yield kind
    finally:
        loader_workers.arm(False)
        loader_hook.uninstall()
        loader_workers.collect_all(0, 1)  # spools made by the test removed


def test_iter_captures_the_workers_only_while_armed(fake_torch: Any, tmp_path: Path) -> None:
    original = fake_torch.__dict__["__iter__"]
    loader_hook.install()
    loader_hook.install()  # idempotent: one wrapper
    assert fake_torch.__dict__["__iter__"].__wrapped__ is original
    user_fn = print
    loader = fake_torch()
    loader.worker_init_fn = user_fn
    assert list(loader) == [1, 2]  # not armed: torch's own, untouched
    assert loader.seen == [user_fn] and list(tmp_path.iterdir()) == []
    loader_workers.arm(True)
    loader_workers.set_sampler_hz(50)
    assert list(loader) == [1, 2]
    hook = loader.seen[-1]
    assert isinstance(hook, loader_workers.WorkerHook)
    assert (hook.user_fn, hook.hz) is not None and hook.user_fn is user_fn and hook.hz == 50
    assert loader.worker_init_fn is user_fn  # back once the workers are started
    assert os.path.isdir(hook.path)
    # no workers, or workers stepscope already captures: torch's own call
    no_workers = fake_torch(num_workers=0)
    iter(no_workers)
    assert no_workers.seen == [None]
    loader.worker_init_fn = loader_workers.WorkerHook(None, str(tmp_path))
    instrumented = loader.worker_init_fn
    iter(loader)
    assert loader.seen[-1] is instrumented
    loader_hook.uninstall()
    assert fake_torch.__dict__["__iter__"] is original


def test_persistent_workers_are_captured_when_started_only(fake_torch: Any) -> None:
    loader_hook.install()
    loader_workers.arm(True)
    loader = fake_torch(persistent=True)
    iter(loader)  # starts them: captured
    iter(loader)  # reuses them: nothing started, nothing wrapped
    first, second = loader.seen
    assert isinstance(first, loader_workers.WorkerHook) and second is None


def test_a_program_without_torch_data_is_not_hooked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch.utils.data.dataloader", raising=False)
    loader_hook.install()  # never imports torch
    assert "torch.utils.data.dataloader" not in sys.modules
    loader_hook.uninstall()


def _frames() -> tuple[Any, Any, Any]:
    def loop() -> None: ...

    def decode() -> None: ...

    def wait() -> None: ...

    return loop.__code__, decode.__code__, wait.__code__


def _sampler(tmp_path: Path) -> worker_sampler.WorkerSampler:
    path = tmp_path / "samples1.4242.jsonl"
    sampler = worker_sampler.WorkerSampler(str(path), 100, ident=1)
    sampler.file = open(path, "a", buffering=1)  # noqa: SIM115 (what _loop opens)
    assert sampler._write(["h", sampler.interval_ns])
    return sampler


def test_worker_samples_are_written_as_runs_and_read_back(tmp_path: Path) -> None:
    loop, decode, wait = _frames()
    sampler = _sampler(tmp_path)
    busy = ((decode, 7), (loop, 3))  # innermost first, as frames are walked
    idle = ((wait, 9), (loop, 5))
    ten = 10 * MS
    for k in range(7):  # 7 samples of one stack: a run is written every RUN_SAMPLES
        assert sampler._add(100 * MS + k * ten, busy)
    assert sampler._add(170 * MS, idle)
    assert sampler._add(400 * MS, idle)  # 230 ms later: a gap, not one run
    assert sampler._emit(sampler.run)  # what the end of sampling writes
    sampler.file.write("[500000000, 5")  # a line cut by the worker's end
    sampler.file.close()
    got = loader_workers.Collected()
    worker_sampler.read_samples(sampler.path, 0, 405 * MS, got)
    [thread] = got.sampled
    assert (thread.native_id, thread.name) == (4242, "DataLoader worker 1 (pid 4242)")
    stack = f"loop ({Path(__file__).name}:3);decode ({Path(__file__).name}:7)"
    name = Path(__file__).name
    runs = [(r[0] // MS, r[1] // MS, r[2], r[3]) for r in thread.runs]
    assert runs == [
        (100, 150, f"loop ({name}:3);decode ({name}:7)", 5),  # RUN_SAMPLES, cut at the next
        (150, 170, stack, 2),  # ends at the next run
        (170, 180, f"loop ({name}:5);wait ({name}:9)", 1),  # one interval after its sample
        (400, 405, f"loop ({name}:5);wait ({name}:9)", 1),  # cut at the recording's end
    ]
    assert got.warnings == []


def test_a_full_samples_file_stops_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop, decode, _ = _frames()
    sampler = _sampler(tmp_path)
    monkeypatch.setattr(worker_sampler, "MAX_BYTES", sampler.written + 200)
    added = [sampler._add(k * 10 * MS, ((decode, k), (loop, 1))) for k in range(50)]
    assert added[0] and not all(added)  # refused once full
    sampler.file.close()
    last = json.loads(Path(sampler.path).read_text().splitlines()[-1])
    assert last[0] == "full"
    got = loader_workers.Collected()
    worker_sampler.read_samples(sampler.path, 0, 10**12, got)
    assert got.sampled and len(got.warnings) == 1
    assert "DataLoader worker 1 (pid 4242)" in got.warnings[0]
    assert "later samples were dropped" in got.warnings[0]


def test_worker_lines_and_cpu_stats_land_in_the_host_plane() -> None:
    thread = worker_sampler.SampledWorker(4242, "DataLoader worker 1 (pid 4242)")
    thread.runs = [[2 * MS, 6 * MS, "_worker_loop (worker.py:1);decode (ds.py:7)", 3]]
    result = CaptureResult("vm", stepscope.ProfilerOptions(), "logs", "run", 0, MS, 0, 9 * MS)
    result.sampled_threads = [thread]
    result.host_stats = {CPU_COUNT_STAT: 8, CPU_IDLE_STAT: 5.5}
    [host] = [p for p in build_xspace(result).planes if p.name == "/host:CPU"]
    names = {m.id: m.name for m in host.stat_metadata.values()}
    stats = {names[s.metadata_id]: s for s in host.stats}
    assert stats[CPU_COUNT_STAT].int64_value == 8 and stats[CPU_IDLE_STAT].double_value == 5.5
    [line] = host.lines
    assert (line.name, line.display_id) == ("Python samples", 4242)
    assert line.display_name == "Python samples: DataLoader worker 1 (pid 4242)"
    [event] = line.events
    assert host.event_metadata[event.metadata_id].name == "decode (ds.py:7)"
    # from the recording's start (1 ms), to the run's end
    assert (line.timestamp_ns + event.offset_ps // 1000, event.duration_ps) == (MS, 4 * MS * 1000)


def test_a_batch_line_carries_the_worker_cpu_time(tmp_path: Path) -> None:
    spool = loader_workers.Spool(str(tmp_path), "DataLoader(X)", 9, 2)
    path = tmp_path / "worker1.4242.jsonl"
    log = loader_workers._WorkerLog(str(tmp_path), 1)
    log.path = str(path)
    log.write(100, 150, 160, 170, cpu_ns=42, wait_ns=7)
    log.write(200, 250, 260, 270)  # not measured
    log.file.close()
    with open(path, "a") as f:
        f.write("[2, 300, 350, 360, 370]\n")  # a line of an older worker hook
    warnings: list[str] = []
    buf = loader_workers._read(spool, str(path), 0, 1_000, warnings)
    assert buf is not None and warnings == []
    batches = [e for e in buf.events if e[0].endswith("::Worker")]
    assert [e[4].get(DATALOADER_BATCH_CPU_STAT) for e in batches] == [42, None, None]
    assert [e[4].get(DATALOADER_BATCH_CPU_WAIT_STAT) for e in batches] == [7, None, None]
    assert loader_workers._WorkerLog(str(tmp_path), 0).cpu_wait_ns() >= 0  # Linux: read
    assert [e[4]["batch"] for e in batches] == [1, 3, 5]


def test_a_full_batch_file_keeps_its_batches_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loader_workers, "MAX_BATCHES", 2)
    spool = loader_workers.Spool(str(tmp_path), "DataLoader(X)", 9, 2)
    log = loader_workers._WorkerLog(str(tmp_path), 0)
    for k in range(4):
        log.write(100 * k, 100 * k + 50, 100 * k + 60, 100 * k + 70)
    log.file.close()
    warnings: list[str] = []
    buf = loader_workers._read(spool, log.path, 0, 10_000, warnings)
    assert buf is not None and len([e for e in buf.events if e[0].endswith("::Worker")]) == 2
    assert warnings == [
        f"stepscope: DataLoader worker 0 (pid {os.getpid()}): 2 batches written; its later "
        "batches were not recorded"
    ]


class _Sampler:
    batch_size = 16


class SetLoader(DataLoader):
    """A loader with torch's settings as attributes: a batch sampler's batch size, and a
    property that raises (a subclass's) for one of them."""

    prefetch_factor = 4
    pin_memory = True
    in_order = False
    batch_size = None
    batch_sampler = _Sampler()

    @property
    def persistent_workers(self) -> bool:  # type: ignore[override]
        raise RuntimeError("not now")

    @persistent_workers.setter
    def persistent_workers(self, value: bool) -> None:
        pass


def test_the_loaders_own_settings_go_with_each_batch(fake_torch: Any, tmp_path: Path) -> None:
    """Decision 425: the advice quotes the loader's own settings, so the capture keeps them."""
    loader_hook.install()
    loader_workers.arm(True)
    loader = type("DataLoader", (SetLoader,), {"__iter__": DataLoader.__iter__})(num_workers=3)
    with loader_workers.capturing(loader, "DataLoader(X)", 9):
        pass
    spool = loader_workers._registry.spools[-1]
    assert spool.settings == {
        "dataloader_num_workers": 3,
        "dataloader_prefetch_factor": 4,
        "dataloader_pin_memory": 1,
        "dataloader_in_order": 0,
        "dataloader_batch_size": 16,
    }
    log = loader_workers._WorkerLog(spool.path, 1)
    log.write(100, 150, 160, 170)
    log.file.close()
    buf = loader_workers._read(spool, log.path, 0, 1_000, [])
    assert buf is not None
    [batch] = [e[4] for e in buf.events if e[0].endswith("::Worker")]
    assert batch["dataloader_prefetch_factor"] == 4 and batch["dataloader_in_order"] == 0
    inner = [e[4] for e in buf.events if not e[0].endswith("::Worker")]
    assert all("dataloader_batch_size" not in stats for stats in inner)  # once a batch


def test_an_iter_that_starts_workers_is_marked_on_the_loops_thread(
    fake_torch: Any, tmp_path: Path
) -> None:
    """The epoch's wait for its workers, before its first fetch (decision 562): one mark per
    ``iter()`` that starts workers, none for a loader without workers."""
    stepscope.start(tmp_path, stepscope.ProfilerOptions(device_tracer_level=0, python_sampler_hz=0))
    assert list(fake_torch()) == [1, 2]
    assert list(fake_torch(num_workers=0)) == [1, 2]
    run = stepscope.stop()
    marks = named(load_run(run), DATALOADER_ITER)
    assert [m["stats"] for m in marks] == [{"loader": "DataLoader(list)"}]


def test_a_persistent_loaders_later_iter_is_marked_too(fake_torch: Any, tmp_path: Path) -> None:
    """A persistent loader's next pass starts no workers, but its epoch begins at its
    ``iter()`` all the same (decision 605): each pass is marked, its workers captured once."""
    stepscope.start(tmp_path, stepscope.ProfilerOptions(device_tracer_level=0, python_sampler_hz=0))
    loader = fake_torch(persistent=True)
    for _ in range(3):
        assert list(loader) == [1, 2]
    run = stepscope.stop()
    marks = named(load_run(run), DATALOADER_ITER)
    assert [m["stats"] for m in marks] == [{"loader": "DataLoader(list)"}] * 3
    first, *later = loader.seen
    assert isinstance(first, loader_workers.WorkerHook) and later == [None, None]
