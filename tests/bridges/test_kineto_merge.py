"""A PyTorch trace merged into a capture on columns (the bridge's route: `kineto_to_columns`,
`merge_columns`, `encode_space`) saves the profile the protobuf route saved
(`kineto_bytes_to_xspace`, `merge_xspace`): every plane, line, event, stat and warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.columns_pb import encode_space
from stepscope.xspace.kineto import kineto_bytes_to_xspace, kineto_to_columns
from stepscope.xspace.merge import ClockMap, merge_xspace
from stepscope.xspace.merge_columns import merge_columns
from stepscope.xspace.proto.xplane_pb2 import XSpace
from stepscope.xspace.wire import decode_columns
from tests.support.xspace_content import counts, describe


def _capture(first_ns: int) -> XSpace:
    """stepscope's own side: steps on the main thread (line 1) and the environment."""
    builder = XSpaceBuilder(hostname="worker")
    line = builder.plane("/host:CPU").line(1, "MainThread")
    for k in range(4):
        line.event("train", first_ns + k * 1_000_000, 900_000, {"step_num": k, "_r": 1})
    env = builder.plane("Task Environment")
    env.stats.update({"profile_start_time": 5, "profile_stop_time": 9})
    return builder.build()


def _both_routes(trace: Path) -> tuple[XSpace, XSpace]:
    messages = kineto_bytes_to_xspace(trace.read_bytes(), str(trace))
    del messages.hostnames[:]
    columns = kineto_to_columns(trace)
    columns.space_header.hostnames.clear()
    lines = [line for plane in messages.planes for line in plane.lines if len(line.events)]
    first = min(line.timestamp_ns for line in lines)
    # the trace's first event at 1 ms; a window cutting its first and last events away
    clock = ClockMap(1_000_000 - first, rate=1e-6, anchor_ns=first)
    last = max(line.timestamp_ns + line.duration_ps // 1000 for line in lines)
    window = (1_000_010, last - first + 1_000_000 - 10)
    expected = _capture(0)
    merge_xspace(expected, messages, clock, window=window)
    merged = merge_columns(
        decode_columns(_capture(0).SerializeToString()), columns, clock, window=window
    )
    got = XSpace()
    got.ParseFromString(encode_space(merged))
    return expected, got


@pytest.mark.parametrize(
    "name",
    [
        "cpu_only_gloo_rank34.json.gz",
        "a100_triton_tiny.json.gz",
        pytest.param("h100_bert_small_inference.json.gz", marks=pytest.mark.integration),
        pytest.param("a100_nccl_rank0.json.gz", marks=pytest.mark.integration),
        pytest.param("v100_training_with_memory.json.gz", marks=pytest.mark.integration),
    ],
)
def test_the_columns_route_saves_what_the_protobuf_route_saved(
    fixtures_dir: Path, name: str
) -> None:
    expected, got = _both_routes(fixtures_dir / "kineto" / name)
    assert counts(got) == counts(expected)
    assert describe(got) == describe(expected)
