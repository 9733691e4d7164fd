"""XSpace -> columnar model: both decoders agree, names/stats/times are right."""

from __future__ import annotations

from dataclasses import fields
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from stepscope.model import profile_from_xspace
from stepscope.model.from_xspace import load_profile
from stepscope.xspace import Ref, XSpaceBuilder, wire
from stepscope.xspace.io import read_profile_bytes
from stepscope.xspace.proto.xplane_pb2 import XSpace
from tests.support.fixtures import FIXTURES, is_heavy
from tests.support.native import c_and_python, c_on

XPLANES = sorted(FIXTURES.rglob("*.xplane.pb"))
# every array column of the decoded file
COLUMNS = tuple(f.name for f in fields(wire.RawColumns) if f.name[:3] in ("ev_", "st_"))


@lru_cache(maxsize=1)  # a file's two thread counts run one after the other
def _protobuf_columns(path: Path) -> wire.RawColumns:
    """The fallback's columns of a fixture, decoded once for both thread counts: on the
    7.4 MB big_ctl it costs 1.1 s of CPU, the C decoder 0.03 s (decision 695)."""
    return wire.columns_from_message(XSpace.FromString(read_profile_bytes(path)))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    "path",
    # The files over 500 kB (big_ctl, remote: 1.5 s of the default tier's CPU, the Python
    # fallback's) are compared in the integration tier, which CI runs (decision 763).
    [
        pytest.param(p, id=p.parent.name, marks=[pytest.mark.integration] if is_heavy(p) else [])
        for p in XPLANES
    ],
)
def test_c_decoder_matches_protobuf_fallback(
    path: Path, threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    c_on(monkeypatch, "_fastwire")
    fast = wire.decode_columns(read_profile_bytes(path), threads=threads)
    slow = _protobuf_columns(path)
    for column in COLUMNS:
        np.testing.assert_array_equal(getattr(fast, column), getattr(slow, column), err_msg=column)
    assert fast.lines == slow.lines
    assert fast.strings == slow.strings
    assert fast.plane_headers == slow.plane_headers
    assert fast.space_header == slow.space_header


def test_fallback_path_gives_same_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    path = XPLANES[0]
    fast, slow = c_and_python(monkeypatch, lambda: load_profile(path), "_fastwire")
    assert fast.strings.strings == slow.strings.strings
    for column in ("line", "meta", "name", "start_ns", "dur_ns", "stat_start"):
        np.testing.assert_array_equal(getattr(fast, column), getattr(slow, column))


def _synthetic() -> XSpace:
    builder = XSpaceBuilder(hostname="host-a")
    host = builder.plane("/host:CPU")
    main = host.line(11, "main", timestamp_ns=1_000)
    main.event("train", 1_000, 10_000, {"step_num": 3, "_r": 1})
    main.event(
        "op:MatMul",
        2_000,
        3_000,
        {"tf_op": Ref("dense/MatMul:MatMul"), "flops": 1.5e9},
        display_name="MatMul",
    )
    main.event("late", 9_000, 1)
    worker = host.line(12, "worker")
    worker.event("x", 5_000, 100)
    gpu = builder.plane("/device:GPU:0")
    gpu.stats["core_count"] = 132
    gpu.line(7, "Stream #7").event("kernel", 3_000, 500, {"correlation_id": 42})
    return builder.build()


def test_synthetic_profile_columns() -> None:
    profile = profile_from_xspace(_synthetic())
    assert profile.hostname == "host-a"
    assert [p.name for p in profile.planes] == ["/host:CPU", "/device:GPU:0"]
    assert profile.planes[1].stats == {"core_count": 132}
    assert profile.planes[1].device_ordinal == 0
    assert [line.name for line in profile.lines] == ["main", "worker", "Stream #7"]
    assert profile.strings.lookup(profile.name) == ["train", "op:MatMul", "late", "x", "kernel"]
    np.testing.assert_array_equal(profile.start_ns, [1_000, 2_000, 9_000, 5_000, 3_000])
    np.testing.assert_array_equal(profile.dur_ns, [10_000, 3_000, 1, 100, 500])
    np.testing.assert_array_equal(profile.plane, [0, 0, 0, 0, 1])
    step = profile.stat("step_num")
    assert step.present.tolist() == [True, False, False, False, False]
    assert step.as_int()[0] == 3
    tf_op = profile.stat("tf_op")
    assert profile.strings[int(tf_op.string_ids()[1])] == "dense/MatMul:MatMul"  # REF resolved
    assert profile.stat("flops").as_float()[1] == pytest.approx(1.5e9)
    assert profile.strings.lookup(profile.display_name_ids())[1] == "MatMul"
    assert profile.event_stats(4) == {"correlation_id": 42}
    assert profile.stat("no_such_stat").present.sum() == 0


def test_unsorted_lines_are_sorted_with_their_stats() -> None:
    builder = XSpaceBuilder()
    line = builder.plane("/host:CPU").line(1, "t")
    line.event("b", 500, 10, {"k": 2})
    line.event("a", 100, 10, {"k": 1, "extra": "e"})
    profile = profile_from_xspace(builder.build())
    assert profile.strings.lookup(profile.name) == ["a", "b"]
    assert profile.event_stats(0) == {"k": 1, "extra": "e"}
    assert profile.event_stats(1) == {"k": 2}


def test_stat_lookups_follow_a_resort_of_the_stats() -> None:
    from stepscope.model.from_xspace import sort_lines_by_start

    builder = XSpaceBuilder()
    line = builder.plane("/host:CPU").line(1, "t")
    line.event("a", 100, 10, {"k": 1, "extra": "e"})
    line.event("b", 500, 10, {"k": 2})
    profile = profile_from_xspace(builder.build())
    assert profile.stat("k").as_int().tolist() == [1, 2]  # memoizes the rows of "k"
    profile.start_ns[:] = [900, 100]  # now out of order: the sort moves the stat rows
    sort_lines_by_start(profile)
    assert profile.strings.lookup(profile.name) == ["b", "a"]
    assert profile.stat("k").as_int().tolist() == [2, 1]
    assert profile.stat("extra").present.tolist() == [False, True]


def test_metadata_stats_apply_to_all_events() -> None:
    builder = XSpaceBuilder()
    plane = builder.plane("/device:GPU:0")
    plane.event_metadata_id("kern", stats={"kernel_details": "regs:32"})
    line = plane.line(1, "Stream #1")
    line.event("kern", 0, 5)
    line.event("kern", 10, 5, {"kernel_details": "regs:64"})
    profile = profile_from_xspace(builder.build())
    details = profile.stat("kernel_details").string_ids()
    assert profile.strings.lookup(details) == ["regs:32", "regs:64"]


def test_stat_at_reads_what_stat_reads_for_the_events_asked() -> None:
    """`stat_at` (a few events) agrees with `stat` (every event): metadata stats, event stats
    overriding them, events without the stat, absent keys, any order of events."""
    from stepscope.model.from_xspace import profile_from_columns
    from stepscope.xspace.kineto import kineto_to_columns

    path = FIXTURES / "kineto" / "a100_triton_tiny.json.gz"
    kineto = profile_from_columns(kineto_to_columns(path), str(path), None)
    builder = XSpaceBuilder()
    plane = builder.plane("/device:GPU:0")
    plane.event_metadata_id("kern", stats={"kernel_details": "regs:32", "m": 7})
    line = plane.line(1, "Stream #1")
    line.event("kern", 0, 5)
    line.event("kern", 10, 5, {"kernel_details": "regs:64", "x": 1.5})
    line.event("other", 20, 5, {"x": 3})
    built = profile_from_xspace(builder.build())
    rng = np.random.default_rng(0)
    for profile in (built, kineto):
        keys = {profile.strings[int(k)] for k in np.unique(profile.stats.key)}
        keys |= {profile.strings[int(k)] for k in np.unique(profile.meta_stats.key)}
        for key in [*sorted(keys), "absent"]:
            whole = profile.stat(key)
            for events in (
                np.arange(profile.n_events),
                rng.permutation(profile.n_events)[: profile.n_events // 2 + 1],
                np.zeros(0, np.int64),
            ):
                part = profile.stat_at(key, events)
                for name in ("present", "kind", "value"):
                    expected = getattr(whole, name)[events].tolist()
                    assert getattr(part, name).tolist() == expected, (key, name)


def test_tf_fixture_steps_visible() -> None:
    path = next((FIXTURES / "tf" / "ctl").rglob("*.xplane.pb"))
    profile = load_profile(path)
    marked = profile.stat("step_num").present & profile.stat("_r").present
    assert profile.strings.lookup(profile.name[marked]) == ["train"] * 6
    env = profile.plane_by_name("Task Environment")
    assert env is not None and isinstance(env.stats["profile_start_time"], int)
