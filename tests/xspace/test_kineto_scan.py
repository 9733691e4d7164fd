"""The Kineto C scanner (`scan`): exact time conversion, the memory limit checked first, its
argument index, and the streamed scan equal to the whole one wherever its windows cut.
(`test_kineto_fast` checks the routing built on it.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.xspace.kineto import importer, scan
from tests.support.fixtures import FIXTURES
from tests.support.kineto import assert_same_profile as _assert_same
from tests.support.kineto import resolved_columns, scanned
from tests.support.kineto_route import kineto_op
from tests.support.native import c_on


@pytest.fixture(autouse=True)
def _c_scanner(monkeypatch: pytest.MonkeyPatch) -> None:
    c_on(monkeypatch, "_kscan")  # the scanner is C (in both CI tiers)


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


def _decimal_texts() -> list[str]:
    """Decimal numbers as JSON writes them, where a fast conversion could round differently
    from a correctly rounded one: 2**53 around, 15-19 digits, long fractions, halfway cases,
    tiny and huge values, negatives and zeros."""
    rng = np.random.default_rng(11)
    texts = [
        "0.0",
        "-0.0",
        "0.1",
        "0.2",
        "0.3",
        "1.7976931348623157",
        "9007199254740993.0",
        "9007199254740992.0",
        "9007199254740991.5",
        "4503599627370497.5",
        "0.5",
        "123456789012345678.9",
        "1234567890123456789.0",
        "0.30000000000000004",
        "2.2250738585072014",
        "5.0000000000000000000001",
        "0.0000000000000000000001",
        "1669783687464181.123",
        "-1669783687464181.5",
        "99999999999999999999.5",
    ]
    for _ in range(2000):
        whole = str(int(rng.integers(0, 10 ** int(rng.integers(1, 19)))))
        fraction = "".join(str(d) for d in rng.integers(0, 10, int(rng.integers(1, 24))))
        sign = "-" if rng.random() < 0.3 else ""
        texts.append(f"{sign}{whole}.{fraction}")
    return texts


def test_decimal_args_are_the_correctly_rounded_doubles() -> None:
    texts = _decimal_texts()
    events = ",".join(
        '{"ph": "i", "s": "t", "name": "n", "pid": 1, "tid": 1, "ts": 5, "args": {"v": '
        + text
        + "}}"
        for text in texts
    )
    found = scanned(('{"traceEvents": [' + events + "]}").encode())
    assert found is not None
    present, kind, value = found.arg_at("v", np.arange(len(texts)))
    assert present.all() and (kind == scan.A_FLOAT).all()
    got = value.view(np.float64)
    expected = np.array([float(text) for text in texts])
    assert got.view(np.int64).tolist() == expected.view(np.int64).tolist()  # the same bits


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
    _same_scan(whole, scan.scan_stream(reader.readinto, 1 << 40, window))
    assert whole is not None and whole.header["distributedInfo"]["nested"]["deep"][1] == 2.5


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
        assert scan.scan_stream(reader.readinto, 1 << 40, window) is None


def test_compressed_traces_stream_into_the_scanner(tmp_path: Path) -> None:
    """A .json.gz is inflated a piece at a time into the scanner (as a .json is read): same
    columns as the whole text's scan; a damaged stream is left to the Python scanner (it
    warns)."""
    import gzip

    from stepscope.xspace.io import GunzipStream

    source = FIXTURES / "kineto" / "a100_triton_tiny.json.gz"
    raw = source.read_bytes()
    whole = scanned(gzip.decompress(raw))
    stream = GunzipStream(raw, source, chunk=97)
    _same_scan(whole, scan.scan_stream(stream.readinto, 1 << 40, 64))
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
    _same_scan(whole, scan.scan_stream(reader.readinto, 1 << 40, 1 << 16))


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


_JSON_TEXTS = [
    b'[[1, 2], [], ["float", ""], {"a": null, "b": true}]',
    b'["caf\xc3\xa9", "\xf0\x9f\x99\x82", 1.5, -0.0, 123456789012345678901234567890]',
    b'{"a": 1, "a": 2}',  # the last one wins
    b"[1e400]",  # beyond a double: msgspec refuses, json would give inf
    b"[-1e400]",
    b"[1e-400, 4.9e-324, 2.2250738585072014e-308, 0.1, 1E+2]",
    b"[NaN]",
    b"[Infinity]",
    b'["\\ud800"]',  # a lone surrogate: msgspec refuses, json would make one
    b'["a\\"b\\\\c\\u00e9\\n"]',
    b'["\xff"]',  # not UTF-8
    b"\xef\xbb\xbf[1]",  # a byte order mark
    b'["a\x01b"]',  # a control character
    b'["a\x7fb"]',
    b"[1,]",
    b" [1] \n",
    b'{\x00"a\x00"\x00:\x001\x00}\x00',  # UTF-16: json.loads(bytes) would read it
]
_HEADERS = [
    b'{"schemaVersion": 1, "deviceProperties": [{"id": 0}], "other": [1e400], "WARNING": []}',
    b'{"trace_id": "x", "trace_id": "y", "baseTimeNanoseconds": 1700000000000000000}',
    b'{"schemaVersion": 1e400}',
    b'{"schemaVersion": NaN}',
    b'{"displayTimeUnit": "\\ud800"}',
    b'{"displayTimeUnit": "\\u00b5s"}',
    b"[1, 2]",
    b'"a header"',
    b'{"cupti_version": "\xff"}',
    b"{}",
]


def _outcome(decode: Any, text: bytes) -> object:
    try:
        return ("value", repr(decode(text)))
    except ValueError:
        return "refused"


@pytest.mark.parametrize("text", _JSON_TEXTS)
def test_json_values_decode_as_msgspec_decodes_them(text: bytes) -> None:
    import msgspec

    from stepscope.xspace.kineto import decode

    expected = _outcome(
        lambda t: _msgspec_or_value_error(msgspec.json.Decoder().decode, msgspec, t), text
    )
    assert _outcome(decode.loads, text) == expected


@pytest.mark.parametrize("text", _HEADERS)
def test_headers_decode_as_msgspec_decodes_them(text: bytes) -> None:
    import msgspec

    from stepscope.xspace.kineto import decode

    def by_msgspec(t: bytes) -> Any:
        header = _msgspec_or_value_error(
            lambda u: msgspec.json.decode(u, type=decode.HeaderOnly), msgspec, t
        )
        return decode.header_dict(header)

    assert _outcome(decode.header_of, text) == _outcome(by_msgspec, text)


def _msgspec_or_value_error(call: Any, msgspec: Any, text: bytes) -> Any:
    try:
        return call(text)
    except msgspec.DecodeError as exc:
        raise ValueError(str(exc)) from None


def _guess_events() -> list[dict[str, Any]]:
    """Events whose names, categories and argument keys repeat in an order the scanner learns
    (it guesses each from the one before) and then break it: a longer string with the guess as
    its prefix, the guess followed by an escaped quote, escapes and non-ASCII text."""
    names = ["aten::mm", "aten::add", 'q"uo\\te', "é ü", "aten::mm"]
    args = [{"External id": 1, "Ev Idx": 2}, {"External id": 3, "Ev Idx": 4, "x": "y"}]
    events = [kineto_op(name, ts=t, dur=1, args=args[t % 2]) for t, name in enumerate(names * 3)]
    breaks = [
        ("aten::mmx", {"External idx": 5, "Ev Idx": 6}),  # the guesses' texts, longer
        ('aten::mm"', {"External id": 7, "Ev": 8}),  # (JSON: aten::mm\" -- an escaped quote)
        ("aten::m", {"External i": 9, "Ev Idx": 10}),  # shorter
        ("aten::add", {}),
        ("aten::mm", {"Ev Idx": 11, "External id": 12}),  # the keys in another order
    ]
    for t, (name, arg) in enumerate(breaks, start=len(events)):
        events.append(
            {"ph": "i", "cat": "cpu_o", "name": name, "pid": 1, "tid": 2, "ts": t, "args": arg}
        )
        events.append(kineto_op(name, ts=t, dur=1, args=args[0]))
    return events


@pytest.mark.parametrize("window", [16, 23, 64, 0])
def test_guessed_strings_are_the_strings_written(window: int) -> None:
    """The scanner checks each guess byte for byte, up to the closing quote: the columns are
    those of the Python scanner (which guesses nothing), wherever the windows cut."""
    import io

    from stepscope.xspace.kineto import pyscan

    data = json.dumps({"traceEvents": _guess_events()}, ensure_ascii=False).encode()
    found = scan.scan_stream(io.BytesIO(data).readinto, 1 << 40, window or len(data) + 16)
    assert isinstance(found, scan.ScannedTrace) and not np.any(found.flags & scan.F_BAD)
    assert resolved_columns(found) == resolved_columns(pyscan.scan_bytes(data, "t.json", []))
    assert [found.texts[i] for i in found.name.tolist()][-10:] == [
        name
        for name in ("aten::mmx", 'aten::mm"', "aten::m", "aten::add", "aten::mm")
        for _ in range(2)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "12345678",  # eight digits: read as one word
        "1234567",  # seven, and the comma after them (0x2C: 0x32 once 6 is added)
        "1234567.5",
        "123456789",
        "1669783687464181",  # a time in microseconds: two words
        "9223372036854775807",  # int64's largest
        "-9223372036854775808",
        "9223372036854775808",  # past int64: F_BAD
        "18446744073709551616",  # past 64 bits
        "12345678901234567890123",
        "0",
        "-1234567890",
        "1234567:",  # (invalid JSON: never scanned as a number)
        "12345678.25",
        "1234567a",
    ],
)
def test_integers_read_eight_digits_at_a_time_are_the_integers(text: str) -> None:
    """Whole words of eight digits and the digits after them: the integer written, F_BAD past
    int64, and a word with a byte that is not a digit read digit by digit."""
    head = '{"traceEvents": [{"ph": "i", "pid": 1, "tid": 2, "args": {"v": '
    found = scanned((head + text + ',"w": 1}}]}').encode())  # (the comma right after it)
    if not text.lstrip("-").replace(".", "", 1).isdigit():
        assert found is None
        return
    assert found is not None
    bad = bool(found.flags[0] & scan.F_BAD)
    kind, value = int(found.arg_kind[0]), int(found.arg_value[0])
    if "." in text:
        assert kind == scan.A_FLOAT and np.int64(value).view(np.float64) == float(text)
    elif -(2**63) <= int(text) < 2**63:
        assert (kind, value, bad) == (scan.A_INT, int(text), False)
        assert found.arg_value.tolist()[1] == 1
    else:
        assert bad
