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

from stepscope.distinct import distinct
from stepscope.fields import out
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.input.loader_verdict import (
    Context,
    Workers,
    batches_per_step,
    busy_while_waiting,
    loop_waits,
    plain_asks,
    recorded_cpu,
    verdict,
)
from stepscope.stats.input.worker_functions import WorkerFunction, worker_functions
from stepscope.stats.runup_python import steps_thread_cpu
from stepscope.stats.steps.breakdown import StepDb
from stepscope.vocab.pytorch import (
    DATALOADER_BATCH_CPU_STAT,
    DATALOADER_BATCH_CPU_WAIT_STAT,
    DATALOADER_SETTING_PREFIX,
    DATALOADER_SETTINGS,
)
from stepscope.vocab.tensorflow import GET_NEXT_KERNELS, is_iterator

WORKER_SUFFIX = "::Worker"
# the verdicts that say what to change (decision 353): the overview's advice is theirs
JUDGED_VERDICTS = ("workers_busy", "workers_idle", "uneven_batches")
STAGES = ("GetItem", "Collate", "Transfer")  # the workers' two, then the step's


@record
class LoaderWorkerRow:
    """One DataLoader worker process."""

    worker: str = out("the worker's line (`DataLoader worker <k> (pid <pid>)`)")
    batches: int = out("batches it made in the profile")
    busy_ms: float = out("time making them", unit="ms", digits=6)
    busy_percent: float = out(
        "that time's share of the profiled steps' span from its first batch on (before it "
        "the worker was starting; 100: never idle)",
        unit="%",
        digits=3,
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
    ms_per_batch: float = out("time making one batch, on average", unit="ms", digits=6)
    cpu_ms: float = out(
        "its thread's CPU time making them (the rest is waiting: for a CPU, sleep, I/O, "
        "locks); -1 when not recorded",
        unit="ms",
        digits=6,
    )
    cpu_wait_ms: float = out(
        "its thread's time runnable but waiting for a CPU while making them (Linux "
        "schedstat); -1 when not recorded",
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
    workers: int = out("worker processes seen")
    busy_percent: float = out(
        "the workers' mean busy share of the profiled steps' span", unit="%", digits=3
    )
    ms_per_batch: float = out("a worker's time per batch, on average", unit="ms", digits=6)
    functions: tuple[WorkerFunction, ...] = out(
        "the Python functions the workers' stack samples saw inside their batches, most "
        "samples first (`stepscope.stats.input.worker_functions`); empty without samples"
    )
    samples: int = out("the workers' stack samples taken inside their batches")
    input_percent: float = out(
        "the steps' time bound by input (the overview's `bound_by` input share); -1 without steps",
        unit="%",
        digits=3,
    )
    cores: int = out("cores the training process could run on; 0 when not recorded")
    idle_cores: float = out(
        "the machine's idle cores on average over the recording; -1 when not recorded",
        digits=2,
    )
    verdict: str = out(
        "`keeping_up` (the steps wait little for input), `workers_busy` (the workers "
        "cannot keep up: all busy while the loop waits), `workers_idle` (the loop waits "
        "for batches already made to come across, or the workers mostly idle while it "
        "waits), `uneven_batches` (in between: the loop waits in order for a late batch "
        "while other workers wait for indices); thresholds in decisions 353, 392 and 394"
    )
    advice: str = out("what follows from the verdict, with the figures behind it")
    cpu_percent: float = out(
        "the workers' CPU time as a share of their batches' time (low: the batches mostly "
        "wait, on sleep, I/O or locks, and more workers need little CPU); -1 when not "
        "recorded",
        unit="%",
        digits=3,
    )
    cpu_wait_percent: float = out(
        "the workers' time waiting for a CPU as a share of their batches' time (high: the "
        "machine's cores are busy); -1 when not recorded",
        unit="%",
        digits=3,
    )
    startup_ms: float = out(
        "from the first profiled step's start to the last worker's first batch (the "
        "workers starting: `spawn` imports the program in each); 0 when they were up before",
        unit="ms",
        digits=6,
    )
    busy_waiting_percent: float = out(
        "the workers' mean busy share of the time the loop waited for a batch (its "
        "`next()` calls once the workers were up; the parts spent on a batch being made, "
        "when the calls are matched to batches): what the verdict reads (decisions 392, "
        "394); -1 when no wait was recorded",
        unit="%",
        digits=3,
    )
    busy_in_next_percent: float = out(
        "the workers' mean busy share of all of the loop's time in `next()` once they were "
        "up, batches made or not (decision 426); -1 when its calls could not be matched to "
        "batches",
        unit="%",
        digits=3,
    )
    settings: str = out(
        "the loader's own settings recorded at its `iter()` (`num_workers=4, "
        "prefetch_factor=2, persistent_workers=False, pin_memory=False, in_order=True, "
        "batch_size=32`; those the capture could read), what the advice quotes; empty in a "
        "profile that did not record them"
    )
    waiting_on_workers_percent: float = out(
        "of the loop's time in `next()` once the workers were up, the share it waited for "
        "a batch still being made (the rest: getting batches already made); -1 when its "
        "calls could not be matched to batches",
        unit="%",
        digits=3,
    )


def worker_stage_ids(profile: Profile) -> list[int]:
    """The name ids of the captured loaders' worker stages (``<stage>::Worker``: one per
    loader whose workers were captured)."""
    names = profile.strings.strings
    return [
        i
        for i in profile.strings.ids_matching(is_iterator).tolist()
        if names[i].endswith(WORKER_SUFFIX)
    ]


def loader_workers(
    profile: Profile, db: StepDb | None = None, first: int = 0
) -> tuple[LoaderWorkers, ...]:
    """One entry per loader whose workers were captured; () when none were. The steps' input
    share is judged from step ``first`` on (the warm-up's end; decision 537)."""
    names = profile.strings.strings
    batch_ids = worker_stage_ids(profile)
    if not batch_ids:
        return ()
    span = _step_span(profile, db)
    cpu = recorded_cpu(profile)
    thread = steps_thread_cpu(profile, db) if db is not None and db.n_steps else None
    out_rows = []
    for name_id in batch_ids:
        stage = names[name_id][: -len(WORKER_SUFFIX)]
        ev = np.flatnonzero(profile.name == name_id)
        up_ns = _workers_up_ns(profile, ev)
        wait, other_ms, batches = _input_share(profile, db, up_ns, first)
        context = Context(wait, cpu[0], cpu[1], up_ns, other_ms, batches, thread)
        out_rows.append(_one_loader(profile, stage, ev, span, context))
    return tuple(r for r in out_rows if r is not None)


def captured_settings(profile: Profile) -> tuple[dict[str, int], ...]:
    """The own settings (`loader_settings`) of each captured loader that recorded them, for
    advice that must not ask for what the loader already has; () when none did. One rule for
    every piece of advice (decision 480): a loader whose workers were captured without its
    settings (a profile from before decision 425) says nothing about them, so its {} is left
    out here, not by each caller: the values quoted are the first loader's that has them."""
    ids = worker_stage_ids(profile)
    found = (loader_settings(profile, np.flatnonzero(profile.name == i)) for i in ids)
    return tuple(s for s in found if s)


def dataloader_fix(settings: tuple[dict[str, int], ...], has_device: bool) -> str:
    """What a captured DataLoader can change to make batches ahead, from its own settings
    (`captured_settings`, not empty): ``the DataLoader has num_workers=2, ...: raise
    num_workers or prefetch_factor; set persistent_workers=True``. A setting every loader has
    is not asked for, and pin_memory only with a device to copy to (decision 459)."""
    first = settings[0]
    raise_ = [n for n in ("num_workers", "prefetch_factor") if n in first]
    unset = []
    if has_device and not all(s.get("pin_memory") for s in settings):
        unset.append("pin_memory=True")
    if not all(s.get("persistent_workers") for s in settings):
        unset.append("persistent_workers=True")
    changes = [f"raise {' or '.join(raise_)}"] if raise_ else ["raise num_workers"]
    if unset:
        changes.append("set " + ", ".join(unset))
    return f"the DataLoader has {settings_text(first)}: " + "; ".join(changes)


def generic_dataloader_call(has_device: bool) -> str:
    """The DataLoader call the generic input advice suggests where no loader's settings were
    recorded (`captured_settings` empty: ``num_workers=0``, a loop over another framework's
    data): pinned memory only speeds up a copy to a device, so a run with none is not asked
    for it (decision 481)."""
    pin = "pin_memory=True, " if has_device else ""
    return f"DataLoader(num_workers=N, {pin}persistent_workers=True)"


def _workers_up_ns(profile: Profile, ev: np.ndarray) -> int:
    """When the last of the loader's workers began its first batch: they were all up (by
    worker id: a later pass's processes start again)."""
    ids = profile.stat_at("worker", ev)
    group = ids.as_int() if ids.present.all() else profile.line[ev]
    return max(int(profile.start_ns[ev[group == g]].min()) for g in distinct(group).tolist())


def _input_share(
    profile: Profile, db: StepDb | None, up_ns: int, first: int = 0
) -> tuple[float, float, float]:
    """The input share of the steps that began once the workers were up (all steps when
    none did), from step ``first`` on (when any is left), their time not bound by input per
    batch (ms) and the batches a step took; (-1, -1, 1) without steps: a first step waiting
    for workers to start (seconds with ``spawn``) says nothing about how they keep up."""
    if db is None or not db.n_steps:
        return -1.0, -1.0, 1.0
    after = db.start_ns >= up_ns
    keep = after if after.any() else np.ones(db.n_steps, bool)
    warm = keep & (np.arange(db.n_steps) >= first)
    keep = warm if warm.any() else keep
    total = int(db.dur_ns[keep].sum())
    if not total:
        return -1.0, -1.0, 1.0
    input_ns = float(db.limit_ns()["input"][keep].sum())
    batches = batches_per_step(profile, db, keep)
    other_ms = round((total - input_ns) / int(keep.sum()) / 1e6 / batches, 6)
    return round(100.0 * input_ns / total, 3), other_ms, batches


def _step_span(profile: Profile, db: StepDb | None) -> tuple[int, int] | None:
    if db is None or not db.n_steps:
        return None
    return int(db.start_ns.min()), int((db.start_ns + db.dur_ns).max())


def _one_loader(
    profile: Profile, stage: str, ev: np.ndarray, span: tuple[int, int] | None, context: Context
) -> LoaderWorkers | None:
    batch = profile.stat_at("batch", ev)
    parent = profile.stat_at("parent_id", ev)
    if not batch.present.any():
        return None
    start, end = profile.start_ns[ev], profile.end_at(ev)
    loader_id = int(np.max(parent.as_int())) if parent.present.any() else None
    number = batch.as_int()
    # a plain loop's next() calls take the batches in order (decision 394)
    asks = _asks(profile, loader_id) or plain_asks(profile, ev, number)
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
    cpu = profile.stat_at(DATALOADER_BATCH_CPU_STAT, ev)
    cpu_known = bool(cpu.present.all())
    cpu_ns = cpu.as_int() if cpu_known else np.zeros(len(ev), np.int64)
    cpu_percent = (
        round(100.0 * float(cpu_ns.sum()) / max(float((end - start).sum()), 1.0), 3)
        if cpu_known
        else -1.0
    )
    waits = profile.stat_at(DATALOADER_BATCH_CPU_WAIT_STAT, ev)
    wait_known = bool(waits.present.all())
    cpu_wait_ns = waits.as_int() if wait_known else np.zeros(len(ev), np.int64)
    cpu_wait_percent = (
        round(100.0 * float(cpu_wait_ns.sum()) / max(float((end - start).sum()), 1.0), 3)
        if wait_known
        else -1.0
    )
    rows = []
    for line in sorted(set(profile.line[ev].tolist())):
        mine = profile.line[ev] == line
        # from its first batch on: before it the worker was starting (seconds with spawn)
        first = min(max(lo, int(start[mine].min())), hi)
        busy = int(np.maximum(np.minimum(end[mine], hi) - np.maximum(start[mine], first), 0).sum())
        rows.append(
            LoaderWorkerRow(
                profile.lines[line].name,
                int(mine.sum()),
                float((end[mine] - start[mine]).sum() / 1e6),
                round(100 * busy / max(hi - first, 1), 3),
                float(stage_ns["GetItem"][mine].sum() / 1e6),
                float(stage_ns["Collate"][mine].sum() / 1e6),
                int(ready[mine].sum()),
                int(waited[mine].sum()),
                float(wait_ns[mine].sum() / 1e6),
                float(transfer_ns[mine].sum() / 1e6),
                round(float((end[mine] - start[mine]).sum() / 1e6) / int(mine.sum()), 6),
                round(float(cpu_ns[mine].sum()) / 1e6, 6) if cpu_known else -1.0,
                round(float(cpu_wait_ns[mine].sum()) / 1e6, 6) if wait_known else -1.0,
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
    per_batch = round(float((end - start).sum() / 1e6) / len(ev), 6)
    startup_ms = round(max(context.up_ns - lo, 0) / 1e6, 6) if span is not None else 0.0
    functions, samples = worker_functions(profile, ev, per_batch)
    # the loop's time in next() once the workers were up: waiting on a batch being made
    # (then, were the workers busy?) or getting one made (decisions 392, 394)
    after = asked & (ask_at >= context.up_ns)
    next_ns = int((ask_end - ask_at)[after].sum())
    on_workers = round(100.0 * int(wait_ns[after].sum()) / next_ns, 3) if next_ns else -1.0
    if next_ns:
        on = after & waited
        spans = np.stack([ask_at[on], np.minimum(end, ask_end)[on]], axis=1)
        spans = spans[np.argsort(spans[:, 0], kind="stable")]
    else:
        spans = loop_waits(profile, ev, loader_id, context.up_ns)
    # workers per pass: the loader's worker ids (several passes have their own processes)
    worker_ids = profile.stat_at("worker", ev)
    ids = worker_ids.as_int() if worker_ids.present.all() else None
    per_pass = len(np.unique(ids)) if ids is not None else len(rows)
    busy_waiting = busy_while_waiting(start, end, profile.line[ev], spans, ids)
    # ... and over all of its time in next(), batches made or not (decision 426)
    busy_in_next = -1.0
    if next_ns:
        every = np.stack([ask_at[after], ask_end[after]], axis=1)
        every = every[np.argsort(every[:, 0], kind="stable")]
        busy_in_next = busy_while_waiting(start, end, profile.line[ev], every, ids)
    made = end - start
    settings = loader_settings(profile, ev)
    # the loop's own thread waiting for a core while it got batches already made (decision 782)
    core_wait = -1.0
    if context.thread is not None and next_ns:
        got = after & (ask_end > np.maximum(end, ask_at))
        shares = context.thread.shares(np.maximum(end, ask_at)[got], ask_end[got])
        core_wait = round(100.0 * shares[0], 3) if shares is not None else -1.0
    judged = Workers(
        per_pass,
        round(busy_pct, 3),
        busy_waiting,
        on_workers,
        per_batch,
        round(float(np.percentile(made, 90)) / 1e6, 6),
        cpu_percent,
        cpu_wait_percent,
        round(100.0 * totals["Collate"] / max(float(made.sum()), 1.0), 3),
        functions,
        busy_in_next_percent=busy_in_next,
        settings=settings,
        core_wait_in_next_percent=core_wait,
    )
    found, advice = verdict(judged, context)
    if n_ready + n_waited == 0:  # a plain loader: the step's asks are not events
        summary = (
            f"{len(rows)} worker(s) of {stage} made {len(ev)} batches, busy {busy_pct:.0f}% "
            f"of the steps' span on average, {per_batch:.2f} ms per batch, most of it in "
            f"{slowest}."
        )
        if cpu_percent >= 0:
            summary = summary[:-1] + f" (CPU {cpu_percent:.0f}% of their batches' time)."
        if startup_ms > per_batch:
            summary += f" They began their first batches {startup_ms:.0f} ms into the steps."
        if busy_waiting >= 0:
            summary += (
                f" While the loop waited for a batch they were busy {busy_waiting:.0f}% of "
                "the time."
            )
    if functions:  # what the pages show of the samples: the summary above the table
        summary += (
            " Their stack samples in the batches: "
            + ", ".join(f"{f.function} {f.percent:.0f}%" for f in functions[:3])
            + "."
        )
    return LoaderWorkers(
        stage,
        tuple(rows),
        slowest,
        n_ready,
        n_waited,
        summary,
        len(rows),
        round(busy_pct, 3),
        per_batch,
        functions,
        samples,
        context.input_percent,
        context.cores,
        context.idle_cores,
        found,
        advice,
        cpu_percent,
        cpu_wait_percent,
        startup_ms,
        busy_waiting,
        busy_in_next,
        settings_text(settings),
        on_workers,
    )


_BOOLEAN_SETTINGS = frozenset({"persistent_workers", "pin_memory", "in_order"})


def loader_settings(profile: Profile, batches: np.ndarray) -> dict[str, int]:
    """The loader's settings its worker batches carry (stats ``dataloader_<name>``, decision
    425), by name without the prefix; the last pass's where several differ (the advice is
    for the loader as it is now). {} in a profile captured before they were recorded."""
    out: dict[str, int] = {}
    if not len(batches):
        return out
    last = batches[np.argsort(profile.start_ns[batches], kind="stable")]
    for name in DATALOADER_SETTINGS:
        stat = profile.stat_at(DATALOADER_SETTING_PREFIX + name, last)
        if stat.present.any():
            out[name] = int(stat.as_int()[stat.present][-1])
    return out


def settings_text(settings: dict[str, int]) -> str:
    """``num_workers=4, prefetch_factor=2, pin_memory=False``: as the user writes them."""
    return ", ".join(
        f"{k}={bool(v)}" if k in _BOOLEAN_SETTINGS else f"{k}={v}" for k, v in settings.items()
    )


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
