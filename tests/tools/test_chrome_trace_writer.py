"""The columnar Chrome-trace writer gives byte for byte the text of the per-event reference."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stepscope.model import Profile, open_file
from stepscope.tools.trace_viewer.chrome_reference import reference_chunks
from stepscope.tools.trace_viewer.chrome_trace import chrome_trace_chunks
from tests.support.fixtures import FIXTURES, tf_xplane


@pytest.fixture(scope="module")
def tf_ctl() -> Profile:
    return open_file(str(tf_xplane("ctl")), use_cache=False)


@pytest.fixture(scope="module")
def kineto_gpu() -> Profile:
    return open_file(
        str(FIXTURES / "kineto" / "h100_bert_small_inference.json.gz"), use_cache=False
    )


def _same(profile: Profile, start_ns: int | None = None, end_ns: int | None = None) -> str:
    fast = "".join(chrome_trace_chunks(profile, start_ns, end_ns))
    assert fast == "".join(reference_chunks(profile, start_ns, end_ns))
    return fast


def test_tf_trace_identical_to_reference(tf_ctl: Profile) -> None:
    document = json.loads(_same(tf_ctl))
    assert sum(e["ph"] == "X" for e in document["traceEvents"]) == tf_ctl.n_events


def test_tf_window_identical_to_reference(tf_ctl: Profile) -> None:
    origin = int(tf_ctl.start_ns.min())
    document = json.loads(_same(tf_ctl, origin + 100_000_000, origin + 150_000_000))
    assert 0 < sum(e["ph"] == "X" for e in document["traceEvents"]) < tf_ctl.n_events


def test_kineto_gpu_trace_identical_to_reference(kineto_gpu: Profile) -> None:
    document = json.loads(_same(kineto_gpu))
    events = document["traceEvents"]
    kernels = [e for e in events if e["ph"] == "X" and "stream" in e["args"]]
    assert kernels and all("device" in e["args"] for e in kernels)
    assert any(e["ph"] == "s" for e in events)
    # Floating-point args (Kineto writes some) come out as JSON numbers.
    assert any(isinstance(v, float) for e in events for v in e.get("args", {}).values())


def test_events_without_shown_stats_identical(kineto_gpu: Profile) -> None:
    """Events whose own stats are all hidden: GPU events' args are device/stream alone."""
    kind = kineto_gpu.stats.kind
    saved = kind.copy()
    try:
        kind[:] = np.iinfo(kind.dtype).max  # a kind neither writer shows
        document = json.loads(_same(kineto_gpu))
    finally:
        kind[:] = saved
    device_args = [e["args"] for e in document["traceEvents"] if e.get("cat") == "kernel"]
    # What remains: the metadata's category, then the device and stream.
    assert device_args and all(list(a)[-2:] == ["device", "stream"] for a in device_args)
    assert all(set(a) <= {"category", "device", "stream"} for a in device_args)
