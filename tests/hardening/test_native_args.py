"""Issue #28 items 2 and 5: every C entry point checks its arguments before it touches memory,
and the one Kineto scanner agrees with the pure-Python reader wherever its windows cut.

Each case here failed (or crashed, or was reported by the sanitizers) before its fix; the
sanitizer job of scripts/test.sh (scripts/fuzz_native.py) runs this module under
AddressSanitizer and UndefinedBehaviorSanitizer too, where the memory cases are reported
even when a normal build happens to survive them.
"""

from __future__ import annotations

import io
import json
import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.xspace.kineto import scan
from tests.hardening import crafted, native_cases
from tests.support.kineto import assert_same_profile, scanned
from tests.support.native import c_on, module

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

INT_MIN = -(2**31)


# ---- _fastwire -------------------------------------------------------------------------------
@pytest.mark.parametrize("threads", [0, -1, INT_MIN])
def test_decode_refuses_a_thread_count_below_one(
    threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A negative count made the worker loop run to INT_MAX threads past a 64-slot array."""
    fast = module(monkeypatch, "_fastwire")
    with pytest.raises(ValueError, match="at least 1"):
        fast.decode(crafted.many_planes(3), -1, threads)
    with pytest.raises(ValueError, match="at least 1"):
        fast.decode(crafted.many_planes(3), -1, 1, 0)


def test_row_owners_refuses_offsets_that_overflow(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = module(monkeypatch, "_fastwire")
    rows = np.array([0, 1], np.int64)
    for start in ([-(2**63), 2**62], [5, 3], [-1, 4]):
        with pytest.raises(ValueError, match="out of range"):
            fast.row_owners(np.array(start, np.int64), rows, np.empty(2, np.int64))


def test_misaligned_or_ragged_arrays_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = module(monkeypatch, "_fastwire")
    events = np.arange(4, dtype=np.int64)
    misaligned = np.frombuffer(b"\0" + events.tobytes(), np.int64, count=4, offset=1)
    owners = np.arange(3, dtype=np.int32)
    with pytest.raises(ValueError, match="aligned"):
        fast.last_at_or_before(owners, misaligned)
    with pytest.raises(ValueError, match="aligned"):
        fast.last_at_or_before(owners.tobytes()[:-1], events)


# ---- _nesting --------------------------------------------------------------------------------
def _nesting_args(n: int = 4) -> list[np.ndarray]:
    line = np.zeros(n, np.int32)
    start = np.arange(n, dtype=np.int64)
    return [line, start, 20 - start, np.empty(n, np.int64), np.empty(n, np.int64)]  # nested


@pytest.mark.parametrize(
    ("position", "bad"),
    [
        (0, np.zeros(4, np.int64)),  # lines of another width
        (1, np.zeros(4, np.int32)),
        (1, np.zeros(3, np.int64)),  # a shorter column
        (3, np.zeros(5, np.int64)),  # a longer output
        (4, np.zeros(8, np.int64)[::2]),  # not contiguous
        (2, [0, 1, 2, 3]),  # not a buffer
    ],
)
def test_nesting_refuses_columns_it_cannot_read_whole(
    position: int, bad: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    nest = module(monkeypatch, "_nesting")
    args: list[Any] = _nesting_args()
    args[position] = bad
    with pytest.raises((ValueError, TypeError, BufferError)):
        nest.parents(*args)


def test_nesting_writes_no_read_only_output(monkeypatch: pytest.MonkeyPatch) -> None:
    nest = module(monkeypatch, "_nesting")
    args = _nesting_args()
    args[3].setflags(write=False)
    with pytest.raises((ValueError, BufferError)):
        nest.parents(*args)


def test_nesting_says_when_the_events_are_out_of_order(monkeypatch: pytest.MonkeyPatch) -> None:
    nest = module(monkeypatch, "_nesting")
    line, start, end, parent, depth = _nesting_args()
    assert nest.parents(line, start, end, parent, depth) is True
    assert parent.tolist() == [-1, 0, 1, 2] and depth.tolist() == [0, 1, 2, 3]
    assert nest.parents(line, start[::-1].copy(), end, parent, depth) is False
    line[0] = 1  # lines descending
    assert nest.parents(line, start, end, parent, depth) is False


@pytest.mark.parametrize(
    ("index", "parent"),
    [([0, 5], [-1, 0]), ([0, -1], [-1, 0]), ([0, 1], [-1, -2]), ([0, 1, 2], [-1, 0])],
)
def test_push_down_min_refuses_an_index_or_parent_out_of_range(
    index: list[int], parent: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    nest = module(monkeypatch, "_nesting")
    values = np.zeros(3, np.int64)
    with pytest.raises(ValueError):
        nest.push_down_min(np.array(index, np.int64), np.array(parent, np.int64), values)


def test_push_down_min_writes_nothing_unless_parents_come_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nest = module(monkeypatch, "_nesting")
    values = np.array([5, 1, 9], np.int64)
    index = np.arange(3, dtype=np.int64)
    assert nest.push_down_min(index, np.array([1, -1, 0], np.int64), values) is False
    assert values.tolist() == [5, 1, 9]
    assert nest.push_down_min(index, np.array([-1, 0, 1], np.int64), values) is True
    assert values.tolist() == [5, 1, 1]


def _unions_args() -> list[Any]:
    lo = np.arange(4, dtype=np.int64)
    return [
        lo,
        lo + 2,
        np.zeros(4, np.int64),
        np.full(4, 20, np.int64),
        np.array([20]),
        np.zeros(1),
    ]


@pytest.mark.parametrize(
    ("position", "bad"),
    [
        (0, np.zeros(4, np.int32)),  # keys of another width
        (1, np.zeros(3, np.int64)),  # a shorter column
        (2, np.array([0, 0, 1, 0], np.int64)),  # a step beyond out's one row
        (2, np.array([0, 0, -1, 0], np.int64)),
        (4, np.zeros(0, np.int64)),  # no threshold
        (5, np.zeros(3)),  # out not thresholds x steps (2 thresholds below)
        (3, np.zeros(8, np.int64)[::2]),  # not contiguous
        (4, [20]),  # not a buffer
    ],
)
def test_type_unions_refuses_arguments_it_cannot_read_whole(
    position: int, bad: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    nest = module(monkeypatch, "_nesting")
    args = _unions_args()
    if position == 5:
        args[4] = np.array([40, 20], np.int64)
    args[position] = bad
    with pytest.raises((ValueError, TypeError, BufferError)):
        nest.type_unions(*args)


def test_type_unions_writes_no_read_only_output(monkeypatch: pytest.MonkeyPatch) -> None:
    nest = module(monkeypatch, "_nesting")
    args = _unions_args()
    args[5].setflags(write=False)
    with pytest.raises((ValueError, BufferError)):
        nest.type_unions(*args)


def test_type_unions_says_a_run_longer_than_int64(monkeypatch: pytest.MonkeyPatch) -> None:
    nest = module(monkeypatch, "_nesting")
    lo = np.array([-(2**63), 0], np.int64)
    hi = np.array([2**63 - 1, 1], np.int64)
    with pytest.raises(ValueError, match="longer than int64"):
        nest.type_unions(
            lo, hi, np.zeros(2, np.int64), np.full(2, 20, np.int64), np.array([20]), np.zeros(1)
        )


# ---- _kscan ----------------------------------------------------------------------------------
def _doc(**header: Any) -> bytes:
    """A trace with whitespace after every comma and numbers at the top level, before and
    after the events (Kineto writes baseTimeNanoseconds after them)."""
    base = {"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 2}
    events = [
        {**base, "name": "a", "ts": 1.5, "dur": 2, "args": {"External id": 1, "x": [1, 2]}},
        {**base, "name": "", "ts": 2, "dur": 1},  # an empty first string: no memcpy to NULL
        {**base, "name": "b", "ts": 123456.789, "dur": 0.25},
    ]
    doc = {"schemaVersion": 1, **header, "traceEvents": events, "baseTimeNanoseconds": 10**18}
    return json.dumps(doc, indent=2).encode()


def test_every_window_cut_gives_the_whole_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows of every size from 16 bytes up: a top-level number the window cut was read as
    a shorter number, and spaces after a comma that ended a window were read as an event (the
    trace then fell to a slower path, 4-6x)."""
    c_on(monkeypatch, "_kscan")
    data = _doc(deviceCount=12345678901234)
    whole = native_cases._columns_of(scanned(data))
    assert whole is not None and whole[0]["baseTimeNanoseconds"] == 10**18
    for window in range(16, len(data) + 2):
        assert native_cases._columns_of(scanned(data, window)) == whole, window


@pytest.mark.parametrize("missing", ["pid", "tid"])
def test_an_event_without_pid_or_tid_is_left_to_the_python_scanner(
    missing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The C columns would read a missing tid as thread 0; the Kineto rules make a thread of
    its own: the scanner flags the event, the Python scanner reads it (decision 210)."""
    c_on(monkeypatch, "_kscan")
    doc = json.loads(_doc())
    del doc["traceEvents"][0][missing]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(doc))
    found = scanned(path.read_bytes())
    assert found is not None and found.flags[0] & scan.F_BAD
    assert_same_profile(path)


def test_an_empty_first_string_is_interned(monkeypatch: pytest.MonkeyPatch) -> None:
    """The string table's arena is empty (no data pointer) when the first string is "": it
    was copied to, then compared with, a NULL pointer (UBSan, in the sanitizer job)."""
    c_on(monkeypatch, "_kscan")
    event = {"name": "", "cat": "", "ph": "X", "pid": 1, "tid": 1, "ts": 1, "dur": 1}
    found = scanned(json.dumps({"traceEvents": [event, event]}).encode())
    assert found is not None and [found.texts[i] for i in found.name.tolist()] == ["", ""]


def test_a_document_without_trace_events_is_not_scanned(monkeypatch: pytest.MonkeyPatch) -> None:
    """The import says it is not a trace; the scanner gave an empty one."""
    c_on(monkeypatch, "_kscan")
    assert scanned(b'{"traceName": "x", "baseTimeNanoseconds": 5}') is None
    assert scanned(b'{"traceEvents": []}') is not None


def test_a_failing_or_keeping_reader_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """readinto's own error comes out (it was a SystemError: the window's release was called
    with the error set); a reader that keeps a view of the window keeps it alive, and the
    window cannot grow under it (BufferError; the view pointed into freed memory before)."""
    fast = module(monkeypatch, "_kscan")

    def failing(view: memoryview) -> int:
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        fast.scan_stream(failing, 1 << 30, 64)
    kept: list[memoryview] = []
    source = io.BytesIO(b'{"' + b"a" * 40 + b'": 1, "traceEvents": []}')

    def keeping(view: memoryview) -> int:
        kept.append(view.cast("B"))  # an export of the scanner's window
        return source.readinto(view)

    with pytest.raises(BufferError):  # the 45-byte member needs a window over 16 bytes
        fast.scan_stream(keeping, 1 << 30, 16)
    assert b"aaaa" in bytes(kept[0])  # the window's bytes still, not freed memory
    kept.clear()


def test_kineto_entry_points_refuse_bad_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = module(monkeypatch, "_kscan")
    nargs = np.array([1, 1], np.uint32)
    keys = np.array([0, 1], np.int32)
    with pytest.raises(ValueError, match="n_slots"):
        fast.key_rows(nargs, keys, np.array([0, -1], np.int8), -5)
    with pytest.raises(ValueError, match="aligned"):
        fast.key_rows(nargs.tobytes()[1:], keys, np.array([0, -1], np.int8), 1)
    starts = np.arange(3, dtype=np.int64)
    with pytest.raises(ValueError, match="aligned"):
        fast.innermost(starts, starts, starts.tobytes()[:-3])


@pytest.mark.integration  # seconds of work: the default tier stays under a minute
def test_the_scanner_agrees_with_the_pure_python_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sanitizer job's comparison on a thousand mutated traces (42 of them scanned):
    those the scanner takes give the Python scanner's columns and profile, and its windows
    change nothing."""
    c_on(monkeypatch, "_kscan")
    # a count of traces, not seconds: 3 s gave 19-20 cases when CI's lanes shared the cores
    cases, differ = native_cases.kineto_disagreements(random.Random(7), 0.0, tries=1000)
    assert cases > 20
    assert differ == []


# ---- _pytracer -------------------------------------------------------------------------------
def test_tracer_refuses_bad_modes_and_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = module(monkeypatch, "_pytracer")
    with pytest.raises(ValueError, match="set_mode"):
        fast.set_mode(7)
    with pytest.raises(TypeError, match="tuples"):
        fast.hook_current_thread([1])  # was SystemError (a getargs format on a non-tuple)
    fast.unhook_current_thread()


@pytest.mark.integration
def test_tracer_hooked_before_configure_keeps_nothing(tmp_path: Path) -> None:
    """A Recorder hooked before any configure() read a NULL budget counter (a crash)."""
    import subprocess
    import sys

    script = (
        "from stepscope import accelerators\n"
        "p = accelerators.get('_pytracer')\n"
        "assert p is not None\n"
        "p.set_mode(1)\n"
        "r = p.hook_current_thread([])\n"
        "def f(): return 1\n"
        "f()\n"
        "p.unhook_current_thread()\n"
        "assert r.events() == [], r.events()\n"
    )
    # The C tracer is what is tested: a pure-Python run of the suite must not turn it off.
    env = {k: v for k, v in os.environ.items() if k != "STEPSCOPE_PURE_PYTHON"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]


# ---- the fuzzers themselves (short: the sanitizer job runs them for minutes) ---------------
@pytest.mark.parametrize(
    "name",
    [  # fuzzers added since the default tier's budget (decision 245) run with integration
        pytest.param(name, marks=pytest.mark.integration) if name in ("_nesting", "_lod") else name
        for name in sorted(native_cases.FUZZERS)
    ],
)
def test_each_entry_point_survives_150_fuzzed_calls(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fixed count, not half a second each (1.5 s of an idle machine's default tier; 0.1 s
    # now): the sanitizer job fuzzes each for its share of 90 s (decision 761).
    c_on(monkeypatch, name)
    assert native_cases.FUZZERS[name](random.Random(3), 600.0, calls=150) == 150


def test_scan_of_a_bytes_reader_equals_the_file_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """`tests.support.kineto.scanned` reads through BytesIO what the importer reads from a
    file: the same document whatever the reader."""
    c_on(monkeypatch, "_kscan")
    data = _doc()
    streamed = scan.scan_stream(io.BytesIO(data).readinto, 1 << 40, 16)
    assert native_cases._columns_of(streamed) == native_cases._columns_of(scanned(data))
