"""Which collectives the steps' collective time was spent in, by kind (decision 1037).

The "bound by collectives" words named "(all-reduce, all-gather)" whatever the job ran. The
pairs of the collective limits (`LimitType.COLLECTIVES`: NCCL/RCCL kernels, XLA collective
instructions; `LimitType.HOST_COLLECTIVE`: gloo's, MPI's, c10d's spans) are named by
`vocab.collectives.collective_kind` (``all_reduce``, ``broadcast``, ``barrier``...); a name
of no known kind (``record_param_comms``, ``ncclDevKernel_Generic``) names none, and a kind
with little of the time (`NAMED_FROM`) is not named.
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct, member
from stepscope.model import Profile
from stepscope.stats.arrays import distinct_ids
from stepscope.stats.gpu.kernels import launch_events
from stepscope.stats.steps.limits import LimitType
from stepscope.vocab.collectives import collective_kind

# kinds as a sentence says them; "other" is none of them
KIND_WORDS = {
    "all_reduce": "all-reduce",
    "all_gather": "all-gather",
    "reduce_scatter": "reduce-scatter",
    "all_to_all": "all-to-all",
    "broadcast": "broadcast",
    "barrier": "barrier",
    "send_recv": "send/recv",
    "reduce": "reduce",
}
_KINDS = tuple(KIND_WORDS)
# a kind is named when it holds this share of the steps' collective time at least: DDP's
# one broadcast in its first steps (0.3-1% of a gloo job's) is set-up, not what bounds them
NAMED_FROM = 0.05
_COLLECTIVE = (int(LimitType.COLLECTIVES), int(LimitType.HOST_COLLECTIVE))
_NOT_ASKED = -2  # a name `_KindTable` has not yet asked `collective_kind` about


def pair_kinds(
    profile: Profile,
    events: np.ndarray,
    st: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    ltypes: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs of the collective limits of a known kind: (step, kind's index in
    `KIND_WORDS`, ns in the step)."""
    # two comparisons, not np.isin (decision 201; its table set-up costs more here)
    mine = np.flatnonzero((ltypes == _COLLECTIVE[0]) | (ltypes == _COLLECTIVE[1]))
    table = _KindTable(profile)
    kind = table.of(profile.name.take(events[mine]))
    unknown = kind < 0
    if unknown.any():  # a kernel named for no kind: its launch's collective's kind
        kind[unknown] = _launched_in(profile, events[mine[unknown]], table)
    known = kind >= 0
    mine = mine[known]
    ns = np.maximum(hi[mine] - lo[mine], 0).astype(np.int64)
    return st[mine].astype(np.int64), kind[known], ns


class _KindTable:
    """Per name (string id) of a profile, its kind's index in `KIND_WORDS` or -1 (no known
    kind): `collective_kind` runs once per distinct name asked, however many of the pairs'
    and the launches' spans ask for it."""

    def __init__(self, profile: Profile) -> None:
        self._strings = profile.strings
        self._code = np.full(len(profile.strings), _NOT_ASKED, np.int8)

    def of(self, names: np.ndarray) -> np.ndarray:
        """Per name id of ``names``, its kind's index, or -1."""
        names = np.asarray(names)
        if not len(names):
            return np.zeros(0, np.int64)
        ids = distinct(names)
        new = ids[self._code[ids] == _NOT_ASKED]
        if len(new):
            found = [collective_kind(s) for s in self._strings.lookup(new)]
            self._code[new] = [_KINDS.index(k) if k in KIND_WORDS else -1 for k in found]
        return self._code[names].astype(np.int64)


def _launched_in(profile: Profile, kernels: np.ndarray, table: _KindTable) -> np.ndarray:
    """Per device event, the kind of the host collective its launch ran in (NCCL 2.19+'s
    ``ncclDevKernel_Generic`` under ``nccl:all_reduce``), or -1: the innermost host span of a
    known kind on the launch's thread that began before the launch and ends after it."""
    out = np.full(len(kernels), -1, np.int64)
    launch = launch_events(profile, kernels, cached=False)
    has = launch >= 0
    if not has.any():
        return out
    names = distinct_ids(profile.name, len(profile.strings))
    known = names[table.of(names) >= 0]
    spans = np.flatnonzero(member(profile.name, known))
    kinds = table.of(profile.name.take(spans))
    s_line, s_lo, s_hi = profile.line[spans], profile.start_ns[spans], profile.end_at(spans)
    at = launch[has]
    a_line, a_lo, a_hi = profile.line[at], profile.start_ns[at], profile.end_at(at)
    found = np.full(len(at), -1, np.int64)
    for line in distinct(a_line).tolist():
        on = np.flatnonzero(s_line == line)
        on = on[np.argsort(s_lo[on], kind="stable")]
        mine = np.flatnonzero(a_line == line)
        k = np.searchsorted(s_lo[on], a_lo[mine], "right") - 1  # the last span begun by then
        ok = k >= 0
        span = on[np.maximum(k, 0)] if len(on) else np.zeros(len(mine), np.int64)
        ok &= len(on) > 0
        if len(on):
            ok &= s_hi[span] >= a_hi[mine]
        found[mine[ok]] = kinds[span[ok]]
    out[has] = found
    return out


def kinds_in_steps(
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray], keep: np.ndarray
) -> tuple[tuple[str, int], ...]:
    """(kind, ns) over the kept steps ``keep`` of `pair_kinds`'s pairs, the most time first."""
    st, kind, ns = pairs
    kept = member(st, keep)
    total = np.bincount(kind[kept], weights=ns[kept], minlength=len(_KINDS)).astype(np.int64)
    order = sorted(np.flatnonzero(total).tolist(), key=lambda k: (-int(total[k]), k))
    return tuple((_KINDS[k], int(total[k])) for k in order)


def merged(tables: list[tuple[tuple[str, int], ...]]) -> tuple[tuple[str, int], ...]:
    """Several hosts' `kinds_in_steps`, summed, the most time first."""
    total: dict[str, int] = {}
    for table in tables:
        for kind, ns in table:
            total[kind] = total.get(kind, 0) + ns
    return tuple(sorted(total.items(), key=lambda kv: (-kv[1], _KINDS.index(kv[0]))))


def kinds_words(kinds: tuple[tuple[str, int], ...]) -> str:
    """ "all-reduce, broadcast": the kinds holding `NAMED_FROM` of the collective time, as a
    sentence names them ("" with none)."""
    total = sum(ns for _, ns in kinds)
    return ", ".join(KIND_WORDS[k] for k, ns in kinds if ns and ns >= NAMED_FROM * total)
