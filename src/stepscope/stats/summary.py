"""Steps of one host or of several (ALL_HOSTS), ready for the tools.

Several hosts: steps are paired by `stepscope.stats.steps.pairing` (by step number when the
hosts share most numbers, else by position as XProf); a pod step's duration is the job's step,
its slowest host's (XProf's ALL_HOSTS step time is the same), each category the mean over the
hosts stretched to that duration (so they add up to it), and its start the earliest host's.
``pairing`` says how, and which host-steps were left out; ``rank_dur_ns`` keeps every host's
step time (mean and spread), ``first_host_category_ns`` XProf's ALL_HOSTS breakdown (the first
host's).
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import TYPE_CHECKING

import numpy as np

from stepscope.fields import out
from stepscope.records import record
from stepscope.stats.events import CATEGORY_NAMES
from stepscope.stats.host.untraced import Untraced
from stepscope.stats.steps.breakdown import StepDb
from stepscope.stats.steps.collective_kinds import merged
from stepscope.stats.steps.describe_hosts import describe_hosts
from stepscope.stats.steps.fetch import Fetched
from stepscope.stats.steps.limit_table import LimitTable
from stepscope.stats.steps.limits import LIMIT_NAMES

if TYPE_CHECKING:
    from stepscope.stats.op_metrics import OpTable


@record
class StepStats:
    """Average, spread and extremes of the step times."""

    avg_ms: float = out("average over the steps", unit="ms", digits=6, key="avg")
    stddev_ms: float = out(
        "sample standard deviation over the steps (n - 1, as XProf)",
        unit="ms",
        digits=6,
        key="stddev",
    )
    min_ms: float = out("smallest", unit="ms", digits=6, key="min")
    max_ms: float = out("largest", unit="ms", digits=6, key="max")

    @classmethod
    def of(cls, values_ns: np.ndarray) -> StepStats:
        if not len(values_ns):
            return cls(0.0, 0.0, 0.0, 0.0)
        ms = values_ns / 1e6
        std = float(np.std(ms, ddof=1)) if len(ms) > 1 else 0.0
        return cls(float(ms.mean()), std, float(ms.min()), float(ms.max()))


@record
class StepSummary:
    """The steps of one host, or the pod steps of several: times and breakdown."""

    source: str
    description: str
    hosts: tuple[str, ...]
    has_device: bool
    step_num: np.ndarray
    names: tuple[str, ...]
    start_ns: np.ndarray
    dur_ns: np.ndarray
    category_ns: dict[str, np.ndarray]  # per CATEGORY_NAMES: per-step time
    markers_found: int
    dropped: int  # candidates not kept (ill-formed or incomplete)
    pairing: str = ""  # several hosts: how their steps were paired, and what was left out
    left_out: int = 0  # several hosts: host-steps in no pod step
    # where "All Others" sits (the host with the most of it, with several hosts)
    untraced: Untraced = field(default_factory=lambda: Untraced(""))
    # per step: input staged inside the step beyond "input" (`StepDb.staged_ns`)
    staged_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # per "bound by" limit (`stepscope.stats.steps.limits`): per-step time (means over hosts)
    limit_ns: dict[str, np.ndarray] = field(default_factory=dict)
    # the evidence behind dispatch and waits (the host with the most dispatch time)
    limits: LimitTable = field(default_factory=LimitTable.empty)
    # several hosts: each rank's step time in each pod step, (ranks, steps), in `rank_hosts`
    # order; `dur_ns` is the pacing rank's row (`pacing_rank`: the job's step)
    rank_dur_ns: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    rank_hosts: tuple[str, ...] = ()
    # several hosts: XProf's ALL_HOSTS step time (its step intersection pairs steps by their
    # times, then the slowest host) and breakdown (the first host's categories in those steps)
    xprof_dur_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    first_host_category_ns: dict[str, np.ndarray] = field(default_factory=dict)
    # the loop getting its batch from a Python iterator (`StepDb.fetched`; several hosts: the
    # host with the most such time, its `ns` the mean over the hosts per pod step)
    fetched: Fetched = field(default_factory=Fetched)
    # a host's recording began mid-run (`StepDb.mid_run`): the first steps are no warm-up
    # (with several hosts, any: their steps are paired, so the first pod step is that late)
    mid_run: bool = False
    # several hosts: each rank's start of each pod step, as `rank_dur_ns`
    rank_start_ns: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    # TensorFlow: the share of the host ops' self time that ran eagerly over the capture,
    # and the eager op types with the most of it (`with_eager`; decision 1026)
    eager_percent: float = 0.0
    eager_ops: tuple[str, ...] = ()
    # a loop fed by a queue: what its steps wait on there, the thread filling it and its
    # heaviest traced work, in the headline's words (`Producer.headline`; decision 1028)
    producer: str = ""
    # TensorFlow, one host: per step, the self time of its host ops run eagerly
    # (`op_metrics.eager_ns_by_step`; decision 1029), for the eager share's per-step words
    eager_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def n_steps(self) -> int:
        return len(self.dur_ns)

    @property
    def pacing_rank(self) -> int:
        """Several hosts: the row of `rank_dur_ns` whose steps are the job's."""
        return pacing_rank(self.rank_dur_ns)

    def job_part_ns(self, per_rank_ns: np.ndarray) -> np.ndarray:
        """Several hosts: a part of each rank's steps, (ranks, steps) in `rank_hosts` order,
        as the job's step counts its categories: the ranks' mean stretched to the job's step
        (the pacing rank's), so it keeps its share of the ranks' mean step."""
        mean = self.rank_dur_ns.mean(axis=0)
        stretch = np.divide(self.dur_ns, mean, out=np.ones(len(mean)), where=mean > 0)
        return (np.mean(per_rank_ns, axis=0) * stretch).round().astype(np.int64)

    def limit_percent(self, limit: str) -> float:
        """Share of the total step time bound by ``limit`` (0 without steps)."""
        total = self.total_ns()
        values = self.limit_ns.get(limit)
        return 100.0 * float(values.sum()) / total if total and values is not None else 0.0

    def total_ns(self) -> int:
        return int(self.dur_ns.sum())

    def percent(self, category: str) -> float:
        """Share of the total step time spent in ``category`` (0 without steps)."""
        total = self.total_ns()
        return 100.0 * float(self.category_ns[category].sum()) / total if total else 0.0

    def fetched_percent(self) -> float:
        """Share of the total step time counted as getting the batch from the loop's Python
        iterator (in the input limit)."""
        total = self.total_ns()
        ns = self.fetched.ns
        return 100.0 * float(ns.sum()) / total if total and len(ns) == self.n_steps else 0.0

    def held_percent(self) -> float:
        """Share of the total step time counted as input because the step's thread was held
        up by the input pipeline's Python (`LimitTable.held_ns`)."""
        total = self.total_ns()
        ns = self.limits.held_ns
        return 100.0 * float(ns.sum()) / total if total and len(ns) == self.n_steps else 0.0

    def slowed_percent(self) -> float:
        """Share of the total step time counted as input because the model's ops ran slowed
        beside the input pipeline's Python (`LimitTable.slowed_ns`)."""
        total = self.total_ns()
        ns = self.limits.slowed_ns
        return 100.0 * float(ns.sum()) / total if total and len(ns) == self.n_steps else 0.0

    def map_python_percent(self) -> float:
        """Share of the total step time the input pipeline's Python cost the steps: held up
        by it, or the model's ops slowed beside it."""
        return self.held_percent() + self.slowed_percent()

    def map_python_ms(self) -> float:
        """The same per step, in ms."""
        limits = self.limits
        if len(limits.held_ns) != self.n_steps or not self.n_steps:
            return 0.0
        slowed = float(limits.slowed_ns.sum()) if len(limits.slowed_ns) == self.n_steps else 0.0
        return (float(limits.held_ns.sum()) + slowed) / self.n_steps / 1e6

    def staged_percent(self) -> float:
        """Share of the total step time spent staging input inside the steps."""
        total = self.total_ns()
        return 100.0 * float(self.staged_ns.sum()) / total if total and self.staged_ns.size else 0.0

    def avg_ms(self, category: str) -> float:
        values = self.category_ns[category]
        return float(values.mean()) / 1e6 if len(values) else 0.0

    def step_stats(self) -> StepStats:
        return StepStats.of(self.dur_ns)


def pacing_rank(rank_dur_ns: np.ndarray) -> int:
    """The pacing rank's row of a (ranks, steps) table: the rank slowest on average (decision
    398); 0 when there is none."""
    if not rank_dur_ns.size:
        return 0
    return int(np.argmax(rank_dur_ns.mean(axis=1)))


def one_step_note(db: StepDb) -> str:
    """For a host of a single step, what it spans (its statistics, a stddev of 0 and min =
    max, describe one sample; a step that is most of the profile is the profile): "; a
    single step: 87.41 ms, 100.0% of the profile's 87.41 ms, ..."; "" otherwise."""
    if db.n_steps != 1 or db.profile_ns <= 0:
        return ""
    step = int(db.dur_ns[0])
    return (
        f"; a single step: {step / 1e6:.2f} ms, {100.0 * step / db.profile_ns:.1f}% of the "
        f"profile's {db.profile_ns / 1e6:.2f} ms, so no step-to-step variation can be told"
    )


def summarize_steps(dbs: dict[str, StepDb]) -> StepSummary:
    """One host's steps, or the pod steps of several hosts (`pair_host_steps`)."""
    hosts = tuple(dbs)
    found = [db for db in dbs.values() if db.n_steps]
    sources = sorted({db.source for db in dbs.values()})
    source = sources[0] if len(sources) == 1 else "+".join(sources)
    description = describe_hosts([db.description for db in dbs.values()], hosts)
    has_device = any(db.has_device for db in dbs.values())
    markers = sum(db.markers_found for db in dbs.values())
    dropped = sum(db.dropped_ill_formed + db.dropped_incomplete for db in dbs.values())
    mid_run = any(db.mid_run for db in dbs.values())
    pairing = None
    if len(dbs) > 1:  # several hosts: pairs their steps (imported only then)
        from stepscope.stats.steps.pairing import HostSteps, pair_host_steps

        pairing = pair_host_steps(
            [HostSteps(host, db.step_num, db.start_ns, db.dur_ns) for host, db in dbs.items()]
        )
    if len(found) <= 1:
        db = found[0] if found else next(iter(dbs.values()))
        note = pairing.description if pairing is not None else ""
        return StepSummary(
            source,
            description + (one_step_note(db) if len(dbs) == 1 else ""),
            hosts,
            has_device,
            db.step_num,
            db.names,
            db.start_ns,
            db.dur_ns,
            db.category_ns(),
            markers,
            dropped,
            note,
            0,
            db.untraced,
            db.staged_ns,
            db.limit_ns(),
            db.limits,
            fetched=db.fetched,
            mid_run=mid_run,
        )
    assert pairing is not None  # several hosts have steps
    used = [(db, rows) for db, rows in zip(dbs.values(), pairing.rows, strict=True) if db.n_steps]
    picks = [rows for _, rows in used]
    found = [db for db, _ in used]
    # The job's step is the pacing rank's: the one slowest on average (decision 398). In
    # synchronous training every rank's steps average the job's period, and the per-step
    # largest of them is longer by where each rank's boundaries fall (a 4-rank DDP job whose
    # scripts measured 60.4 ms a step read 65.5); without synchronization the job is done
    # when its slowest rank is. Its breakdown is the ranks' mean breakdown stretched to that
    # length, so the categories still add up to it (docs/jobs.md).
    per_rank = np.stack([db.dur_ns[k] for db, k in zip(found, picks, strict=True)])
    dur = per_rank[pacing_rank(per_rank)].astype(np.int64)
    mean = per_rank.mean(axis=0)
    stretch = np.divide(dur, mean, out=np.ones(len(dur)), where=mean > 0)
    start = np.min([db.start_ns[k] for db, k in zip(found, picks, strict=True)], axis=0)
    categories = {
        c: (
            np.mean([db.category_ns()[c][k] for db, k in zip(found, picks, strict=True)], axis=0)
            * stretch
        )
        .round()
        .astype(np.int64)
        for c in CATEGORY_NAMES
    }
    # rounding must not break "categories add up to the step"
    categories["other"] += dur - sum(categories.values())
    limits = {
        c: (
            np.mean([db.limit_ns()[c][k] for db, k in zip(found, picks, strict=True)], axis=0)
            * stretch
        )
        .round()
        .astype(np.int64)
        for c in LIMIT_NAMES
    }
    limits["host"] += dur - sum(limits.values())
    # the limit table's columns alike (traced host work apart from untraced): the host
    # limit's words split it, and one rank's table beside the job's limits said "the
    # untraced rest (0.1%)" of a job whose straggler's 13.3 s were all untraced (decision 668)
    table = replace(
        _most_dispatch(found),
        ns=(np.mean([_limit_table(db)[k] for db, k in used], axis=0) * stretch[:, None])
        .round()
        .astype(np.int64),
    )
    # XProf's ALL_HOSTS step: its own pairing (by time), the slowest host; its breakdown:
    # the first host's over those steps
    x_rows = _xprof_rows(found)
    xprof_dur = np.max([d.dur_ns[r] for d, r in zip(found, x_rows, strict=True)], axis=0)
    first_categories = {c: found[0].category_ns()[c][x_rows[0]] for c in CATEGORY_NAMES}
    first = found[0]
    names = (
        tuple(first.names[i] for i in picks[0].tolist())
        if pairing.mode != "position"
        else tuple(f"pod step {k}" for k in range(pairing.n_steps))
    )
    return StepSummary(
        source,
        description,
        hosts,
        has_device,
        pairing.step_num,
        names,
        start,
        dur,
        categories,
        markers,
        dropped,
        pairing.description,
        sum(pairing.left_out),
        _most_untraced(dbs),
        np.mean([_staged(db)[k] for db, k in zip(found, picks, strict=True)], axis=0)
        .round()
        .astype(np.int64),
        limits,
        table,
        per_rank,
        tuple(h for h, db in dbs.items() if db.n_steps),
        xprof_dur.astype(np.int64),
        first_categories,
        _most_fetched(found, picks),
        mid_run,
        rank_start_ns=np.stack([db.start_ns[k] for db, k in zip(found, picks, strict=True)]),
    )


def _most_untraced(dbs: dict[str, StepDb]) -> Untraced:
    """The untraced-time picture of the host with the most "All Others", labelled with that
    host and its own steps (its times cover all of its steps, not the pod steps)."""
    host, db = max(
        ((h, d) for h, d in dbs.items() if d.n_steps),
        key=lambda item: int(item[1].category_ns()["other"].sum()),
    )
    return replace(db.untraced, host=host, n_steps=db.n_steps, step_ns=int(db.dur_ns.sum()))


def _most_dispatch(dbs: list[StepDb]) -> LimitTable:
    """The dispatch and wait evidence of the host with the most dispatch time (the waited-for
    threads of every host)."""
    best = max(dbs, key=lambda db: int(db.limit_ns()["dispatch"].sum()))
    waited = tuple(dict.fromkeys(t for db in dbs for t in db.limits.waited_for))
    kinds = merged([db.limits.collectives for db in dbs])
    return replace(best.limits, waited_for=waited[:3], collectives=kinds)


def _most_fetched(dbs: list[StepDb], picks: list[np.ndarray]) -> Fetched:
    """The iterator picture of the host with the most fetch time, with each pod step's time
    the mean over the hosts (as staged input)."""
    per_host = [
        db.fetched.ns[k] if len(db.fetched.ns) == db.n_steps else np.zeros(len(k), np.int64)
        for db, k in zip(dbs, picks, strict=True)
    ]
    best = max(range(len(dbs)), key=lambda i: int(per_host[i].sum()))
    mean = np.mean(per_host, axis=0).round().astype(np.int64)
    return replace(dbs[best].fetched, ns=mean)


def _limit_table(db: StepDb) -> np.ndarray:
    """The host's limit columns per step (zeros for a database stored without them)."""
    ns = db.limits.ns
    return ns if len(ns) == db.n_steps else np.zeros((db.n_steps, ns.shape[1]), np.int64)


def _staged(db: StepDb) -> np.ndarray:
    return db.staged_ns if len(db.staged_ns) == db.n_steps else np.zeros(db.n_steps, np.int64)


def _xprof_rows(found: list[StepDb]) -> list[np.ndarray]:
    """Per host, its rows in XProf's ALL_HOSTS steps (`pairing.xprof_rows`) over the steps
    XProf sees: its rule drops the ends stepscope keeps whole (`StepDb.xprof_trim`,
    decision 671)."""
    from stepscope.stats.steps.pairing import HostSteps, xprof_rows

    seen = [slice(d.xprof_trim[0], d.n_steps - d.xprof_trim[1]) for d in found]
    hosts = [
        HostSteps("", d.step_num[s], d.start_ns[s], d.dur_ns[s])
        for d, s in zip(found, seen, strict=True)
    ]
    return [r + s.start for r, s in zip(xprof_rows(hosts), seen, strict=True)]


def eager_per_step(summary: StepSummary) -> str:
    """``11.93 ms of a median 15.34 ms step, 22.78 ms of the mean 26.63 ms``: the eager ops'
    time per step (`eager_ns`) beside the step time, as a user times a step (decision 1029);
    several hosts: the job's, beside the job's step, ``... of a median 15.34 ms job step,
    ..., the ranks' mean scaled to the job's step as its breakdown is`` (decision 1061);
    "" where it is not known per step or no op ran eagerly in the steps."""
    ns = summary.eager_ns
    if not summary.n_steps or len(ns) != summary.n_steps or not ns.any():
        return ""
    median, mean = float(np.median(ns)) / 1e6, float(ns.mean()) / 1e6
    step_median = float(np.median(summary.dur_ns)) / 1e6
    step_mean = float(summary.dur_ns.mean()) / 1e6
    job = len(summary.rank_hosts) > 1
    return (
        f"{median:.2f} ms of a median {step_median:.2f} ms {'job step' if job else 'step'}, "
        f"{mean:.2f} ms of the mean {step_mean:.2f} ms"
        + (", the ranks' mean scaled to the job's step as its breakdown is" if job else "")
    )


def with_eager(summary: StepSummary, table: OpTable) -> StepSummary:
    """``summary`` with the eager share of a TensorFlow program's host ops (``table``: its
    host op table), for the compute evidence (decision 1026); unchanged for other frameworks
    and where no op ran eagerly."""
    if summary.limits.framework != "tensorflow" or not len(table):
        return summary
    eager = table.eager_self_ns
    total, eager_total = int(table.self_ns.sum()), int(eager.sum())
    if total <= 0 or eager_total <= 0:
        return summary
    order = np.argsort(-eager, kind="stable")[:2]
    names = tuple(table.types[i] or table.names[i] for i in order.tolist() if eager[i] > 0)
    return replace(summary, eager_percent=100.0 * eager_total / total, eager_ops=names)
