"""Fuzzing every C entry point (issue #28): arguments crafted to break their checks, and
mutations of the real fixtures, called straight into the extensions.

`FUZZERS` maps each extension to a function ``fuzz(rng, seconds, calls=None)`` that calls its
entry points with generated arguments for about that long (or until it made ``calls`` calls)
and returns the number of calls. A bad argument
must raise one of `EXPECTED` (the entry points check types, item sizes, alignment, lengths,
ranges and counts before they touch memory); anything else raises out of the fuzzer. Built
with sanitizers (``python scripts/fuzz_native.py``), an out-of-bounds access or an undefined
operation also ends the process with a report.

`kineto_disagreements` fuzzes the Kineto scanner against the pure-Python reader: a mutated
trace that the scanner takes must give the Python scanner's columns and profile.
"""

from __future__ import annotations

import gzip
import json
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from stepscope import accelerators
from tests.hardening import crafted

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
EXPECTED = (ValueError, TypeError, OverflowError, MemoryError, BufferError, IndexError)
I64 = np.iinfo(np.int64)
EDGES = (0, 1, -1, 2, 7, 63, 64, 127, 128, 1 << 31, -(1 << 31), 1 << 62, I64.max, I64.min)


def _ints(
    rng: random.Random, n: int, lo: int, hi: int, dtype: Any = np.int64, edges: bool = True
) -> np.ndarray:
    """n integers, mostly in [lo, hi), some at the dtype's edges (not for counts that size
    other arrays: ``edges=False``)."""
    info = np.iinfo(dtype)
    out = np.array([rng.randrange(lo, hi) if hi > lo else lo for _ in range(n)], np.int64)
    for k in range(n):
        if edges and rng.random() < 0.05:
            out[k] = rng.choice([e for e in EDGES if info.min <= e <= info.max])
    return out.astype(dtype)


def _spoil(rng: random.Random, array: np.ndarray) -> Any:
    """Usually ``array``; sometimes an argument the entry point must refuse or read safely: a
    misaligned or strided view, another item size, a list, a shorter or empty array."""
    roll = rng.random()
    if roll > 0.15:
        return array
    choice = rng.randrange(7)
    if choice == 0 and array.itemsize > 1:  # misaligned view of the same values
        raw = b"\0" + array.tobytes()
        return np.frombuffer(raw, array.dtype, count=len(array), offset=1)
    if choice == 1:
        return array[::2]  # not contiguous
    if choice == 2:
        return array.astype(np.int32 if array.itemsize == 8 else np.int64)
    if choice == 3:
        return array.tolist()
    if choice == 4:
        return array[: rng.randrange(len(array) + 1)]
    if choice == 5:
        return np.zeros(0, array.dtype)
    return array.tobytes()


def _call(func: Callable[..., Any], *args: Any) -> Any:
    try:
        return func(*args)
    except EXPECTED:
        return None


def _timed(seconds: float, step: Callable[[], None], most: int | None) -> int:
    """Calls ``step`` for ``seconds``, or ``most`` times where that comes first (the default
    tier's fixed share: the same calls on every machine, whatever its load)."""
    calls, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline and (most is None or calls < most):
        step()
        calls += 1
    return calls


# ---- seeds ----------------------------------------------------------------------------------
def xspace_seeds() -> list[bytes]:
    out = [
        crafted.ref_stat_without_metadata(),
        crafted.many_planes(30),
        crafted.many_missing_metadata(30),
        crafted.empty_events(50),
    ]
    for path in sorted(FIXTURES.rglob("*.xplane.pb"))[:3]:
        out.append(path.read_bytes()[:100_000])
    return out


def kineto_seeds() -> list[bytes]:
    base = {"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 2}
    events = [
        {**base, "name": "aten::mm", "ts": 10.5, "dur": 3.25, "args": {"External id": 3}},
        {
            **base,
            "cat": "kernel",
            "name": "k",
            "pid": 0,
            "tid": 7,
            "ts": 11,
            "dur": 1,
            "args": {"correlation": 5, "device": 0, "stream": 7, "grid": [1, 2, 3]},
        },
        {
            **base,
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "ts": 10.7,
            "dur": 0.2,
            "args": {"correlation": 5},
        },
        {
            "ph": "i",
            "s": "t",
            "name": "[memory]",
            "pid": 1,
            "tid": 2,
            "ts": 12,
            "args": {"Addr": 1, "Bytes": 512, "Total Allocated": 512, "Device Id": 0},
        },
        {"ph": "s", "cat": "ac2g", "id": 5, "pid": 1, "tid": 2, "ts": 10.7, "name": "f"},
        {"ph": "f", "cat": "ac2g", "id": 5, "pid": 0, "tid": 7, "ts": 11, "bp": "e", "name": "f"},
        {**base, "name": "ProfilerStep#1", "cat": "user_annotation", "ts": 9, "dur": 9},
    ]
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "GPU"}],
        "traceEvents": events,
    }
    out = [json.dumps(doc).encode(), crafted.unterminated_json_string(200)]
    for path in sorted((FIXTURES / "kineto").glob("*tiny*.json.gz")):
        out.append(gzip.decompress(path.read_bytes()))
    return out


def mutate(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not buf:
            break
        roll = rng.random()
        at = rng.randrange(len(buf))
        if roll < 0.4:
            buf[at] = rng.randrange(256)
        elif roll < 0.55:
            del buf[at:]
        elif roll < 0.75:
            buf[at:at] = buf[at : at + rng.randint(1, 32)] * rng.randint(2, 50)
        elif roll < 0.9:
            buf[at:at] = rng.choice(
                [
                    b'"',
                    b"\\",
                    b"-9223372036854775809",
                    b"1e308",
                    b"\xff",
                    b"9999999999999999999",
                    b"{",
                    b"[",
                    b"\x80\x80\x80\x80",
                ]
            )
        else:
            buf[at] = rng.choice(b"0123456789.-eE")
    return bytes(buf)


# ---- one fuzzer per extension ---------------------------------------------------------------
def fuzz_fastwire(rng: random.Random, seconds: float, calls: int | None = None) -> int:
    fw = accelerators.get("_fastwire")
    assert fw is not None
    seeds = xspace_seeds()

    def step() -> None:
        data = mutate(rng.choice(seeds), rng)
        threads = rng.choice([1, 1, 2, 3, 0, -1, -(1 << 31), 2**31 - 1, 1000])
        chunk = rng.choice([1, 2, 7, 32768, 0, -5])
        limit = rng.choice([-1, 0, 1000, 1 << 30])
        found = _call(fw.decode, data, limit, threads, chunk)
        if found is not None:  # the headers it returns, and mutations of them
            header, planes = found[0], found[1]
            _call(fw.space_header, mutate(bytes(header), rng) if header else b"\x12\x01a")
            for plane, _ in planes[:3]:
                _call(fw.plane_header, bytes(plane))
                _call(fw.plane_header, mutate(bytes(plane), rng))
        n = rng.randrange(0, 50)
        counts = _ints(rng, n, 0, 5)
        start = np.concatenate([[rng.choice([0, 5, -3, I64.max - 2])], counts]).cumsum()
        rows = _ints(
            rng, rng.randrange(0, 40), -2, int(counts.sum()) + 3, rng.choice([np.int32, np.int64])
        )
        out = np.empty(len(rows), rows.dtype)
        _call(
            fw.row_owners, _spoil(rng, start.astype(np.int64)), _spoil(rng, rows), _spoil(rng, out)
        )
        owners = np.sort(_ints(rng, rng.randrange(0, 30), -3, 40, np.int32))
        events = _ints(rng, rng.randrange(0, 30), -5, 50)
        if rng.random() < 0.7:
            events.sort()
        _call(fw.last_at_or_before, _spoil(rng, owners), _spoil(rng, events))

    return _timed(seconds, step, calls)


def fuzz_kscan(rng: random.Random, seconds: float, calls: int | None = None) -> int:
    import io

    ks = accelerators.get("_kscan")
    assert ks is not None
    seeds = kineto_seeds()

    def step() -> None:
        data = mutate(rng.choice(seeds), rng)
        window = rng.choice([1, 16, 17, 31, 64, 1000, 1 << 20])
        limit = rng.choice([1 << 40, 100, -1])
        _call(ks.scan_stream, io.BytesIO(data).readinto, limit, window)
        n = rng.randrange(0, 40)
        starts = np.sort(_ints(rng, n, -10, 100))
        ends = starts + _ints(rng, n, -5, 50)
        times = np.sort(_ints(rng, rng.randrange(0, 40), -10, 150))
        _call(ks.innermost, _spoil(rng, starts), _spoil(rng, ends), _spoil(rng, times))
        n_ids = rng.randrange(0, 20)
        nargs = _ints(rng, n, 0, 4, np.uint32, edges=False)
        rows = int(nargs.sum()) + rng.choice([0, 0, 0, 1, -1])
        if n and rng.random() < 0.05:
            nargs[rng.randrange(n)] = rng.choice([2**31, 2**32 - 1])  # more rows than exist
        keys = _ints(rng, max(rows, 0), -1, n_ids + 1, np.int32)
        kinds = _ints(rng, max(rows, 0), 0, 6, np.int8)
        values = _ints(rng, max(rows, 0), -5, 5)
        classes = _ints(rng, n, -1, 4, np.int8)
        kept = np.array([rng.random() < 0.5 for _ in range(3 * n_ids)], bool)
        lut = _ints(rng, n_ids, 0, 9, np.int32)
        _call(
            ks.kept_args,
            *(_spoil(rng, a) for a in (nargs, classes, keys, kinds, values, kept, lut)),
            *([rng.random() < 0.5] if rng.random() < 0.5 else []),  # in place, or not
        )
        slots = _ints(rng, n_ids, -3, 5, np.int8)
        n_slots = rng.choice([0, 1, 4, 5, -1, 200, 1 << 40])
        _call(ks.key_rows, _spoil(rng, nargs), _spoil(rng, keys), _spoil(rng, slots), n_slots)

    return _timed(seconds, step, calls)


def fuzz_pytracer(rng: random.Random, seconds: float, calls: int | None = None) -> int:
    import itertools
    import sys
    import threading

    pt = accelerators.get("_pytracer")
    assert pt is not None

    def work(depth: int) -> int:
        return depth if depth <= 0 else work(depth - 1) + 1

    def step() -> None:
        if rng.random() < 0.5:
            counter: Any = itertools.count() if rng.random() < 0.9 else object()
            _call(pt.configure, counter, rng.choice([0, 1, 5, 1000, -1, I64.max]), lambda: None)
        _call(pt.set_mode, rng.choice([0, 1, 2, 3, -1, 2**31 - 1]))
        frames: Any = [(work.__code__, rng.choice([0, -1, I64.max]))] * rng.randrange(0, 4)
        if rng.random() < 0.1:
            frames = rng.choice([[1], [("x",)], "frames", [(None, "t")]])
        recorder = _call(pt.hook_current_thread, frames)
        try:
            work(rng.randrange(0, 30))
        finally:
            pt.unhook_current_thread()
            threading.setprofile(None)
            sys.setprofile(None)
        if recorder is not None:
            recorder.events()
            recorder.stack()
            recorder.clear()
            recorder.events()
        pt.now()

    try:
        return _timed(seconds, step, calls)
    finally:
        pt.set_mode(2)


def fuzz_nesting(rng: random.Random, seconds: float, calls: int | None = None) -> int:
    nest = accelerators.get("_nesting")
    assert nest is not None

    def step() -> None:
        n = rng.randrange(0, 200)
        line = np.sort(_ints(rng, n, 0, 4, np.int32))
        start = _ints(rng, n, 0, 1000)
        if rng.random() < 0.7:  # mostly in order, as the callers give them
            start = np.sort(start)
        end = start + _ints(rng, n, 0, 100, edges=False)
        parent, depth = np.empty(n, np.int64), np.empty(n, np.int64)
        if rng.random() < 0.1:  # an output the pass must not write (read-only)
            parent.setflags(write=False)
        args = [_spoil(rng, a) for a in (line, start, end, parent, depth)]
        if _call(nest.parents, *args):
            # a pass that says done wrote a parent earlier on the line, or none, for each
            assert ((parent < np.arange(n)) & (parent >= -1)).all()
        index = _ints(rng, n, -2, 2 * n + 2)
        values = _ints(rng, 2 * n + rng.randrange(-2, 3), 0, 100) if n > 2 else np.zeros(0)
        up = _ints(rng, n, -2, n + 1)
        _call(nest.push_down_min, *(_spoil(rng, a) for a in (index, up, values)))
        # the per-type sweep: keys mostly ascending, times and steps at their edges at times
        n_steps = rng.randrange(0, 4)
        lo = _ints(rng, n, 0, 1000)
        if rng.random() < 0.8:
            lo = np.sort(lo)
        hi = lo + _ints(rng, n, 0, 100)  # edges: ends that wrap around int64
        steps = _ints(rng, n, -1, n_steps + 1, edges=False)
        types = _ints(rng, n, 0, 200)
        thresholds = np.array(sorted({rng.randrange(0, 200) for _ in range(3)}, reverse=True))
        sums = np.zeros(max(len(thresholds) * n_steps + rng.randrange(-1, 2), 0), np.float64)
        args = [_spoil(rng, a) for a in (lo, hi, steps, types, thresholds, sums)]
        _call(nest.type_unions, *args)

    return _timed(seconds, step, calls)


def fuzz_lod(rng: random.Random, seconds: float, calls: int | None = None) -> int:
    lod = accelerators.get("_lod")
    assert lod is not None

    def step() -> None:
        n = rng.randrange(0, 200)
        line = _ints(rng, n, 0, 4, np.int32)
        start, dur = _ints(rng, n, 0, 1000), _ints(rng, n, -2, 100)
        if rng.random() < 0.7:  # mostly in line order, as `lod.line_order` gives them
            keep = np.lexsort((start, line))
            line, start = line[keep], start[keep]
        order = np.arange(n, dtype=np.int64)
        if rng.random() < 0.2:
            order = _ints(rng, n, -2, n + 2)  # indexes outside the events
        depth = np.empty(n, np.int32)
        parent = np.full(n, -1, np.int64) if rng.random() < 0.8 else None
        args = [_spoil(rng, a) for a in (order, line, start, dur, depth)]
        if _call(lod.depths, *args, parent) and parent is not None:
            assert ((parent >= -1) & (parent < n)).all()
        row = np.sort(_ints(rng, n, 0, 5))
        level = np.empty(max(n + rng.choice([0, 0, 0, -1, 1]), 0), np.int8)
        _call(lod.levels, *(_spoil(rng, a) for a in (row, start, dur, level)))
        found = np.zeros(n, np.int32) if rng.random() < 0.8 else _ints(rng, n, -1, 20, np.int32)
        if args[0] is order and args[4] is depth and rng.random() < 0.8:
            found = depth  # the depths just walked, where the walk ran
        origin = rng.choice([0, int(start.min()) if n else 0, -(1 << 63), (1 << 63) - 1])
        wide = rng.random() < 0.3
        outs = [np.empty(n, np.int64 if wide else np.int32)]
        outs += [np.empty(n, np.int64) for _ in range(2)]
        outs += [np.empty(n, np.int32) for _ in range(3)]
        outs += [np.empty(n, np.int8), np.empty(n, np.int64)]
        ins = [_spoil(rng, a) for a in (order, line, found, start, dur)]
        counts = _call(lod.positions, *ins, origin, *(_spoil(rng, a) for a in outs))
        if counts is not None:
            rows, segs = counts
            assert 0 <= rows <= segs <= n
            assert (np.diff(outs[7][:segs]) > 0).all()

    return _timed(seconds, step, calls)


class Fuzzer(Protocol):
    def __call__(self, rng: random.Random, seconds: float, calls: int | None = None) -> int: ...


FUZZERS: dict[str, Fuzzer] = {
    "_fastwire": fuzz_fastwire,
    "_kscan": fuzz_kscan,
    "_lod": fuzz_lod,
    "_nesting": fuzz_nesting,
    "_pytracer": fuzz_pytracer,
}


# ---- the Kineto scanner against the pure-Python reader --------------------------------------
def kineto_disagreements(
    rng: random.Random, seconds: float, tries: int | None = None
) -> tuple[int, list[str]]:
    """Mutated traces read by the C scanner and by the Python scanner (`pyscan`, what runs
    with STEPSCOPE_PURE_PYTHON): their columns where the C scanner flags no event, and the
    profiles of the whole import with and without C: (cases, the cases that differ). For
    ``seconds``, or, given ``tries``, that many mutated traces whatever the time (a test's
    count must not depend on the machine's load)."""
    import os

    from stepscope.errors import StepscopeError
    from stepscope.xspace.kineto import pyscan, scan
    from tests.support.kineto import describe, resolved_columns, scanned

    seeds = kineto_seeds()
    cases, differ = 0, []
    deadline = time.monotonic() + seconds
    left = tries if tries is not None else -1
    saved = os.environ.get(accelerators.ENV_VAR)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        try:
            while left > 0 if tries is not None else time.monotonic() < deadline:
                left -= 1
                data = mutate(rng.choice(seeds), rng)
                os.environ[accelerators.ENV_VAR] = "0"
                window = rng.choice([16, 17, 64, 4096])
                cut = scanned(data, window)  # the windows' cuts change nothing
                if _columns_of(cut) != _columns_of(scanned(data)):
                    differ.append(f"window {window}: " + data.decode("utf-8", "replace")[:2000])
                if cut is None:
                    continue  # not scanned (not a trace, invalid JSON): nothing to compare
                cases += 1
                if not (cut.flags & scan.F_BAD).any():
                    try:
                        python = resolved_columns(pyscan.scan_bytes(data, "fuzz.json", []))
                    except StepscopeError as exc:
                        python = str(exc)
                    if python != resolved_columns(cut):
                        differ.append("columns: " + data.decode("utf-8", "replace")[:2000])
                path.write_bytes(data)
                answers = []
                for switch in ("0", "_kscan"):
                    os.environ[accelerators.ENV_VAR] = switch
                    try:
                        answers.append(describe(_columns_profile(path)))
                    except StepscopeError as exc:
                        answers.append({"error": str(exc)})
                if answers[0] != answers[1]:
                    differ.append(data.decode("utf-8", "replace")[:2000])
        finally:
            if saved is None:
                os.environ.pop(accelerators.ENV_VAR, None)
            else:
                os.environ[accelerators.ENV_VAR] = saved
    return cases, differ


def _columns_of(trace: Any) -> Any:
    if trace is None:
        return None
    names = ("ph", "flags", "cat", "name", "pid", "tid", "ts_ns", "dur_ns", "flow_ids", "nargs")
    names += ("arg_key", "arg_kind", "arg_value", "is_key")
    return trace.header, trace.texts, [getattr(trace, n).tolist() for n in names]


def _columns_profile(path: Path) -> Any:
    from stepscope.model.from_xspace import profile_from_columns
    from stepscope.xspace.kineto import kineto_to_columns

    return profile_from_columns(kineto_to_columns(path), str(path), None)
