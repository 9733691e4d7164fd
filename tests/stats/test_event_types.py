"""Event types at their edges (`stepscope.stats.events`): which host event waits in a
collective, which is the collective's own work, and what the type table promises its callers.
Each profile is built in code, a few events on named threads."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.model import Profile
from stepscope.stats.events import (
    NOT_COUNTED,
    EventType,
    classify_events,
    host_type_of_name,
    memcpy_kind,
)
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import build

FRAME = "model.py(40): backward"  # a Python frame: it may wait for another thread's work
GLOO = "gloo:all_reduce"


def _types(profile: Profile, has_device: bool | None = None) -> dict[str, str]:
    """Each event's type by its name (the names of a test are distinct)."""
    types = classify_events(profile, has_device)
    out = {}
    for k in range(profile.n_events):
        t = int(types[k])
        out[profile.event_name(k)] = "NOT_COUNTED" if t == NOT_COUNTED else EventType(t).name
    return out


def _host(*threads: list[tuple[str, int, int]]) -> Profile:
    """A host-only profile: one thread per list of (name, start, duration)."""
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    for tid, events in enumerate(threads, start=1):
        line = plane.line(tid, f"thread {tid}")
        for name, start, dur in events:
            line.event(name, start, dur)
    return build(builder)


def test_a_profile_of_one_event_is_classified() -> None:
    assert _types(_host([("aten::mm", 0, 100)])) == {"aten::mm": "HOST_COMPUTE"}


def test_the_type_table_is_int16_and_read_only() -> None:
    types = classify_events(_host([("aten::mm", 0, 100), ("aten::add", 200, 100)]))
    assert types.dtype == np.int16
    with pytest.raises(ValueError, match="read-only"):
        types[0] = 0


def test_a_launch_is_kernel_launch_only_where_the_caller_says_there_is_a_device() -> None:
    builder = XSpaceBuilder("host")
    builder.plane("/host:CPU").line(1, "main").event(
        "cudaLaunchKernel", 0, 50, {"correlation_id": 7}
    )
    profile = build(builder)
    # both answers from one profile: each is kept under its own has_device
    assert _types(profile, has_device=True) == {"cudaLaunchKernel": "HOST_PREPARE"}
    assert _types(profile, has_device=False) == {"cudaLaunchKernel": "HOST_COMPUTE"}
    assert _types(profile) == {"cudaLaunchKernel": "HOST_COMPUTE"}  # no device plane


def test_the_python_stack_sampler_line_is_no_work() -> None:
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    plane.line(1, "main").event("aten::mm", 0, 100)
    plane.line(2, "Python samples").event("step (model.py:12)", 0, 100)
    assert _types(build(builder)) == {
        "aten::mm": "HOST_COMPUTE",
        "step (model.py:12)": "NOT_COUNTED",
    }


def test_infeed_is_read_from_the_op_type_after_the_last_colon() -> None:
    assert host_type_of_name("infeed/InfeedEnqueueTuple:InfeedEnqueueTuple") == (
        EventType.HOST_TO_DEVICE
    )
    assert host_type_of_name("replica:0/infeed:InfeedEnqueue") == EventType.HOST_TO_DEVICE
    # a bare name is no "name:type" TensorFlow op: XProf gives it no op type
    assert host_type_of_name("InfeedEnqueueTuple") == EventType.HOST_COMPUTE


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("Memcpy DtoD (Device -> Device)", "DToD"),
        ("MemcpyDtoD", "DToD"),
        ("Memcpy PtoP (Device -> Device)", "DToD"),
        ("MemcpyP2P", "DToD"),
        ("Memcpy P2P", "DToD"),
        ("Memcpy HtoH (Pinned -> Pinned)", "HToH"),
        ("Memcpy" + " " * 12 + "HtoD", "HToD"),  # spaces are not read, however many
        ("Memset (Device)", None),
    ],
)
def test_memcpy_kinds(name: str, kind: str | None) -> None:
    assert memcpy_kind(name) == kind


def test_only_device_compute_is_made_16_bit_by_its_shapes() -> None:
    builder = XSpaceBuilder("gpu")
    stream = builder.plane("/device:GPU:0").line(7, "stream")
    half = {"tensor_shapes": "(half[8,8], half[8,8])"}
    stream.event("gemm_kernel", 0, 100, half)
    stream.event("other_kernel", 200, 100, {"tensor_shapes": "(float[8,8])"})
    stream.event("MemcpyDtoD", 400, 100, half)
    stream.event("ncclKernel_AllReduce_RING_LL_Sum_half", 600, 100, half)
    assert _types(build(builder)) == {
        "gemm_kernel": "DEVICE_COMPUTE_16",
        "other_kernel": "DEVICE_COMPUTE_32",
        "MemcpyDtoD": "DEVICE_TO_DEVICE",
        "ncclKernel_AllReduce_RING_LL_Sum_half": "DEVICE_COLLECTIVES",
    }


# ---- host compute that waits in a collective, or is one ---------------------------------


def test_an_op_holding_a_collective_of_its_thread_to_its_end_waits_in_it() -> None:
    profile = _host([("AccumulateGrad", 0, 100), (GLOO, 50, 50)])
    assert _types(profile)["AccumulateGrad"] == "HOST_ENCLOSING"


def test_an_op_holding_a_1_ns_collective_waits_in_it_but_not_one_holding_an_instant() -> None:
    assert _types(_host([("AccumulateGrad", 0, 100), (GLOO, 50, 1)]))["AccumulateGrad"] == (
        "HOST_ENCLOSING"
    )
    assert _types(_host([("AccumulateGrad", 0, 100), (GLOO, 50, 0)]))["AccumulateGrad"] == (
        "HOST_COMPUTE"
    )


def test_an_op_crossing_half_of_a_collective_of_its_thread_computes() -> None:
    # half of a collective is the rule of waiting frames only: an op computes
    profile = _host([("aten::mm", 0, 100), (GLOO, 50, 100)])
    assert _types(profile)["aten::mm"] == "HOST_COMPUTE"


def test_ops_inside_a_collective_of_their_thread_are_its_work_up_to_its_edges() -> None:
    profile = _host(
        [
            (GLOO, 100, 100),
            ("Loop", 100, 50),
            ("Send", 150, 50),
            ("aten::mm", 200, 10),
            ("gloo:broadcast", 300, 100),
            ("Recv", 320, 20),
        ]
    )
    assert _types(profile) == {
        GLOO: "HOST_COLLECTIVE",
        "Loop": "HOST_COLLECTIVE",  # starts with it
        "Send": "HOST_COLLECTIVE",  # ends with it
        "aten::mm": "HOST_COMPUTE",  # after it
        "gloo:broadcast": "HOST_COLLECTIVE",
        "Recv": "HOST_COLLECTIVE",  # inside the thread's second collective
    }


def test_a_frame_starting_with_a_collective_and_holding_exactly_half_of_it_waits() -> None:
    # the collective under way at the frame's start (it starts there too) is half held; the
    # last one starting inside the frame is not
    profile = _host([(FRAME, 100, 100)], [(GLOO, 100, 200)], [("gloo:broadcast", 190, 210)])
    assert _types(profile)[FRAME] == "HOST_ENCLOSING"


def test_a_frame_holding_half_of_the_last_collective_starting_inside_it_waits() -> None:
    profile = _host([(FRAME, 0, 100)], [(GLOO, 50, 100)])
    assert _types(profile)[FRAME] == "HOST_ENCLOSING"


def test_a_frame_holding_less_than_half_of_a_collective_computes() -> None:
    profile = _host([(FRAME, 0, 100)], [(GLOO, 60, 100)])
    assert _types(profile)[FRAME] == "HOST_COMPUTE"


def test_a_frame_holding_a_whole_collective_of_another_thread_waits() -> None:
    # whatever the next collective, which starts inside the frame and is mostly after it
    profile = _host([(FRAME, 0, 100)], [(GLOO, 10, 10), ("gloo:broadcast", 90, 410)])
    assert _types(profile)[FRAME] == "HOST_ENCLOSING"


def test_a_frame_before_every_collective_computes() -> None:
    profile = _host(
        [
            (FRAME, 0, 100),
        ],
        [(GLOO, 200, 100)],
    )
    assert _types(profile)[FRAME] == "HOST_COMPUTE"
