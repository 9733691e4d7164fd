"""The DataLoader workers' verdict reads what the workers did while the loop waited for a
batch, and every verdict says what to change (decisions 392-394)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stepscope.cli.report_render import _loader_workers
from stepscope.model import open_run
from stepscope.stats.input.loader_verdict import busy_while_waiting
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from stepscope.vocab.pytorch import DATALOADER_BATCH_CPU_STAT as CPU
from stepscope.vocab.pytorch import DATALOADER_NEXT
from stepscope.xspace.builder import XSpaceBuilder
from tests.pod.builders import write_run
from tests.support.analysis import MS
from tests.support.loader import (
    LOOP_NEXT,
    PLAIN_STAGE,
    judge_loader,
    ordered_loader_space,
    plain_loader_space,
)


def _tool(tmp_path: Path, space: XSpaceBuilder, name: str) -> dict:
    run = open_run(write_run(tmp_path / "logs", [space]))
    [host] = [h.host for h in run.hosts]
    return output.to_json(get_tool(name).build(ToolContext(run, host, ProfileStore())))


def test_workers_busy_while_the_loop_waits_are_busy_though_idle_while_it_computes() -> None:
    """A user run (loop2.py, 2 workers): busy 78% of the steps' span -- idle while slower
    steps computed, their prefetched batches made -- and 99% while the loop waited: they
    were what it waited for ("partly busy", with no change said, before)."""
    found = judge_loader(plain_loader_space(step_ms=100, wait_ms=60, busy_ms=60, cpu=(8, 5.5)))
    assert found.busy_percent == 60.0
    assert found.busy_waiting_percent == 100.0
    assert found.verdict == "workers_busy"
    assert "busy 100% while the loop waited for a batch" in found.advice
    # a worker makes a batch in 60 ms, the steps do 40 ms of other work: 2 would do, and
    # "add" means at least one more
    assert "5.5 of 8 cores were idle while recording: num_workers=3 (now 2)." in found.advice
    report = " ".join(" ".join(_loader_workers(found, 80, recommended=found.advice)).split())
    assert "busy 60% of the steps' span on average and 100% while the loop waited" in report


def test_a_worker_idle_while_the_loop_waits_for_anothers_batch_means_uneven_batches() -> None:
    """Worker 0's batches take 98 ms, worker 1's 20: the loop waits, in order, for worker 0
    while worker 1 has made its batch and waits for an index."""
    found = judge_loader(plain_loader_space(step_ms=100, wait_ms=60, busy_ms=(98, 20)))
    assert found.busy_waiting_percent == round(100 * (60 + 20) / 120, 3)
    assert found.verdict == "uneven_batches"
    assert "in_order=False" in found.advice and "prefetch_factor" in found.advice
    assert "98.00 ms at the 90th percentile" in found.advice
    assert "raise prefetch_factor (2 by default)" in found.advice  # not recorded: torch's


def test_the_advice_quotes_the_loaders_own_settings() -> None:
    """Decision 425: the loader's prefetch_factor as recorded, not torch's default, and no
    in_order=False to a loader that has it already."""
    settings = {"num_workers": 2, "prefetch_factor": 4, "in_order": 1, "batch_size": 32}
    found = judge_loader(
        plain_loader_space(step_ms=100, wait_ms=60, busy_ms=(98, 20), settings=settings)
    )
    assert found.verdict == "uneven_batches"
    assert found.settings == "num_workers=2, prefetch_factor=4, in_order=True, batch_size=32"
    assert "raise prefetch_factor (now 4)" in found.advice
    assert "2 by default" not in found.advice
    assert "DataLoader(in_order=False) hands out batches" in found.advice
    unordered = {**settings, "in_order": 0}
    found = judge_loader(
        plain_loader_space(step_ms=100, wait_ms=60, busy_ms=(98, 20), settings=unordered)
    )
    assert "already hands out batches as they are made (in_order=False)" in found.advice
    assert "DataLoader(in_order=False) hands out" not in found.advice
    report = " ".join(" ".join(_loader_workers(found, 80, recommended=found.advice)).split())
    assert "settings at iter(): num_workers=2, prefetch_factor=4, in_order=False" in report


def test_workers_idle_while_the_loop_waits_point_at_the_main_process() -> None:
    found = judge_loader(plain_loader_space(step_ms=100, wait_ms=60, busy_ms=(10, 10)))
    assert found.busy_waiting_percent == round(100 * 10 / 60, 3)
    assert found.verdict == "workers_idle"
    assert "Have collate_fn return torch tensors" in found.advice


def test_workers_that_keep_up_are_not_told_to_add_workers_anywhere(tmp_path: Path) -> None:
    """The model is the bottleneck: no page may say "use more workers"."""
    space = plain_loader_space(step_ms=100, wait_ms=2, busy_ms=30)
    found = judge_loader(space)
    assert found.verdict == "keeping_up"
    assert "Nothing to change in the DataLoader" in found.advice
    ipa = _tool(tmp_path, space, "input_pipeline_analyzer")
    texts = [*ipa["recommendations"], *(w["advice"] for w in ipa["loader_workers"])]
    assert texts and not [t for t in texts if "workers" in t and "more" in t.lower()]


def test_an_in_process_loader_is_told_how_many_workers(tmp_path: Path) -> None:
    """num_workers=0: the loop's ``next()`` makes the batch; the advice gives a worker count
    from the batch's time and the step's other work."""
    builder = XSpaceBuilder("synthetic")
    main = builder.plane("/host:CPU").line(1, "MainThread")
    name = f"{DATALOADER_NEXT}#_SingleProcessDataLoaderIter.__next__"
    for k in range(6):
        t = k * 100
        main.event("train", t * MS, 100 * MS, {"step_num": k, "_r": 1})
        main.event(name, t * MS, 70 * MS)
        main.event("aten::addmm", (t + 70) * MS, 30 * MS)
    ipa = _tool(tmp_path, builder, "input_pipeline_analyzer")
    first = ipa["recommendations"][0]
    assert first.startswith("The DataLoader makes its batches in the training process")
    assert "num_workers=3 would make one every 23.33 ms for the steps' 30.00 ms" in first
    overview = _tool(tmp_path / "o", builder, "overview_page")
    assert first in " ".join([overview["recommendation"]["statement"],
                              *overview["recommendation"]["details"]])  # fmt: skip


def test_busy_while_waiting_counts_each_workers_overlap() -> None:
    waits = np.array([[0, 10], [20, 30]], np.int64)
    starts = np.array([0, 5, 25, 0], np.int64)
    ends = np.array([5, 12, 40, 30], np.int64)
    lines = np.array([0, 0, 0, 1])
    # worker 0: 0-10 and 25-30 of the 20 ms of waits; worker 1: all of them
    assert busy_while_waiting(starts, ends, lines, waits) == round(100 * (15 / 20 + 1) / 2, 3)
    assert busy_while_waiting(starts, ends, lines, np.empty((0, 2), np.int64)) == -1.0


def test_a_loop_getting_batches_already_made_points_at_the_main_process() -> None:
    """Each batch was made long before the loop asked; its 8 ms in next() are the main
    process getting it (decision 394): whatever the workers do meanwhile."""
    made = [(20 * k, 20 * k + 15) for k in range(10)]
    asks = [(30 * k + 20, 30 * k + 28) for k in range(10)]
    found = judge_loader(ordered_loader_space(made, asks))
    assert found.waiting_on_workers_percent == 0.0
    assert found.ready_batches == 10 and found.waited_batches == 0
    assert found.rows[0].transfer_ms == 5 * 8.0
    assert found.verdict == "workers_idle"
    assert "waited for a batch still being made only 0% of the time" in found.advice


def test_the_loop_waiting_in_order_on_a_slow_worker_means_uneven_batches() -> None:
    """Worker 0 takes 50 ms a batch, worker 1 10 ms: the loop waits on worker 0's batches
    while worker 1, two batches ahead, waits for indices."""
    made = []
    for k in range(6):
        made.append((50 * k, 50 * k + 50))  # batch 2k, worker 0
        made.append((10 * k, 10 * k + 10) if k < 2 else (50 * k - 45, 50 * k - 35))  # 2k + 1
    made = [made[k] for k in range(12)]
    asks = []
    for k in range(6):
        asks.append((50 * k + 2, 50 * k + 50))  # waits on worker 0
        asks.append((50 * k + 51, 50 * k + 52))  # worker 1's, made
    found = judge_loader(ordered_loader_space(made, asks))
    assert found.waiting_on_workers_percent > 80
    assert found.verdict == "uneven_batches"
    assert 40 < found.busy_waiting_percent < 80


def test_two_passes_workers_are_judged_in_their_own_pass() -> None:
    """Two epochs, each starting its own 2 workers: the first pass's workers, gone in the
    second, are not idle workers of it (a user run read "4 workers busy 48%": uneven),
    and the loader has 2 workers, not 4."""
    builder = XSpaceBuilder("synthetic")
    host = builder.plane("/host:CPU")
    main = host.line(1, "MainThread")
    for k in range(8):
        t = k * 100
        main.event("train", t * MS, 100 * MS, {"step_num": k, "_r": 1})
        main.event(LOOP_NEXT, t * MS, 60 * MS)
        main.event("aten::addmm", (t + 60) * MS, 40 * MS)
        epoch = k // 4
        for w in (0, 1):
            pid = 100 * (epoch + 1) + w
            line = host.line(pid, f"DataLoader worker {w} (pid {pid})")
            stats = {"parent_id": 9 + epoch, "worker": w, "batch": 2 * (k % 4) + w}
            line.event(f"{PLAIN_STAGE}::Worker", t * MS, 70 * MS, {**stats, CPU: 1 * MS})
    found = judge_loader(builder)
    assert len(found.rows) == 4 and found.busy_waiting_percent == 100.0
    assert found.startup_ms == 0.0  # the second pass's workers starting is no start-up
    assert found.verdict == "workers_busy"
    assert "(now 2)" in found.advice


def _made_ahead(
    busy_gap_ms: int, ask_ms: int = 8
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Two workers making 40 ms batches, ``busy_gap_ms`` apart; the loop asks for each batch
    2 ms after it was made and spends ``ask_ms`` in next() getting it (made before asked)."""
    made, asks, last = [], [], 0
    for k in range(12):
        start = (40 + busy_gap_ms) * (k // 2) + 5 * (k % 2)
        made.append((start, start + 40))
        lo = max(start + 42, last + 1)
        asks.append((lo, lo + ask_ms))
        last = lo + ask_ms
    return made, asks


def test_batches_made_ahead_by_workers_starved_of_cpu_are_the_cores_limit() -> None:
    """Decision 426: the loop took batches already made, but while it did the workers were
    making the next ones on cores too busy to run them (a user loop, 4 workers on 2 busy
    cores: "more workers will not help" -- and 8 workers were faster in 7 of 8 pairs)."""
    made, asks = _made_ahead(busy_gap_ms=0)
    found = judge_loader(ordered_loader_space(made, asks, cpu_wait_share=0.7, cpu=(2, 0.0)))
    assert found.waiting_on_workers_percent == 0.0
    assert found.busy_in_next_percent > 80  # all but the last asks, after their last batch
    assert found.verdict == "workers_busy"
    assert "more workers will not help" not in found.advice
    busy = f"{found.busy_in_next_percent:.0f}%"
    assert f"were busy {busy} of its time in next() making the next ones" in found.advice
    assert "waited for a CPU 70% of their batches' time (0.0 of 2 cores" in found.advice
    assert "make __getitem__ cheaper" in found.advice
    assert "more workers take a larger share of it from them" in found.advice


def test_batches_made_ahead_with_workers_idle_or_running_point_at_the_main_process() -> None:
    """The same loop with the workers idle while it takes its batches, or busy on cores that
    run them: the main process's own getting of the batches (decision 394, unchanged)."""
    made, asks = _made_ahead(busy_gap_ms=140, ask_ms=30)  # each worker idle 140 ms a batch
    idle = judge_loader(ordered_loader_space(made, asks, cpu_wait_share=0.7, cpu=(2, 0.0)))
    assert idle.busy_in_next_percent <= 25
    assert idle.verdict == "workers_idle" and "more workers will not help" in idle.advice
    assert "fewer workers do not help either" in idle.advice  # 4 -> 2: slower in 6 of 6
    made, asks = _made_ahead(busy_gap_ms=0)
    running = judge_loader(ordered_loader_space(made, asks, cpu_wait_share=0.05))
    assert running.verdict == "workers_idle"


def test_a_heavy_collate_fn_is_told_to_make_collate_cheaper() -> None:
    """Decision 427: the same starved workers, their time in collate_fn: that is what to
    make cheaper, not __getitem__."""
    made, asks = _made_ahead(busy_gap_ms=0)
    space = ordered_loader_space(made, asks, cpu_wait_share=0.7, collate_share=0.9)
    found = judge_loader(space)
    assert found.verdict == "workers_busy"
    assert "collate_fn takes 90% of it" in found.advice
    assert "make collate_fn cheaper" in found.advice and "__getitem__ cheaper" not in found.advice


def test_batches_already_made_but_the_loops_thread_off_its_core_is_the_cores_limit() -> None:
    """Decision 782: the loop took batches already made, its thread runnable but off its
    core 60% of that time (a PyTorch loop over I/O-bound workers at load 7: the same loop on
    a quiet core was told to add workers, rightly): the cores, not the main process's
    getting of the batches, and no advice about collate_fn."""
    made = [(20 * k, 20 * k + 15) for k in range(10)]
    asks = [(30 * k + 20, 30 * k + 28) for k in range(10)]
    found = judge_loader(ordered_loader_space(made, asks, loop_runnable_share=0.6))
    assert found.verdict == "workers_idle"
    assert "for 60% of that its own thread was runnable but waiting for a CPU core" in (
        found.advice
    )
    assert "the machine's cores are what the loop waits for" in found.advice
    assert "collate_fn" not in found.advice
    # on its core all the time: the main process's getting of the batches (decision 394)
    found = judge_loader(ordered_loader_space(made, asks, loop_runnable_share=0.0))
    assert "Have collate_fn return torch tensors" in found.advice
