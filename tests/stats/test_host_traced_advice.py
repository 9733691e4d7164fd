"""The host limit's advice follows what its time is (decision 1058): with a device, when
traced host events hold it (a DDP backward pass's CPU-side ops on PyTorch's autograd
thread), the fix is theirs, not "move the untraced Python work"."""

from __future__ import annotations

from stepscope.stats import build_step_db, summarize_steps
from stepscope.stats.advice import recommend
from stepscope.stats.bound import bound_by, traced_host_device
from tests.support.gpu_fixtures import fixture_profile


def test_traced_host_time_is_not_advised_as_untraced_python() -> None:
    summary = summarize_steps(
        {"h": build_step_db(fixture_profile("kineto/a100_nccl_rank0.json.gz"))}
    )
    bound = bound_by(summary)
    assert bound.limits[0].key == "host"
    assert traced_host_device(summary)
    advice = recommend(summary, bound)
    first = advice.details[0]
    assert first.startswith("HIGH: What bounds the steps, Python / host")
    assert "untraced Python work" not in first
    assert "traced host work, not untraced Python" in first
    assert "autograd thread" in first  # a PyTorch profile: where its backward ops run
    assert "op_stats' host rows" in first
