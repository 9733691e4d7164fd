"""The stack sampler's lines name the steps' Python: by function and inclusive, with counts and
a confidence interval, in the headline, op_stats rows and the untraced places."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.cli.commands.report import render
from stepscope.model import Profile, open_run
from stepscope.stats import build_op_metrics, build_step_db
from stepscope.stats.advice import classify_steps
from stepscope.stats.bound import bound_by
from stepscope.stats.events import NOT_COUNTED, classify_events
from stepscope.stats.host.untraced import where_untraced
from stepscope.stats.summary import summarize_steps
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from stepscope.xspace.builder import LineBuilder, XSpaceBuilder
from stepscope.xspace.io import write_xspace
from tests.support.analysis import MS, build

STEPS = 8


def _threads(builder: XSpaceBuilder) -> tuple[LineBuilder, LineBuilder]:
    """The main thread's line and the sampler's line for it."""
    host = builder.plane("/host:CPU")
    main = host.line(7, "MainThread")
    samples = host.line((1 << 48) + 7, "Python samples", "Python samples: MainThread")
    samples.display_id = 7
    return main, samples


def _python_overhead_loop(sampled: bool = True) -> Profile:
    return build(_loop_builder(sampled))


def _loop_builder(sampled: bool = True) -> XSpaceBuilder:
    """Each 10 ms step: a traced 'forward' (4 ms), then 6 ms of untraced Python metrics code,
    which the sampler saw as 'update_metrics'."""
    builder = XSpaceBuilder("py")
    main, samples = _threads(builder)
    for k in range(STEPS):
        t = k * 10 * MS
        main.event("train", t, 10 * MS, {"step_num": k, "_r": 1})
        main.event("forward", t, 4 * MS)
        if sampled:
            stack = "<module> (loop.py:20);forward (model.py:3)"
            samples.event("forward (model.py:3)", t, 4 * MS, {"stack": stack, "samples": 4})
            stack = "<module> (loop.py:21);update_metrics (metrics.py:9)"
            samples.event(
                "update_metrics (metrics.py:9)", t + 4 * MS, 6 * MS, {"stack": stack, "samples": 6}
            )
    return builder


def test_samples_are_observations_not_work() -> None:
    profile = _python_overhead_loop()
    on_samples = profile.line == 1
    assert (classify_events(profile)[on_samples] == NOT_COUNTED).all()
    db = build_step_db(profile)
    # the same breakdown as without the sampler: 4 ms host compute, 6 ms "All Others"
    assert db.category_ns()["other"].tolist() == [6 * MS] * (STEPS - 2)


def test_the_steps_python_is_named_by_function_with_counts() -> None:
    db = build_step_db(_python_overhead_loop())
    python = db.untraced.python
    # update_metrics: 6 of each step's 10 samples; forward is a traced event: its time
    assert python.function == ("update_metrics (metrics.py)", "forward (model.py)")
    assert python.ns.tolist() == [6 * MS * (STEPS - 2), 4 * MS * (STEPS - 2)]
    assert python.samples.tolist() == [6 * (STEPS - 2), 4 * (STEPS - 2)]
    assert python.total_samples == 10 * (STEPS - 2)
    assert python.traced.tolist() == [False, True]
    assert python.stack[0] == "<module> (loop.py:21);update_metrics (metrics.py)"
    assert 0.45 < python.ci_low[0] < 0.6 < python.ci_high[0] < 0.75
    assert python.describe(0, int(db.dur_ns.sum())) == (
        "update_metrics (metrics.py) 60.0% of the step time (36 of 60 samples, 95% CI 47-71%)"
    )
    [place] = db.untraced.places
    assert (place.after, place.before, place.steps) == ("forward", "(step end)", STEPS - 2)
    assert db.untraced.thread == "MainThread"


def test_headline_is_untraced_host_work_not_input() -> None:
    summary = summarize_steps({"h": build_step_db(_python_overhead_loop())})
    assert classify_steps(summary).classification == "potential"  # XProf's, unchanged
    headline = bound_by(summary).headline
    assert headline.startswith("Bound by Python / host: 60.0% of the step time")
    assert "update_metrics (metrics.py) 60.0% of the step time (36 of 60 samples" in headline
    assert "after 'forward' and before '(step end)'" in headline
    # without the sampler the place is still said
    plain = bound_by(summarize_steps({"h": build_step_db(_python_overhead_loop(False))}))
    assert "after 'forward'" in plain.headline
    assert "Python sampled" not in plain.headline and "python_sampler_hz" in plain.headline


def _metrics_loop(loop_samples: bool) -> Profile:
    """3 steps of 10 ms: a traced forward (9 ms), then untraced ``metrics`` seen by one sample
    a step; ``loop_samples``: the loop's own line seen by 9 samples a step in the forward."""
    builder = XSpaceBuilder("py")
    main, samples = _threads(builder)
    for k in range(3):
        t = k * 10 * MS
        main.event("train", t, 10 * MS, {"step_num": k, "_r": 1})
        main.event("forward", t, 9 * MS)
        stack = "<module> (loop.py:21);metrics (metrics.py:9)"
        samples.event("metrics (metrics.py:9)", t + 9 * MS, MS, {"stack": stack, "samples": 1})
        if loop_samples:
            stack = "<module> (loop.py:20)"
            samples.event("<module> (loop.py:20)", t, 9 * MS, {"stack": stack, "samples": 9})
    return build(builder)


def test_too_few_samples_give_no_percentage() -> None:
    """3 samples say nothing about a share: the text says so instead of a number."""
    db = build_step_db(_metrics_loop(loop_samples=True))
    python = db.untraced.python
    k = python.function.index("metrics (metrics.py)")
    assert python.too_few(k)
    assert python.describe(k, int(db.dur_ns.sum())) == "metrics (metrics.py): too few samples (n=3)"
    [host] = [x for x in bound_by(summarize_steps({"h": db})).limits if x.key == "host"]
    assert "too few samples to name a function (metrics (metrics.py) n=3" in host.evidence
    assert "metrics (metrics.py) 1" not in host.evidence  # no percentage of it anywhere
    # the loop's own line, sampled in 90% of the steps (the forward), cannot be the 10% of
    # untraced host work: not named (decision 520)
    assert "loop.py" not in host.evidence


def test_functions_all_on_too_few_samples_are_said_once() -> None:
    """Three names each followed by "too few samples" read as three findings: when none of
    the functions named has enough samples, one phrase says so and how to get more."""
    python = build_step_db(_metrics_loop(loop_samples=False)).untraced.python
    ks = python.leading(3)
    assert ks and all(python.too_few(k) for k in ks)
    said = python.describe_all(ks, 30 * MS)
    assert said.startswith("too few samples to name a function (")
    assert "metrics (metrics.py) n=3" in said and "python_sampler_hz" in said
    assert said.count("too few") == 1


def test_op_stats_lists_python_functions_for_untraced_time() -> None:
    host = build_op_metrics(_python_overhead_loop()).host
    rows = {(n, t): k for k, (n, t) in enumerate(zip(host.names, host.types, strict=True))}
    k = rows[("update_metrics (metrics.py)", "Python")]
    assert host.self_ns[k] == 6 * MS * STEPS and host.occurrences[k] == 6 * STEPS
    assert ("forward (model.py)", "Python") not in rows  # its time is the traced op's
    assert build_op_metrics(_python_overhead_loop(False)).host.types.count("Python") == 0


@pytest.mark.parametrize(
    "input_pct, other_pct, kind", [(0.5, 40.0, "potential"), (2.0, 40.0, "potential")]
)
def test_xprof_verdict_is_xprofs(input_pct: float, other_pct: float, kind: str) -> None:
    """XProf's line stays XProf's (the headline says what the untraced time is)."""
    from stepscope.stats.advice import classify_input

    assert classify_input(input_pct, other_pct).classification == kind


def test_overview_report_and_diagnostics_agree(tmp_path: Path) -> None:
    run_dir = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    write_xspace(_loop_builder().build(), run_dir / "py.xplane.pb")
    run = open_run(str(run_dir))
    ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})
    overview = get_tool("overview_page").build(ctx)
    pipeline = get_tool("input_pipeline_analyzer").build(ctx)
    found = output.to_json(get_tool("diagnostics").build(ctx))["findings"]
    assert overview.input_bound.classification == pipeline.input_bound.classification
    assert overview.bound_by.first == "host"
    [finding] = [f for f in found if f["id"] == "untraced_host_work"]
    assert finding["severity"] == "high"  # 60% of the step time
    assert "update_metrics (metrics.py) 60.0%" in finding["summary"]
    assert finding["events"][0]["name"] == "update_metrics (metrics.py)"
    text = render(overview, pipeline, top=5)
    assert text.splitlines()[2].startswith("Bound by Python / host: 60.0%")
    assert "update_metrics (metrics.py) 60.0% of the step time (36 of 60 samples" in text
    python = output.to_json(overview)["untraced"]["python"][0]
    assert python["function"] == "update_metrics (metrics.py)"
    assert (python["samples"], python["total_samples"], python["too_few"]) == (36, 60, False)
    assert python["ci_low"] < 60.0 < python["ci_high"]
    # sampled functions are no ops: the top-ops table leaves them out
    assert all(op.category != "Python" for op in overview.top_ops)


def test_a_run_seen_outside_a_step_names_nothing_inside_it() -> None:
    """A Python-level sampler gets the GIL when the thread blocks: a loader sleeping between
    steps can be the only stack it saw around a short burst of Python in the step. Its runs
    (here 2 samples over 14 ms from the loader's sleep, the second placed inside the 4 ms
    step) must not name the step's untraced time (it gave 7 ms, 175% of the step)."""
    builder = XSpaceBuilder("py")
    main, samples = _threads(builder)
    for k in range(STEPS):
        t = k * 20 * MS
        main.event("train", t + 6 * MS, 4 * MS, {"step_num": k, "_r": 1})
        stack = "<module> (loop.py:5);load_records (loop.py:7)"
        samples.event("load_records (loop.py:7)", t + MS, 14 * MS, {"stack": stack, "samples": 2})
    db = build_step_db(build(builder))
    assert db.category_ns()["other"].tolist() == [4 * MS] * (STEPS - 2)
    assert len(db.untraced.python) == 0


def test_no_step_gets_more_python_time_than_its_untraced_time() -> None:
    # one sample at each 4 ms step's start, standing for 10 ms (the sampler's interval)
    builder = XSpaceBuilder("py")
    main, samples = _threads(builder)
    for k in range(STEPS):
        t = k * 20 * MS
        main.event("train", t, 4 * MS, {"step_num": k, "_r": 1})
        stack = "<module> (loop.py:5);metrics (loop.py:9)"
        samples.event("metrics (loop.py:9)", t, 10 * MS, {"stack": stack, "samples": 1})
    python = build_step_db(build(builder)).untraced.python
    assert python.function == ("metrics (loop.py)",)
    assert python.ns.tolist() == [4 * MS * (STEPS - 2)]


def test_pod_verdict_places_untraced_time_per_step_of_its_host() -> None:
    """Two hosts with different step counts (paired by position): the place named is one
    host's, so its ms per step and step count are that host's, not the pod steps' (was
    '9.50 ms per step in 38 of 6 steps')."""
    main, _ = _threads(fast := XSpaceBuilder("fast"))
    for k in range(5 * STEPS):  # 2 ms steps, 1.5 ms of each untraced
        main.event("train", k * 2 * MS, 2 * MS, {"step_num": 100 + k, "_r": 1})
        main.event("forward", k * 2 * MS, MS // 2)
    dbs = {"slow": build_step_db(_python_overhead_loop()), "fast": build_step_db(build(fast))}
    summary = summarize_steps(dbs)
    assert summary.n_steps == STEPS - 2  # pod steps
    # the fast host has more "All Others" in all: 38 x 1.5 ms against 6 x 6 ms
    statement = bound_by(summary).headline
    assert "on host fast, on thread MainThread" in statement
    assert "(1.50 ms per step in 38 of 38 steps)" in statement
    alone = bound_by(summarize_steps({"fast": dbs["fast"]})).headline
    assert "on host" not in alone and "(1.50 ms per step in 38 of 38 steps)" in alone


def test_runs_over_several_steps_count_every_sample() -> None:
    """Steps shorter than the sampler's interval (24 ms steps, one sample every 40 ms): the
    samples of one stack run on over several steps. Two TensorFlow workers, one making its
    batches in a Python generator that sleeps 20 ms: the sampler saw `batches` 16 times of
    18, but only the first sample of each run counted ("batches (d_tf.py): too few samples
    (n=3)"); the script measured 85.6% of its step in `next()`."""
    builder = XSpaceBuilder("py")
    main, samples = _threads(builder)
    steps = 30
    for k in range(steps):
        t = k * 24 * MS
        main.event("train", t, 24 * MS, {"step_num": k, "_r": 1})
        main.event("train_step", t + 20 * MS, 4 * MS)  # traced; the 20 ms before it are not
    stack = "<module> (loop.py:5);batches (loop.py:9)"
    for run in range(6):  # runs of 5 samples, each 40 ms apart, at 5 ms into a step
        start = (run * 5 * 40 + 5) * MS
        samples.event("batches (loop.py:9)", start, 5 * 40 * MS, {"stack": stack, "samples": 5})
    db = build_step_db(build(builder))
    python = db.untraced.python
    k = python.function.index("batches (loop.py)")
    # samples at 5, 45, 85... ms; steps 1-28 kept (24 to 696 ms, XProf drops the first and
    # the last); the runs that began in them (at 205, 405, 605 ms) hold the samples at
    # 205-685 ms: 13 (it counted their first samples, 3); the first run began in step 0,
    # which is no kept step
    assert python.samples[k] == 13
    assert python.describe(k, int(db.dur_ns.sum())).startswith("batches (loop.py) ")


def test_the_named_functions_are_not_callees_of_one_already_named() -> None:
    """Shares are inclusive: a gradient call and the frames under it were the top three
    (62%, 53%, 34% on an un-jitted JAX loop), and the Python generator the loop spent 20%
    of its steps in was tenth, unnamed. A function on whose common path a named one lies
    adds nothing: the generator is named second."""
    builder = XSpaceBuilder("py")
    main, samples = _threads(builder)
    grad = "<module> (loop.py:5);grad_f (api.py:469)"
    runs = [
        (f"{grad};linearize (ad.py:307);bind (core.py:705)", "bind (core.py:705)", 4),
        (f"{grad};linearize (ad.py:307)", "linearize (ad.py:307)", 1),
        (grad, "grad_f (api.py:469)", 1),
        ("<module> (loop.py:4);batches (loop.py:9)", "batches (loop.py:9)", 3),
    ]
    for k in range(STEPS):
        t = k * 10 * MS
        main.event("train", t, 10 * MS, {"step_num": k, "_r": 1})
        main.event("forward", t, MS // 2)
        at = t + MS
        for stack, name, n in runs:
            samples.event(name, at, n * MS, {"stack": stack, "samples": n})
            at += n * MS
    db = build_step_db(build(builder))
    python = db.untraced.python
    assert python.function[:4] == (
        "grad_f (api.py)",
        "linearize (ad.py)",
        "bind (core.py)",
        "batches (loop.py)",
    )
    text = where_untraced(db.untraced, db.n_steps, int(db.dur_ns.sum()))
    named = text.split("Python sampled in the steps: ")[1]
    assert named.startswith("grad_f (api.py) 70.0% of the step time")
    assert ", batches (loop.py) 30.0% of the step time" in named
    assert "linearize" not in named and "bind (core.py)" not in named
