"""What a user reads of a straggler found by collective arrival (`stepscope.stats.stragglers`):
the straggler's whole record, its explanation and the job's "held by" headline, word for word,
on gloo jobs built in code whose figures are worked out by hand below."""

from __future__ import annotations

from stepscope.stats import build_step_db, summarize_steps
from stepscope.stats.collective_calls import collective_calls
from stepscope.stats.job_steps import job_steps
from stepscope.stats.stragglers import find_stragglers, held_by
from stepscope.stats.stragglers_types import BY_ARRIVAL, PodLateness, Rank, Straggler
from stepscope.xspace.builder import XSpaceBuilder
from tests.pod.builders import INPUT_NAME, MS, fetch_samples, gloo_job, untraced_job
from tests.support.analysis import build

STEPS = tuple(range(1, 11))  # of 12: the first and last are left out as possibly cut
UNTRACED = "untraced host work ('All Others': Python, I/O, waits no traced op covers)"


def _pod(builders: list[XSpaceBuilder]) -> PodLateness:
    ranks = []
    for b in builders:
        profile = build(b)
        db = build_step_db(profile)
        ranks.append(Rank(b.hostnames[0], db, collective_calls(profile, db)))
    pod = find_stragglers(ranks)
    assert pod.method == BY_ARRIVAL
    return pod


def test_a_straggler_and_the_one_hidden_behind_it_word_for_word() -> None:
    """Rank 1 loads its data in 21 ms, rank 3 computes 14 ms, the others 1 + 4 ms: the
    buckets' all-reduces start at 5 and 6 ms (ranks 0, 2), 15 and 16 (rank 3), 25 and 26
    (rank 1). Each rank enqueues its second bucket while its first runs, and waits at the
    second only (decision 1035): rank 1 holds the job from 16 to 26 ms (10 ms a step) while
    ranks 0 and 2 wait 20 ms and rank 3 10 ms; rank 3 holds the others from 6 to 16 ms."""
    pod = _pod(
        gloo_job(
            4,
            input_ms=lambda rank, step: 21.0 if rank == 1 else 1.0,
            compute_ms=lambda rank, step: 14.0 if rank == 3 else 4.0,
        )
    )
    assert pod.stragglers == (
        Straggler(
            "vm.rank1",
            STEPS,
            100 * MS,
            "input",
            200 * MS,
            500 * MS,
            3,
            "vm.rank1 is late at steps 1-10 (10 of 10 steps): it arrived last at 20 collective "
            "calls there, 10.00 ms per step after the next rank; since its previous collective "
            "it spent 21.00 ms per step in input where the other ranks spent 1.00 ms; 3 other "
            "ranks wait for it in their collectives (500.00 ms in all).",
            BY_ARRIVAL,
            20,
            210 * MS,
            10 * MS,
        ),
        Straggler(
            "vm.rank3",
            STEPS,
            100 * MS,
            "host_compute",
            100 * MS,
            0,
            0,
            "Next in line, hidden behind vm.rank1: vm.rank3 is the last of the other ranks at "
            "steps 1-10 (10 of 10 steps): it arrived last at 20 collective calls there, 10.00 ms "
            "per step after the next rank (once vm.rank1 is fixed, the others will wait for it).",
            BY_ARRIVAL,
            20,
            140 * MS,
            40 * MS,
            "vm.rank1",
        ),
    )
    assert held_by(pod) == (
        "Held by a straggler: vm.rank1 is late at 10 of 10 steps, 10.00 ms per step after the "
        "next rank, from input (21.00 ms per step where the other ranks spent 1.00 ms); the "
        "other ranks wait for it. Next in line, hidden behind it: vm.rank3."
    )
    assert pod.calls_matched == 20
    assert pod.last_count is not None and pod.last_count.tolist() == [0, 20, 0, 0]
    assert pod.waiting is not None and pod.waiting.tolist() == [True, False, True, False]


def test_untraced_work_is_named_as_such() -> None:
    """Since its previous all-reduce ended (8 ms before its step began) rank 1 spent 8 + 6 ms
    that no op covers, the others 8 ms: 6 ms late a step, which ranks 0 and 2 wait."""
    pod = _pod(untraced_job())
    [late] = pod.stragglers
    assert late == Straggler(
        "r1",
        STEPS,
        60 * MS,
        "other",
        60 * MS,
        120 * MS,
        2,
        "r1 is late at steps 1-10 (10 of 10 steps): it arrived last at 10 collective calls "
        f"there, 6.00 ms per step after the next rank; since its previous collective it spent "
        f"14.00 ms per step in {UNTRACED} where the other ranks spent 8.00 ms; 2 other ranks "
        "wait for it in their collectives (120.00 ms in all).",
        BY_ARRIVAL,
        10,
        140 * MS,
        80 * MS,
    )
    assert held_by(pod) == (
        "Held by a straggler: r1 is late at 10 of 10 steps, 6.00 ms per step after the next "
        f"rank, from {UNTRACED} (14.00 ms per step where the other ranks spent 8.00 ms); the "
        "other ranks wait for it."
    )


def test_no_straggler_holds_a_balanced_job() -> None:
    pod = _pod(gloo_job(3))
    assert pod.stragglers == () and held_by(pod) == ""


def test_each_process_group_numbers_its_own_calls() -> None:
    """Two process groups whose all-reduces have the same sequence numbers (each group counts
    its own): 2 calls of 8 steps matched on every rank, 12 of them in the 6 pod steps kept.
    Rank 1 computes 9 ms where the others take 4: last at the first group's calls only."""
    builders = []
    for r in range(3):
        b = XSpaceBuilder(f"r{r}")
        cpu = b.plane("/host:CPU")
        main, gloo = cpu.line(1, "MainThread"), cpu.line(2, "gloo")
        for s in range(8):
            t = s * 20 * MS
            ready = t + (9 if r == 1 else 4) * MS
            main.event("train", t, 20 * MS, {"step_num": s, "_r": 1})
            main.event("aten::addmm", t, ready - t)
            gloo.event("gloo:all_reduce", ready, t + 10 * MS - ready, {"Seq": s, "pg_name": "a"})
            gloo.event("gloo:all_reduce", t + 11 * MS, MS, {"Seq": s, "pg_name": "b"})
        builders.append(b)
    pod = _pod(builders)
    assert pod.calls_matched == 12
    assert pod.clock_note.startswith("16 collective calls matched on every rank (by sequence ")
    [late] = pod.stragglers
    assert (late.host, late.steps, late.last_arrivals) == ("r1", (1, 2, 3, 4, 5, 6), 6)
    assert (late.late_ns, late.reason, late.waited_ns) == (30 * MS, "host_compute", 60 * MS)


def test_one_late_exit_does_not_move_a_ranks_clock() -> None:
    """Rank 2's clock is 1 s ahead; rank 0's first all-reduce kept (step 1's) ends 2 ms after
    the others'. Offsets come from the exits' median, so that one exit moves nothing: no
    other rank looks late, and the exits agree once corrected."""
    builders = []
    for r in range(3):
        b = XSpaceBuilder(f"r{r}")
        cpu = b.plane("/host:CPU")
        main, gloo = cpu.line(1, "MainThread"), cpu.line(2, "gloo")
        for s in range(8):
            t = s * 20 * MS + (1000 * MS if r == 2 else 0)
            ready = t + (9 if r == 1 else 4) * MS
            main.event("train", t, 20 * MS, {"step_num": s, "_r": 1})
            main.event("aten::addmm", t, ready - t)
            end = t + (12 if (r, s) == (0, 1) else 10) * MS
            gloo.event("gloo:all_reduce", ready, end - ready)
        builders.append(b)
    pod = _pod(builders)
    assert pod.offsets_ns is not None and pod.offsets_ns.tolist() == [0, 0, 1000 * MS]
    assert pod.exit_spread_ns == 0
    assert [(s.host, s.late_ns) for s in pod.stragglers] == [("r1", 30 * MS)]


def test_untraced_work_of_a_straggler_names_its_sampled_python() -> None:
    """A DDP rank sleeping in its batch generator (a user's gloo job: the script measured
    30.3 ms of 47 ms a step in `next()`) was late "from untraced host work", where its own
    overview named the generator: the explanation and the headline name it too. Its
    samples in its run-ups' 14 ms of untraced time a step (the 8 after its all-reduce and the
    6 before the next): `batches` at 5 ms, `step_fn` at 10 and 15 ms (the one at 0 ms is in
    its traced input): 14 x 2/3 and 14 x 1/3 ms a step; the others have no samples."""
    builders = untraced_job()
    cpu = builders[1].plane("/host:CPU")
    samples = cpu.line((1 << 48) + 1, "Python samples", "Python samples: MainThread")
    samples.display_id = 1
    loop = "<module> (train.py:40);worker (train.py:20);step_fn (train.py:30)"
    fetch = "<module> (train.py:40);worker (train.py:20);batches (train.py:14)"
    for s in range(12):  # a sample every 5 ms; the one at 5 ms sees the generator
        t = s * 20 * MS
        samples.event("step_fn (train.py:30)", t, 5 * MS, {"stack": loop, "samples": 1})
        samples.event("batches (train.py:14)", t + 5 * MS, 5 * MS, {"stack": fetch, "samples": 1})
        samples.event("step_fn (train.py:30)", t + 10 * MS, 10 * MS, {"stack": loop, "samples": 2})
    pod = _pod(builders)
    [late] = pod.stragglers
    named = (
        "step_fn (train.py) 9.33 ms per step (20 of 30 samples), "
        "batches (train.py) 4.67 ms per step (10 of 30 samples)"
    )
    assert late.python == named
    assert late.explanation.endswith(
        f"(120.00 ms in all). Python sampled on r1 in that time: {named}."
    )
    assert held_by(pod) == (
        "Held by a straggler: r1 is late at 10 of 10 steps, 6.00 ms per step after the next "
        f"rank, from {UNTRACED} (14.00 ms per step where the other ranks spent 8.00 ms; "
        f"Python sampled on it: {named}); the other ranks wait for it."
    )


def test_a_straggler_sleeping_in_its_loops_own_code_is_named_by_the_line() -> None:
    """A rank sleeping in its loop's own function (a builtin called from the loop body: on
    every sample, so no callee to name) is late by 70% of its step. A torchrun job said
    "Python sampled on it: _engine_run_backward (graph.py) 17.5%", then nothing (decision
    396): the loop's line itself is named."""
    builders = untraced_job()
    cpu = builders[1].plane("/host:CPU")
    samples = cpu.line((1 << 48) + 1, "Python samples", "Python samples: MainThread")
    samples.display_id = 1
    loop = "<module> (train.py:40);worker (train.py:20)"
    step_fn = f"{loop};step_fn (train.py:30)"
    for s in range(12):
        t = s * 20 * MS
        samples.event("worker (train.py:20)", t, 15 * MS, {"stack": loop, "samples": 3})
        samples.event(
            "step_fn (train.py:30)", t + 15 * MS, 5 * MS, {"stack": step_fn, "samples": 1}
        )
    pod = _pod(builders)
    [late] = pod.stragglers
    assert late.python.startswith(
        "worker (train.py:20) (the loop's own line) 9.33 ms per step (20 of 30 samples"
    )
    assert f"Python sampled on r1 in that time: {late.python}." in late.explanation


def test_a_stragglers_python_is_what_it_ran_before_it_arrived_beyond_the_others() -> None:
    """A 4-rank gloo job whose rank 2 slept 30 ms in its loop body (each script measured 60.2-
    60.6 ms a step) was explained by `_engine_run_backward (graph.py) 49.1%` first: the wait
    for the all-reduce inside backward, which every rank has, over its whole steps (decision
    417). Here every rank waits in backward while gloo all-reduces (until 19 ms of a 30 ms
    step) and logs its metrics after (19-30 ms), sampled each ms; rank 1 also sleeps in its
    loop's own line from 5 to 11 ms. Over its steps, the logging (11 samples) and the wait (8)
    outnumber the sleep (6); in its run-ups (from its previous all-reduce's end to its
    arrival) its untraced time is the logging, 11 ms as the others', and the sleep, 6 ms: the
    sleep alone is named."""
    loop = "<module> (train.py:40);worker (train.py:20)"
    builders = []
    for r in range(3):
        b = XSpaceBuilder(f"r{r}")
        cpu = b.plane("/host:CPU")
        main, gloo = cpu.line(1, "MainThread"), cpu.line(2, "gloo")
        samples = cpu.line((1 << 48) + 1, "Python samples", "Python samples: MainThread")
        samples.display_id = 1
        for s in range(12):
            t = s * 30 * MS
            ready = t + (11 if r == 1 else 5) * MS
            main.event("train", t, 30 * MS, {"step_num": s, "_r": 1})
            main.event(INPUT_NAME, t, MS)
            main.event("aten::addmm", t + MS, 4 * MS)
            gloo.event("gloo:all_reduce", ready, t + 19 * MS - ready)
            runs = [
                (f"{loop};forward (model.py:8)", t, 5),
                (f"{loop};_engine_run_backward (graph.py:10)", ready, (t + 19 * MS - ready) // MS),
                (f"{loop};log_metrics (train.py:50)", t + 19 * MS, 11),
            ]
            if r == 1:
                runs.append((f"{loop.rsplit(';', 1)[0]};worker (train.py:33)", t + 5 * MS, 6))
            for stack, at, n in sorted(runs, key=lambda x: x[1]):
                frame = stack.rsplit(";", 1)[-1]
                samples.event(frame, at, n * MS, {"stack": stack, "samples": n})
        builders.append(b)
    pod = _pod(builders)
    [late] = pod.stragglers
    assert (late.host, late.reason, late.reason_ns, late.reason_peers_ns) == (
        "r1",
        "other",
        170 * MS,
        110 * MS,
    )
    # the steps' samples (the overview's) put the logging and the wait first
    db = build_step_db(build(builders[1]))
    assert db.untraced.python.function[:2] == (
        "log_metrics (train.py)",
        "_engine_run_backward (graph.py)",
    )
    assert late.python == (
        "worker (train.py:33) (the loop's own line) 6.00 ms per step (60 of 170 samples; the "
        "other ranks 0.00 ms)"
    )
    assert "_engine_run_backward" not in late.explanation


def test_sampled_python_that_explains_too_little_is_not_named() -> None:
    """A rank late by 70% of its step whose samples spread over four functions, 25% each:
    the first explains too little of the lateness to be named as its cause."""
    builders = untraced_job()
    cpu = builders[1].plane("/host:CPU")
    samples = cpu.line((1 << 48) + 1, "Python samples", "Python samples: MainThread")
    samples.display_id = 1
    loop = "<module> (train.py:40);worker (train.py:20)"
    for s in range(12):
        for k, name in enumerate(("load", "log", "step_fn", "save")):
            frame = f"{name} (train.py:{50 + k})"
            stats = {"stack": f"{loop};{frame}", "samples": 1}
            samples.event(frame, s * 20 * MS + k * 5 * MS, 5 * MS, stats)
    pod = _pod(builders)
    [late] = pod.stragglers
    assert late.python == ""
    assert "Python sampled" not in late.explanation and "Python sampled" not in held_by(pod)


FETCH_WORDS = (
    "input (its loop getting each batch from the Python iterator batches (train.py): untraced, "
    "so not input in XProf's categories)"
)


def test_a_straggler_late_from_its_python_iterator_is_late_from_input() -> None:
    """Rank 1's loop gets each batch from a slow Python generator (a user's gloo job: 30 ms a
    batch in `batches`): its 6 ms of fetch before the all-reduce are input (decision 387),
    with the 1 ms of traced input: 7 ms a step where the others spent 1 ms, not "All Others"
    (decision 370 kept the category and only said so in words)."""
    builders = untraced_job()
    fetch_samples(builders[1], step_ms=20, at_ms=5, gap_ms=6)
    pod = _pod(builders)
    [late] = pod.stragglers
    assert (late.reason, late.reason_ns, late.reason_peers_ns, late.reason_excess_ns) == (
        "input",
        70 * MS,
        10 * MS,
        60 * MS,
    )
    assert f"spent 7.00 ms per step in {FETCH_WORDS} where the other ranks spent 1.00 ms" in (
        late.explanation
    )
    assert "batches (train.py) " in late.python  # the samples that show it
    assert "from input (7.00 ms per step where the other ranks spent 1.00 ms" in held_by(pod)


def test_without_collectives_a_rank_late_from_its_python_iterator_is_late_from_input() -> None:
    """The own-time rule (no collectives to match): rank 1's steps take 26 ms, 6 of them in
    its batch generator; the others' 20 ms. Its input is 1 + 6 ms a step longer than the
    median rank's 1 ms: 6 ms, the whole of its lateness."""
    builders = []
    for r in range(3):
        b = XSpaceBuilder(f"r{r}")
        main = b.plane("/host:CPU").line(1, "MainThread")
        step_ms = 26 if r == 1 else 20
        for s in range(12):
            t = s * step_ms * MS
            main.event("train", t, step_ms * MS, {"step_num": s, "_r": 1})
            main.event(INPUT_NAME, t, MS)
            main.event("aten::addmm", t + MS, 4 * MS)
            main.event("aten::add", t + (step_ms - 15) * MS, 15 * MS)
        builders.append(b)
    fetch_samples(builders[1], step_ms=26, at_ms=5, gap_ms=6)
    ranks = []
    for b in builders:
        db = build_step_db(build(b))
        ranks.append(Rank(b.hostnames[0], db))
    [late] = find_stragglers(ranks).stragglers
    assert (late.reason, late.reason_excess_ns) == ("input", 60 * MS)
    assert "its input takes 6.00 ms per step longer than the median rank's (its loop getting" in (
        late.explanation
    )


def test_the_ranks_table_counts_the_wait_on_the_iterator_as_input() -> None:
    """The job's rank rows give each rank's own "bound by" figures (decision 388): rank 1's
    input is its 1 ms of traced input and its 6 ms in `batches`, as its own report says;
    XProf's input category held the 1 ms alone."""
    builders = untraced_job()
    fetch_samples(builders[1], step_ms=20, at_ms=5, gap_ms=6)
    ranks = []
    for b in builders:
        profile = build(b)
        db = build_step_db(profile)
        ranks.append(Rank(b.hostnames[0], db, collective_calls(profile, db)))
    summary = summarize_steps({r.host: r.steps for r in ranks})
    rows = {r.host: r for r in job_steps(summary, ranks, find_stragglers(ranks)).rows}
    assert (rows["r1"].role, rows["r1"].input_ms) == ("straggler", 7.0)
    assert rows["r0"].input_ms == rows["r2"].input_ms == 1.0


def test_a_stragglers_two_parts_follow_its_first_sentence_not_its_python() -> None:
    """Rank 1 does 5 ms of untraced work a step before its all-reduce, 30 ms at steps 4-6
    (72% of its late time: told in two parts, decision 546), and the sampler saw it there.
    The parts were glued to the end of the explanation, after the samples' sentence: "...
    (125 of 125 samples); most of it (72%) at steps 4-6", most of the samples."""
    hot = (4, 5, 6)
    builders = untraced_job(lambda s: 30 if s in hot else 5, step_ms=50)
    samples = builders[1].plane("/host:CPU").line((1 << 48) + 1, "Python samples")
    samples.display_id = 1
    stack = "<module> (train.py:40);worker (train.py:20);step_fn (train.py:30)"
    for s in range(12):
        gap_ms = 30 if s in hot else 5
        at = s * 50 * MS + 5 * MS
        samples.event("step_fn (train.py:30)", at, gap_ms * MS, {"stack": stack, "samples": gap_ms})
    [late] = _pod(builders).stragglers
    assert late.focus.startswith("most of it (72%) at steps 4-6: 30.00 ms per step")
    assert late.python.startswith("step_fn (train.py)")
    assert late.explanation.endswith(
        f"; {late.focus}. Python sampled on r1 in that time: {late.python}."
    )
