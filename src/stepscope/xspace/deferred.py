"""A deferred PyTorch save: a capture's run that keeps torch's trace as torch exported it and
is merged into one XSpace when it is first read (decision 910).

At ``stepscope.stop()`` the PyTorch bridge's conversion of torch's Chrome trace, its merge with
stepscope's own planes and the XSpace write cost more CPU than torch's own stop and export
(decision 378). A deferred save writes instead, in the run directory, for host ``<host>``:

- ``<host>.deferred.pb``: stepscope's own planes, an XSpace (what the eager save merges
  torch's planes into, with the warnings said until then); the run's host file;
- ``<host>.deferred.trace``: torch's Chrome trace (JSON), exactly as ``export_chrome_trace``
  wrote it;
- ``<host>.deferred.meta``: JSON, what the merge needs from the capture: the bridge's clock
  markers (`ClockSync`), torch's log lines, whether CUDA was traced, the recording window.

`merged_bytes` does at read what the eager save did at stop, with the same code
(`stepscope.xspace.torch_trace.convert_exported`, `merge_columns`, `encode_space`): its bytes
are the ``.xplane.pb`` the eager save would have written, so every reader gives the same
answers, and ``stepscope import`` of the host file writes an ``.xplane.pb`` for XProf and
TensorBoard. The run's files are never changed; the model's cache keeps the converted
profile outside the run, as for every format.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from stepscope.logdir import DEFERRED_HOST_SUFFIX
from stepscope.xspace.clock_sync import ClockSync, Marker
from stepscope.xspace.trace_notes import as_line, failure_text

HOST_SUFFIX = DEFERRED_HOST_SUFFIX  # the name the run layout gives (stepscope.logdir)
TRACE_SUFFIX = ".deferred.trace"
META_SUFFIX = ".deferred.meta"
META_VERSION = 1
_WARNINGS_TAG = b"\x1a"  # XSpace.warnings = 3, length-delimited
_HOSTNAMES = 4


def stem_of(host_file: str | os.PathLike[str]) -> str:
    """``.../<host>.deferred.pb`` -> ``.../<host>``."""
    text = os.fspath(host_file)
    return text[: -len(HOST_SUFFIX)] if text.endswith(HOST_SUFFIX) else text


def sibling(host_file: str | os.PathLike[str], suffix: str) -> str:
    return stem_of(host_file) + suffix


def meta_of(
    sync: ClockSync, logs: list[str], cuda: bool, start_perf_ns: int, stop_perf_ns: int, title: str
) -> dict[str, Any]:
    """What `merged_bytes` needs from the capture, as JSON values."""
    return {
        "version": META_VERSION,
        "bridge": title,
        "start_perf_ns": start_perf_ns,
        "stop_perf_ns": stop_perf_ns,
        "cuda": cuda,
        "logs": list(logs),
        "sync": {
            "wall_ns": sync.wall_ns,
            "perf_ns": sync.perf_ns,
            "markers": [
                [m.name, m.before_ns, m.after_ns, m.thread, m.batch, m.ident] for m in sync.markers
            ],
        },
    }


def _sync_of(doc: dict[str, Any]) -> ClockSync:
    sync = ClockSync([Marker(*row) for row in doc["markers"]])
    sync.wall_ns, sync.perf_ns = int(doc["wall_ns"]), int(doc["perf_ns"])
    return sync


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def with_warnings(data: bytes, lines: list[str]) -> bytes:
    """An XSpace's bytes with ``lines`` added to its warnings: the bytes protobuf writes for the
    message with those warnings appended (fields in number order: the new warnings go before
    the hostnames, field 4, the last)."""
    if not lines:
        return data
    at, pos, end = len(data), 0, len(data)
    ordered = True
    while pos < end:
        tag, body = _read_varint(data, pos)
        if tag & 7 != 2:  # every XSpace field is length-delimited
            ordered = False
            break
        size, body = _read_varint(data, body)
        if tag >> 3 == _HOSTNAMES:
            at = min(at, pos)
        elif at < end:  # a field after the hostnames: not protobuf's order
            ordered = False
            break
        pos = body + size
    if not ordered:
        from stepscope.xspace.proto.xplane_pb2 import XSpace

        space = XSpace()
        space.ParseFromString(data)
        space.warnings.extend(lines)
        return space.SerializeToString()
    added = b"".join(
        _WARNINGS_TAG + _varint(len(raw)) + raw for raw in (line.encode("utf-8") for line in lines)
    )
    return data[:at] + added + data[at:]


def _read_meta(path: str) -> dict[str, Any]:
    """The meta file's JSON object; `ProfileFormatError` naming the file when it cannot be."""
    from stepscope.errors import ProfileFormatError

    redo = "copy the run's <host>.deferred.* files again, together"
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProfileFormatError(path, "no such file", redo) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ProfileFormatError(path, f"cannot be read as JSON ({exc})", redo) from None
    if not isinstance(doc, dict) or not all(
        k in doc for k in ("start_perf_ns", "stop_perf_ns", "sync", "logs", "cuda")
    ):
        raise ProfileFormatError(path, "is not a deferred save's meta file", redo)
    return doc


def merged_bytes(host_file: str | os.PathLike[str]) -> bytes:
    """The ``.xplane.pb`` bytes the eager save would have written for this deferred host
    (`stepscope.capture.bridges.base.BridgeSet.merge_into`, then `encode_space`)."""
    from stepscope.xspace.columns_pb import encode_space
    from stepscope.xspace.merge_columns import merge_columns
    from stepscope.xspace.torch_trace import convert_exported
    from stepscope.xspace.wire import decode_columns

    own = Path(host_file).read_bytes()
    title = "PyTorch"
    try:
        # A meta file lost or damaged (a run copied in part) costs torch's events, not the
        # host: stepscope's own planes are kept and the warning says which file is at fault.
        meta = _read_meta(sibling(host_file, META_SUFFIX))
        title = str(meta.get("bridge", title))
        start, stop = int(meta["start_perf_ns"]), int(meta["stop_perf_ns"])
        columns, clock, warnings = convert_exported(
            sibling(host_file, TRACE_SUFFIX),
            _sync_of(meta["sync"]),
            [str(line) for line in meta["logs"]],
            bool(meta["cuda"]),
        )
    except Exception as exc:  # as the bridge's failed conversion: stepscope's planes kept
        return with_warnings(own, [as_line(failure_text(title, "converting its trace", exc))])
    data = with_warnings(own, [as_line(f"{title} bridge: {line}") for line in warnings])
    try:
        merged = merge_columns(
            decode_columns(data),
            columns,
            clock.shifted(-start),
            window=(0, stop - start),
            line_ids={},
        )
    except Exception as exc:  # a merge bug must not lose stepscope's own events
        return with_warnings(data, [as_line(failure_text("framework", "merging its trace", exc))])
    return encode_space(merged)
