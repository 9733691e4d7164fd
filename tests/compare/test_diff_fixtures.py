"""Real pairs: the tf.data fix (ctl -> ctl_opt), a Kineto trace against itself, a summary
saved and read back, and a TensorFlow run against a PyTorch run."""

from __future__ import annotations

import json

from stepscope.stats.compare import RunSummary, diff_runs, looks_like_summary
from stepscope.stats.compare.summary_file import summary_file
from stepscope.tools import output
from tests.support.compare import fixture_summary


def test_ctl_vs_ctl_opt_step_time_fell_79_percent_driven_by_input() -> None:
    d = diff_runs(fixture_summary("tf/ctl"), fixture_summary("tf/ctl_opt"))
    mean = d.metric("step_time.mean")
    assert mean is not None and mean.significant
    assert abs((mean.relative or 0) - (-0.787)) < 0.01  # XProf: 82.9 -> 17.7 ms avg
    assert d.driver == "input"
    assert d.verdict.startswith("step time -78.7% [")
    assert "driven by input: -68.5" in d.verdict
    assert (d.driver_detail or "").startswith("Map stage -")
    assert d.metric("category.input").significant  # type: ignore[union-attr]
    stages = {r.key: r.status for r in d.input_stages}
    assert stages["Iterator::Root::ForeverRepeat[0]::BatchV2::Map"] == "gone"
    assert stages["Iterator::Root::Prefetch"] == "new"
    changed = [r for r in d.host_ops if r.status == "changed"]
    assert changed and all(r.delta_ns != 0 or r.base_count != r.cand_count for r in changed)


def test_kineto_fixture_against_itself_is_no_change() -> None:
    s = fixture_summary("kineto/a100_nccl_rank0.json.gz")
    assert s.n_steps == 3 and len(s.kernels) > 0 and s.tensor_core_percent is not None
    d = diff_runs(s, s)
    assert not d.flagged
    assert d.verdict.startswith("no change in step time (the same per-step times: ")
    # every row the same time and count: "same", not "changed" (decision 581)
    assert all(r.delta_ns == 0 and r.status == "same" for r in d.kernels + d.host_ops)
    assert all(m.delta == 0 for m in d.metrics if m.delta is not None)


def test_summary_round_trips_through_json() -> None:
    s = fixture_summary("kineto/a100_nccl_rank0.json.gz")
    text = json.dumps(output.to_json(summary_file(s)), separators=(",", ":"))
    assert looks_like_summary(text.encode()[:200])
    back = RunSummary.from_json(json.loads(text))
    assert output.to_json(summary_file(back)) == output.to_json(summary_file(s))
    d = diff_runs(s, back)
    assert not d.flagged and all(m.delta in (0, None) for m in d.metrics)


def test_kineto_trace_is_not_taken_for_a_summary() -> None:
    assert not looks_like_summary(b'{"schemaVersion": 1, "deviceProperties": [')
    assert not looks_like_summary(b'{"traceEvents": [{"format": "stepscope-summary"}]}')


def test_tensorflow_run_against_pytorch_run_compares_categories() -> None:
    d = diff_runs(fixture_summary("tf/ctl_opt"), fixture_summary("kineto/a100_nccl_rank0.json.gz"))
    assert d.metric("step_time.median").tested  # type: ignore[union-attr]
    statuses = {r.status for r in d.host_ops}
    assert statuses <= {"new", "gone"}  # no op of one framework matches the other's
    assert d.verdict
