"""DataLoader worker processes: how busy each one was, which stage cost the time, and
whether the batches were ready before the step asked (issue #26).

The workers' spans are captured by `stepscope.capture.loader_workers`: per batch
``Iterator::<loader>::Worker`` with ``...::GetItem`` and ``...::Collate`` inside it, stats
``worker``, ``batch`` and ``parent_id`` (the loader's stage id). The step asks for batch
``k`` with its k-th ``IteratorGetNextOp::DoCompute`` of that stage (stats ``id`` and
``iter_num``): a batch finished before that call began was **ready**; one finished during it
made the step **wait** from the call's start to the batch's end. The rest of the call, after
the batch was made, is its **transfer** back (the result queue, unpickling, pin memory).
"""

from __future__ import annotations

import numpy as np

from stepscope.fields import out
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.steps.breakdown import StepDb
from stepscope.vocab.tensorflow import GET_NEXT_KERNELS, is_iterator

WORKER_SUFFIX = "::Worker"
STAGES = ("GetItem", "Collate", "Transfer")  # the workers' two, then the step's


@record
class LoaderWorkerRow:
    """One DataLoader worker process."""

    worker: str = out("the worker's line (`DataLoader worker <k> (pid <pid>)`)")
    batches: int = out("batches it made in the profile")
    busy_ms: float = out("time making them", unit="ms", digits=6)
    busy_percent: float = out(
        "that time's share of the profiled steps' span (100: never idle)", unit="%", digits=3
    )
    get_item_ms: float = out("of it, in the dataset's `__getitem__`", unit="ms", digits=6)
    collate_ms: float = out("of it, in `collate_fn`", unit="ms", digits=6)
    ready_batches: int = out("its batches finished before the step asked for them")
    waited_batches: int = out("its batches the step waited for")
    wait_ms: float = out(
        "the step's waiting for its batches to be made (from the ask to the batch's end)",
        unit="ms",
        digits=6,
    )
    transfer_ms: float = out(
        "the step's time getting its batches once made (result queue, unpickling, pin "
        "memory): the rest of its `next()` calls",
        unit="ms",
        digits=6,
    )


@record
class LoaderWorkers:
    """A DataLoader's worker processes, captured into the profile."""

    loader: str = out("the loader's stage (`Iterator::<name>`)")
    rows: tuple[LoaderWorkerRow, ...] = out("one per worker process")
    slowest_stage: str = out(
        "`GetItem` or `Collate` (in the workers) or `Transfer` (the step getting made "
        "batches): the stage with the most time"
    )
    ready_batches: int = out("batches finished before the step asked for them")
    waited_batches: int = out("batches the step waited for")
    summary: str = out("one sentence")


def loader_workers(profile: Profile, db: StepDb | None = None) -> tuple[LoaderWorkers, ...]:
    """One entry per loader whose workers were captured; () when none were."""
    ids = profile.strings.ids_matching(is_iterator)
    if not len(ids):
        return ()
    names = profile.strings.strings
    batch_ids = [i for i in ids.tolist() if names[i].endswith(WORKER_SUFFIX)]
    if not batch_ids:
        return ()
    span = _step_span(profile, db)
    out_rows = []
    for name_id in batch_ids:
        stage = names[name_id][: -len(WORKER_SUFFIX)]
        ev = np.flatnonzero(profile.name == name_id)
        out_rows.append(_one_loader(profile, stage, ev, span))
    return tuple(r for r in out_rows if r is not None)


def _step_span(profile: Profile, db: StepDb | None) -> tuple[int, int] | None:
    if db is None or not db.n_steps:
        return None
    return int(db.start_ns.min()), int((db.start_ns + db.dur_ns).max())


def _one_loader(
    profile: Profile, stage: str, ev: np.ndarray, span: tuple[int, int] | None
) -> LoaderWorkers | None:
    batch = profile.stat_at("batch", ev)
    parent = profile.stat_at("parent_id", ev)
    if not batch.present.any():
        return None
    start, end = profile.start_ns[ev], profile.end_at(ev)
    asks = _asks(profile, int(np.max(parent.as_int())) if parent.present.any() else None)
    number = batch.as_int()
    ask_at = np.array([asks.get(int(k), (-1, -1))[0] for k in number], np.int64)
    ask_end = np.array([asks.get(int(k), (-1, -1))[1] for k in number], np.int64)
    asked = ask_at >= 0
    ready = asked & (end <= ask_at)
    waited = asked & (end > ask_at)
    wait_ns = np.where(waited, np.minimum(end, ask_end) - ask_at, 0)
    transfer_ns = np.where(asked, np.maximum(ask_end - np.maximum(end, ask_at), 0), 0)
    stage_ns = {s: _inner_ns(profile, f"{stage}{WORKER_SUFFIX}::{s}", ev) for s in STAGES[:2]}
    stage_ns["Transfer"] = transfer_ns
    lo, hi = span if span is not None else (int(start.min()), int(end.max()))
    rows = []
    for line in sorted(set(profile.line[ev].tolist())):
        mine = profile.line[ev] == line
        busy = int(np.maximum(np.minimum(end[mine], hi) - np.maximum(start[mine], lo), 0).sum())
        rows.append(
            LoaderWorkerRow(
                profile.lines[line].name,
                int(mine.sum()),
                float((end[mine] - start[mine]).sum() / 1e6),
                round(100 * busy / max(hi - lo, 1), 3),
                float(stage_ns["GetItem"][mine].sum() / 1e6),
                float(stage_ns["Collate"][mine].sum() / 1e6),
                int(ready[mine].sum()),
                int(waited[mine].sum()),
                float(wait_ns[mine].sum() / 1e6),
                float(transfer_ns[mine].sum() / 1e6),
            )
        )
    totals = {s: int(v.sum()) for s, v in stage_ns.items()}
    slowest = max(STAGES, key=lambda s: totals[s])
    n_ready, n_waited = int(ready.sum()), int(waited.sum())
    busy_pct = float(np.mean([r.busy_percent for r in rows]))
    summary = (
        f"{len(rows)} worker(s) of {stage} made {len(ev)} batches, busy {busy_pct:.0f}% of the "
        f"steps' span on average, most of it in {slowest}; the step asked for "
        f"{n_ready + n_waited} of them: {n_ready} ready, {n_waited} waited for "
        f"({wait_ns.sum() / 1e6:.2f} ms), and {transfer_ns.sum() / 1e6:.2f} ms getting them "
        "once made."
    )
    if n_waited and busy_pct >= 80:
        summary += " The workers are nearly always busy: add workers or make the dataset faster."
    return LoaderWorkers(stage, tuple(rows), slowest, n_ready, n_waited, summary)


def _inner_ns(profile: Profile, name: str, batches: np.ndarray) -> np.ndarray:
    """Per batch event: the time of its inner stage events named ``name`` (same line)."""
    out = np.zeros(len(batches), np.int64)
    name_id = profile.strings.id_of(name)
    if name_id < 0:
        return out
    inner = np.flatnonzero(profile.name == name_id)
    for k, b in enumerate(batches.tolist()):
        lo, hi = profile.start_ns[b], profile.start_ns[b] + profile.dur_ns[b]
        mine = inner[
            (profile.line[inner] == profile.line[b])
            & (profile.start_ns[inner] >= lo)
            & (profile.start_ns[inner] + profile.dur_ns[inner] <= hi)
        ]
        out[k] = int(profile.dur_ns[mine].sum())
    return out


def _asks(profile: Profile, loader_id: int | None) -> dict[int, tuple[int, int]]:
    """iter_num -> (start, end) of the step's get-next calls of the loader's stage."""
    if loader_id is None:
        return {}
    ids = profile.strings.ids_matching(lambda s: s in GET_NEXT_KERNELS)
    calls = np.flatnonzero(np.isin(profile.name, ids))
    if not len(calls):
        return {}
    node = profile.stat_at("id", calls)
    num = profile.stat_at("iter_num", calls)
    keep = node.present & num.present & (node.as_int() == loader_id)
    calls, nums = calls[keep], num.as_int()[keep]
    ends = profile.end_at(calls)
    return {
        int(k): (int(s), int(e))
        for k, s, e in zip(nums, profile.start_ns[calls], ends, strict=True)
    }
