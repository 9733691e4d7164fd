"""The in-process DataLoader's advice on a host with fewer cores than the workers it would
take (decision 549): a 96 ms batch beside 1.2 ms of model work was told "num_workers=83" on
a 2-core machine. Synthetic profiles built in code."""

from __future__ import annotations

from stepscope.stats.input.loader_verdict import in_process_loader
from stepscope.stats.steps.breakdown import build_step_db
from stepscope.vocab.profiler import CPU_COUNT_STAT, CPU_IDLE_STAT, STARTED_ON_THREAD_STAT
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

NEXT = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _loop(cores: int | None) -> XSpaceBuilder:
    """20 iterations of a 40 ms in-process batch and 2 ms of model work (the steps' other
    work 1.99 ms): 21 workers would keep up."""
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    plane.stats[STARTED_ON_THREAD_STAT] = 1
    if cores is not None:
        plane.stats[CPU_COUNT_STAT] = cores
        plane.stats[CPU_IDLE_STAT] = 1.0
    line = plane.line(1, "python")
    t = 0
    for _ in range(20):
        line.event(NEXT, t, 40 * MS)
        line.event("aten::mm", t + 40 * MS + 10_000, 2 * MS - 20_000)
        t += 42 * MS
    return builder


def _advice(cores: int | None) -> str:
    profile = build(_loop(cores))
    return in_process_loader(profile, build_step_db(profile))


def test_more_workers_than_cores_is_told_to_make_the_batch_cheaper_first() -> None:
    said = _advice(2)
    assert "num_workers=21 would make one every 1.90 ms" in said
    assert said.endswith(
        "(more workers than the host's 2 cores): make each batch cheaper first (the Dataset's "
        "__getitem__ and collate_fn take the 40.00 ms), or give each step more work per "
        "batch, then add workers."
    )


def test_as_many_cores_as_workers_or_none_recorded_keeps_the_plain_advice() -> None:
    for cores in (21, None):
        assert _advice(cores).endswith("(if the batches need CPU, at most the idle cores).")
