"""Stragglers by collective arrival (issue #26): the same collective matched across ranks,
the last to arrive named with what it did since its previous collective, waiters labelled
waiting, clock offsets estimated from the exits, on CPU (gloo) and GPU (NCCL) jobs of 2 to
256 ranks built in code."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from stepscope.cli.main import main
from stepscope.stats import build_step_db
from stepscope.stats.collective_calls import collective_calls
from stepscope.stats.stragglers import BY_ARRIVAL, Rank, find_stragglers, held_by
from stepscope.xspace.builder import XSpaceBuilder
from tests.pod.builders import MS, data_parallel_job, gloo_job, write_run
from tests.support.analysis import build
from tests.support.gpu_fixtures import GpuTrace

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

US = 1_000


def _ranks(builders: list[XSpaceBuilder]) -> list[Rank]:
    out = []
    for b in builders:
        profile = build(b)
        db = build_step_db(profile)
        out.append(Rank(b.hostnames[0], db, collective_calls(profile, db)))
    return out


def test_gloo_job_names_the_last_rank_and_why() -> None:
    """Before issue #26: 'rank0 is late ... its host compute takes longer', the waiter blamed
    (gloo's all-reduce was host compute); or no straggler and wait 0 everywhere."""
    pod = find_stragglers(
        _ranks(gloo_job(2, input_ms=lambda rank, step: 30.0 if rank == 1 else 1.0))
    )
    assert pod.method == BY_ARRIVAL
    [late] = pod.stragglers
    assert late.host == "vm.rank1" and late.reason == "input"
    assert len(late.steps) == 10  # every compared step (first and last dropped)
    n = len(late.steps)
    # held the other rank from its second bucket (6 ms) to rank 1's second (35 ms) each
    # step: it enqueued that one while its first still ran, and waited at it only (decision
    # 1035; the union of both buckets' margins, 29 ms each and 1 ms apart, read 30 ms)
    assert late.late_ns / n == pytest.approx(29 * MS, rel=1e-6)
    assert late.reason_ns / n == pytest.approx(30 * MS, rel=1e-6)
    assert late.reason_peers_ns / n == pytest.approx(1 * MS, rel=1e-6)
    assert "vm.rank1 is late at steps 1-10" in late.explanation
    assert "arrived last" in late.explanation
    assert pod.role(0) == "waiting" and pod.role(1) == "straggler"
    assert np.nanmean(pod.wait_ns[0]) == pytest.approx(29 * MS, rel=1e-6)
    assert np.nansum(pod.wait_ns[1]) == 0


def test_clock_offsets_come_from_the_exits_and_are_stated() -> None:
    """Ranks whose clocks differ by seconds: arrivals are compared on one clock."""
    pod = find_stragglers(
        _ranks(
            gloo_job(
                4,
                compute_ms=lambda rank, step: 9.0 if rank == 2 else 4.0,
                clock_ms=lambda rank: [0.0, 2_500.0, -700.0, 12.5][rank],
            )
        )
    )
    [late] = pod.stragglers
    assert late.host == "vm.rank2" and late.reason == "host_compute"
    assert pod.offsets_ns is not None
    expected = np.array([0.0, 2_500.0, -700.0, 12.5]) * MS
    assert pod.offsets_ns == pytest.approx(expected - np.median(expected), abs=1)
    assert "clock offsets estimated from their exits" in pod.clock_note
    assert "vm.rank1 +2493.750 ms" in pod.clock_note  # against the median rank
    assert [pod.role(i) for i in range(4)] == ["waiting", "waiting", "straggler", "waiting"]


def test_balanced_job_with_jitter_names_nobody() -> None:
    rng = np.random.default_rng(7)
    jitter = rng.uniform(0, 0.3, size=(8, 40))  # up to 6% of a rank's own 5 ms
    pod = find_stragglers(
        _ranks(gloo_job(8, steps=40, compute_ms=lambda rank, step: 4.0 + jitter[rank, step]))
    )
    assert pod.method == BY_ARRIVAL and pod.stragglers == ()
    assert not pod.late.any()


def test_a_rank_repeatedly_last_keeps_its_finding_whatever_its_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #26 item 3: rank 3, 2 ms late at 10 of 40 steps (7% of the run), lost its
    diagnostics finding under the 10% share while the waiters' findings pointed to it."""
    run = data_parallel_job(
        tmp_path,
        ranks=4,
        steps=40,
        compute_ms=lambda rank, step: 7.0 if rank == 3 and step % 4 == 1 else 5.0,
    )
    assert main(["tool", str(run), "diagnostics", "--workers", "0"]) == 0
    found = json.loads(capsys.readouterr().out)["findings"]
    [skew] = [f for f in found if f["id"] == "host_skew"]
    assert skew["metrics"]["straggler"] == "rank3" and skew["severity"] == "low"
    assert skew["metrics"]["reason"] == "device_compute"
    assert skew["steps"] == [s for s in range(1, 39) if s % 4 == 1]


@pytest.mark.integration  # over a second: out of the one-minute tier (decision 448)
@pytest.mark.parametrize(("ranks", "slow"), [(16, 11), (256, 200)])
def test_nccl_jobs_of_16_and_256_ranks_name_the_right_rank(ranks: int, slow: int) -> None:
    traces = []
    steps = 6
    for r in range(ranks):
        t = GpuTrace(host=f"rank{r}")
        traces.append(t)
    t0 = 0
    for s in range(steps):
        ready = [t0 + (8 if r == slow else 5) * MS for r in range(ranks)]
        end = max(ready) + MS
        for r, t in enumerate(traces):
            off = 1_000 * MS + r * 3_333_333
            t.step(s, off + t0, end + MS // 10 - t0)
            t.launch(off + t0, "sm80_xmma_gemm_f16f16", off + t0 + 50 * US, ready[r] - t0 - 50 * US)
            t.launch(
                off + t0 + 20 * US,
                "ncclKernel_AllReduce_RING_LL_Sum_float",
                off + ready[r],
                end - ready[r],
                stream=14,
            )
        t0 = end + MS // 10
    pod = find_stragglers(_ranks([t.builder for t in traces]))
    [late] = pod.stragglers
    assert late.host == f"rank{slow}" and late.reason == "device_compute"
    assert late.waiters == ranks - 1 and late.late_ns / len(late.steps) == pytest.approx(3 * MS)


def test_sequence_numbers_match_calls_when_captures_start_apart() -> None:
    """Rank 1's capture began one collective earlier: with Kineto's `Seq` the calls still
    pair (by position they would be shifted by one)."""
    builders = []
    for r in range(2):
        b = XSpaceBuilder(f"rank{r}")
        main_line = b.plane("/host:CPU").line(1, "MainThread")
        gloo = b.plane("/host:CPU").line(2, "gloo")
        first = 0 if r == 1 else 1  # rank 0 missed call 0
        for s in range(first, 8):
            t = s * 20 * MS
            main_line.event("train", t, 20 * MS, {"step_num": s if r == 1 else s + 100, "_r": 1})
            ready = t + (12 if r == 0 else 2) * MS
            main_line.event("aten::addmm", t, ready - t)
            gloo.event("gloo:all_reduce", ready, t + 13 * MS - ready, {"Seq": s})
        builders.append(b)
    pod = find_stragglers(_ranks(builders))
    [late] = pod.stragglers
    assert late.host == "rank0" and late.reason == "host_compute"


def test_without_collectives_the_own_time_rule_stays() -> None:
    builders = []
    for r in range(3):
        b = XSpaceBuilder(f"w{r}")
        main_line = b.plane("/host:CPU").line(1, "MainThread")
        step_ms = 10 if r == 1 else 4
        for k in range(12):
            main_line.event("train", k * step_ms * MS, step_ms * MS, {"step_num": k, "_r": 1})
            main_line.event("forward", k * step_ms * MS, 3 * MS)
        builders.append(b)
    pod = find_stragglers(_ranks(builders))
    assert pod.method == "own time"
    [late] = pod.stragglers
    assert late.host == "w1" and late.reason == "other"


def test_a_straggler_hidden_behind_another_is_named_next_in_line() -> None:
    """Rank 1 waits 20 ms for its data and rank 3 computes 10 ms more: rank 1 is last at
    every all-reduce; rank 3, last of the others, would hold the job once rank 1 is fixed
    (before issue #26 a job like this had no straggler and no waiting at all)."""
    pod = find_stragglers(
        _ranks(
            gloo_job(
                4,
                input_ms=lambda rank, step: 21.0 if rank == 1 else 1.0,
                compute_ms=lambda rank, step: 14.0 if rank == 3 else 4.0,
            )
        )
    )
    first, following = pod.stragglers
    assert (first.host, first.reason, first.behind) == ("vm.rank1", "input", "")
    assert (following.host, following.reason) == ("vm.rank3", "host_compute")
    assert following.behind == "vm.rank1" and following.waiters == 0
    assert following.explanation.startswith("Next in line, hidden behind vm.rank1: vm.rank3")
    assert [pod.role(i) for i in range(4)] == ["waiting", "straggler", "waiting", "next straggler"]


def test_the_job_headline_names_the_straggler_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """At ALL_HOSTS the ranks' mean breakdown says "collectives" (3 of 4 ranks wait in them)
    while one rank's input holds the job: the headline says so first, the mean after; a
    single rank keeps its own headline."""
    run = data_parallel_job(
        tmp_path, ranks=4, steps=12, input_ms=lambda rank, step: 9.0 if rank == 2 else 1.0
    )
    assert main(["tool", str(run), "overview_page", "--workers", "0", "--no-cache"]) == 0
    headline = json.loads(capsys.readouterr().out)["bound_by"]["headline"]
    assert headline.startswith("Held by a straggler: rank2 is late at 10 of 10 steps, ")
    assert "from input (" in headline and "Across the ranks: Bound by " in headline
    host = ["--host", "rank0"]
    assert main(["tool", str(run), "overview_page", *host, "--workers", "0", "--no-cache"]) == 0
    assert json.loads(capsys.readouterr().out)["bound_by"]["headline"].startswith("Bound by ")


def test_own_time_stragglers_are_ordered_by_how_long_they_held_the_job() -> None:
    """Without collectives: four workers, steps of 4, 6, 4 and 10 ms. The median worker's
    own time is 5 ms; w3 is 5 ms late in each of the 10 steps compared (the first and the
    last of 12 are dropped as possibly cut), w1 1 ms (both past 10% of 5 ms): w3 first,
    though w1 comes first in the job; nobody waited (no collectives)."""
    builders = []
    for r, step_ms in enumerate((4, 6, 4, 10)):
        b = XSpaceBuilder(f"w{r}")
        main_line = b.plane("/host:CPU").line(1, "MainThread")
        for k in range(12):
            main_line.event("train", k * step_ms * MS, step_ms * MS, {"step_num": k, "_r": 1})
            main_line.event("forward", k * step_ms * MS, 3 * MS)
        builders.append(b)
    pod = find_stragglers(_ranks(builders))
    assert pod.method == "own time"
    assert [(s.host, s.late_ns, s.waited_ns, s.waiters) for s in pod.stragglers] == [
        ("w3", 10 * 5 * MS, 0, 0),
        ("w1", 10 * 1 * MS, 0, 0),
    ]
    assert all(s.steps == tuple(range(1, 11)) and s.reason == "other" for s in pod.stragglers)


def _job_advice(run: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["tool", str(run), "overview_page", "--workers", "0", "--no-cache"]) == 0
    return list(json.loads(capsys.readouterr().out)["recommendation"]["details"])


def test_a_held_jobs_first_advice_is_the_stragglers_own_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Decision 485. Rank 1 loads its batch in 21 ms (6 ms in the second job), rank 0 in 1 ms:
    rank 0 waits for it in its all-reduces, so the ranks' mean says "collectives" (42.3% and
    43.6% of the step). The first advice is the straggler's finding with its input fix, not
    "overlap communication with compute". Collectives beyond the waiting: rank 0 waits 20 ms
    (5 ms in the second job) a step, from its second bucket's enqueue (decision 1035): the
    millisecond between its two enqueues, nothing traced beside its first bucket's
    all-reduce, is the collective time beyond it, 4.7% and 14.5%, graded after the
    straggler."""
    slow = write_run(
        tmp_path / "slow", gloo_job(2, input_ms=lambda rank, step: 21.0 if rank == 1 else 1.0)
    )
    details = _job_advice(slow, capsys)
    assert details[0].startswith(
        "Straggler across hosts (high): vm.rank1 is late at 10 of 10 steps"
    )
    assert "The late rank waits for its data" in details[0]
    assert "pin_memory" not in details[0]  # a CPU job: no device to pin for (decision 468)
    assert details[1].startswith("4.7% of the step time is collective communication")
    short = write_run(
        tmp_path / "short",
        gloo_job(
            2,
            input_ms=lambda rank, step: 6.0 if rank == 1 else 1.0,
            compute_ms=lambda rank, step: 1.0,
        ),
    )
    details = _job_advice(short, capsys)
    assert details[0].startswith(
        "Straggler across hosts (high): vm.rank1 is late at 10 of 10 steps"
    )
    assert details[1] == (
        "14.5% of the step time is collective communication with nothing else running, beyond "
        "the ranks' waiting for the last one: overlap communication with compute, use larger "
        "buckets, or check the interconnect."
    )
    assert not [d for d in details if d.startswith("HIGH: What bounds the steps, collectives")]


def test_a_jobs_loader_advice_is_the_rank_waiting_for_its_batches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Decision 486. Both ranks load with `num_workers=0`, rank 0 in 1 ms a batch (its steps
    wait for input 11.6% of their time, past the advice's threshold), rank 1 in 6 ms (69.8%):
    the job's loader advice is rank 1's, named; it was the first host's, rank 0's "1.00 ms a
    batch". One rank alone keeps its own advice, unnamed."""
    run = write_run(
        tmp_path,
        gloo_job(
            2,
            input_ms=lambda rank, step: 6.0 if rank == 1 else 1.0,
            compute_ms=lambda rank, step: 1.0,
        ),
    )
    loader = "The DataLoader makes its batches in the training process (num_workers=0): "
    job = [d for d in _job_advice(run, capsys) if loader in d]
    assert len(job) == 1 and job[0].startswith(f"On vm.rank1: {loader}6.00 ms a batch, ")
    args = ["tool", str(run), "input_pipeline_analyzer", "--workers", "0", "--no-cache"]
    assert main(args) == 0
    advice = json.loads(capsys.readouterr().out)["recommendations"]
    assert [a for a in advice if loader in a] == job
    assert main([*args, "--host", "vm.rank0"]) == 0
    advice = json.loads(capsys.readouterr().out)["recommendations"]
    assert next(a for a in advice if loader in a).startswith(f"{loader}1.00 ms a batch, ")


def _by_turns(step: int, rank: int) -> float:
    """Each rank's batch takes 3 ms longer in every 4th step, in turn: a busy machine
    descheduling the ranks by turns."""
    return 4.0 if step % 4 == rank else 1.0


def test_ranks_late_by_turns_are_no_stragglers() -> None:
    """Decision 487. Four ranks of 22 steps, each 3 ms late in a quarter of the 20 compared
    (5 steps), by 60% of the 5 ms own time: past the strong share (20%) for every rank, so
    each was a straggler ("held by a straggler" in a balanced job). Each is late by what the
    others are late by when they are (3 ms): none stands out."""
    pod = find_stragglers(_ranks(gloo_job(4, steps=22, input_ms=lambda r, s: _by_turns(s, r))))
    assert pod.stragglers == ()


def test_a_rank_late_in_a_few_steps_by_much_more_stands_out() -> None:
    """Decision 487. The same job by turns, but rank 2 loads for 24 ms in steps 9-12 (a
    check, an evaluation): late there by 20 ms, and by 3 ms in its turns (steps 2, 6, 14,
    18): 8 of 20 steps, by 11.5 ms (median), 3.8 times the others' 3 ms: a straggler, at the
    4 steps where it stands out (decision 501)."""

    def input_ms(rank: int, step: int) -> float:
        return 24.0 if rank == 2 and 9 <= step <= 12 else _by_turns(step, rank)

    pod = find_stragglers(_ranks(gloo_job(4, steps=22, input_ms=input_ms)))
    # decision 501: its straggling is where it stands out, not its turns (2, 6, 14, 18)
    assert [(s.host, s.steps, s.reason) for s in pod.stragglers] == [
        ("vm.rank2", (9, 10, 11, 12), "input")
    ]


def _two_by_turns(rank: int, step: int) -> float:
    """Ranks 0 and 1 of four take turns at loading 2 and 1.5 ms longer, in interleaved
    steps: decision 488's balanced job, two of four ranks late by turns on a busy machine."""
    return 1.0 + (2.0, 1.5, 0.0, 0.0)[rank] * (rank == step % 3)


def test_two_ranks_of_four_late_by_turns_are_no_stragglers() -> None:
    """Decision 501. Two of four ranks each late in a third of the 20 compared steps, by 40%
    and 30% of the 5 ms own time: not "more than half of the ranks" (`by_turns`), so both
    were stragglers, as in decision 488's run ("held by a straggler: vm.rank1 is late at
    14 of 35 steps"). The other is late while each is (`late_around`), and neither is
    late by twice the other's lateness."""
    pod = find_stragglers(_ranks(gloo_job(4, steps=22, input_ms=_two_by_turns)))
    assert pod.stragglers == ()


def test_a_transient_straggler_amid_turns_is_named_at_its_steps() -> None:
    """Decision 501. Ranks 0-2 of four late by turns (by 2, 1.5 and 1 ms), and rank 0
    computes 30 ms more in steps 10-14 (j3.py's transient straggler): late in 11 steps, 5
    of them by 30 ms. It was named at every step it was late; now at the steps where its
    own run-ups explain more than the others' lateness."""

    def input_ms(rank: int, step: int) -> float:
        return 1.0 + (2.0, 1.5, 1.0, 0.0)[rank] * (rank == step % 3)

    def compute_ms(rank: int, step: int) -> float:
        return 34.0 if rank == 0 and 10 <= step <= 14 else 4.0

    pod = find_stragglers(_ranks(gloo_job(4, steps=22, input_ms=input_ms, compute_ms=compute_ms)))
    assert [(s.host, s.steps, s.reason) for s in pod.stragglers] == [
        ("vm.rank0", (10, 11, 12, 13, 14), "host_compute")
    ]
    assert held_by(pod).startswith(
        "Held by a straggler: vm.rank0 is late at steps 10-14 (5 of 20 steps), 29.40 ms per step"
    )


def _uneven_turns(rank: int, step: int) -> float:
    """Two ranks late by turns by 1, 2 or 4 ms more input: a busy machine's uneven lateness."""
    return 1.0 + ((1.0, 2.0, 4.0)[(step // 2) % 3] if rank == step % 2 else 0.0)


@pytest.mark.parametrize(
    ("idle_ms", "named"),
    [
        (6.0, ()),  # under twice the longest lateness of the other rank (4 ms): scheduling
        (100.0, (("vm.rank0", (10, 11, 12, 13, 14), "other"),)),  # a checkpoint's pause
    ],
)
def test_untraced_lateness_amid_turns_must_pass_the_longest_other(
    idle_ms: float, named: tuple[tuple[str, tuple[int, ...], str], ...]
) -> None:
    """Decision 501. Two ranks late by turns by 1 to 4 ms of input, and rank 0 idle (no
    event covers it) for ``idle_ms`` before its batch in steps 10-14. Untraced time in a
    run-up is what a thread not scheduled leaves: 6 ms, 3x the others' median lateness, made
    rank 0 a straggler; a 100 ms pause (a checkpoint written by rank 0) is one, and was
    not named: its lateness in its turns diluted the median."""
    pod = find_stragglers(
        _ranks(
            gloo_job(
                2,
                steps=22,
                input_ms=_uneven_turns,
                idle_ms=lambda r, s: idle_ms if r == 0 and 10 <= s <= 14 else 0.0,
            )
        )
    )
    assert tuple((s.host, s.steps, s.reason) for s in pod.stragglers) == named


def test_a_rank_doing_a_little_more_every_step_amid_turns_is_named() -> None:
    """Decision 501. Ranks 0, 1 and 3 late by turns by 4 ms (each a quarter of the steps),
    and rank 2 computing 0.6 ms more every step (12% of the 5 ms own time): last only in
    the quarter where none is late, by a fraction of what the others are late by in theirs,
    so it was no straggler; its run-ups show it doing more host compute than the others in
    most steps."""
    pod = find_stragglers(
        _ranks(
            gloo_job(
                4,
                steps=22,
                input_ms=lambda r, s: 5.0 if s % 4 == r != 2 else 1.0,
                compute_ms=lambda r, s: 4.6 if r == 2 else 4.0,
            )
        )
    )
    assert [(s.host, s.reason) for s in pod.stragglers] == [("vm.rank2", "host_compute")]
