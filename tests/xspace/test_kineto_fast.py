"""The Kineto importer's C scanner + numpy routing (`scan`, `fast_route`, `fast_stats`,
`fast_memory`): that it gives the profile of the per-event oracle (tests/support).

`test_kineto_columns` compares the column route with the per-event oracle on every fixture;
here the synthetic traces hold what the vectorized code must reproduce (stat order, renames,
appended stats, metadata order, memory events, flows), and traces the C scanner leaves to
the Python scanner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.xspace.kineto import fast_memory, fast_route, importer, scan
from stepscope.xspace.kineto.classified import Classified
from tests.support.fixtures import FIXTURES
from tests.support.kineto import assert_same_profile as _assert_same
from tests.support.kineto import describe as _describe
from tests.support.kineto import scanned, write_trace
from tests.support.kineto_oracle.memory import _innermost_ops
from tests.support.native import c_on, module


@pytest.fixture(autouse=True)
def _c_scanner(monkeypatch: pytest.MonkeyPatch) -> None:
    c_on(monkeypatch, "_kscan")  # the columns path is the C scanner's (in both CI tiers)


def _classified(path: Path) -> Classified | None:
    """The classified C columns, None where the C scanner leaves events (or the trace) to
    the Python scanner."""
    data = importer._read(path, [])
    found = scanned(data)
    if found is None or np.any(found.flags & scan.F_BAD):
        return None
    return fast_route.classify(found)


@pytest.mark.parametrize(
    "name",
    [
        "a100_nccl_rank0",
        "b200_vllm_fp8_rank0",
        "h100_bert_small_inference",
        "mi300x_resnet_training_rank0",
        "v100_training_with_memory",
        "v100_resnet50_training_2021schema",
    ],
)
def test_real_traces_take_the_fast_path(name: str) -> None:
    assert _classified(FIXTURES / "kineto" / f"{name}.json.gz") is not None


def _schema_2021(tmp_path: Path, both_ids_in_one_event: bool = False) -> Path:
    """String thread ids ("25738", "stream 7"), flows between them, both spellings of the
    external id (one per event, unless told)."""
    op = {"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": 1, "tid": "25738"}
    launch = {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": "25738"}
    kernel = {"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": "stream 7"}
    late = {"External id": 3, "external id": 3} if both_ids_in_one_event else {}
    events = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": "25738", "args": {"name": "main"}},
        {**op, "ts": 10, "dur": 9, "args": {"External id": 3}},
        {**launch, "ts": 11, "dur": 2, "args": {"external id": 3, "correlation": 5}},
        {**kernel, "ts": 14, "dur": 3, "args": {"device": 0, "stream": 7, **late}},
        {"ph": "s", "cat": "async", "id": 5, "pid": 1, "tid": "25738", "ts": 11},
        {"ph": "f", "cat": "async", "id": 5, "pid": 0, "tid": "stream 7", "ts": 14, "bp": "e"},
    ]
    return write_trace(tmp_path, events, schemaVersion=1)


def test_2021_schema_takes_the_column_route(tmp_path: Path) -> None:
    path = _schema_2021(tmp_path)
    assert _classified(path) is not None
    _assert_same(path)  # the oracle's profile
    both = _schema_2021(tmp_path, both_ids_in_one_event=True)
    found = _classified(both)
    assert found is not None and found.merge_stats  # merged as a dict merges (decision 211)
    _assert_same(both)


def _op(name: str, ts: Any, dur: Any, tid: int = 2, **args: Any) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": name,
        "pid": 1,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def _mixed_events() -> list[Any]:
    kernel_args = {
        "device": 0,
        "stream": 7,
        "correlation": 5,
        "External id": 3,
        "registers per thread": 32,
        "shared memory": 0,
        "blocks per SM": 0.5,
        "grid": [4, 1, 1],
        "block": [128, 1, 1],
        "est. achieved occupancy %": 25,
    }
    return [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}},
        {"ph": "M", "name": "process_name", "pid": "Spans", "tid": 0, "args": {"name": "x"}},
        {
            "ph": "X",
            "cat": "Trace",
            "name": "PyTorch Profiler (0)",
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "ts": 900,
            "dur": 2000,
        },
        {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 2900},
        _op("ProfilerStep#7", 1000, 500.5, **{"External id": 1, "Ev Idx": 0}),
        _op(
            "aten::mm",
            1000.25,
            10.125,
            **{
                "External id": 2,
                "Input Dims": [[2, 3], [3, 4]],
                "Input type": ["float", "float"],
                "flag": True,
                "none": None,
                "ratio": 0.5,
                "Sequence number": 9,
                "text": 'caf\u00e9 "q"\n',
            },
        ),
        _op("aten::mm", 1000.25, 10.125, **{"External id": 2}),  # a full tie
        _op("aten::neg", 1020, -3),  # a negative duration becomes 0
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "aten::mm",
            "pid": 1,
            "tid": 2,
            "ts": 1030,
            "dur": 4,
        },  # same name, another category: an event-level category stat
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 2,
            "ts": 1040,
            "dur": 5,
            "args": {"correlation": 5, "External id": 3},
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaMemcpyAsync",
            "pid": 1,
            "tid": 3,
            "ts": 1045,
            "dur": 5,
            "args": {"External id": 4},
        },  # no correlation: the flow's id
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 77, "pid": 1, "tid": 3, "ts": 1045},
        {
            "ph": "f",
            "cat": "ac2g",
            "name": "ac2g",
            "id": 77,
            "pid": 0,
            "tid": 7,
            "ts": 1060,
            "bp": "e",
        },
        {"ph": "s", "cat": "fwdbwd", "id": 9, "pid": 1, "tid": 2, "ts": 1020},
        {"ph": "f", "cat": "fwdbwd", "id": 9, "pid": 1, "tid": 2, "ts": 1030, "bp": "e"},
        {"ph": "f", "cat": "fwdbwd", "id": 10, "pid": 1, "tid": 2, "ts": 5},  # unbound
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k1",
            "pid": 0,
            "tid": 7,
            "ts": 1050,
            "dur": 3,
            "args": kernel_args,
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k1",
            "pid": 0,
            "tid": 7,
            "ts": 1054,
            "dur": 3,
            "args": {**kernel_args, "correlation": 6},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k2",
            "pid": 0,
            "tid": 8,
            "ts": 1055,
            "dur": 1,
            "args": {"device": 0, "correlation": 8},
        },  # no launch config, stream from the tid
        {  # neither device nor stream: both appended, from the pid and tid
            "ph": "X",
            "cat": "kernel",
            "name": "k3",
            "pid": 0,
            "tid": 7,
            "ts": 1058,
            "dur": 1,
            "args": {"correlation": 9, "grid": [1, 1, 1]},
        },
        {
            "ph": "X",
            "cat": "gpu_memcpy",
            "name": "Memcpy HtoD (Pageable -> Device)",
            "pid": 0,
            "tid": 7,
            "ts": 1060,
            "dur": 2,
            "args": {"device": 0, "stream": 7, "correlation": 77, "bytes": 4096},
        },
        {
            "ph": "X",
            "cat": "gpu_memset",
            "name": "Memset (Device)",
            "pid": 0,
            "tid": 7,
            "ts": 1063,
            "dur": 1,
            "args": {"device": 0, "stream": 7, "correlation": 11, "bytes": 64},
        },
        {
            "ph": "X",
            "cat": "gpu_user_annotation",
            "name": "ProfilerStep#7",
            "pid": 0,
            "tid": 7,
            "ts": 1000,
            "dur": 90,
            "args": {"device": 0, "stream": 7},
        },
        {
            "ph": "X",
            "cat": "cuda_sync",
            "name": "Stream Sync",
            "pid": 0,
            "tid": 7,
            "ts": 1070,
            "dur": 2,
            "args": {"device": 0, "stream": 7},
        },
        {
            "ph": "X",
            "cat": "overhead",
            "name": "Buffer Request",
            "pid": -1,
            "tid": 0,
            "ts": 1080,
            "dur": 1,
        },
        {
            "ph": "i",
            "cat": "cpu_instant_event",
            "s": "t",
            "name": "[memory]",
            "pid": 1,
            "tid": 2,
            "ts": 1003,
            "args": {
                "Device Type": 1,
                "Device Id": 0,
                "Addr": 10,
                "Bytes": -64,
                "Total Allocated": 0,
                "Total Reserved": 512,
            },
        },
        {
            "ph": "i",
            "cat": "cpu_instant_event",
            "s": "t",
            "name": "[memory]",
            "pid": 1,
            "tid": 2,
            "ts": 1001,
            "args": {
                "Device Type": 1,
                "Device Id": 0,
                "Addr": 10,
                "Bytes": 64,
                "Total Allocated": 64,
                "Total Reserved": 512,
            },
        },
        {
            "ph": "i",
            "s": "t",
            "name": "[memory]",
            "pid": 1,
            "tid": 9,
            "ts": 1002,
            "args": {"Device Type": 0, "Device Id": -1, "Bytes": 8, "Total Allocated": 8},
        },
        {"ph": "i", "s": "t", "name": "marker", "pid": 1, "tid": 2, "ts": 1004},
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "other pid same tid",
            "pid": 5,
            "tid": 2,
            "ts": 1100,
            "dur": 1,
        },
        {"ph": "X", "cat": "python_function", "name": None, "pid": 1, "tid": 2, "ts": 1110},
    ]


def test_synthetic_trace_takes_the_fast_path_and_matches(tmp_path: Path) -> None:
    path = write_trace(
        tmp_path,
        _mixed_events(),
        baseTimeNanoseconds=10**15,
        deviceProperties=[{"id": 0, "name": "GPU", "totalGlobalMem": 1 << 30}],
    )
    assert _classified(path) is not None
    _assert_same(path)


@pytest.mark.parametrize(
    "extra",
    [
        _op("aten::x", 1000.1234, 1),  # more than 3 decimals: rounding stays Python's
        _op("aten::x", "1000", 1),  # a string time
        _op("aten::x", 1000, 1, big=1 << 64),  # beyond 64 bits: skipped and counted
        [1, 2],  # not an object
    ],
)
def test_what_the_c_scanner_leaves_the_python_scanner_reads(tmp_path: Path, extra: Any) -> None:
    """The C scanner flags the event (F_BAD); the import reads the trace with the Python
    scanner, on the same column route (decision 210), to the oracle's profile."""
    path = write_trace(tmp_path, [*_mixed_events(), extra])
    found = scanned(importer._read(path, []))
    assert found is not None and np.any(found.flags & scan.F_BAD)
    _assert_same(path)


def test_two_args_renamed_onto_one_stat_are_merged_on_the_columns(tmp_path: Path) -> None:
    path = write_trace(
        tmp_path, [*_mixed_events(), _op("x", 1000, 1, correlation=1, correlation_id=2)]
    )
    found = _classified(path)
    assert found is not None and found.merge_stats
    _assert_same(path)


@pytest.mark.parametrize(
    "extra",
    [
        {"ph": "X", "cat": "cpu_op", "name": "t", "pid": 1, "tid": "25", "ts": 1, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "t", "pid": 1, "tid": " 2", "ts": 1, "dur": 1},
        {"ph": "s", "cat": "ac2g", "name": "f", "id": 1, "pid": 1, "tid": "stream 2", "ts": 1},
        {"ph": "X", "cat": "mystery", "name": "m", "pid": 1, "tid": 2, "ts": 1, "dur": 1},
        {
            "ph": "X",
            "cat": "mystery",
            "name": "d",
            "pid": 3,
            "tid": 2,
            "ts": 1,
            "dur": 1,
            "args": {"stream": 4, "device": None},
        },  # a device event by its args
        {"ph": "X", "name": "no category", "pid": 1, "tid": 2, "ts": 1, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "no time", "pid": 1, "tid": 2, "dur": 1},
        {"ph": "i", "s": "t", "name": "no time", "pid": 1, "tid": 2},
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 2, "ts": 1},  # no args
        {"ph": "X", "cat": "cpu_op", "name": "long", "pid": 1, "tid": 2, "ts": 1, "dur": 1e13},
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k",
            "pid": 0,
            "tid": 2,
            "ts": 1,
            "dur": 1,
            "args": {"stream": 1 << 41},
        },  # a stream id beyond the limit
        {"ph": "C", "name": "counter", "pid": 1, "tid": 2, "ts": 1, "args": {"v": 1}},
        {"name": "no phase", "pid": 1, "tid": 2, "ts": 1},
    ],
)
def test_what_the_per_event_route_once_read_alone_takes_the_column_route(
    tmp_path: Path, extra: Any
) -> None:
    path = write_trace(tmp_path, [*_mixed_events(), extra])
    assert _classified(path) is not None
    _assert_same(path)


def test_pure_python_mode_gives_the_same_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    path = FIXTURES / "kineto" / "h100_bert_small_inference.json.gz"
    from stepscope.model.from_xspace import profile_from_columns

    fast = _describe(profile_from_columns(importer.kineto_to_columns(path), str(path), None))
    monkeypatch.setenv("STEPSCOPE_PURE_PYTHON", "1")
    assert not scan.available()
    slow = _describe(profile_from_columns(importer.kineto_to_columns(path), str(path), None))
    assert fast == slow


def test_innermost_walk_matches_the_python_one(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    starts = rng.integers(0, 1000, 300)
    ends = starts + rng.integers(0, 200, 300)  # overlapping, not always nested
    times = np.sort(rng.integers(0, 1200, 500))
    ops = sorted(
        zip(starts.tolist(), ends.tolist(), map(str, range(300)), strict=True),
        key=lambda o: (o[0], -o[1]),
    )
    expected = _innermost_ops([(t, (1, 1), {}) for t in times.tolist()], {(1, 1): list(ops)})
    sorted_starts = np.array([o[0] for o in ops], np.int64)
    sorted_ends = np.array([o[1] for o in ops], np.int64)
    found = np.frombuffer(
        module(monkeypatch, "_kscan").innermost(
            sorted_starts.tobytes(), sorted_ends.tobytes(), times.tobytes()
        ),
        np.int64,
    )
    assert [None if i < 0 else ops[i][2] for i in found.tolist()] == expected


def test_events_past_the_time_limit_are_skipped_on_the_column_route(tmp_path: Path) -> None:
    ops = [_op("near", 0, 0.001), _op("far", 2, 0.001), _op("long", 0, 2)]
    path = write_trace(tmp_path, ops, baseTimeNanoseconds=(1 << 62) - 1500)
    found = scanned(importer._read(path, []))
    assert found is not None and not np.any(found.flags & scan.F_BAD)
    _assert_same(path)
    warnings = importer.kineto_to_columns(path).space_header.warnings
    assert any("skipped 2 events with times beyond" in w for w in warnings), warnings


@pytest.mark.parametrize(
    "args",
    [
        {
            "Bytes": 512.75,
            "Addr": "0x7f",
            "Device Type": 1.0,
            "Device Id": 0,
            "Total Allocated": 1024.5,
            "Total Reserved": 4096,
        },
        {"Bytes": -8, "Device Type": True, "Device Id": 0.0, "Total Allocated": None},
        {"Bytes": 8, "Device Type": "xla", "Device Id": 2, "Total Allocated": [1]},
        {"Bytes": 8, "Device Type": 2.0, "Device Id": 1, "Addr": 5},
    ],
)
def test_memory_args_of_other_types_take_the_column_route(
    tmp_path: Path, args: dict[str, Any]
) -> None:
    memory = {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 2, "ts": 1003}
    path = write_trace(
        tmp_path,
        [*_mixed_events(), {**memory, "args": args}],
        deviceProperties=[{"id": 0, "name": "GPU", "totalGlobalMem": 1 << 30}],
    )
    found = scanned(importer._read(path, []))
    assert found is not None
    classified = fast_route.classify(found)
    assert classified is not None
    fast_memory.prepare(classified)
    assert classified.memory_args is not None  # read as columns, not event by event
    _assert_same(path)


def _range(ph: str, name: str, ts: Any, tid: Any = 2, **args: Any) -> dict[str, Any]:
    event = {"ph": ph, "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts}
    return {**event, "args": args} if args else event


@pytest.mark.parametrize(
    "extra",
    [
        [
            _range("B", "outer", 1000.5, a=1, b=2),
            _range("B", "inner", 1001),
            _range("E", "", 1002.25, b=3, c=4),
            _range("E", "", 1003),
        ],
        [_range("B", "on 7", 1000, tid="7"), _range("E", "", 1001, tid=7)],  # one thread
        [_range("E", "lone", 1000)],
        [_range("B", "never closed", 1000)],
        [_range("B", "untimed", None), _range("E", "", 1001)],
        [
            {"ph": "B", "name": "no category", "pid": 1, "tid": 3, "ts": 5},
            {"ph": "E", "pid": 1, "tid": 3, "ts": 4},
        ],  # ends before it starts
    ],
)
def test_begin_end_pairs_take_the_column_route(tmp_path: Path, extra: list[Any]) -> None:
    path = write_trace(tmp_path, [*_mixed_events(), *extra])
    assert _classified(path) is not None
    _assert_same(path)


def test_threads_named_by_strings_take_the_column_route(tmp_path: Path) -> None:
    """Host events with a string pid or a non-numeric string tid: their own lines (synthetic
    ids), named by their thread_name, flows bound to their ops; a cpu_op on such a thread
    never holds a memory event of a numbered one."""
    on = {"ph": "X", "cat": "cpu_op", "pid": 1, "tid": "worker", "dur": 10}
    events = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": "worker", "args": {"name": "w"}},
        {"ph": "M", "name": "thread_name", "pid": "host", "tid": 4, "args": {"name": "h"}},
        {**on, "name": "fwd", "ts": 1000},
        {**on, "name": "bwd", "ts": 1020},
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "s",
            "pid": "host",
            "tid": 4,
            "ts": 1000,
            "dur": 5,
        },
        {"ph": "s", "cat": "fwdbwd", "id": 9, "pid": 1, "tid": "worker", "ts": 1000},
        {"ph": "f", "cat": "fwdbwd", "id": 9, "pid": 1, "tid": "worker", "ts": 1020, "bp": "e"},
        # tid 2 of pid 1 allocates while "worker"'s op is open
        {
            "ph": "i",
            "s": "t",
            "name": "[memory]",
            "pid": 1,
            "tid": 2,
            "ts": 1005,
            "args": {"Bytes": 8, "Device Type": 0, "Device Id": -1, "Total Allocated": 8},
        },
    ]
    path = write_trace(tmp_path, [*_mixed_events(), *events])
    assert _classified(path) is not None
    _assert_same(path)
