"""`stepscope diff` says what drove a change as the report says what bounds the steps
(decisions 1044, 1045): a loop fed by a queue another thread fills waits there, and the
report's headline says "Bound by input"; the diff's verdict read XProf's categories, which
have no place for a wait nothing traces (a thread pool's zero-length event holds its host
compute over it, the rest is "All Others"), and named the stack sampler's row for the loop
blocked in the queue's ``wait (threading.py)`` as a host op that got slower."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from stepscope.model import open_run
from stepscope.stats.compare import RunSummary, diff_runs, evaluate, metric_names, parse_rule
from stepscope.stats.compare.summary_file import summary_file
from stepscope.tools import output
from stepscope.tools._compare import run_summary
from stepscope.tools.context import ProfileStore, ToolContext
from tests.support.analysis import MS
from tests.support.fetch_loop import LOOP, sampled_main

STEPS = 12
GET = f"{LOOP};get (queue.py:180);wait (threading.py:327)"
SESSION = "2026_01_01_00_00_00"


def _queue_loop(wait_ms: int) -> bytes:
    """Marked steps: the loop's jitted call (4 ms, traced), then its wait for the next
    batch in a queue's ``get`` (``wait_ms``, untraced; the sampler saw it there, in
    ``wait (threading.py)``). The XLA client's pool thread runs 1 ms of work in the wait,
    after a zero-length event at its start."""
    builder, main, samples = sampled_main()
    pool = builder.plane("/host:CPU").line(11, "tf_XLAPjRtCpuClient/1")
    t = 0
    for k in range(STEPS):
        dur = (4 + wait_ms) * MS
        main.event("train", t, dur, {"step_num": k, "_r": 1})
        main.event("PjitFunction(step)", t, 4 * MS)
        stack = f"{LOOP};step (train.py:20)"
        samples.event("step (train.py)", t, 4 * MS, {"stack": stack, "samples": 4})
        gap = t + 4 * MS
        samples.event(
            "wait (threading.py)",
            gap,
            wait_ms * MS,
            {"stack": GET, "samples": wait_ms, "next_frames": "2"},
        )
        pool.event("ThreadpoolListener::StartRegion", gap, 0)
        pool.event("ynn_fusion", gap + MS, MS)
        t += dur
    return builder.build().SerializeToString()


def _summary(root: Path, name: str, wait_ms: int) -> RunSummary:
    run_dir = root / name / "plugins" / "profile" / SESSION
    run_dir.mkdir(parents=True)
    (run_dir / "host.xplane.pb").write_bytes(_queue_loop(wait_ms))
    run = open_run(str(root / name))
    return run_summary(ToolContext(run, run.host_names[0], ProfileStore(use_cache=False)))


def _pair(tmp_path: Path) -> tuple[RunSummary, RunSummary]:
    return _summary(tmp_path, "fast", 6), _summary(tmp_path, "slow", 16)


def test_a_longer_wait_on_the_queue_is_said_as_input(tmp_path: Path) -> None:
    """Before: "driven by all others: +10.00 ms/step (wait (threading.py) op +10.00
    ms/step)", beside two reports saying "Bound by input"."""
    base, cand = _pair(tmp_path)
    d = diff_runs(base, cand)
    assert d.driver == "input"
    assert "driven by input: +10.00 ms/step" in d.verdict
    assert d.driver_detail == "the wait on the queue, get (queue.py), +10.00 ms/step"
    assert d.verdict.endswith("(the wait on the queue, get (queue.py), +10.00 ms/step)")
    limit = d.metric("bound.input")
    assert limit is not None and limit.significant and limit.delta == 10 * MS
    for s, wait in ((base, 6), (cand, 16)):
        assert s.bound_by.startswith("Bound by input")
        # XProf's categories have no input here: the wait is "All Others"
        assert not s.category_ns["input"].any() and s.category_ns["other"].any()
        # what bounds the steps: every step's wait is input, as the summary saves it
        assert s.fetch_from == "get (queue.py)"
        assert s.limit_ns["input"].tolist() == [wait * MS] * s.n_steps


def test_the_samplers_wait_is_no_host_op(tmp_path: Path) -> None:
    """The summaries keep the sampler's rows (the report's functions read them); the diff's
    host ops are ops, as the overview's top ops are."""
    base, cand = _pair(tmp_path)
    assert "wait (threading.py)" in cand.host_ops.names
    d = diff_runs(base, cand)
    assert d.host_ops and all(r.type != "Python" for r in d.host_ops)
    assert "threading" not in d.verdict


def test_the_limits_round_trip_and_an_older_file_reads_the_categories(tmp_path: Path) -> None:
    base, cand = _pair(tmp_path)
    saved = output.to_json(summary_file(cand))
    back = RunSummary.from_json(json.loads(json.dumps(saved)))
    assert back.fetch_from == cand.fetch_from
    assert back.fetch_ns is not None and cand.fetch_ns is not None
    assert np.array_equal(back.fetch_ns, cand.fetch_ns)
    assert {c: v.tolist() for c, v in back.limit_ns.items()} == {
        c: v.tolist() for c, v in cand.limit_ns.items()
    }
    assert diff_runs(base, back).verdict == diff_runs(base, cand).verdict
    # a summary written before the limits: the categories drive, no limit rows
    for key in ("limit_ns", "fetch_ns", "fetch_from"):
        del saved["steps"][key]
    old = RunSummary.from_json(json.loads(json.dumps(saved)))
    assert not old.limit_ns and old.fetch_ns is None
    d = diff_runs(base, old)
    assert d.driver in {"host_compute", "other"} and d.metric("bound.input") is None
    assert d.verdict.endswith(
        "(by XProf's categories: the candidate's summary file does not say what bounds its "
        "steps; write it again with `stepscope summary`)"
    )
    assert "write it again" not in diff_runs(old, old).verdict


def test_a_gate_on_what_bounds_the_steps(tmp_path: Path) -> None:
    """``--fail-on bound.input>+5ms``: the limits are metrics of their own, as the
    categories are."""
    d = diff_runs(*_pair(tmp_path))
    names = metric_names()
    assert "bound.input" in names and "bound.compute" in names
    assert evaluate(parse_rule("bound.input>+5ms", names), d).failed
    assert not evaluate(parse_rule("bound.compute>+1ms", names), d).failed
