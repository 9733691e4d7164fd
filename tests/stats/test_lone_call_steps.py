"""A loop calling one tf.function per iteration, its other work untraced Python, on a loaded
machine: the call is alone on its thread and its periods are not steady, but the load
stretches the call and the Python around it together, so the call's share of its period is
(`stepscope.stats.steps.lone_call`, decision 741). The calls are those of a capture of
tests/capture/test_truth_fetch_loops.py's `train_gen` loop at load 12.5 (61 calls, 4.6 to
255.8 ms apart: within [0.5, 2] x the median for 33% of the time), where no step was
inferred."""

from __future__ import annotations

from stepscope.stats.steps.infer import infer_steps
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

GC = "PythonRefManager::CollectGarbage"
# the capture's calls of `train`: start and length, ms from the thread's first event
STARTS_MS = [
    148.9,
    305.4,
    389.5,
    412.6,
    421.3,
    429.2,
    437.0,
    443.6,
    453.1,
    458.9,
    496.1,
    562.7,
    578.2,
    613.4,
    679.7,
    758.8,
    850.3,
    938.3,
    1031.3,
    1083.5,
    1101.8,
    1137.5,
    1231.1,
    1278.7,
    1300.2,
    1359.0,
    1418.1,
    1504.4,
    1542.9,
    1564.0,
    1718.5,
    1974.3,
    2046.1,
    2059.0,
    2130.0,
    2174.1,
    2261.7,
    2361.3,
    2461.2,
    2475.5,
    2496.1,
    2528.5,
    2544.7,
    2555.3,
    2580.8,
    2597.5,
    2615.3,
    2627.9,
    2660.4,
    2677.9,
    2706.4,
    2723.7,
    2753.3,
    2768.0,
    2809.3,
    2823.7,
    2861.3,
    2881.7,
    2914.2,
    2941.9,
    2974.3,
]
LENGTHS_MS = [
    32.0,
    67.3,
    14.8,
    4.9,
    4.3,
    4.0,
    3.4,
    5.4,
    2.9,
    3.4,
    63.7,
    6.7,
    31.9,
    63.5,
    37.0,
    79.8,
    46.4,
    60.7,
    42.0,
    11.7,
    7.6,
    16.6,
    44.6,
    18.7,
    56.4,
    55.7,
    83.4,
    35.5,
    18.4,
    120.1,
    247.9,
    10.7,
    10.6,
    32.2,
    30.9,
    20.3,
    19.1,
    89.5,
    11.5,
    17.6,
    20.1,
    8.4,
    7.9,
    15.8,
    9.9,
    8.1,
    4.8,
    18.2,
    5.8,
    19.2,
    11.5,
    13.2,
    6.1,
    22.8,
    4.4,
    13.5,
    6.4,
    23.1,
    13.9,
    14.8,
    23.0,
]


def _profile(lengths_ms: list[float]) -> XSpaceBuilder:
    builder = XSpaceBuilder("host")
    main = builder.plane("/host:CPU").line(1, "python")
    main.event(GC, 0, int(0.01 * MS))  # as in the capture: once, twice at its start
    main.event(GC, int(0.2 * MS), int(0.01 * MS))
    for start, length in zip(STARTS_MS, lengths_ms, strict=True):
        main.event("train", int(start * MS), int(length * MS))
    return builder


def test_a_lone_call_stretched_with_its_iteration_is_the_step() -> None:
    found = infer_steps(build(_profile(LENGTHS_MS)))
    assert found is not None
    assert found.description.startswith("61 repeats of top-level event 'train'")
    assert [s / MS for s in found.start_ns.tolist()] == STARTS_MS[:-1]


def test_lone_calls_of_one_length_at_uneven_times_are_no_step() -> None:
    """The same times, each call 2 ms: nothing stretched with the period, so no loop's shape
    (an op called now and then)."""
    assert infer_steps(build(_profile([2.0] * len(STARTS_MS)))) is None
