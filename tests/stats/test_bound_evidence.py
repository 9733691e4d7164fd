"""The evidence behind each "bound by" limit and the advice lines, word for word, where the
trace has something to show: input waited for, staged and worked on by the pipeline, a host
computation the step waited for, dispatched ops, Python functions sampled, the untraced
place; and the thresholds at their exact values (issue #34: survivors of the mutation run of
``stats/bound.py`` and ``stats/advice.py``, docs/testing.md "Fifth pass").

Four 10 ms steps (40 ms in all) unless said: 0.4 ms over the four steps is 1%.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from stepscope.stats.advice import classify_steps, recommend
from stepscope.stats.bound import bound_by
from stepscope.stats.events import CATEGORY_NAMES
from stepscope.stats.host.python_samples import PythonTime
from stepscope.stats.host.untraced import GapPlace, Untraced
from stepscope.stats.steps.dispatch import DispatchEvidence
from stepscope.stats.steps.limit_table import LimitTable
from stepscope.stats.steps.limits import N_LIMIT_COLUMNS, LimitType
from stepscope.stats.summary import StepSummary

MS = 1_000_000
US = 1_000
STEPS = 4

PLACE = Untraced("main", (GapPlace("aten::add", "optimizer.step", 2 * STEPS * MS, STEPS),))
# traced Python functions: "name 10.0% of the step time (traced)" for 4 ms over the 40 ms
PYTHON = PythonTime(
    ("collate (data.py)", "augment (data.py)", "log (train.py)", "save (train.py)"),
    ("",) * 4,
    np.array([4, 3, 2, 1], np.int64) * MS,
    np.zeros(4, np.int64),
    traced=np.ones(4, bool),
)


def _summary(
    limits_ms: dict[str, float],
    *,
    has_device: bool = True,
    steps: int = STEPS,
    step_ns: int = 10 * MS,
    categories_ms: dict[str, float] | None = None,
    staged_ms: float = 0.0,
    table: LimitTable | None = None,
    untraced: Untraced | None = None,
) -> StepSummary:
    """``steps`` steps of ``step_ns``; limits and categories in ms per step."""
    per_step = {k: np.full(steps, round(v * MS), np.int64) for k, v in limits_ms.items()}
    cats = {c: np.zeros(steps, np.int64) for c in CATEGORY_NAMES}
    for c, v in (categories_ms or {}).items():
        cats[c] = np.full(steps, round(v * MS), np.int64)
    return StepSummary(
        "marker",
        f"{steps} steps marked",
        ("h",),
        has_device,
        np.arange(steps, dtype=np.int64),
        tuple(f"train {k}" for k in range(steps)),
        np.arange(steps, dtype=np.int64) * step_ns,
        np.full(steps, step_ns, np.int64),
        cats,
        steps,
        0,
        untraced=untraced or Untraced(""),
        staged_ns=np.full(steps, round(staged_ms * MS), np.int64),
        limit_ns=per_step,
        limits=table or LimitTable.empty(),
    )


def _table(
    steps: int = STEPS,
    input_work_ns: int = 0,
    dispatch: DispatchEvidence | None = None,
    waited_for: tuple[str, ...] = (),
    framework: str = "",
) -> LimitTable:
    ns = np.zeros((steps, N_LIMIT_COLUMNS), np.int64)
    ns[:, int(LimitType.INPUT_WORK) // 10] = input_work_ns
    return LimitTable(ns, dispatch or DispatchEvidence(), waited_for, framework)


def _evidence(summary: StepSummary, key: str) -> str:
    return {lim.key: lim.evidence for lim in bound_by(summary).limits}[key]


# --- Evidence of each limit -----------------------------------------------------------------


def test_input_evidence_names_the_wait_the_staging_the_pipeline_and_the_python() -> None:
    """0.5% waiting, 8% staged, exactly 0.05% of pipeline work (the least that is said),
    and the two most sampled Python functions (after staging) that fit in the staging:
    collate's 10% does not (decision 484)."""
    summary = _summary(
        {"input": 0.9, "compute": 9.0},
        categories_ms={"input": 0.05},
        staged_ms=0.8,
        table=_table(input_work_ns=5 * US),
        untraced=Untraced("main", (), PYTHON),
    )
    assert _evidence(summary, "input") == (
        "0.5% waiting for the next batch; 8.0% building the batch inside the step, before its "
        "first model op (Python, numpy, torch.tensor / from_numpy, device_put); 0.1% in the "
        "input pipeline's own work (tf.data stages on the step's thread) while nothing of the "
        "model ran; Python sampled in the steps: augment (data.py) 7.5% of the step time "
        "(traced), log (train.py) 5.0% of the step time (traced)"
    )


def test_input_parts_that_print_as_0_0_pct_are_left_out() -> None:
    """0.04% staged (0.016 ms over 40 ms) beside 5% waiting: "0.0% building the batch inside
    the step" read under a jitted JAX loop's input (decision 554); 0.05% is said."""
    summary = _summary(
        {"input": 0.9, "compute": 9.0},
        categories_ms={"input": 0.5},
        staged_ms=0.004,
        untraced=Untraced("main", (), PYTHON),
    )
    assert _evidence(summary, "input") == "5.0% waiting for the next batch"
    said = _summary({"input": 0.9, "compute": 9.0}, categories_ms={"input": 0.5}, staged_ms=0.005)
    assert "; 0.1% building the batch inside the step" in _evidence(said, "input")


def test_the_staging_names_no_sampled_function_larger_than_itself() -> None:
    """A CPU loop building its batch in 0.6% of the step: the whole steps' samples named
    the model's backward (31.7%, 95% CI 18-50%) as the batch's Python. A function whose
    interval reaches down to the staging's share is still named; one on too few samples
    is not."""
    sampled = PythonTime(
        ("_engine_run_backward (graph.py)", "to_tensor (data.py)", "forward (linear.py)"),
        ("",) * 3,
        (np.array([12.7, 0.4, 0.2]) * MS).astype(np.int64),
        np.array([12, 6, 4], np.int64),
        total_samples=38,
        ci_low=np.array([0.18, 0.004, 0.0]),
        ci_high=np.array([0.50, 0.1, 0.2]),
        traced=np.zeros(3, bool),
    )
    summary = _summary(
        {"input": 2.6, "compute": 7.0},
        categories_ms={"input": 2.54},
        staged_ms=0.06,
        untraced=Untraced("main", (), sampled),
    )
    evidence = _evidence(summary, "input")
    assert "_engine_run_backward" not in evidence and "forward (linear.py)" not in evidence
    assert evidence.endswith(
        "; Python sampled in the steps: to_tensor (data.py) 1.0% of the step time "
        "(6 of 38 samples, 95% CI 0-10%)"
    )


def test_input_pipeline_work_is_a_share_of_the_step_time() -> None:
    summary = _summary({"input": 1.0, "compute": 9.0}, table=_table(input_work_ns=MS))
    assert _evidence(summary, "input") == (
        "10.0% in the input pipeline's own work (tf.data stages on the step's thread) while "
        "nothing of the model ran"
    )
    # one step of 1 ns, all of it pipeline work
    tiny = _summary({"input": 0.0}, steps=1, step_ns=1, table=_table(1, input_work_ns=1))
    tiny.limit_ns["input"][:] = 1
    assert _evidence(tiny, "input").startswith("100.0% in the input pipeline's own work")


def test_input_evidence_without_staging_names_no_python() -> None:
    """Python functions are named for input only when the batch is built in the step; below
    0.05% pipeline work nothing is said of the pipeline; a limit table of other steps (a pod
    summary's host with more or fewer steps) is not read."""
    summary = _summary(
        {"input": 0.6, "compute": 9.0},
        table=_table(input_work_ns=4 * US),
        untraced=Untraced("main", (), PYTHON),
    )
    assert _evidence(summary, "input") == "6.0% in input"
    other_steps = _summary({"input": 0.6, "compute": 9.0}, table=_table(3, input_work_ns=MS))
    assert _evidence(other_steps, "input") == "6.0% in input"


def test_a_host_computation_waited_for_is_compute_with_its_threads() -> None:
    summary = _summary(
        {"compute": 6.0, "host": 1.0},
        has_device=False,
        table=_table(waited_for=("tf_XLAPjRtCpuClient/1", "tf_XLAPjRtCpuClient/2")),
    )
    assert _evidence(summary, "compute") == (
        "the model's computation on the host (framework ops); the step's thread waits for it "
        "while it runs on tf_XLAPjRtCpuClient/1, tf_XLAPjRtCpuClient/2 (block_until_ready / a "
        "tf.function call): that wait is this compute, not host overhead"
    )


def test_dispatch_evidence_names_the_ops_their_pace_and_a_fix() -> None:
    """One step's run (the evidence of the host with the most dispatch), the two most
    issued ops, the median op and gap in µs, and the generic fix for a framework not
    known."""
    dispatch = DispatchEvidence(
        ops=np.array([190], np.int64),
        median_op_ns=60 * US,
        median_gap_ns=240 * US,
        top_ops=(("aten::add", 120), ("aten::mul", 70)),
    )
    summary = _summary({"dispatch": 6.0}, table=_table(dispatch=dispatch, framework="mxnet"))
    assert _evidence(summary, "dispatch") == (
        "190 small ops dispatched one at a time per step (aten::add x120, aten::mul x70 over "
        "1 step), 60.0 µs each (median) and 240.0 µs apart; fix: compile the step (jax.jit / "
        "torch.compile / tf.function) or batch the small ops into fewer, larger ones"
    )


def test_host_evidence_names_the_place_and_three_python_functions() -> None:
    summary = _summary(
        {"host": 6.0, "compute": 4.0}, untraced=Untraced("main", PLACE.places, PYTHON)
    )
    assert _evidence(summary, "host") == (
        "host work while the device waits (Python, host ops), on thread main, mostly after "
        "'aten::add' and before 'optimizer.step' (2.00 ms per step in 4 of 4 steps); Python "
        "sampled in the steps: collate (data.py) 10.0% of the step time (traced), augment "
        "(data.py) 7.5% of the step time (traced), log (train.py) 5.0% of the step time "
        "(traced)"
    )


def _host_only(traced_ms: float, untraced_ms: float) -> StepSummary:
    """A host-only profile whose host limit is ``traced_ms`` a step inside annotations
    (`LimitType.HOST`) and ``untraced_ms`` that nothing covers, beside 3 ms of input."""
    table = _table()
    table.ns[:, int(LimitType.HOST) // 10] = round(traced_ms * MS)
    table.ns[:, int(LimitType.UNTRACED) // 10] = round(untraced_ms * MS)
    return _summary(
        {"host": traced_ms + untraced_ms, "input": 3.0},
        has_device=False,
        table=table,
        untraced=PLACE,
    )


def test_host_time_inside_annotations_is_not_called_untraced() -> None:
    """A loop whose ``stepscope.trace("forward")`` held 20 ms of Python a step read "host
    work no traced op covers ... mostly after 'IteratorGetNextOp::DoCompute' and before
    'forward' (0.04 ms per step)" (decision 575): the time inside the annotation is said as
    such, and the untraced rest is placed with its own share."""
    summary = _host_only(6.0, 1.0)
    assert _evidence(summary, "host") == (
        "Python and host work inside traced regions that run no framework op "
        "(stepscope.trace annotations, Python calls: 60.0% of the step time; op_stats lists "
        "them by name); the untraced rest (10.0%) on thread main, mostly after 'aten::add' "
        "and before 'optimizer.step' (2.00 ms per step in 4 of 4 steps); record with "
        "stepscope's stack sampler (python_sampler_hz) to name the functions"
    )
    # no untraced rest worth a figure: no place, in the evidence nor in the advice's line
    alone = _host_only(6.0, 0.0001)
    assert _evidence(alone, "host").startswith(
        "Python and host work inside traced regions that run no framework op "
        "(stepscope.trace annotations, Python calls; op_stats lists them by name); record with"
    )
    details = recommend(alone, bound_by(alone)).details
    assert not any("mostly after" in line for line in details)
    # untraced time holding most of the limit keeps the old wording, as a device does
    assert _evidence(_host_only(1.0, 6.0), "host").startswith(
        "host work no traced op covers (Python, untraced I/O or synchronization), on thread "
        "main, mostly after 'aten::add'"
    )
    with_device = replace(_host_only(1.0, 6.0), has_device=True)
    assert _evidence(with_device, "host").startswith(
        "host work while the device waits (Python, host ops), on thread main"
    )


def test_host_ops_while_the_device_waits_are_not_placed_at_an_untraced_gap() -> None:
    """A DDP step's 100.5 ms of host ops while the GPU waited read "host work while the
    device waits (Python, host ops), on thread pt_main_thread, mostly after '## backward ##'
    and before '## optimizer ##' (0.05 ms per step in 3 of 3 steps)" (decision 620): with a
    device too, the traced host events holding most of the limit are said as such."""
    with_device = replace(_host_only(6.0, 1.0), has_device=True)
    assert _evidence(with_device, "host").startswith(
        "host work while the device waits, in traced host events outside any kernel launch "
        "(framework ops' own time, annotations: 60.0% of the step time; op_stats' host rows "
        "list them by self time); the untraced rest (10.0%) on thread main, mostly after "
        "'aten::add'"
    )
    alone = replace(_host_only(6.0, 0.0001), has_device=True)
    assert "mostly after" not in _evidence(alone, "host")
    assert not any("mostly after" in line for line in recommend(alone, bound_by(alone)).details)


# --- The headline ---------------------------------------------------------------------------


def test_the_headline_names_up_to_three_limits() -> None:
    bound = bound_by(_summary({"compute": 5.0, "dispatch": 3.0, "host": 2.0}))
    assert bound.headline == (
        "Bound by compute: 50.0% of the step time (5.00 ms per step), then dispatch / launch "
        "(30.0%), then Python / host (20.0%). The device computing (kernels)."
    )


def test_a_limit_of_exactly_the_least_share_is_listed() -> None:
    bound = bound_by(_summary({"compute": 9.995, "compilation": 0.005}))
    assert [(lim.key, lim.percent) for lim in bound.limits] == [
        ("compute", 99.95),
        ("compilation", 0.05),
    ]


def test_steps_without_limits_or_without_limit_time_bound_nothing() -> None:
    none = bound_by(_summary({}))
    assert (none.headline, none.limits) == (
        "No steps measured, so what bounds a step cannot be told.",
        (),
    )
    zero = bound_by(_summary({"compute": 0.0, "host": 0.0}))
    assert (zero.headline, zero.limits, zero.first) == ("No step time measured.", (), "")
    advice = recommend(_summary({}), none)
    assert (advice.bottleneck, advice.statement) == ("unknown", none.headline)


# --- XProf's classification and the advice --------------------------------------------------


def test_a_summary_without_steps_is_unknown_and_one_step_is_enough() -> None:
    assert classify_steps(_summary({}, steps=0)).classification == "unknown"
    one = _summary({"input": 3.0}, steps=1, categories_ms={"input": 3.0})
    assert (classify_steps(one).classification, classify_steps(one).percent) == ("high", 30.0)


def test_the_host_line_says_where_the_untraced_part_sits_and_only_it() -> None:
    summary = _summary(
        {"compute": 5.0, "host": 2.0, "dispatch": 1.0},
        untraced=Untraced("main", PLACE.places, PYTHON),
    )
    details = recommend(summary, bound_by(summary)).details
    assert len(details) == 2
    assert details[0].endswith("(kernel launch time).")  # no untraced place in it
    assert details[1] == (
        "HIGH: 20.0% of the step time is Python / host work: host work while the device waits "
        "(Python, host ops), on thread main, mostly after 'aten::add' and before "
        "'optimizer.step' (2.00 ms per step in 4 of 4 steps); Python sampled in the steps: "
        "collate (data.py) 10.0% of the step time (traced), augment (data.py) 7.5% of the step "
        "time (traced), log (train.py) 5.0% of the step time (traced)."
    )
    # the evidence names the place: it is not said a second time (decision 449)
    assert details[1].count("mostly after 'aten::add'") == 1


def test_the_host_evidence_does_not_name_a_loaders_own_fetch_the_trace_waits_on() -> None:
    """The samples are the whole steps': with the loader's fetch traced as the input wait,
    the queue's ``get`` under ``__next__ (dataloader.py)`` is that wait, not the host work
    (decision 449, decision 428's rule)."""
    loader = "__next__ (dataloader.py:733);_next_data (dataloader.py:1450)"
    functions = ("get (queues.py)", "log (train.py)")
    stacks = (f"train (train.py:9);{loader};get (queues.py:113)", "train (train.py:12)")

    def sampled(n: int) -> PythonTime:  # the first n functions, their time traced
        ns = np.array([3, 1][:n], np.int64) * MS  # both fit in the host work (20%)
        return PythonTime(functions[:n], stacks[:n], ns, ns // MS, traced=np.ones(n, bool))

    python = sampled(2)
    waiting = _summary(
        {"input": 5.0, "host": 1.0, "compute": 4.0},
        categories_ms={"input": 5.0},
        untraced=Untraced("main", PLACE.places, python),
    )
    host = _evidence(waiting, "host")
    assert "get (queues.py)" not in host and "log (train.py)" in host
    quiet = _evidence(replace(waiting, untraced=Untraced("main", PLACE.places, sampled(1))), "host")
    assert quiet.endswith("(2.00 ms per step in 4 of 4 steps)")  # sampled: no advice to
    assert "python_sampler_hz" not in quiet  # turn the sampler on
    # no input waited for: the same function is the host work's
    idle = _summary({"host": 1.0, "compute": 4.0}, untraced=Untraced("main", PLACE.places, python))
    assert "get (queues.py)" in _evidence(idle, "host")


def test_the_tf_data_advice_comes_from_moderate_input_on() -> None:
    advice = "tf.data: the Map stage is the bottleneck."
    at_five = _summary({"compute": 9.5, "input": 0.5})
    got = recommend(at_five, bound_by(at_five), tf_data_advice=advice)
    assert got.details[0] == advice
    assert got.tips[0] == "input_pipeline_analyzer: the breakdown of input time on the host"
    below = _summary({"compute": 9.6, "input": 0.4})
    got = recommend(below, bound_by(below), tf_data_advice=advice)
    assert advice not in got.details
    assert got.tips[0] == "op_stats: the most time-consuming ops"
    plain = recommend(at_five, bound_by(at_five))  # no tf.data finding: none given
    assert plain.details[0].startswith("5.0% of the step time is input:")


def test_mixed_precision_is_advised_below_ten_percent_only() -> None:
    summary = _summary({"compute": 10.0})
    at_ten = recommend(summary, bound_by(summary), precision_16_percent=10.0)
    assert at_ten.details == ()
    below = recommend(summary, bound_by(summary), precision_16_percent=9.9)
    assert below.details[0].startswith("Only 9.9% of the device compute time runs in 16-bit")


def test_mixed_precision_is_not_advised_for_compute_that_takes_no_time() -> None:
    """a100_triton_tiny: one 1.8 us kernel in a 13.3 s step, all of it 32-bit, was told
    mixed precision "could speed it up"; from 3% of the step time in compute it is."""
    for compute, advised in ((0.29, False), (0.3, True)):  # ms of a 10 ms step
        summary = _summary({"compute": compute, "host": 10.0 - compute})
        told = recommend(summary, bound_by(summary), precision_16_percent=0.0).details
        assert any("mixed precision" in d for d in told) == advised, compute
