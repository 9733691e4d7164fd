"""What to change in a DataLoader whose workers were captured: the verdict and its advice
(decisions 353, 355, 356, 392 and 394).

The workers are judged by what they did **while the loop waited for a batch** (its
``next()`` calls), not over the whole span: a worker that has made its ``prefetch_factor``
batches ahead waits for an index while the step computes, so a loop whose steps are slow at
times shows idle workers that are no sign of spare capacity (a user run: workers busy 78% of
the span, and 99% while the loop waited). While the loop waits, a worker is either making a
batch, or done with every batch it was given (it waits in ``select()`` for the next index,
which the loader sends only as it consumes batches in order), so:

- all of them busy then: they make batches slower than the steps use them (`workers_busy`);
- some idle: the loop waits, in order, for one late batch while the others have theirs
  made (`uneven_batches`: batches of uneven cost; more batches ahead or out of order);
- all idle: the batch was made and the loop spends its wait getting it across
  (`workers_idle`); with the loop's calls matched to its batches (`plain_asks`), a loop
  that mostly waits for batches already made is that, whatever the workers do meanwhile.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from stepscope.model import Profile
from stepscope.stats.host.thread_cpu import ThreadCpu
from stepscope.stats.input.worker_functions import WorkerFunction
from stepscope.stats.steps.breakdown import StepDb
from stepscope.vocab.profiler import CPU_COUNT_STAT, CPU_IDLE_STAT
from stepscope.vocab.pytorch import DATALOADER_WORKER_LINE, is_dataloader_next
from stepscope.vocab.tensorflow import GET_NEXT_KERNELS

# Verdict thresholds (decisions 353 and 392): below INPUT_WAIT_PERCENT of the step time bound
# by input, the workers keep up; above it, workers busy BUSY_PERCENT or more of the loop's
# waits cannot keep up, and workers busy IDLE_BUSY_PERCENT or less then are not what the
# steps wait for.
INPUT_WAIT_PERCENT = 10.0
BUSY_PERCENT = 80.0
IDLE_BUSY_PERCENT = 40.0
# Workers whose batches spend this share of their time off the CPU and not waiting for one
# mostly wait (sleep, I/O, locks): more of them overlap the waits whether or not the machine
# has idle cores (decision 355). Workers that waited for a CPU this share of their time run
# on busy cores: more of them would share the same cores (decision 356).
OFF_CPU_PERCENT = 50.0
CPU_WAIT_PERCENT = 25.0
# Below this share of the loop's time in next() spent on batches still being made, the loop
# mostly gets batches already made: the main process, whatever the workers did (decision 394).
ON_WORKERS_PERCENT = 50.0
# Workers busy over this share of the loop's time in next() while it took batches already
# made, waiting for a CPU CPU_WAIT_PERCENT of their batches: the cores are the limit, not the
# main process's getting of the batches (decision 426: busy 39-96% then, more workers were
# faster in most pairs of every such test; busy 16%, not: one loop).
HANDOVER_BUSY_PERCENT = 25.0
# What to change when the main process is what the loop waits on.
_MAIN = (
    "Have collate_fn return torch tensors (the default one does: tensors cross in shared "
    "memory, NumPy arrays and other Python objects are pickled through a pipe) and keep "
    "batches small; fewer workers do not help either."
)


class Context(NamedTuple):
    input_percent: float  # -1 without steps
    cores: int  # 0: not recorded
    idle_cores: float  # -1: not recorded
    up_ns: int  # the workers' first batches all began
    other_ms: float  # the steps' time not bound by input, per batch (-1 without steps)
    batches_per_step: float = 1.0  # `batches_per_step`
    # the steps' thread's CPU readings (the stack sampler's): its core waits in next()
    thread: ThreadCpu | None = None


class Workers(NamedTuple):
    """What the advice reads of one loader's workers."""

    n: int  # workers seen
    busy_percent: float  # over the steps' span
    busy_waiting_percent: float  # while the loop waited for a batch; -1: no waits seen
    on_workers_percent: float  # of the loop's next() time, on batches being made; -1: unknown
    ms_per_batch: float
    p90_ms_per_batch: float
    cpu_percent: float
    cpu_wait_percent: float
    collate_percent: float  # of the batches' time, in collate_fn
    functions: tuple[WorkerFunction, ...]
    # busy over all of the loop's next() time once up (batches made or not); -1: unknown
    busy_in_next_percent: float = -1.0
    # the loader's own settings recorded at its iter() (decision 425): name -> int
    settings: dict[str, int] = {}  # noqa: RUF012 (never mutated)
    # of the loop's time in next() getting batches already made, its thread runnable but
    # waiting for a CPU core (the stack sampler's readings); -1: not read (decision 782)
    core_wait_in_next_percent: float = -1.0


def _loop_calls(profile: Profile, loader_id: int | None) -> np.ndarray:
    """The loop's calls for a batch of this loader, in time order: its get-next calls of the
    loader's stage (an instrumented loader) or, for a plain one, the DataLoader's
    ``__next__`` the PyTorch profiler records on the loop's thread."""
    names = profile.strings
    calls = np.empty(0, np.int64)
    if loader_id is not None:
        ids = names.ids_matching(lambda s: s in GET_NEXT_KERNELS)
        calls = np.flatnonzero(np.isin(profile.name, ids))
        node = profile.stat_at("id", calls)
        calls = calls[node.present & (node.as_int() == loader_id)]
    if not len(calls):
        ids = names.ids_matching(is_dataloader_next)
        calls = np.flatnonzero(np.isin(profile.name, ids))
        lines = profile.lines
        worker_lines = [
            k for k, line in enumerate(lines) if line.name.startswith(DATALOADER_WORKER_LINE)
        ]
        calls = calls[~np.isin(profile.line[calls], worker_lines)]
    return calls[np.argsort(profile.start_ns[calls], kind="stable")]


def plain_asks(
    profile: Profile, batches: np.ndarray, number: np.ndarray
) -> dict[int, tuple[int, int]]:
    """batch number -> (start, end) of the plain loop's ``next()`` that took it: the loop
    takes a pass's batches in order, so the k-th call ending after batch 0 was made takes
    batch k. {} when that cannot hold: several passes (batch numbers repeat), or a call
    that returned before its batch was made (another loader's calls)."""
    calls = _loop_calls(profile, None)
    if not len(calls) or len(np.unique(number)) != len(number) or 0 not in number:
        return {}
    made = profile.end_at(batches)
    ends = profile.end_at(calls)
    calls = calls[ends >= made[number == 0][0]]
    starts, ends = profile.start_ns[calls], profile.end_at(calls)
    asks = {
        k: (int(starts[k]), int(ends[k])) for k in range(min(len(calls), int(number.max()) + 1))
    }
    for k, done in zip(number.tolist(), made.tolist(), strict=True):
        if k in asks and asks[k][1] < done:
            return {}
    return asks


def loop_waits(
    profile: Profile, batches: np.ndarray, loader_id: int | None, after_ns: int
) -> np.ndarray:
    """(k, 2) start/end of the loop's waits for this loader's batches once the workers were
    up (`_loop_calls`)."""
    calls = _loop_calls(profile, loader_id)
    if not len(calls):
        return np.empty((0, 2), np.int64)
    # waits begun once every worker was up (earlier ones wait for them to start) and before
    # the loader's last batch ended (another loader's, or a later pass's)
    lo = max(after_ns, int(profile.start_ns[batches].min()))
    hi = int(profile.end_at(batches).max())
    start, end = profile.start_ns[calls], profile.end_at(calls)
    keep = (start >= lo) & (start < hi)
    order = np.argsort(start[keep], kind="stable")
    return _merged(np.stack([start[keep][order], end[keep][order]], axis=1))


def _merged(spans: np.ndarray) -> np.ndarray:
    """Sorted spans with overlaps joined (nested calls of one wait count once)."""
    if len(spans) < 2:
        return spans
    out = [list(spans[0])]
    for s, e in spans[1:].tolist():
        if s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return np.array(out, np.int64)


def busy_while_waiting(
    starts: np.ndarray,
    ends: np.ndarray,
    lines: np.ndarray,
    waits: np.ndarray,
    worker_ids: np.ndarray | None = None,
) -> float:
    """The share of the loop's waits the workers spent making batches (%); -1 without waits.
    Each worker counts over the waits in its life: from its first batch until the next
    process with its worker id began (a later pass's: one pass's workers are gone in the
    next)."""
    if not len(waits):
        return -1.0
    ids = worker_ids if worker_ids is not None else lines
    line_list = np.unique(lines).tolist()
    first = {line: int(starts[lines == line].min()) for line in line_list}
    busy = total = 0
    for line in line_list:
        mine = lines == line
        wid = ids[mine][0]
        later = [
            first[o] for o in line_list if ids[lines == o][0] == wid and first[o] > first[line]
        ]
        life = (first[line], min(later, default=np.iinfo(np.int64).max))
        inside = np.clip(waits, *life)
        inside = inside[inside[:, 1] > inside[:, 0]]
        total += int((inside[:, 1] - inside[:, 0]).sum())
        busy += _overlap_ns(starts[mine], ends[mine], inside) if len(inside) else 0
    return round(100.0 * busy / total, 3) if total else -1.0


def _overlap_ns(starts: np.ndarray, ends: np.ndarray, waits: np.ndarray) -> int:
    """Time inside ``waits`` (sorted, disjoint) covered by the spans ``starts``/``ends``."""
    order = np.argsort(starts, kind="stable")
    spans = _merged(np.stack([starts[order], ends[order]], axis=1).astype(np.int64))
    covered = np.concatenate([[0], np.cumsum(spans[:, 1] - spans[:, 0])])

    def before(t: np.ndarray) -> np.ndarray:  # span time before each t
        k = np.searchsorted(spans[:, 1], t, side="right")  # spans ended by t
        part = np.where(
            k < len(spans), np.maximum(t - spans[np.minimum(k, len(spans) - 1), 0], 0), 0
        )
        return covered[k] + part

    return int((before(waits[:, 1]) - before(waits[:, 0])).sum())


def verdict(w: Workers, context: Context) -> tuple[str, str]:
    """(verdict, advice) (decisions 353, 392 and 394); "" and "" when the profile has no
    steps to judge against."""
    wait = context.input_percent
    if wait < 0:
        return "", ""
    top = (
        "; their stack samples: "
        + ", ".join(f"{f.function} {f.percent:.0f}%" for f in w.functions[:2])
        if w.functions
        else ""
    )
    if wait < INPUT_WAIT_PERCENT:
        return "keeping_up", (
            f"The steps wait for input {wait:.1f}% of their time: the {_workers(w.n)} "
            f"{'keeps' if w.n == 1 else 'keep'} up (busy {w.busy_percent:.0f}%, the rest "
            "waiting for the steps to take their batches). Nothing to change in the "
            "DataLoader: the time is in the steps' own work."
        )
    if 0 <= w.on_workers_percent < ON_WORKERS_PERCENT:
        if (
            w.busy_in_next_percent > HANDOVER_BUSY_PERCENT
            and w.cpu_wait_percent >= CPU_WAIT_PERCENT
        ):
            return "workers_busy", _busy_handing_over(w, context, top)
        if w.core_wait_in_next_percent >= CPU_WAIT_PERCENT:
            return "workers_idle", (
                f"The steps wait for input {wait:.1f}% of their time, but in next() the loop "
                f"waited for a batch still being made only {w.on_workers_percent:.0f}% of "
                "the time; the rest it spent getting batches already made, and for "
                f"{w.core_wait_in_next_percent:.0f}% of that its own thread was runnable but "
                "waiting for a CPU core (the stack sampler's readings): the machine's cores "
                "are what the loop waits for, not the DataLoader. Give the training process "
                "its cores (fewer busy threads or processes beside it), then profile again "
                "to judge the workers."
            )
        return "workers_idle", (
            f"The steps wait for input {wait:.1f}% of their time, but in next() the loop "
            f"waited for a batch still being made only {w.on_workers_percent:.0f}% of the "
            f"time: the rest it spent getting batches already made across from the workers "
            f"(pickled there, the result queue, unpickled here, pin_memory); more workers "
            f"will not help. {_MAIN}"
        )
    busy = w.busy_waiting_percent if w.busy_waiting_percent >= 0 else w.busy_percent
    during = (
        "while the loop waited for a batch" if w.busy_waiting_percent >= 0 else "of the steps' span"
    )
    # one worker idle while the loop waits has its batch made: no other worker's to wait for
    if busy >= BUSY_PERCENT or (w.n == 1 and busy > IDLE_BUSY_PERCENT):
        return "workers_busy", _busy(w, context, busy, during, top)
    if busy <= IDLE_BUSY_PERCENT:
        return "workers_idle", (
            f"DataLoader workers idle {100 - busy:.0f}% {during} (the steps wait for input "
            f"{wait:.1f}% of their time): the batches were made, and the loop waits for "
            "them to come across from the workers (pickled there, the result queue, "
            f"unpickled here, pin_memory) or asks for them late; more workers will not help. "
            f"{_MAIN}"
        )
    return "uneven_batches", (
        f"While the loop waited for a batch, the {w.n} DataLoader workers were busy only "
        f"{busy:.0f}% of the time (the steps wait for input {wait:.1f}% of their time): the "
        "loop takes batches in order, and waited for a late one while the other workers had "
        "made theirs and waited for new indices (a worker makes at most prefetch_factor "
        f"batches ahead). Their batches take {w.ms_per_batch:.2f} ms on average, "
        f"{w.p90_ms_per_batch:.2f} ms at the 90th percentile{top}. {_uneven_fix(w.settings)}"
    )


def _setting(settings: dict[str, int], name: str, default: str) -> str:
    """``now 4`` from the loader's recorded setting, else what torch defaults to."""
    value = settings.get(name)
    if value is None:
        return default
    shown = str(bool(value)) if name in ("in_order", "pin_memory", "persistent_workers") else value
    return f"now {shown}"


def _uneven_fix(settings: dict[str, int]) -> str:
    """What lets the free workers go on, from the loader's own settings (decision 425):
    ``in_order=False`` only where it is not already so."""
    prefetch = _setting(settings, "prefetch_factor", "2 by default")
    if settings.get("in_order") == 0:
        return (
            f"The loader already hands out batches as they are made (in_order=False): raise "
            f"prefetch_factor ({prefetch}), or even out the batches' cost."
        )
    return (
        "Let the free workers go on: DataLoader(in_order=False) hands out batches as they "
        f"are made; or raise prefetch_factor ({prefetch}); or even out the batches' cost."
    )


def _busy_handing_over(w: Workers, context: Context, top: str) -> str:
    """The loop took batches already made while the workers, on cores too busy to run them
    all, made the next ones (decision 426): taking a made batch needs a CPU in the worker
    that made it (it sends the batch's shared memory) and in the loop's process."""
    idle = (
        f"{context.idle_cores:.1f} of {context.cores} cores were idle while recording"
        if context.idle_cores >= 0 and context.cores
        else "the cores are busy"
    )
    return (
        f"The steps wait for input {context.input_percent:.1f}% of their time. In next() the "
        f"loop mostly took batches already made (a batch still being made "
        f"{w.on_workers_percent:.0f}% of the time), but the {_workers(w.n)} were busy "
        f"{w.busy_in_next_percent:.0f}% of its time in next() making the next ones "
        f"({w.ms_per_batch:.2f} ms a batch{_where(w)}{top}), and waited for a CPU "
        f"{w.cpu_wait_percent:.0f}% of their batches' time ({idle}): a made batch crosses "
        "through the worker process that made it, and the loop's own turn on a CPU waits with "
        f"them. The cores are the limit: {_cheaper(w)}, or give the job more cores. On a "
        "machine shared with other programs, more workers take a larger share of it from "
        "them; they add no cores."
    )


def _where(w: Workers) -> str:
    """Where a batch's time goes in a worker: the larger of collate_fn and the rest."""
    if w.collate_percent >= 50:
        return f"; collate_fn takes {w.collate_percent:.0f}% of it"
    if 0 <= w.collate_percent < 50:
        return f"; the dataset's __getitem__ calls take {100 - w.collate_percent:.0f}% of it"
    return ""


def _cheaper(w: Workers) -> str:
    """What to make cheaper, from where the batches' time goes (decision 427)."""
    if w.collate_percent >= 50:
        return (
            "make collate_fn cheaper (work per sample done once on the whole batch: one "
            "torch.stack or NumPy operation, not Python over the samples)"
        )
    return "make __getitem__ cheaper (precompute or cache what each sample repeats)"


def _workers(n: int) -> str:
    return f"{n} DataLoader worker" + ("s" if n != 1 else "")


def _busy(w: Workers, context: Context, busy: float, during: str, top: str) -> str:
    wait = context.input_percent
    where = f"; collate_fn takes {w.collate_percent:.0f}% of it" if w.collate_percent >= 50 else ""
    head = (
        f"DataLoader workers busy {busy:.0f}% {during} (the steps wait for input "
        f"{wait:.1f}% of their time): the {_workers(w.n)} cannot make "
        f"batches as fast as the steps use them ({w.ms_per_batch:.2f} ms per batch in a "
        f"worker{where}{top})."
    )
    needed = _workers_needed(w, context)
    now = w.settings.get("num_workers", w.n)  # the loader's own, where recorded
    off_cpu = 100.0 - w.cpu_percent - max(w.cpu_wait_percent, 0.0)
    starved = w.cpu_wait_percent >= CPU_WAIT_PERCENT
    if w.cpu_percent >= 0 and off_cpu >= OFF_CPU_PERCENT:
        return head + (
            f" Their batches mostly wait off the CPU ({off_cpu:.0f}% of their time: sleep, "
            f"I/O, locks; computing {w.cpu_percent:.0f}%): add workers, they need little CPU: "
            f"num_workers={needed} (now {now}) would make a batch every "
            f"{w.ms_per_batch / needed:.2f} ms for "
            f"{_per_batch(context.other_ms, context.batches_per_step)}."
            + (
                f" They also waited for a CPU {w.cpu_wait_percent:.0f}% of their time: the "
                "cores are busy."
                if starved
                else ""
            )
        )
    if starved:
        return head + (
            f" They waited for a CPU {w.cpu_wait_percent:.0f}% of their time (computing "
            f"{w.cpu_percent:.0f}%): the machine's cores are busy, and more workers would "
            f"share them; {_cheaper(w)} (or give the job more cores). On a machine shared "
            "with other programs, more workers take a larger share of it from them."
        )
    if context.idle_cores < 0:
        return head + (
            f" Add workers (num_workers={needed} would keep up, now {now}) if the machine "
            "has idle cores, or make that work faster."
        )
    if context.idle_cores >= 1:
        more = min(needed, w.n + math.floor(context.idle_cores))
        return head + (
            f" Add workers: {context.idle_cores:.1f} of {context.cores} cores were idle while "
            f"recording: num_workers={more} (now {now})"
            + (
                "."
                if more >= needed
                else f"; {needed} would keep up, so also make that work faster."
            )
        )
    return head + (
        f" {context.idle_cores:.1f} of {context.cores} cores were idle while recording: more "
        f"workers would share the cores already busy; {_cheaper(w)} (or give the job more "
        "cores)."
    )


def _workers_needed(w: Workers, context: Context) -> int:
    """Workers that would make a batch in the steps' other work per step (at least one more
    than now): each makes one in ``ms_per_batch``."""
    if context.other_ms <= 0:
        return w.n + 1
    return max(w.n + 1, math.ceil(w.ms_per_batch / context.other_ms))


# The DataLoader iterator of ``num_workers=0``, as the PyTorch profiler names its ``next()``.
IN_PROCESS_ITER = "_SingleProcessDataLoaderIter.__next__"


def batches_per_step(profile: Profile, db: StepDb, keep: np.ndarray) -> float:
    """How many batches the loop took from a DataLoader per step, over the steps ``keep`` (a
    mask): its ``next()`` calls that began in them, at least one a step. A loop that
    accumulates gradients takes N batches per optimizer step (decision 535): a worker must
    make one in a Nth of the step's other work, not in all of it."""
    ids = profile.strings.ids_matching(is_dataloader_next)
    if not len(ids) or not keep.any():
        return 1.0
    at = np.sort(profile.start_ns[np.isin(profile.name, ids)])
    lo, hi = db.start_ns[keep], db.start_ns[keep] + db.dur_ns[keep]
    inside = int((np.searchsorted(at, hi, "left") - np.searchsorted(at, lo, "left")).sum())
    return max(1.0, inside / int(keep.sum()))


def _per_batch(other_ms: float, batches: float) -> str:
    """The other work each batch must be made in, said for people."""
    if round(batches) <= 1:
        return f"the steps' {other_ms:.2f} ms of other work"
    return f"the {other_ms:.2f} ms of other work per batch, {batches:.0f} batches a step"


def recorded_cpu(profile: Profile) -> tuple[int, float]:
    """(cores, idle cores) the capture recorded for the host; (0, -1) when it did not."""
    for plane in profile.planes:
        if CPU_COUNT_STAT in plane.stats:
            cores = plane.stats[CPU_COUNT_STAT]
            idle = plane.stats.get(CPU_IDLE_STAT, -1.0)
            if isinstance(cores, int) and isinstance(idle, (int, float)):
                return cores, float(idle)
    return 0, -1.0


def in_process_loader(profile: Profile, db: StepDb | None, first: int = 0) -> str:
    """Advice for a DataLoader making its batches in the training process (``num_workers=0``)
    while the steps from ``first`` on (the warm-up's end) wait for input (decision 393); ""
    otherwise. Judged once warm: a torch.compile'd model's first step (6.35 s compiling)
    left 6.1% of all the steps' time to input where the steps after it waited 27.2% of
    theirs (decision 537)."""
    if db is None or not db.n_steps:
        return ""
    keep = np.arange(db.n_steps) >= (first if first < db.n_steps else 0)
    ids = profile.strings.ids_matching(
        lambda s: is_dataloader_next(s) and s.endswith(IN_PROCESS_ITER)
    )
    calls = np.flatnonzero(np.isin(profile.name, ids))
    total = int(db.dur_ns[keep].sum())
    input_ns = float(db.limit_ns()["input"][keep].sum())
    if not len(calls) or not total or 100.0 * input_ns / total < INPUT_WAIT_PERCENT:
        return ""
    # the batches of the steps judged (the first ones come slower: a cold start)
    at = profile.start_ns[calls]
    lo = int(db.start_ns[keep][0])
    hi = int(db.start_ns[keep][-1] + db.dur_ns[keep][-1])
    judged = calls[(at >= lo) & (at < hi)]
    per_batch_ms = float(profile.dur_ns[judged if len(judged) else calls].mean()) / 1e6
    batches = batches_per_step(profile, db, keep)
    other_ms = (total - input_ns) / int(keep.sum()) / 1e6 / batches
    needed = max(1, math.ceil(per_batch_ms / other_ms)) if other_ms > 0 else 1
    steps = "the steps once warm" if not keep[0] else "the steps"
    said = (
        f"The DataLoader makes its batches in the training process (num_workers=0): "
        f"{per_batch_ms:.2f} ms a batch, while {steps} wait for input "
        f"{100.0 * input_ns / total:.1f}% of their time. Set num_workers so that worker "
        f"processes make the next batches while the step computes: num_workers={needed} would "
        f"make one every {per_batch_ms / needed:.2f} ms for {_per_batch(other_ms, batches)} "
    )
    cores = recorded_cpu(profile)[0]
    if cores and needed > cores:
        # 83 workers for a 96 ms batch beside 1.2 ms of model work, on 2 cores (decision 549)
        return said + (
            f"(more workers than the host's {cores} cores): make each batch cheaper first "
            f"(the Dataset's __getitem__ and collate_fn take the {per_batch_ms:.2f} ms), or "
            "give each step more work per batch, then add workers."
        )
    return said + "(if the batches need CPU, at most the idle cores)."
