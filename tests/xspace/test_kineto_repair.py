"""Kineto importer on synthetic traces: repairs of damaged JSON, clear errors, schema corners."""

from __future__ import annotations

import contextlib
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from stepscope.errors import ProfileFormatError
from stepscope.model import Profile, profile_from_xspace
from stepscope.xspace.kineto import kineto_bytes_to_xspace, kineto_to_xspace
from stepscope.xspace.kineto.json_repair import repair_json

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests


def _op(name: str, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": name,
        "pid": 10,
        "tid": 11,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def _kernel(name: str, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    base = {"device": 0, "stream": 7, "grid": [2, 1, 1], "block": [64, 1, 1]}
    return {
        "ph": "X",
        "cat": "kernel",
        "name": name,
        "pid": 0,
        "tid": 7,
        "ts": ts,
        "dur": dur,
        "args": {**base, **args},
    }


def _trace(*events: dict[str, Any], **header: Any) -> dict[str, Any]:
    return {"schemaVersion": 1, **header, "traceEvents": list(events)}


def _names(profile: Profile) -> list[str]:
    return [profile.event_name(i) for i in range(profile.n_events)]


def _profile(data: bytes, source: str = "/tmp/w0.123456789012.pt.trace.json") -> Profile:
    return profile_from_xspace(kineto_bytes_to_xspace(data, source))


GOOD = json.dumps(_trace(_op("aten::add", 1.0, 2.0), _op("aten::mul", 5.0, 1.0)))


def test_valid_bytes_plain_and_gzip() -> None:
    for data in (GOOD.encode(), gzip.compress(GOOD.encode())):
        space = kineto_bytes_to_xspace(data, "/tmp/w0.1700000000000000000.pt.trace.json.gz")
        assert list(space.warnings) == []
        assert list(space.hostnames) == ["w0"]
        assert _names(profile_from_xspace(space)) == ["aten::add", "aten::mul"]


@pytest.mark.parametrize(
    ("broken", "what"),
    [
        (GOOD.replace('"aten::add"', '"aten::"add""'), "unescaped quote"),
        (GOOD.replace('"aten::add"', '"aten::\tadd\x01"'), "control character"),
        (GOOD.replace('"aten::add"', '"C:\\aten\\add"'), "invalid backslash escape"),
        (GOOD.replace("}]", "},]"), "trailing comma"),
    ],
)
def test_repairs_are_applied_and_reported(broken: str, what: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken)
    space = kineto_bytes_to_xspace(broken.encode(), "broken.json")
    assert len(space.warnings) == 1 and what in space.warnings[0]
    names = _names(profile_from_xspace(space))
    assert len(names) == 2 and names[1] == "aten::mul"


def test_truncated_file_keeps_complete_events(tmp_path: Path) -> None:
    events = [_op(f"op{i}", 10.0 * i, 5.0, **{"Input Dims": [[i]]}) for i in range(50)]
    text = json.dumps(_trace(*events, distributedInfo={"rank": 3}))
    cut = text.index('"op40"') + 3  # inside event 40
    path = tmp_path / "rank3.json"
    path.write_text(text[:cut])
    space = kineto_to_xspace(path)
    assert "truncated" in space.warnings[0]
    assert _names(profile_from_xspace(space)) == [f"op{i}" for i in range(40)]
    # ...also when the gzip stream itself is cut.
    gz = tmp_path / "rank3.json.gz"
    compressed = gzip.compress(text.encode())
    gz.write_bytes(compressed[: len(compressed) // 2])
    space = kineto_to_xspace(gz)
    assert any("gzip" in w for w in space.warnings)
    assert any("truncated" in w for w in space.warnings)
    assert 5 < profile_from_xspace(space).n_events < 50


def test_unrepairable_json_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"traceEvents": [{"ph": "X"]}')
    with pytest.raises(ProfileFormatError) as info:
        kineto_to_xspace(path)
    message = str(info.value)
    assert str(path) in message and "not valid JSON" in message and "\n" not in message


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b'{"foo": 1}', "no traceEvents"),
        (b"[1, 2]", "no traceEvents"),
        (b"\x08\x01\x12\x04host", "is not JSON"),
        (b"  ", "empty"),
    ],
)
def test_not_a_kineto_trace(data: bytes, problem: str) -> None:
    with pytest.raises(ProfileFormatError, match=problem):
        kineto_bytes_to_xspace(data, "x.json")


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ProfileFormatError, match="no such file"):
        kineto_to_xspace(tmp_path / "nope.json")


def test_repair_keeps_valid_json_unchanged() -> None:
    text, report = repair_json(GOOD)
    assert text == GOOD and not report.changed()


def test_phases_categories_and_fallbacks() -> None:
    trace = _trace(
        {"ph": "B", "name": "range", "cat": "user_annotation", "pid": 10, "tid": 11, "ts": 1},
        {"ph": "E", "pid": 10, "tid": 11, "ts": 9.5},
        {"ph": "i", "s": "t", "name": "[OutOfMemory]", "pid": 10, "tid": 11, "ts": 3},
        {"ph": "C", "name": "counter", "pid": 10, "ts": 4, "args": {"v": 1}},
        {
            "ph": "X",
            "cat": "new_gpu_thing",
            "name": "mystery",
            "pid": 0,
            "tid": 9,
            "ts": 2,
            "dur": 1,
            "args": {"device": 0, "stream": 9},
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 10,
            "tid": 11,
            "ts": 2.25,
            "dur": 1,
        },
        _kernel("k", 4, 2.0004),
        {"ph": "s", "cat": "ac2g", "id": 77, "pid": 10, "tid": 11, "ts": 2.25},
        {"ph": "f", "cat": "ac2g", "id": 77, "pid": 0, "tid": 7, "ts": 4, "bp": "e"},
        {
            "ph": "X",
            "cat": "overhead",
            "name": "Activity Buffer Request",
            "pid": -1,
            "tid": 0,
            "ts": 1,
            "dur": 1,
        },
        {"ph": "M", "name": "thread_name", "pid": 10, "tid": 11, "args": {"name": "thread 11 (w)"}},
        baseTimeNanoseconds=1_000_000_000,
    )
    space = kineto_bytes_to_xspace(json.dumps(trace).encode(), "t.json")
    assert [p.name for p in space.planes] == [
        "/host:CPU",
        "/device:GPU:0",
        "/host:CUPTI",
        "Task Environment",
    ]
    assert space.warnings == ["skipped 1 events of unsupported phase 'C'"]
    profile = profile_from_xspace(space)
    by_name = {profile.event_name(i): i for i in range(profile.n_events)}
    ranged = by_name["range"]
    assert int(profile.start_ns[ranged]) == 1_000_001_000 and int(profile.dur_ns[ranged]) == 8500
    assert profile.lines[int(profile.line[ranged])].name == "w"
    assert int(profile.dur_ns[by_name["[OutOfMemory]"]]) == 0
    mystery = profile.lines[int(profile.line[by_name["mystery"]])]
    assert mystery.name == "Stream #9"
    assert profile.event_stats(by_name["mystery"])["category"] == "new_gpu_thing"
    # The kernel has no correlation arg: the ac2g flow links it to its launch.
    assert profile.event_stats(by_name["k"])["correlation_id"] == 77
    assert profile.event_stats(by_name["cudaLaunchKernel"])["correlation_id"] == 77
    assert int(profile.dur_ns[by_name["k"]]) == 2000  # 2.0004 us, rounded to the ns


def test_events_with_fields_of_unexpected_types_are_skipped_and_counted() -> None:
    import json

    from stepscope.xspace.kineto import kineto_bytes_to_xspace

    good = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10, "dur": 5}
    bad_tid = {**good, "tid": [1, 2]}  # unhashable where an id belongs
    bad_ts = {**good, "ts": 1e300}  # beyond what XSpace's picosecond offsets can hold
    doc = {"traceEvents": [good, bad_tid, bad_ts, {**good, "pid": {"x": 1}}]}
    space = kineto_bytes_to_xspace(json.dumps(doc).encode(), "weird.json")
    names = [m.name for p in space.planes for m in p.event_metadata.values()]
    assert "aten::mm" in names
    text = " ".join(space.warnings)
    assert "malformed events" in text and "without a valid timestamp" in text


@pytest.mark.integration  # seconds of work: the default tier stays under a minute
def test_corrupt_xspace_bytes_never_crash_the_decoder() -> None:
    """Random damage to real files gives a ProfileFormatError or a profile, nothing else."""
    import random

    from stepscope.errors import ProfileFormatError
    from stepscope.model import profile_from_bytes
    from stepscope.xspace.io import read_profile_bytes
    from tests.support.fixtures import FIXTURES

    rng = random.Random(7)
    sources = [read_profile_bytes(p) for p in sorted(FIXTURES.rglob("*.xplane.pb"))[:3]]
    for _ in range(150):
        data = bytearray(rng.choice(sources))
        if rng.random() < 0.5:
            for _ in range(rng.randint(1, 10)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        else:
            del data[rng.randrange(len(data)) :]
        with contextlib.suppress(ProfileFormatError):
            profile_from_bytes(bytes(data))


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("aten::\\ud800add", "aten::\ufffdadd"),  # a lone high surrogate
        ("\\udc00aten::add", "\ufffdaten::add"),  # a lone low one
        ("aten::\\\\ud800add", "aten::\\ud800add"),  # an escaped backslash: no escape at all
        ("aten::\\ud83d\\ude00add", "aten::\U0001f600add"),  # a pair: one character
    ],
)
def test_lone_surrogate_escapes_become_a_replacement_character(name: str, kept: str) -> None:
    """JSON may escape half a UTF-16 pair; no UTF-8 text holds it: the import stopped at the
    first print or write of that name with a UnicodeEncodeError (a traceback)."""
    text = GOOD.replace('"aten::add"', f'"{name}"')
    space = kineto_bytes_to_xspace(text.encode(), "odd.json")
    names = _names(profile_from_xspace(space))
    assert names == [kept, "aten::mul"]
    lone = "\\\\" not in name and "\\ude00" not in name
    expected = ["repaired invalid JSON: replaced 1 lone surrogate escape(s) by U+FFFD"]
    assert list(space.warnings) == (expected if lone else [])
