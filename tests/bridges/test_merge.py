"""`merge_xspace` and `merge_columns`: planes, lines, metadata and clocks of two XSpaces made
one. Every test runs both (the protobuf merge of the TensorFlow/JAX bridges, the columnar one
of the PyTorch bridge) and checks that they give the same profile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stepscope.model.from_xspace import profile_from_xspace
from stepscope.xspace.builder import Ref, XSpaceBuilder
from stepscope.xspace.columns_pb import encode_space
from stepscope.xspace.merge import ClockMap, MergeReport, env_stats, merge_xspace
from stepscope.xspace.merge_columns import merge_columns
from stepscope.xspace.proto.xplane_pb2 import XSpace
from stepscope.xspace.wire import decode_columns
from tests.support.xspace_content import describe

Merge = Callable[..., MergeReport]


def _columns_merge(
    target: XSpace, source: XSpace, clock: ClockMap | None = None, **kw: Any
) -> MergeReport:
    """`merge_columns`, its result written back into ``target``; checked against the
    protobuf merge of copies of the same inputs."""
    expected_target, expected_source = XSpace(), XSpace()
    expected_target.CopyFrom(target)
    expected_source.CopyFrom(source)
    expected_report = merge_xspace(expected_target, expected_source, clock, **kw)
    report = MergeReport()
    merged = merge_columns(
        decode_columns(target.SerializeToString()),
        decode_columns(source.SerializeToString()),
        clock,
        report=report,
        **kw,
    )
    target.ParseFromString(encode_space(merged))
    assert describe(target) == describe(expected_target)
    assert report == expected_report
    return report


@pytest.fixture(params=["protobuf", "columns"])
def merge(request: pytest.FixtureRequest) -> Merge:
    return merge_xspace if request.param == "protobuf" else _columns_merge


OFFSET = 1_000_000_000  # source clock = target clock + 1 s


def _space(
    lines: dict[tuple[str, int, str], list[tuple[str, int, int, dict[str, Any] | None]]],
    env: dict[str, Any] | None = None,
    plane_stats: dict[str, dict[str, Any]] | None = None,
) -> XSpace:
    builder = XSpaceBuilder(hostname="h")
    for (plane_name, line_id, line_name), events in lines.items():
        line = builder.plane(plane_name).line(line_id, line_name)
        for name, start, dur, stats in events:
            line.event(name, start, dur, stats)
    for plane_name, stats in (plane_stats or {}).items():
        builder.plane(plane_name).stats.update(stats)
    for line_builder in (ln for p in builder.planes for ln in p.lines):
        line_builder.sort_events()
    if env is not None:
        builder.plane("Task Environment").stats.update(env)
    return builder.build()


def _events(space: XSpace) -> list[dict[str, Any]]:
    profile = profile_from_xspace(space)
    out = []
    for i in range(profile.n_events):
        line = profile.lines[int(profile.line[i])]
        out.append(
            {
                "plane": profile.planes[line.plane].name,
                "line": line.id,
                "line_name": line.name,
                "name": profile.event_name(i),
                "start": int(profile.start_ns[i]),
                "dur": int(profile.dur_ns[i]),
                "stats": profile.event_stats(i),
            }
        )
    return out


def _target() -> XSpace:
    return _space(
        {("/host:CPU", 100, "MainThread"): [("train", 1_000, 9_000, {"step_num": 1, "_r": 1})]},
        env={"profile_start_time": 5, "profile_stop_time": 50_000},
        plane_stats={"/host:CPU": {"owner": "stepscope"}},
    )


def test_same_thread_lines_become_one_sorted_line_and_nest(merge: Merge) -> None:
    source = _space(
        {
            ("/host:CPU", 100, "python"): [
                ("aten::mm", OFFSET + 2_000, 3_000, {"Input Dims": "[[2, 3], [3, 4]]"}),
                ("aten::relu", OFFSET + 6_000, 1_000, {"kind": Ref("cpu_op")}),
            ],
            ("/host:CPU", 200, "worker"): [("aten::add", OFFSET + 500, 100, None)],
        },
        plane_stats={"/host:CPU": {"owner": "torch", "rank": 3}},
    )
    report = merge(target := _target(), source, ClockMap(-OFFSET))
    assert report.lines_merged == 1 and report.events_moved == 3
    events = _events(target)
    main = [e for e in events if e["line"] == 100]
    assert [e["name"] for e in main] == ["train", "aten::mm", "aten::relu"]
    assert [e["start"] for e in main] == [1_000, 2_000, 6_000]
    assert main[1]["stats"] == {"Input Dims": "[[2, 3], [3, 4]]"}
    assert main[2]["stats"] == {"kind": "cpu_op"}  # ref value re-interned
    assert {e["line_name"] for e in main} == {"MainThread"}  # the target's name is kept
    worker = [e for e in events if e["line"] == 200]
    assert worker[0]["start"] == 500
    host = profile_from_xspace(target).planes[0]
    assert host.stats["owner"] == "stepscope" and host.stats["rank"] == 3


def test_bigger_source_is_the_base_but_the_target_keeps_its_names(merge: Merge) -> None:
    many = [(f"op{i % 3}", OFFSET + 100 * i, 50, {"i": i}) for i in range(50)]
    source = _space(
        {("/host:CPU", 100, "python"): many},
        plane_stats={"/host:CPU": {"owner": "torch"}},
    )
    target = _target()
    merge(target, source, ClockMap(-OFFSET))
    events = _events(target)
    assert len(events) == 51
    assert {e["line_name"] for e in events} == {"MainThread"}
    starts = [e["start"] for e in events]
    assert starts == sorted(starts)
    assert [e["stats"]["i"] for e in events if e["name"].startswith("op")] == list(range(50))
    assert profile_from_xspace(target).planes[0].stats["owner"] == "stepscope"
    assert target.planes[0].name == "/host:CPU" and target.planes[0].id == 0


def test_new_planes_are_added_and_task_environment_stays_last(merge: Merge) -> None:
    source = _space(
        {
            ("/device:GPU:0", 7, "Stream #7"): [
                ("volta_sgemm", OFFSET + 3_000, 2_000, {"correlation_id": 11, "stream": 7}),
            ]
        },
        env={"profile_start_time": OFFSET, "framework": "pytorch", "cuda_runtime_version": 12040},
    )
    target = _target()
    merge(target, source, ClockMap(-OFFSET))
    assert [p.name for p in target.planes] == ["/host:CPU", "/device:GPU:0", "Task Environment"]
    assert len({p.id for p in target.planes}) == 3
    kernel = next(e for e in _events(target) if e["name"] == "volta_sgemm")
    assert (kernel["start"], kernel["dur"]) == (3_000, 2_000)
    assert kernel["stats"] == {"correlation_id": 11, "stream": 7}
    env = env_stats(target)
    assert env["profile_start_time"] == 5  # the target's own capture times
    assert env["framework"] == "pytorch" and env["cuda_runtime_version"] == 12040


def test_window_drops_what_lies_outside_the_recording(merge: Merge) -> None:
    source = _space(
        {
            ("/host:CPU", 300, "t"): [
                ("before", OFFSET - 5_000, 1_000, None),
                ("straddles", OFFSET - 500, 1_000, None),
                ("inside", OFFSET + 1_000, 1_000, None),
                ("after", OFFSET + 60_000, 1_000, None),
            ]
        }
    )
    target = _target()
    report = merge(target, source, ClockMap(-OFFSET), window=(0, 50_000))
    assert report.events_dropped == 2
    names = [e["name"] for e in _events(target) if e["line"] == 300]
    assert names == ["straddles", "inside"]


def test_a_clock_rate_moves_each_event_by_its_own_amount(merge: Merge) -> None:
    source = _space({("/host:CPU", 300, "t"): [("a", 0, 10, None), ("b", 1_000_000, 10, None)]})
    target = _target()
    merge(target, source, ClockMap(offset_ns=100, rate=-0.001, anchor_ns=0))
    starts = {e["name"]: e["start"] for e in _events(target) if e["line"] == 300}
    assert starts == {"a": 100, "b": 1_000_000 + 100 - 1_000}


def test_line_ids_rename_source_threads_and_messages_are_kept(merge: Merge) -> None:
    source = _space({("/host:CPU", -987654321, "python"): [("PjitFunction(f)", 2_000, 10, None)]})
    source.warnings.append("jax: something")
    source.errors.append("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES")
    target = _target()
    merge(target, source, line_ids={"/host:CPU": {-987654321: 100}})
    main = [e["name"] for e in _events(target) if e["line"] == 100]
    assert main == ["train", "PjitFunction(f)"]
    assert list(target.warnings) == ["jax: something"]
    assert list(target.errors) == ["CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"]
    assert list(target.hostnames) == ["h"]
