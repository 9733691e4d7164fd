"""A pass over another DataLoader run at the end of a step ends that step (decision 1034).

A PyTorch loop that validates every N steps inside its iteration (``for batch in loader:``
train on it, then ``if (i + 1) % 10 == 0: validate()``, ``model.eval()``, ``torch.no_grad()``,
a second DataLoader) made every 10th step hold the whole validation: a plain loop
(``stepscope.steps(loader)``, or start/stop only) of 60 steps, each 49 ms of training, read
"Step time: avg 58.45 ms" where the script timed its training steps at 50.85 ms, and the
breakdown and the input share counted the validation's forward passes and fetches as the
training step's. The periodic-steps finding (decisions 580, 780) named the pass, but every
figure above it still held it.

A step whose DataLoader fetches number at least `EXTRA_FETCHES` more than the steps' median
holds another loader's pass: its fetches after the step's usual ones. When that pass runs to
the step's end (its last fetch, the one finding the pass over, ends no more than `TAIL_SHARE`
of the pass, or one of its batches, from the step's end) and the step's own work comes
before it, the
step ends where the pass begins: at its first fetch, or at the new pass's start
(`other_pass.begins_pass`: its ``iter()``) just before it. The pass is then in no step, as a
script timing its training step leaves it out, and the gaps' finding tells it (decision 783).
A pass before the step's own work (validating first, then training on the batch fetched) is
left in its step.

A checkpoint saved after the validation (``evaluate(val_loader)`` then ``torch.save(...)``)
or the step's logging after it (a validation between the optimizer step and the logging)
follows the pass: its time after the pass's last fetch is over the tail above whenever the
save takes more than a tenth of the pass. A step whose PyTorch optimizer steps before the
pass number as many as a step's without a pass (at least one) has trained on its batch
before the pass: it ends whatever follows the pass (decision 1013), and the work after the
pass (the save, the logging) is in no step with it, as a script timing its training step
leaves it out. It ends with its last traced work before the pass, not at the pass's first
event: the untraced Python between (``model.eval()``, making the pass's iterator) is no
work of the training step, and a thread descheduled there held the step open by
milliseconds (decision 1015). Where no ``Optimizer.step`` is traced (a hand-written update,
accumulation steps that do not step) only the tail rule tells the pass from the step's work.
A pass that the step's optimizer steps follow (a validation between ``loss.backward()`` and
``opt.step()``) is inside the training step, on the script's clock too: it stays in its
step, whatever the tail rule reads (decision 1016).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.steps.other_pass import EXTRA_FETCHES, begins_pass
from stepscope.vocab.pytorch import OPTIMIZER_STEP_PREFIX, is_dataloader_next

TAIL_SHARE = 0.1  # the step's time after the pass's last fetch: at most this share of the pass
TAIL_MIN_NS = 1_000_000  # ... or this
PASS_LEAD_NS = 1_000_000  # a new pass's start ending this close before its first fetch begins it
LISTED = 6  # step numbers the note lists


@record
class PassCuts:
    """Where each step's pass over another DataLoader begins, and the note saying so."""

    cut_ns: np.ndarray  # per step: where it ends before the pass, int64 max for none
    note: str


def pass_cuts(
    profile: Profile,
    lines: tuple[int, ...],
    step_num: np.ndarray,
    start_ns: np.ndarray,
    end_ns: np.ndarray,
) -> PassCuts | None:
    """Per step (``start_ns``/``end_ns``: disjoint, in start order; ``lines``: the steps'
    threads): where a pass over another DataLoader at its end begins; None when no step holds
    one."""
    ids = profile.strings.ids_matching(is_dataloader_next)
    if not len(ids) or len(start_ns) < 3 or not lines:
        return None
    on_line = np.zeros(len(profile.lines), bool)
    on_line[list(lines)] = True
    mine = on_line.take(profile.line)
    fetch = np.flatnonzero(np.isin(profile.name, ids) & mine)
    fetch = fetch[np.argsort(profile.start_ns[fetch], kind="stable")]
    at = profile.start_ns[fetch]
    first = np.searchsorted(at, start_ns, "left")
    count = np.searchsorted(at, end_ns, "left") - first
    usual = int(np.median(count))
    held = np.flatnonzero(count >= usual + EXTRA_FETCHES)
    if not len(held):
        return None
    stepped = _optimizer_steps(profile, mine, start_ns, end_ns)
    begin = np.flatnonzero(np.isin(profile.name, profile.strings.ids_matching(begins_pass)) & mine)
    begin_end = profile.end_at(begin)
    last_work = _last_work(profile, lines)
    cut = np.full(len(start_ns), np.iinfo(np.int64).max, np.int64)
    spans, after = [], []  # the passes; the other work after those followed by some
    for k in held.tolist():
        own = fetch[first[k] : first[k] + usual]
        ours = fetch[first[k] + usual : first[k] + count[k]]
        lo, hi = int(profile.start_ns[ours[0]]), int(profile.end_at(ours).max())
        floor = int(profile.end_at(own).max()) if len(own) else int(start_ns[k])
        # its iter() just before its first fetch (the base seed, the workers' start)
        near = (begin_end <= lo) & (begin_end >= lo - PASS_LEAD_NS)
        near &= profile.start_ns[begin] >= floor
        if near.any():
            lo = int(profile.start_ns[begin[near]].min())
        # after its last fetch: no more than one of its batches takes (a last step whose end
        # is inferred from its own work may end inside the pass), or a small share of it
        batch = int(np.diff(profile.start_ns[ours]).max(initial=0))
        if lo <= start_ns[k]:
            continue
        trained = stepped(int(start_ns[k]), lo)
        if not trained and stepped(hi, int(end_ns[k])):
            continue  # it trains after the pass: inside the step, as on the script's clock
        tail = end_ns[k] - hi > max(TAIL_MIN_NS, TAIL_SHARE * (hi - lo), batch)
        if tail and not trained:
            continue
        # trained: the step ends with its last traced work before the pass, the untraced
        # set-up between (``model.eval()``, the pass's iterator) in no step (decision 1015)
        cut[k] = last_work(int(start_ns[k]), lo) if trained else lo
        spans.append((hi if tail else int(end_ns[k])) - lo)
        if tail:  # a checkpoint's save, the step's logging (decision 1013)
            after.append(int(end_ns[k]) - hi)
    if not spans:
        return None
    cut_at = np.flatnonzero(cut < np.iinfo(np.int64).max)
    nums = [int(n) for n in step_num[cut_at]]
    listed = ", ".join(map(str, nums[:LISTED])) + (
        f", ... ({len(nums)} steps)" if len(nums) > LISTED else ""
    )
    extra = int(np.median(count[cut_at])) - usual
    many = len(nums) > 1
    note = (
        f"{'steps' if many else 'step'} {listed} {'end' if many else 'ends'} before another "
        f"DataLoader's pass at {'their' if many else 'its'} end ({extra} fetches, "
        f"{float(np.median(spans)) / 1e6:.2f} ms{' each (median)' if many else ''}: an "
        "evaluation or validation loop)"
    )
    if after:  # told apart, as the gaps' finding tells the pass
        each = " each (median)" if len(after) > 1 else ""
        note += (
            f", with {float(np.median(after)) / 1e6:.2f} ms{each} of other work after the "
            f"pass's last fetch in {len(after)} of them (a checkpoint's save, logging)"
        )
    which, them = ("all", "them") if after else ("which is", "it")
    note += f", {which} in no step, as a script timing its training step leaves {them} out"
    return PassCuts(cut, note)


def _optimizer_steps(
    profile: Profile, mine: np.ndarray, start_ns: np.ndarray, end_ns: np.ndarray
) -> Callable[[int, int], bool]:
    """Whether the optimizer steps begun from ``lo_ns`` to ``hi_ns`` (in one step) number as
    many as the steps' median (at least one): the step trained on its batch then (decision
    1013)."""
    ids = profile.strings.ids_matching(lambda s: s.startswith(OPTIMIZER_STEP_PREFIX))
    at = np.sort(profile.start_ns[np.flatnonzero(np.isin(profile.name, ids) & mine)])
    usual = int(np.median(np.searchsorted(at, end_ns, "left") - np.searchsorted(at, start_ns)))

    def stepped(lo_ns: int, hi_ns: int) -> bool:
        n = np.searchsorted(at, hi_ns, "left") - np.searchsorted(at, lo_ns, "left")
        return usual > 0 and int(n) >= usual

    return stepped


def _last_work(profile: Profile, lines: tuple[int, ...]) -> Callable[[int, int], int]:
    """The end of the last traced work on the steps' threads begun from ``lo_ns`` and ended
    by ``hi_ns`` (``hi_ns`` when none): where a step that trained before a pass ends."""
    parts = [profile.events_of_line(profile.lines[line]) for line in lines]

    def last(lo_ns: int, hi_ns: int) -> int:
        best = lo_ns
        for part in parts:  # a line's events are in start order
            starts = profile.start_ns[part]
            a, b = np.searchsorted(starts, (lo_ns, hi_ns), "left")
            ends = profile.end_at(np.arange(part.start + a, part.start + b))
            best = max(best, int(ends[ends <= hi_ns].max(initial=lo_ns)))
        return best if best > lo_ns else hi_ns

    return last


def before_cut(
    profile: Profile,
    ev: np.ndarray,
    st: np.ndarray,
    on_device: np.ndarray,
    cut_ns: np.ndarray,
    launch_time: Callable[[Profile, np.ndarray], np.ndarray],
) -> np.ndarray:
    """Per (event, step) pair: whether it is its step's own work, begun before the step's cut
    (a device event by its launch: the pass's kernels are no step's, its step's run late)."""
    when = profile.start_ns[ev]
    dev = np.flatnonzero(on_device[ev])
    if len(dev):
        when[dev] = launch_time(profile, ev[dev])
    return when < cut_ns[st]
