"""Rare Kineto forms on the one import route, each checked against the per-event oracle
(tests/support/kineto_oracle), with the C scanner and without it.

Each trace is otherwise ordinary. Fields of unexpected types and two stats of one name are
read as the oracle reads them (decisions 210, 211); what the route skips with a counted
warning where the oracle kept the event or refused the trace (decision 184), and the few
forms read otherwise on purpose (210), are asserted as differences from the oracle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stepscope.model import profile_from_xspace
from stepscope.model.from_xspace import profile_from_columns
from stepscope.xspace.kineto import kineto_to_columns, kineto_to_xspace
from tests.support.kineto import describe, per_event_xspace
from tests.support.native import c_and_python, c_off, c_on

_GOOD = {"Bytes": 8, "Device Type": 1, "Device Id": 0, "Total Allocated": 8, "Total Reserved": 16}


def _memory(ts: Any = 1005, pid: Any = 1, tid: Any = 2, **args: Any) -> dict[str, Any]:
    return {
        "ph": "i",
        "s": "t",
        "name": "[memory]",
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "args": {**_GOOD, **args},
    }


def _ordinary() -> list[Any]:
    return [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 1000, "dur": 10},
        _memory(),
    ]


def _trace(tmp_path: Path, odd: dict[str, Any], **header: Any) -> Path:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": [*_ordinary(), odd], **header}))
    return path


_KEPT, _REFUSED = "kept", "refused"  # what the per-event oracle did with the odd event


def _oracle(path: Path) -> Any:
    """The oracle's profile of ``path``, or ``_REFUSED`` when it refused the whole trace."""
    from stepscope.errors import ProfileFormatError

    try:
        return describe(profile_from_xspace(per_event_xspace(path), source=str(path)))
    except ProfileFormatError:
        return _REFUSED


@pytest.mark.parametrize(
    ("odd", "header", "what", "oracle"),
    [
        (_memory(tid="worker"), {}, "[memory] events on a thread named by a string", _KEPT),
        (_memory(pid="host"), {}, "[memory] events on a thread named by a string", _KEPT),
        (
            _memory(ts=3000),
            {"baseTimeNanoseconds": (1 << 62) - 2_000_000},
            "[memory] events with times beyond",
            _REFUSED,  # "line 'Memory' has events ... beyond"
        ),
        (_memory(Bytes=1e19), {}, "[memory] events with a value past int64", _KEPT),
        (
            _memory(**{"Total Allocated": -1e300}),
            {},
            "[memory] events with a value past int64",
            _REFUSED,  # "ValueError: Value out of range"
        ),
        (
            _memory(**{"Device Type": [1]}),
            {},
            "[memory] events with a value past int64",
            _REFUSED,  # "TypeError: unhashable type"
        ),
    ],
    ids=["str tid", "str pid", "time", "float bytes", "float total", "list device type"],
)
def test_odd_memory_events_are_skipped_and_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, odd: Any, header: Any, what: str, oracle: str
) -> None:
    """Decision 184: the columns skip and count the event; the oracle (the per-event reading)
    kept it, or refused the whole trace."""
    path = _trace(tmp_path, odd, **header)

    def profile() -> Any:
        return describe(profile_from_columns(kineto_to_columns(path), str(path), None))

    fast, slow = c_and_python(monkeypatch, profile, "_kscan")
    assert fast == slow
    assert any(w.startswith(f"skipped 1 {what}") for w in fast["warnings"]), fast["warnings"]
    memory = [line for line in fast["lines"] if line.name == "Memory"]
    assert len(memory) == 1
    allocations = [e for e in fast["events"] if e[1] == "MemoryAllocation"]
    assert len(allocations) == 1  # the good one, in the op it happens in
    space = kineto_to_xspace(path)
    assert any(w.startswith(f"skipped 1 {what}") for w in space.warnings)
    read = _oracle(path)
    if oracle == _REFUSED:
        assert read == _REFUSED
    else:
        assert sum(e[1] == "MemoryAllocation" for e in read["events"]) == 2
        assert not any(what in w for w in read["warnings"])


@pytest.mark.parametrize(("tid", "oracle"), [("4294967296", _KEPT), ("9" * 23, "malformed")])
def test_host_events_on_a_thread_id_past_int32_are_skipped_and_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tid: str, oracle: str
) -> None:
    """Decision 184: the columns skip and count the event; the oracle kept it on a line of
    its own, or (past 64 bits) counted it as malformed."""
    odd = {"ph": "X", "cat": "cpu_op", "name": "far", "pid": 1, "tid": tid, "ts": 1000, "dur": 1}
    path = _trace(tmp_path, odd)

    def profile() -> Any:
        return describe(profile_from_columns(kineto_to_columns(path), str(path), None))

    fast, slow = c_and_python(monkeypatch, profile, "_kscan")
    assert fast == slow
    assert "skipped 1 host events with a thread id beyond int32" in fast["warnings"]
    assert "far" not in [e[1] for e in fast["events"]]
    assert "aten::mm" in [e[1] for e in fast["events"]]
    read = _oracle(path)
    if oracle == _KEPT:
        assert "far" in [e[1] for e in read["events"]] and not read["warnings"]
    else:
        assert read["warnings"] == ["skipped 1 malformed events (fields of unexpected types)"]


# ---- events the C scanner leaves to the Python one: read on the columns (decision 210) -------
def _op(name: str, pid: Any = 1, tid: Any = 2, ts: Any = 1000, dur: Any = 1, **args: Any) -> Any:
    event = {"ph": "X", "cat": "cpu_op", "name": name, "pid": pid, "tid": tid, "ts": ts}
    return {**event, "dur": dur, **({"args": args} if args else {})}


def _without(event: dict[str, Any], field: str) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k != field}


# Each as the importer always read it (the oracle, tests/support): untimed, a thread of its own
# without a pid / tid, a number as text, unsupported phases before malformed fields, ...
_ODD_FIELDS: list[Any] = [
    _op("string ts", ts="1001"),  # a numeric string is its number
    _op("text ts", ts="soon"),  # without a valid timestamp
    _op("bool ts", ts=True),
    _op("string dur", dur="5"),
    _op("huge int dur", dur=1 << 70),  # beyond the limits
    _op("huge float dur", dur=1e300),  # no duration
    _op("null pid", pid=None),
    _without(_op("no tid"), "tid"),
    _without(_op("no pid", tid=3), "pid"),
    {"ph": "M", "name": "thread_name", "tid": 3, "args": {"name": "pidless"}},
    {**_memory(pid=None, ts=1000.5), "tid": 3},  # in "no pid"
    {**_op("range", pid=None), "ph": "B"},
    {**_op("", pid=None, ts=1003), "ph": "E"},
    _op("big pid", pid=1 << 40),
    _op("big tid", tid=1 << 40),  # its own line (stepscope's Chrome export writes such tids)
    {**_op("int cat"), "cat": 5},
    {**_op("list name"), "name": [1, 2]},
    {"ph": "i", "s": 5, "name": "int scope", "pid": 1, "tid": 2, "ts": 1000},
    {"ph": "s", "cat": "fwdbwd", "id": "5", "pid": 1, "tid": 2, "ts": 1000},  # no flow id
    {**_op("list args"), "args": [1, 2]},
    _op("uint64 arg", u=1 << 63),
    _op("arg past 64 bits", u=1 << 70),  # malformed
    {**_op("two-char phase"), "ph": "XX"},
    {**_op("int phase"), "ph": 5},
    {**_op("null phase"), "ph": None},
    {**_op("phase before fields", pid=1.5), "ph": "XX"},
    [1, 2],
    "text",
    {**_op("list tid", tid=[1])},  # malformed
]


def _odd_trace(tmp_path: Path, odd: list[Any]) -> Path:
    """A trace of ordinary events and ``odd`` ("RAW": an event with a number msgspec cannot
    hold, in a field no route reads)."""
    path = tmp_path / "odd.json"
    text = json.dumps({"traceEvents": [*_ordinary(), *odd]})
    path.write_text(text.replace('"RAW"', '{"ph": "X", "name": "past float64", "v": 1e400}'))
    return path


def _columns_route(monkeypatch: pytest.MonkeyPatch, path: Path) -> Any:
    """The column route's profile of ``path`` with C and without, checked equal; fails when a
    step of the import reads the trace event by event."""
    from stepscope.xspace.kineto import fast_route, importer

    routed: list[int] = []
    route = fast_route.route

    def profile() -> Any:
        return describe(profile_from_columns(kineto_to_columns(path), str(path), None))

    def spy(*args: Any) -> None:
        routed.append(1)
        route(*args)

    with monkeypatch.context() as patch:
        # (the per-event decoder the importer had until issue #29 moved it to the oracle)
        patch.setattr(importer, "decode_trace", _per_event, raising=False)
        patch.setattr(fast_route, "route", spy)
        fast, slow = c_and_python(patch, profile, "_kscan")
    assert fast == slow
    assert len(routed) == 2
    return fast


def _per_event(*_args: Any) -> Any:
    raise AssertionError("the trace was read event by event")


def test_fields_of_unexpected_types_are_read_on_the_columns_as_the_oracle_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _odd_trace(tmp_path, [*_ODD_FIELDS, "RAW"])
    oracle = describe(profile_from_xspace(per_event_xspace(path), source=str(path)))
    columns = _columns_route(monkeypatch, path)
    assert columns == oracle
    assert sorted(columns["warnings"]) == [
        "1 fwdbwd flow ends matched no op (left out)",
        "skipped 1 events of unsupported phase '5'",
        "skipped 1 events of unsupported phase 'None'",
        "skipped 1 events with times beyond +-2**62 ns (146 years) of the clock's zero",
        "skipped 2 entries that are not objects",
        "skipped 2 events of unsupported phase 'XX'",
        "skipped 2 malformed events (fields of unexpected types)",
        "skipped 3 events without a valid timestamp",
    ]


def _kernel(name: str, **args: Any) -> dict[str, Any]:
    event = {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 1005, "dur": 2}
    return {**event, "args": {"device": 0, "stream": 7, "correlation": 4, **args}}


def test_two_stats_of_one_name_in_an_event_merge_on_the_columns_as_a_dict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Args named like a stat the importer adds, two args renamed onto one stat: the first
    place, the last value (decision 211), as the oracle's dict assignments give."""
    events = [
        _op("ProfilerStep#3", step_num=9, other=1),  # the step number replaces the arg
        _op("annotated"),
        {**_op("annotated", ts=1002, category="mine", z=1), "cat": "user_annotation"},
        _op("kept", category="cpu_op"),  # (the same category: the arg stays)
        _op("both", correlation=1, q=None, correlation_id=2),
        _op("ids", **{"External id": 1, "external id": 2}),
        _kernel("k", kernel_details="mine", grid=[1, 1, 1], block=[2, 1, 1]),
        _kernel("no details", kernel_details="mine"),
        {**_kernel("Memcpy HtoD", memcpy_details="x", bytes=4, device_id=0), "cat": "gpu_memcpy"},
        {**_kernel("Memset", memset_details="x", bytes=4), "cat": "gpu_memset"},
    ]
    path = _odd_trace(tmp_path, events)
    oracle = describe(profile_from_xspace(per_event_xspace(path), source=str(path)))
    columns = _columns_route(monkeypatch, path)
    assert columns == oracle
    stats = {e[1]: e[5] for e in columns["events"]}
    # and the step root XProf reads (decision 617), after the args
    assert stats["ProfilerStep#3"] == [("step_num", 1, 3), ("other", 1, 1), ("_r", 1, 1)]
    assert stats["both"] == [("correlation_id", 1, 2)]
    assert stats["annotated"] == [("category", 4, "user_annotation"), ("z", 1, 1)]


def test_a_document_without_trace_events_is_refused_by_the_column_route(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stepscope.errors import ProfileFormatError
    from stepscope.xspace.kineto import importer

    # (the per-event decoder the importer had until issue #29 moved it to the oracle)
    monkeypatch.setattr(importer, "decode_trace", _per_event, raising=False)
    path = tmp_path / "other.json"
    for text in ('{"traceName": "x"}', '{"traceEvents": 5}', "[1, 2]", '"text"'):
        path.write_text(text)
        for switch in (c_on, c_off):
            switch(monkeypatch)
            with pytest.raises(ProfileFormatError, match="no traceEvents list") as error:
                kineto_to_columns(path)
            assert str(path) in str(error.value)


def test_what_the_oracle_reads_otherwise_is_decided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the column route reads a form otherwise than the importer always did (the
    oracle), on purpose (decision 210): each difference, and nothing else, is in the profiles."""
    cases: list[tuple[Any, str, str | None]] = [
        # (event, what the columns warn, the event the oracle keeps (None: the oracle skips it))
        (_op("float pid", pid=1.5), "malformed events (fields of unexpected types)", "float pid"),
        (
            {**_memory(), "args": {**_GOOD, "junk": 1 << 63}},
            "[memory] events with a value past int64 or a list as Device Type",
            None,  # the oracle: "[memory] events with values beyond 64 bits"
        ),
    ]
    for at, (event, warning, kept) in enumerate(cases):
        (tmp_path / str(at)).mkdir()
        path = _odd_trace(tmp_path / str(at), [event])
        oracle = describe(profile_from_xspace(per_event_xspace(path), source=str(path)))
        columns = _columns_route(monkeypatch, path)
        assert f"skipped 1 {warning}" in columns["warnings"]
        if kept is not None:
            assert [e[1] for e in oracle["events"]].count(kept) == 1
            assert kept not in [e[1] for e in columns["events"]]
            assert oracle["warnings"] == [w for w in columns["warnings"] if warning not in w]
        else:
            assert [e[1:] for e in oracle["events"]] == [e[1:] for e in columns["events"]]
            assert oracle["warnings"] == ["skipped 1 [memory] events with values beyond 64 bits"]
    # B/E args that are not an object: read as none (as for any event); the oracle skipped
    # the pair as malformed.
    pair = [{**_op("range"), "ph": "B", "args": [1]}, {**_op("", ts=1002), "ph": "E"}]
    path = _odd_trace(tmp_path, pair)
    oracle = describe(profile_from_xspace(per_event_xspace(path), source=str(path)))
    columns = _columns_route(monkeypatch, path)
    assert oracle["warnings"] == ["skipped 1 malformed events (fields of unexpected types)"]
    assert columns["warnings"] == []
    assert [e[1:] for e in columns["events"] if e[1] == "range"] == [
        ("range", "", 1_000_000, 2_000, [])
    ]


def test_a_list_argument_with_escapes_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list or object argument holding an escaped character (a quote, a \\u escape): its
    JSON text was decoded as if it were a string's, and the whole trace failed to import."""
    events = [
        _op("quoted", **{"Concrete Inputs": ['say "hi"', "caf\u00e9"]}),
        _op("nested", meta={"path": "C:\\temp"}),
    ]
    path = tmp_path / "escaped.json"
    path.write_text(json.dumps({"traceEvents": [*_ordinary(), *events]}))  # (ASCII: escapes)
    oracle = describe(profile_from_xspace(per_event_xspace(path), source=str(path)))
    columns = _columns_route(monkeypatch, path)
    assert columns == oracle
    stats = {e[1]: e[5] for e in columns["events"]}
    assert stats["quoted"] == [("Concrete Inputs", 4, '["say \\"hi\\"", "caf\\u00e9"]')]
