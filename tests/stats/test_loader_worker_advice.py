"""A plain DataLoader's worker processes (decisions 351-353): the workers' stack samples come
back as ``Python samples`` lines, and the analysis names what the workers spend their batches
in and what to change (add workers, or the main process is the bottleneck)."""

from __future__ import annotations

from stepscope.cli.report_render import _loader_workers
from stepscope.stats import build_step_db
from stepscope.stats.input.loader_verdict import (
    BUSY_PERCENT,
    IDLE_BUSY_PERCENT,
    INPUT_WAIT_PERCENT,
)
from stepscope.vocab.pytorch import DATALOADER_NEXT
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build
from tests.support.loader import (
    PLAIN_STAGE,
    SAMPLES_OFFSET,
    WORKER_LOOP,
    judge_loader,
    plain_loader_space,
)


def test_busy_workers_with_idle_cores_are_told_to_add_workers() -> None:
    found = judge_loader(plain_loader_space(step_ms=100, wait_ms=60, busy_ms=98, cpu=(8, 5.5)))
    assert found.verdict == "workers_busy"
    assert found.workers == 2 and found.busy_percent >= BUSY_PERCENT
    assert found.input_percent >= INPUT_WAIT_PERCENT
    assert (found.cores, found.idle_cores) == (8, 5.5)
    assert found.ms_per_batch == 98.0 and [r.ms_per_batch for r in found.rows] == [98.0, 98.0]
    assert "Add workers: 5.5 of 8 cores were idle" in found.advice
    # the samples inside the batches only (the wait for an index is outside them): decode 8
    # of 10, collate 2 of 10; the worker loop and fetch, on every sample, say nothing
    # (named by __getitem__, the deepest function on every sample: its own lines show there)
    assert [f.function for f in found.functions] == [
        "__getitem__ (ds.py)",
        "decode (ds.py)",
        "collate (collate.py)",
    ]
    assert found.functions[0].percent == 100.0
    decode = found.functions[1]
    assert decode.percent == 80.0 and decode.ms_per_batch == 0.8 * 98.0
    assert decode.stack == f"{WORKER_LOOP};__getitem__ (ds.py:20);decode (ds.py)"
    assert found.samples == 2 * 6 * 10
    assert "their stack samples: __getitem__ (ds.py) 100%, decode (ds.py) 80%" in found.advice
    # the summary (above the web page's table) names them too
    assert found.summary.endswith(
        "Their stack samples in the batches: __getitem__ (ds.py) 100%, decode (ds.py) 80%, "
        "collate (collate.py) 20%."
    )


def test_torch_worker_machinery_is_not_named() -> None:
    """Samples split between the dataset and torch's collate: what is on every sample is
    torch's worker loop and fetcher, which says nothing."""
    found = judge_loader(
        plain_loader_space(step_ms=100, wait_ms=60, busy_ms=98, collate_in_fetch=True)
    )
    names = [f.function for f in found.functions]
    assert names == ["decode (ds.py)", "collate (collate.py)"]  # decode: __getitem__'s callee
    assert [f.percent for f in found.functions] == [80.0, 20.0]


def test_torch_worker_machinery_is_not_named_even_when_not_on_every_sample() -> None:
    """A sample inside a batch but outside torch's ``fetch`` (its worker loop between two
    calls) made ``fetch (fetch.py) 99%`` the workers' top function in a user run whose
    collate_fn did the work."""
    space = plain_loader_space(step_ms=100, wait_ms=60, busy_ms=98, collate_in_fetch=True)
    samples = space.plane("/host:CPU").line(SAMPLES_OFFSET + 100)
    stack = "_worker_loop (worker.py:374)"
    samples.event("_worker_loop", 5 * MS, 1 * MS, {"stack": stack, "samples": 1})
    names = [f.function for f in judge_loader(space).functions]
    assert names == ["decode (ds.py)", "collate (collate.py)"]


def test_busy_workers_without_idle_cores_are_told_to_make_the_work_faster() -> None:
    found = judge_loader(plain_loader_space(step_ms=100, wait_ms=60, busy_ms=98, cpu=(2, 0.1)))
    assert found.verdict == "workers_busy"
    assert "0.1 of 2 cores were idle" in found.advice
    assert "make __getitem__ cheaper" in found.advice  # where the batches' time goes
    assert "Add workers:" not in found.advice


def test_busy_workers_that_mostly_wait_are_told_to_add_workers_without_idle_cores() -> None:
    """A dataset sleeping or reading files: its workers are busy, their CPU is not: more
    workers overlap the waits even on a machine without an idle core."""
    found = judge_loader(
        plain_loader_space(step_ms=100, wait_ms=60, busy_ms=98, cpu=(2, 0.1), cpu_ms=10)
    )
    assert found.verdict == "workers_busy"
    assert found.cpu_percent == round(100 * 10 / 98, 3)
    assert [r.cpu_ms for r in found.rows] == [60.0, 60.0]  # 6 batches of 10 ms each
    assert "Their batches mostly wait off the CPU (90% of their time" in found.advice
    # a worker makes a batch in 98 ms, the steps do 40 ms of other work: 3 keep up
    assert "add workers, they need little CPU: num_workers=3 (now 2)" in found.advice
    assert "cheaper" not in found.advice
    busy_cpu = judge_loader(
        plain_loader_space(step_ms=100, wait_ms=60, busy_ms=98, cpu=(2, 0.1), cpu_ms=90)
    )
    assert "make __getitem__ cheaper" in busy_cpu.advice  # computing: the cores matter


def test_busy_workers_waiting_for_a_cpu_are_not_told_to_add_workers() -> None:
    """Little CPU time, but because the cores were busy (runnable, not running): more
    workers would wait for the same cores."""
    found = judge_loader(
        plain_loader_space(
            step_ms=100, wait_ms=60, busy_ms=98, cpu=(2, 0.1), cpu_ms=30, cpu_wait_ms=60
        )
    )
    assert found.cpu_wait_percent == round(100 * 60 / 98, 3)
    assert [r.cpu_wait_ms for r in found.rows] == [360.0, 360.0]
    assert "They waited for a CPU 61% of their time (computing 31%)" in found.advice
    assert "add workers" not in found.advice and "make __getitem__ cheaper" in found.advice
    # measured on this shared machine: more workers took a larger share of it (decision 392)
    assert "more workers take a larger share of it from them" in found.advice


def test_idle_workers_while_the_steps_wait_point_at_the_main_process() -> None:
    found = judge_loader(plain_loader_space(step_ms=100, wait_ms=60, busy_ms=20))
    assert found.busy_percent <= IDLE_BUSY_PERCENT
    assert found.verdict == "workers_idle"
    assert "the loop waits for them to come across from the workers" in found.advice
    assert (found.cores, found.idle_cores) == (0, -1.0)  # not recorded: not claimed
    assert found.cpu_percent == -1.0 and found.rows[0].cpu_ms == -1.0
    assert found.cpu_wait_percent == -1.0 and found.rows[0].cpu_wait_ms == -1.0


def test_workers_that_keep_up_get_no_change_advised() -> None:
    found = judge_loader(plain_loader_space(step_ms=100, wait_ms=2, busy_ms=98))
    assert found.input_percent < INPUT_WAIT_PERCENT
    assert found.verdict == "keeping_up"
    assert "keep up" in found.advice


def test_report_shows_each_worker_and_their_functions() -> None:
    found = judge_loader(plain_loader_space(step_ms=100, wait_ms=60, busy_ms=98, cpu=(8, 5.5)))
    text = "\n".join(_loader_workers(found, 80, recommended=""))
    assert f"DataLoader workers of {PLAIN_STAGE}" in text
    assert "worker 0 (pid 100)" in text and "worker 1 (pid 101)" in text
    assert "98.00 ms/batch" in text and "decode (ds.py)" in text
    assert "cores were idle" in " ".join(text.split())  # not in the recommendation: said here
    shown = "\n".join(_loader_workers(found, 80, recommended=found.advice))
    assert "cores were idle" not in shown
    assert max(len(line) for line in text.splitlines()) <= 80


def test_worker_lines_hold_no_steps_and_no_step_time() -> None:
    """A plain loop has no step markers: the steps are inferred from the loop's repeats. The
    workers' batches repeat too (and take more time than the loop's own events), in other
    processes: they are neither the steps nor the steps' time."""
    builder = XSpaceBuilder("synthetic")
    host = builder.plane("/host:CPU")
    main = host.line(1, "MainThread")
    worker = host.line(100, "DataLoader worker 0 (pid 100)")
    for k in range(8):
        t = k * 100
        main.event(f"{DATALOADER_NEXT}#_MultiProcessingDataLoaderIter.__next__", t * MS, 60 * MS)
        main.event("aten::addmm", (t + 60) * MS, 10 * MS)  # then 30 ms untraced
        stats = {"parent_id": 9, "worker": 0, "batch": k}
        worker.event(f"{PLAIN_STAGE}::Worker", t * MS, 98 * MS, stats)
        worker.event(f"{PLAIN_STAGE}::Worker::GetItem", t * MS, 97 * MS, stats)
    profile = build(builder)
    db = build_step_db(profile)
    assert db.n_steps >= 6 and DATALOADER_NEXT in db.description
    # each step: its 60 ms wait is input, not the worker's 98 ms of batch
    assert db.limit_ns()["input"].tolist() == [60 * MS] * db.n_steps
