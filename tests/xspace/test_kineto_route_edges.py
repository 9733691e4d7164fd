"""The Kineto route's classification at its edges (xspace/kineto/fast_route.py), with the C
scanner and without it.

Each trace is small and built here; each case is what a user sees: an event on its line, or
skipped with a counted warning. Issue #34's mutation run of fast_route.py showed which edges
no fixture and no other test reached: the old-style capital "I" instant, a numeric thread id
at the int32 limit, a stream id past the limit written in a thread name or on an annotation
or sync event or as a thread number, an event of 0 ns right under the time limit or 1 us
before a negative base time, a flow end without a category, a category as string 0, a
thread named by text beside the thread of that text's id. The sixth pass (the whole module)
added: a launch flow whose category is string 2, events of one start on two lines, many
kernels without ids on two streams, a profiler span of no time, a process named by text, a
null tid beside a numeric text tid, a [memory] event at the high limit, two memcpys of one
kind with their own display names. The launch flows' cases are in test_kineto_route_flows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stepscope.limits import TIME_LIMIT_NS
from stepscope.model.from_xspace import profile_from_columns
from stepscope.xspace.kineto import kineto_to_columns
from stepscope.xspace.kineto.devices import STREAM_ID_LIMIT
from tests.support.kineto_route import kineto_op, read_both
from tests.support.native import c_and_python

_STREAM_BEYOND = f"skipped 1 device events with a stream id beyond +-{STREAM_ID_LIMIT}"


def _names(read: dict[str, Any]) -> list[str]:
    return [e[1] for e in read["events"]]


def test_a_capital_i_instant_is_an_instant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    instant = {"ph": "I", "s": "t", "name": "mark", "pid": 1, "tid": 2, "ts": 1002}
    read = read_both(tmp_path, monkeypatch, [kineto_op("aten::mm"), instant])
    assert sorted(_names(read)) == ["aten::mm", "mark"]
    assert not read["warnings"]


def test_a_numeric_thread_id_up_to_the_int32_limit_is_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = read_both(
        tmp_path,
        monkeypatch,
        [
            kineto_op("aten::mm"),
            kineto_op("last", tid=str((1 << 31) - 1)),
            kineto_op("past", tid=str(1 << 31)),
        ],
    )
    assert sorted(_names(read)) == ["aten::mm", "last"]
    assert read["warnings"] == ["skipped 1 host events with a thread id beyond int32"]


def test_a_stream_past_the_limit_in_the_thread_name_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def kernel(name: str, tid: str) -> dict[str, Any]:
        return kineto_op(name, cat="kernel", pid=0, tid=tid, ts=1003, dur=1, args={"device": 0})

    far = f"stream {STREAM_ID_LIMIT}"
    read = read_both(
        tmp_path, monkeypatch, [kineto_op("aten::mm"), kernel("k", "stream 7"), kernel("far", far)]
    )
    assert sorted(_names(read)) == ["aten::mm", "k"]
    assert read["warnings"] == [_STREAM_BEYOND]


@pytest.mark.parametrize("cat", ["gpu_user_annotation", "cuda_sync"])
def test_a_stream_past_the_limit_on_an_annotation_or_sync_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cat: str
) -> None:
    def on_stream(name: str, stream: int) -> dict[str, Any]:
        args = {"device": 0, "stream": stream}
        return kineto_op(name, cat=cat, pid=0, tid=stream, ts=1003, dur=1, args=args)

    events = [kineto_op("aten::mm"), on_stream("near", 7), on_stream("far", STREAM_ID_LIMIT)]
    read = read_both(tmp_path, monkeypatch, events)
    assert sorted(_names(read)) == ["aten::mm", "near"]
    assert read["warnings"] == [_STREAM_BEYOND]


def test_an_event_of_0_ns_just_under_the_time_limit_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit is on start + duration; an event of 0 ns (or a negative duration, read as
    0) ends where it starts."""
    base = TIME_LIMIT_NS - 5001  # the trace's own times end before 5001 ns
    events = [
        kineto_op("at 5 us", ts=5, dur=0),
        kineto_op("negative", ts=5, dur=-3),
        kineto_op("1 ns past", ts=5, dur=0.001),
    ]
    read = read_both(tmp_path, monkeypatch, events, baseTimeNanoseconds=base)
    assert sorted(_names(read)) == ["at 5 us", "negative"]
    assert len(read["warnings"]) == 1
    assert read["warnings"][0].startswith("skipped 1 events with times beyond")


def test_the_order_of_an_events_fields_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With "cat" first, a category is the trace's first string (id 0)."""
    events = [kineto_op("aten::mm"), kineto_op("step", cat="user_annotation", ts=1001, dur=2)]
    cat_first = [{"cat": e["cat"], **e} for e in events]
    read = read_both(tmp_path, monkeypatch, events)
    assert read_both(tmp_path, monkeypatch, cat_first) == read


def test_a_thread_named_by_text_is_not_the_thread_of_that_texts_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A string tid is kept by its text's id and a flag: the number equal to that id is
    another thread."""
    from stepscope.xspace.kineto import pyscan

    named = kineto_op("on worker", tid="worker")
    probe = pyscan.scan_bytes(json.dumps({"traceEvents": [named]}).encode(), "probe", [])
    assert probe is not None
    number = probe.texts.index("worker")
    read = read_both(tmp_path, monkeypatch, [named, kineto_op("on a number", tid=number)])
    lines = {e[1]: e[0] for e in read["events"]}
    assert lines["on worker"] != lines["on a number"]


def test_a_negative_base_time_past_the_limit_drops_the_early_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = -TIME_LIMIT_NS + 500  # an event 1 us before the trace's zero is past the limit
    events = [kineto_op("at 0", ts=0, dur=0), kineto_op("1 us early", ts=-1, dur=0)]
    read = read_both(tmp_path, monkeypatch, events, baseTimeNanoseconds=base)
    assert _names(read) == ["at 0"]
    assert len(read["warnings"]) == 1
    assert read["warnings"][0].startswith("skipped 1 events with times beyond")


def test_a_kernel_on_a_numbered_thread_past_the_stream_limit_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a stream arg, the thread id is the stream."""
    kernel = {"cat": "kernel", "pid": 0, "ts": 1003, "dur": 1, "args": {"device": 0}}
    events = [
        kineto_op("aten::mm"),
        kineto_op("k", **kernel, tid=7),
        kineto_op("far", **kernel, tid=STREAM_ID_LIMIT),
    ]
    read = read_both(tmp_path, monkeypatch, events)
    assert sorted(_names(read)) == ["aten::mm", "k"]
    assert read["warnings"] == [_STREAM_BEYOND]


def test_a_host_thread_id_past_the_stream_limit_is_counted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host event skipped for its thread id is not a device event as well."""
    read = read_both(
        tmp_path,
        monkeypatch,
        [kineto_op("aten::mm"), kineto_op("far", tid=str(STREAM_ID_LIMIT * 99))],
    )
    assert _names(read) == ["aten::mm"]
    assert read["warnings"] == ["skipped 1 host events with a thread id beyond int32"]


def test_a_thread_without_a_pid_is_not_the_thread_of_the_last_string(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A null pid is a thread of its own, named as such, even beside a pid written as the
    trace's last string (here "unknown": the texts the route adds when a trace lacks them
    come first)."""
    texts = {"empty": "", "instant": "cpu_instant_event"}
    events = [
        kineto_op("aten::mm", args=texts),
        kineto_op("no pid", pid=None, ts=1001, dur=1),
        kineto_op("on unknown", pid="unknown", ts=1002, dur=1),
    ]
    read = read_both(tmp_path, monkeypatch, events)
    lines = {e[1]: e[0] for e in read["events"]}
    assert lines["no pid"] != lines["on unknown"]
    named = {line.index: line.name for line in read["lines"]}
    assert named[lines["no pid"]] == named[lines["on unknown"]] == "thread 2"


def test_an_event_exactly_at_the_low_time_limit_is_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = -TIME_LIMIT_NS + 1000  # 1 us before the trace's zero is exactly -2**62 ns
    events = [kineto_op("at 0", ts=0, dur=0), kineto_op("at the limit", ts=-1, dur=0)]
    read = read_both(tmp_path, monkeypatch, events, baseTimeNanoseconds=base)
    assert _names(read) == ["at 0"]
    assert read["warnings"][0].startswith("skipped 1 events with times beyond")


def test_an_instant_just_under_the_time_limit_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An instant lasts 0 ns, whatever its fields say."""
    instant = {"ph": "i", "s": "t", "name": "mark", "pid": 1, "tid": 2, "ts": 5}
    read = read_both(tmp_path, monkeypatch, [instant], baseTimeNanoseconds=TIME_LIMIT_NS - 5001)
    assert _names(read) == ["mark"]
    assert not read["warnings"]


def test_a_stream_at_minus_the_limit_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def kernel(name: str, stream: int) -> dict[str, Any]:
        args = {"device": 0, "stream": stream}
        return kineto_op(name, cat="kernel", pid=0, tid=7, ts=1003, dur=1, args=args)

    events = [
        kineto_op("aten::mm"),
        kernel("near", 1 - STREAM_ID_LIMIT),
        kernel("far", -STREAM_ID_LIMIT),
    ]
    read = read_both(tmp_path, monkeypatch, events)
    assert sorted(_names(read)) == ["aten::mm", "near"]
    assert read["warnings"] == [_STREAM_BEYOND]


# --- issue #34, sixth pass (mutG): the whole of fast_route.py's mutants


def test_events_of_one_start_keep_their_file_order_on_their_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many events on two threads, all at one time and of one duration (a line orders its
    events by start, the longer first): each line lists its own in file order (the route
    groups events by line with a stable sort)."""
    events = [kineto_op(f"op{k}", tid=2 + k % 2, ts=1000, dur=1) for k in range(96)]
    read = read_both(tmp_path, monkeypatch, events)
    by_line: dict[int, list[str]] = {}
    for line, name, *_ in read["events"]:
        by_line.setdefault(line, []).append(name)
    assert sorted(by_line.values()) == [
        [f"op{k}" for k in range(0, 96, 2)],
        [f"op{k}" for k in range(1, 96, 2)],
    ]


@pytest.mark.parametrize("dur", [0, -5])
def test_a_profiler_span_of_no_time_ends_where_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dur: int
) -> None:
    """A "Trace" span (the profiler's own, kept for the profile's time span only) of 0 ns, or
    of a negative duration, after every event: the profile stops at its start."""
    span = {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler", "pid": 1, "tid": 0}
    path = tmp_path / "trace.json"
    events = [kineto_op("aten::mm"), span | {"ts": 2000, "dur": dur}]
    path.write_text(json.dumps({"traceEvents": events}))

    def stop_ns() -> Any:
        profile = profile_from_columns(kineto_to_columns(path), str(path), None)
        (env,) = [p for p in profile.planes if p.name == "Task Environment"]
        return env.stats["profile_start_time"], env.stats["profile_stop_time"]

    fast, slow = c_and_python(monkeypatch, stop_ns, "_kscan")
    assert fast == slow == (1_000_000, 2_000_000)


def test_a_process_named_by_text_is_not_the_process_of_that_texts_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As for threads: a string pid is kept by its text's id and a flag, so the pid equal to
    that id is another process, and its thread another line."""
    from stepscope.xspace.kineto import pyscan

    named = kineto_op("on worker", pid="worker")
    probe = pyscan.scan_bytes(json.dumps({"traceEvents": [named]}).encode(), "probe", [])
    assert probe is not None
    number = probe.texts.index("worker")
    read = read_both(tmp_path, monkeypatch, [named, kineto_op("on a number", pid=number)])
    lines = {e[1]: e[0] for e in read["events"]}
    assert lines["on worker"] != lines["on a number"]


def test_a_thread_without_a_tid_is_not_the_thread_of_the_last_string(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A null tid is a thread of its own, even when the trace's last string is a thread id
    written as text ("12")."""
    texts = {"empty": "", "unknown": "unknown", "instant": "cpu_instant_event"}
    events = [
        kineto_op("aten::mm", args=texts),
        kineto_op("no tid", tid=None, ts=1001, dur=1),
        kineto_op("on 12", tid="12", ts=1002, dur=1),
    ]
    read = read_both(tmp_path, monkeypatch, events)
    lines = {e[1]: e[0] for e in read["events"]}
    assert len({lines["aten::mm"], lines["no tid"], lines["on 12"]}) == 3
    assert not read["warnings"]


def test_a_memory_event_exactly_at_the_high_time_limit_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit is exclusive: a [memory] event at 2**62 ns is skipped and counted, the one
    1 us before it is read."""
    args = {"Bytes": 8, "Device Type": 1, "Device Id": 0, "Total Allocated": 8}
    memory = {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 2, "args": args}
    events = [
        kineto_op("aten::mm", ts=1000, dur=999.5),
        memory | {"ts": 1999},
        memory | {"ts": 2000},  # the trace's own 2000 us is the base's 2**62 ns
    ]
    read = read_both(tmp_path, monkeypatch, events, baseTimeNanoseconds=TIME_LIMIT_NS - 2_000_000)
    assert [e[1] for e in read["events"]].count("MemoryAllocation") == 1
    assert len(read["warnings"]) == 1
    assert read["warnings"][0].startswith("skipped 1 [memory] events with times beyond")


def test_two_copies_of_one_kind_keep_their_own_display_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memcpys are named by their kind (MEMCPYHToD) and shown by the name Kineto gave them:
    two of one kind and device, named differently, are two event metadata."""

    def memcpy(name: str, ts: int) -> dict[str, Any]:
        args = {"device": 0, "stream": 7, "bytes": 8}
        return kineto_op(name, cat="gpu_memcpy", pid=0, tid=7, ts=ts, dur=1, args=args)

    pageable, pinned = "Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD (Pinned -> Device)"
    read = read_both(
        tmp_path, monkeypatch, [kineto_op("aten::mm"), memcpy(pageable, 1003), memcpy(pinned, 1005)]
    )
    copies = [(e[1], e[2]) for e in read["events"] if e[1] != "aten::mm"]
    assert copies == [("MEMCPYHToD", pageable), ("MEMCPYHToD", pinned)]


def test_a_trace_of_metadata_only_has_no_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing to route (a thread name and a flow): an empty profile, not an error."""
    name = {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}}
    flow = {"ph": "s", "cat": "ac2g", "id": 41, "pid": 1, "tid": 2, "ts": 1000}
    read = read_both(tmp_path, monkeypatch, [name, flow])
    assert read["events"] == [] and read["lines"] == []


def test_kernels_of_one_stream_number_on_two_gpus_are_two_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line is a device's stream: stream 7 of GPU 0 and stream 7 of GPU 1 are apart."""

    def kernel(name: str, device: int) -> dict[str, Any]:
        args = {"device": device, "stream": 7}
        return kineto_op(name, cat="kernel", pid=device, tid=7, ts=1003, dur=1, args=args)

    read = read_both(
        tmp_path, monkeypatch, [kineto_op("aten::mm"), kernel("on 0", 0), kernel("on 1", 1)]
    )
    lines = {e[1]: e[0] for e in read["events"]}
    assert lines["on 0"] != lines["on 1"]
    planes = {line.index: line.plane for line in read["lines"]}
    assert planes[lines["on 0"]] != planes[lines["on 1"]]


def test_only_thread_name_metadata_with_a_text_names_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process_name event on the thread (here the trace's string 2, the trace having no
    "thread_name"), an op called "thread_name", a thread_name whose name is a number: none
    names the thread."""
    process = {"ph": "M", "pid": 1, "cat": "__metadata", "name": "process_name", "tid": 2}
    read = read_both(
        tmp_path, monkeypatch, [process | {"args": {"name": "python"}}, kineto_op("aten::mm")]
    )
    assert [line.name for line in read["lines"]] == ["thread 2"]
    op = kineto_op("thread_name", ts=1001, dur=1, args={"name": "an op"})
    read = read_both(tmp_path, monkeypatch, [kineto_op("aten::mm"), op])
    assert [line.name for line in read["lines"]] == ["thread 2"]
    number = {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": 0}}
    read = read_both(tmp_path, monkeypatch, [kineto_op("aten::mm"), number])
    assert [line.name for line in read["lines"]] == ["thread 2"]


def test_a_memory_event_beside_an_op_of_its_name_keeps_its_category(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An op called MemoryAllocation (cpu_op) makes the event metadata the allocation shares:
    the allocation says its own category on the event."""
    args = {"Bytes": 8, "Device Type": 1, "Device Id": 0, "Total Allocated": 8}
    memory = {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 2, "ts": 1005}
    read = read_both(
        tmp_path, monkeypatch, [kineto_op("MemoryAllocation"), memory | {"args": args}]
    )
    (allocation,) = [e[5] for e in read["events"] if e[4] == 0]
    assert ("category", 4, "cpu_instant_event") in allocation


def test_a_category_as_string_0_decides_the_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With "cat" first in the first event, the category is the trace's string 0: a kernel
    so written goes to its GPU, and so does an event of a category the table does not know
    whose args name a stream and a device."""
    gpu_args = {"device": 0, "stream": 7}
    for first in ("kernel", "my_gpu_work"):
        gpu_event = kineto_op("on the gpu", cat=first, pid=0, tid=7, ts=1003, dur=1, args=gpu_args)
        event = {"cat": first, **gpu_event}  # "cat" the first key
        read = read_both(tmp_path, monkeypatch, [event, kineto_op("aten::mm")])
        planes = {line.index: line.plane for line in read["lines"]}
        lines = {e[1]: e[0] for e in read["events"]}
        assert planes[lines["on the gpu"]] != planes[lines["aten::mm"]], first


def test_an_unknown_category_with_a_stream_but_no_device_stays_on_its_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = kineto_op("on its thread", cat="my_cat", ts=1002, dur=1, args={"stream": 7})
    read = read_both(tmp_path, monkeypatch, [kineto_op("aten::mm"), event])
    assert len({e[0] for e in read["events"]}) == 1
    assert [line.name for line in read["lines"]] == ["thread 2"]


def test_an_instant_whose_category_is_string_0_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only an instant without a category is a cpu_instant_event."""
    mark = {"cat": "my_marks", "ph": "i", "s": "t", "name": "mark", "pid": 1, "tid": 2}
    read = read_both(tmp_path, monkeypatch, [mark | {"ts": 1002}, kineto_op("aten::mm")])
    categories = {name: stats for _plane, _id, name, stats in read["metadata"]}
    assert categories["mark"] == [("category", 4, "my_marks")]


def test_threads_named_by_text_are_threads_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two text tids of one process, two text pids and a null pid: five threads, and a
    thread name given to one text thread names that one only."""
    name = {"ph": "M", "name": "thread_name", "pid": 1, "tid": "a", "args": {"name": "loader"}}
    events = [
        kineto_op("on a", tid="a"),
        kineto_op("on b", tid="b", ts=1001, dur=1),
        kineto_op("on worker", pid="worker", ts=1002, dur=1),
        kineto_op("on server", pid="server", ts=1002, dur=1),
        kineto_op("no pid", pid=None, ts=1003, dur=1),
        name,
    ]
    read = read_both(tmp_path, monkeypatch, events)
    lines = {e[1]: e[0] for e in read["events"]}
    assert len(set(lines.values())) == 5
    named = {line.index: line.name for line in read["lines"]}
    assert named[lines["on a"]] == "loader" and named[lines["on b"]] != "loader"


def test_an_arg_named_like_an_added_stat_is_one_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A memcpy whose args say "memcpy_details" (the stat the import adds) has one such
    stat, as a dict's assignments would leave it (decision 211), even in a trace where no
    event has two args of other names."""
    args = {"device": 0, "memcpy_details": "from the trace"}
    memcpy = kineto_op("Memcpy HtoD", cat="gpu_memcpy", pid=0, tid=7, ts=1003, dur=1, args=args)
    read = read_both(tmp_path, monkeypatch, [kineto_op("aten::mm"), memcpy])
    (stats,) = [e[5] for e in read["events"] if e[1] == "MEMCPYHToD"]
    assert [key for key, *_ in stats].count("memcpy_details") == 1


def test_metadata_on_a_thread_past_the_stream_limit_is_no_device_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events that are not routed (a thread name) have no kind: none is counted as a device
    event with a stream past the limit."""
    far = {"ph": "M", "name": "thread_name", "pid": 1, "tid": STREAM_ID_LIMIT}
    read = read_both(
        tmp_path, monkeypatch, [kineto_op("aten::mm"), far | {"args": {"name": "far"}}]
    )
    assert not read["warnings"]


def test_an_event_of_exactly_the_longest_duration_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`limits.DURATION_LIMIT_NS` (9223372036854775 ns, 106 days) is the longest an event may
    last; longer is skipped and counted (here 2 ns longer: the nearest float64 microseconds
    of 1 ns longer is the limit itself)."""
    events = [
        kineto_op("aten::mm"),
        kineto_op("the longest", ts=1000, dur=9223372036854.775),
        kineto_op("2 ns longer", ts=1000, dur=9223372036854.777),
    ]
    read = read_both(tmp_path, monkeypatch, events)
    assert sorted(_names(read)) == ["aten::mm", "the longest"]
    assert read["warnings"] == ["skipped 1 events lasting more than 106 days"]


def test_a_memory_event_exactly_at_the_low_time_limit_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The low limit is exclusive too: a [memory] event at -2**62 ns is skipped and counted,
    the one 1 us after it is read."""
    args = {"Bytes": 8, "Device Type": 1, "Device Id": 0, "Total Allocated": 8}
    memory = {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 2, "args": args}
    events = [
        kineto_op("aten::mm", ts=-1999.5, dur=999),
        memory | {"ts": -1999},
        memory | {"ts": -2000},  # the trace's own -2000 us is the base's -2**62 ns
    ]
    read = read_both(tmp_path, monkeypatch, events, baseTimeNanoseconds=2_000_000 - TIME_LIMIT_NS)
    assert [e[1] for e in read["events"]].count("MemoryAllocation") == 1
    assert len(read["warnings"]) == 1
    assert read["warnings"][0].startswith("skipped 1 [memory] events with times beyond")
