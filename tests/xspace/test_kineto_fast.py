"""The Kineto importer's C scanner + numpy routing (`scan`, `fast_route`, `fast_stats`,
`fast_memory`): which traces take it, and that it gives the profile of the per-event path.

`test_kineto_columns` compares the columns path with the XSpace path (per-event routing) on
every fixture; here the synthetic traces hold what the vectorized code must reproduce (stat
order, renames, appended stats, metadata order, memory events, flows), and traces it must
leave to the per-event path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.xspace.kineto import fast_route, importer, scan
from stepscope.xspace.kineto.classified import Classified
from stepscope.xspace.kineto.memory import _innermost_ops
from tests.support.fixtures import FIXTURES
from tests.support.kineto import assert_same_profile as _assert_same
from tests.support.kineto import describe as _describe
from tests.support.kineto import scanned
from tests.support.native import c_on, module


@pytest.fixture(autouse=True)
def _c_scanner(monkeypatch: pytest.MonkeyPatch) -> None:
    c_on(monkeypatch, "_kscan")  # the columns path is the C scanner's (in both CI tiers)


def _classified(path: Path) -> Classified | None:
    data = importer._read(path, [])
    found = scanned(data)
    return None if found is None else fast_route.classify(found)


def _write(tmp_path: Path, events: list[Any], **header: Any) -> Path:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events, **header}))
    return path


@pytest.mark.parametrize(
    "name",
    [
        "a100_nccl_rank0",
        "b200_vllm_fp8_rank0",
        "h100_bert_small_inference",
        "mi300x_resnet_training_rank0",
        "v100_training_with_memory",
    ],
)
def test_real_traces_take_the_fast_path(name: str) -> None:
    assert _classified(FIXTURES / "kineto" / f"{name}.json.gz") is not None


def test_2021_schema_takes_the_per_event_path() -> None:
    # String thread ids ("25738", "stream 7") are normalised event by event in Python.
    assert _classified(FIXTURES / "kineto" / "v100_resnet50_training_2021schema.json.gz") is None


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
    path = _write(
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
        {"ph": "B", "name": "range", "pid": 1, "tid": 2, "ts": 1200},
        _op("aten::x", 1000.1234, 1),  # more than 3 decimals: rounding stays Python's
        _op("aten::x", "1000", 1),  # a string time
        _op("aten::x", 1000, 1, big=1 << 64),  # beyond 64 bits: skipped and counted
        _op("aten::x", 1000, 1, correlation=1, correlation_id=2),  # merged by dict order
        {"ph": "X", "cat": "mystery", "name": "m", "pid": 1, "tid": 2, "ts": 1, "dur": 1},
        [1, 2],  # not an object
        {"ph": "X", "cat": "cpu_op", "name": "t", "pid": 1, "tid": "25", "ts": 1, "dur": 1},
    ],
)
def test_what_the_columns_do_not_model_takes_the_per_event_path(tmp_path: Path, extra: Any) -> None:
    path = _write(tmp_path, [*_mixed_events(), extra])
    assert _classified(path) is None
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


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("1.5", 1500),
        ("0.0005", None),
        ("2.0015", None),
        ("1669783687464181", 1669783687464181000),
        ("1.2345e3", None),
        ("-3.25", -3250),
        ("0.999", 999),
        ("123456789.001", 123456789001),
    ],
)
def test_times_convert_exactly(text: str, ns: int | None) -> None:
    data = (
        '{"traceEvents": [{"ph": "i", "s": "t", "name": "n", "pid": 1, "tid": 1, "ts": '
        + text
        + "}]}"
    ).encode()
    found = scanned(data)
    assert found is not None
    if ns is None:  # left to Python's float arithmetic
        assert found.flags[0] & scan.F_BAD
    else:
        assert not found.flags[0] & scan.F_BAD
        assert int(found.ts_ns[0]) == ns


def test_columns_path_checks_the_memory_limit_before_scanning(tmp_path: Path) -> None:
    from stepscope import limits

    path = tmp_path / "empties.json"
    path.write_bytes(b'{"traceEvents": [' + b"{}," * 2_000_000 + b"{}]}")  # 6 MB of objects
    limits.configure(50_000_000)
    try:
        with pytest.raises(limits.ProfileTooLargeError, match="parsing this JSON"):
            importer.kineto_to_columns(path)
    finally:
        limits.configure(None)


def test_count_byte_matches_bytes_count_across_blocks() -> None:
    block = 1 << 20
    data = b"{" + b"x" * (block - 2) + b"{{" + b"y{" * 1000 + b"{"
    for byte in (b"{", b"x", b"y", b"z"):
        assert scan.count_byte(data, byte) == data.count(byte)
    assert scan.count_byte(b"", b"{") == 0


def test_argument_rows_know_their_event() -> None:
    base = {"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1}
    events = [{**base, "args": {"a": 1, "b": 2}}, base, {**base, "args": {"c": 3}}]
    trace = scanned(json.dumps({"traceEvents": events}).encode())
    assert trace is not None
    assert trace.arg_event.tolist() == [0, 0, 2]
    # args_of finds each event's rows, none for an event without args, through the last one
    assert [trace.args_of(e) for e in range(3)] == [{"a": 1, "b": 2}, {}, {"c": 3}]
    listed = [{**base, "args": {"grid": [1, 2, 3], "x": 0.5, "s": "t", "ok": True}}, base]
    trace = scanned(json.dumps({"traceEvents": listed}).encode())
    assert trace is not None
    assert trace.args_of(0) == {"grid": [1, 2, 3], "x": 0.5, "s": "t", "ok": True}
    assert trace.args_of(0, frozenset({"x", "grid", "absent"})) == {"grid": [1, 2, 3], "x": 0.5}
    assert trace.args_of(1) == {}


def test_arg_at_reads_what_arg_reads_for_the_events_asked() -> None:
    base = {"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1}
    events = [
        {**base, "args": {"a": 1, "b": "x"}},
        base,
        {**base, "args": {"a": 2.5, "c": 3}},
        {**base, "args": {"c": 4}},
        {**base, "args": {"a": None}},
    ]
    trace = scanned(json.dumps({"traceEvents": events}).encode())
    assert trace is not None
    for key in ("a", "b", "c", "missing"):
        full = trace.arg(key)
        for asked in ([4, 0, 2], [1, 3], [], [0, 1, 2, 3, 4]):
            picked = np.array(asked, np.int64)
            for whole, part in zip(full, trace.arg_at(key, picked), strict=True):
                assert part.tolist() == whole[picked].tolist(), (key, asked)
        assert trace.has(key).tolist() == (full[0] & (full[1] != scan.A_NULL)).tolist()


_AWKWARD = {
    "schemaVersion": 1,
    "deviceProperties": [{"id": 0, "name": "GPU \\u00e9", "totalGlobalMem": 1 << 34}],
    "traceEvents": [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::mm \u00e9\u4e2d\U0001f600",
            "pid": 1,
            "tid": 2,
            "ts": 10.5,
            "dur": 3.25,
            "args": {"Input Dims": [[2, 3], []], 'a"b': None, "f": 1.5e3, "t": True, "s": "x\\y"},
        },
        {"ph": "i", "s": "t", "name": "mark", "pid": 1, "tid": 2, "ts": 12},
        {"ph": "s", "cat": "fwdbwd", "id": 7, "pid": 1, "tid": 2, "ts": 10.5, "name": "f"},
    ],
    "traceName": "after the events",
    "distributedInfo": {"rank": 0, "nested": {"deep": [1, 2.5, "x", None]}},
}


def _same_scan(whole: scan.ScannedTrace | None, streamed: object) -> None:
    assert isinstance(whole, scan.ScannedTrace) and isinstance(streamed, scan.ScannedTrace)
    assert streamed.header == whole.header and streamed.texts == whole.texts
    for column in (
        "ph",
        "flags",
        "cat",
        "name",
        "pid",
        "tid",
        "ts_ns",
        "dur_ns",
        "flow_ids",
        "nargs",
        "arg_key",
        "arg_kind",
        "arg_value",
        "is_key",
    ):
        assert getattr(streamed, column).tolist() == getattr(whole, column).tolist(), column


@pytest.mark.parametrize("window", [16, 17, 31, 64, 1000])
def test_streamed_scan_equals_the_whole_scan_wherever_the_windows_cut(window: int) -> None:
    """Every unit (member, event) that a window cuts is undone and scanned again whole; units
    longer than the window grow it."""
    import io

    data = (json.dumps(_AWKWARD, ensure_ascii=False, indent=1) + "\n").encode()
    whole = scanned(data)
    reader = io.BytesIO(data)
    _same_scan(whole, scan.scan_stream(reader.readinto, importer.HeaderOnly, 1 << 40, window))
    assert whole is not None and whole.header.distributedInfo["nested"]["deep"][1] == 2.5


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"  ",
        b"{}",
        b'{"traceEvents": []',
        b'{"traceEvents": [{"ph": "X"},]}',
        b'{"traceEvents": []} x',
        b'{"traceEvents": [], "traceEvents": []}',
        b'[{"ph": "X"}]',
        b'{"traceEvents": [{"name": "abcdefghijklmnopqrstu\x01v"}]}',  # a raw control byte
        b'{"traceEvents": [{"name": "abcdefghijklmnopqrstu\xffv"}]}',  # not UTF-8
    ],
)
def test_streamed_scan_rejects_what_the_whole_scan_rejects(text: bytes) -> None:
    import io

    assert scanned(text) is None
    for window in (16, 1 << 20):
        reader = io.BytesIO(text)
        assert scan.scan_stream(reader.readinto, importer.HeaderOnly, 1 << 40, window) is None


def test_compressed_traces_stream_into_the_scanner(tmp_path: Path) -> None:
    """A .json.gz is inflated a piece at a time into the scanner (as a .json is read): same
    columns as the whole text's scan; a damaged stream takes the per-event path, which warns."""
    import gzip

    from stepscope.xspace.io import GunzipStream

    source = FIXTURES / "kineto" / "a100_triton_tiny.json.gz"
    raw = source.read_bytes()
    whole = scanned(gzip.decompress(raw))
    stream = GunzipStream(raw, source, chunk=97)
    _same_scan(whole, scan.scan_stream(stream.readinto, importer.HeaderOnly, 1 << 40, 64))
    plain = tmp_path / "trace.json"
    plain.write_bytes(gzip.decompress(raw))
    _assert_same(plain)
    damaged = tmp_path / "damaged.json.gz"
    damaged.write_bytes(raw + gzip.compress(b" " * 100_000)[:-12])  # a second member, cut
    assert any("gzip" in w for w in importer.kineto_to_columns(damaged).space_header.warnings)
    blank = tmp_path / "blank.json"
    blank.write_bytes(b" \n")
    from stepscope.errors import ProfileFormatError

    with pytest.raises(ProfileFormatError, match="file is empty"):
        importer.kineto_to_columns(blank)


def test_columns_beyond_a_mebibyte_are_whole() -> None:
    """Columns from 1 MiB on grow as their own mappings (mremap) and are shrunk to their size
    when handed to numpy: every value survives the moves."""
    import io

    n = 150_000  # 1.2 MB of ts and dur, 0.6 MB of name ids
    text = ",".join(f'{{"ph":"X","name":"n{i % 7}","ts":{i},"dur":{i % 5}}}' for i in range(n))
    data = ('{"traceEvents":[' + text + "]}").encode()
    whole = scanned(data)
    assert whole is not None
    assert whole.ts_ns.tolist() == [i * 1000 for i in range(n)]
    assert whole.dur_ns.tolist() == [i % 5 * 1000 for i in range(n)]
    reader = io.BytesIO(data)
    _same_scan(whole, scan.scan_stream(reader.readinto, importer.HeaderOnly, 1 << 40, 1 << 16))


def test_first_seen_numbers_groups_by_first_appearance() -> None:
    """Against a dict, on narrow columns (the per-value table), wide ones (the sort), columns
    near int64's limits and mixed widths."""

    def reference(*columns: np.ndarray) -> tuple[list[int], list[int]]:
        seen: dict[tuple[int, ...], int] = {}
        group, first = [], []
        for i, row in enumerate(zip(*(c.tolist() for c in columns), strict=True)):
            if row not in seen:
                seen[row] = len(seen)
                first.append(i)
            group.append(seen[row])
        return group, first

    rng = np.random.default_rng(7)
    makers = (
        lambda n: rng.integers(0, 5, n).astype(np.int32),
        lambda n: rng.integers(-3, 3, n).astype(np.int8),
        lambda n: rng.integers(-(2**62), 2**62, n, dtype=np.int64),
        lambda n: (rng.integers(0, 3, n) * 10**6 + 123_456).astype(np.int32),
        lambda n: np.full(n, -(2**62), np.int64) + rng.integers(0, 2, n),
    )
    for _ in range(200):
        n = int(rng.integers(1, 300))
        columns = [makers[int(rng.integers(0, 5))](n) for _ in range(int(rng.integers(1, 4)))]
        group, first = scan.first_seen(*columns)
        assert (group.tolist(), first.tolist()) == reference(*columns)
