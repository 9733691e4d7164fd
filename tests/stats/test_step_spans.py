"""The memory profile's step spans and their ids (`steps/spans.py`) at their edges: markers
at equal or touching times, nested markers, and XProf's group ids where they are not the
positions (the mutation run of spans.py, issue #34)."""

from __future__ import annotations

import numpy as np

from stepscope.stats.steps.spans import step_spans, step_spans_with_ids
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build


def _spans(*events: tuple[str, int, int, dict]) -> tuple[list[int], list[int], list[int]]:
    builder = XSpaceBuilder("spans")
    main = builder.plane("/host:CPU").line(1, "python")
    for name, start, dur, stats in events:
        main.event(name, start * MS, dur * MS, stats)
    profile = build(builder)
    starts, ends, ids = step_spans_with_ids(profile)
    plain = step_spans(profile)
    assert [a.dtype for a in (starts, ends, ids, *plain)] == [np.int64] * 5
    assert plain[0].tolist() == starts.tolist() and plain[1].tolist() == ends.tolist()
    return [s // MS for s in starts.tolist()], [e // MS for e in ends.tolist()], ids.tolist()


def _train(k: int, start: int, dur: int) -> tuple[str, int, int, dict]:
    return ("train", start, dur, {"step_num": k, "_r": 1})


def test_no_steps_and_one_step() -> None:
    assert _spans(("work", 0, 5, {})) == ([], [], [])
    assert _spans(_train(0, 0, 10)) == ([0], [10], [0])


def test_touching_steps_are_both_kept_and_nested_ones_dropped() -> None:
    got = _spans(_train(0, 0, 10), _train(1, 10, 10), _train(2, 20, 20), _train(3, 25, 5))
    assert got[:2] == ([0, 10, 20], [10, 20, 40])


def test_the_ids_are_xprofs_groups_not_positions() -> None:
    # a FunctionRun between the steps is a group of its own: the second step is group 2
    got = _spans(_train(0, 0, 10), ("FunctionRun", 12, 2, {"_r": 1}), _train(1, 20, 10))
    assert got == ([0, 20], [10, 30], [0, 2])


def test_steps_of_one_group_are_numbered_by_position() -> None:
    # both steps inside one earlier root share its group: their ids are their positions
    got = _spans(
        ("SessionRun", 0, 50, {"_r": 1}),
        _train(0, 5, 10),
        ("FunctionRun", 17, 1, {"_r": 1}),
        _train(1, 20, 10),
    )
    assert got == ([5, 20], [15, 30], [0, 1])


def test_a_devices_steps_are_numbered_by_position_not_by_group() -> None:
    # a TPU's Steps line is no group root of XProf's: an earlier host root does not shift ids
    builder = XSpaceBuilder("tpu")
    builder.plane("/host:CPU").line(1, "python").event("FunctionRun", 0, MS, {"_r": 1})
    steps = builder.plane("/device:TPU:0").line(1, "Steps")
    for k in range(2):
        steps.event(f"{k}", (10 + 10 * k) * MS, 5 * MS, {"group_id": k})
    starts, _, ids = step_spans_with_ids(build(builder))
    assert (starts // MS).tolist() == [10, 20] and ids.tolist() == [0, 1]
