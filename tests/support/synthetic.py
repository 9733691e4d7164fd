"""Synthetic XSpace files of any size, for benchmarks and scale tests.

Building millions of protobuf messages in Python takes minutes, so the event bytes are
encoded directly with vectorized NumPy (protobuf varints), and only the small plane header
(metadata maps) goes through protobuf. The result is an ordinary XSpace that TensorFlow's
parser reads the same way.

Shape of the trace: one ``/host:CPU`` plane; line 0 carries only ``train`` step markers
(``step_num``, ``_r=1``) spanning ``ops_per_step`` ops; the other lines carry ops drawn from a
pool of names, back to back with small gaps, every ``stat_every``-th op with an int stat
(``bytes``) and, with ``extra_stat_every``, every ``extra_stat_every``-th op with a second one
(``flops``). Real TensorFlow captures carry 1.3-1.8 stats per event (``tf/remote``,
``tf/big_ctl``); `real_density_xspace_bytes` gives 1.5 (every op ``bytes``, every second op
``flops``).
"""

from __future__ import annotations

import numpy as np

from stepscope.xspace.proto.xplane_pb2 import XPlane, XSpace


def _varint_matrix(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Protobuf varint bytes of each value as a (n, 10) matrix, and each length."""
    v = values.astype(np.uint64)
    lengths = np.ones(len(v), dtype=np.int64)
    for k in range(1, 10):
        lengths += v >= np.uint64(1 << (7 * k))
    out = np.zeros((len(v), 10), dtype=np.uint8)
    for k in range(10):
        byte = ((v >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        more = k < lengths - 1
        out[:, k] = byte | (more.astype(np.uint8) << 7)
    return out, lengths


def _concat_fields(
    parts: list[tuple[np.ndarray, np.ndarray]], n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise concatenation of variable-length byte parts: (flat bytes, per-row lengths)."""
    lengths = np.zeros(n, dtype=np.int64)
    for _, part_len in parts:
        lengths += part_len
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.zeros(int(offsets[-1]), dtype=np.uint8)
    cursor = offsets[:-1].copy()
    for matrix, part_len in parts:
        for k in range(matrix.shape[1]):
            rows = np.flatnonzero(part_len > k)
            flat[cursor[rows] + k] = matrix[rows, k]
        cursor += part_len
    return flat, lengths


def _const(
    byte_values: list[int], n: int, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    matrix = np.tile(np.array(byte_values, dtype=np.uint8), (n, 1))
    lengths = np.full(n, len(byte_values), dtype=np.int64)
    if mask is not None:
        lengths[~mask] = 0
    return matrix, lengths


def _encode_events(
    meta: np.ndarray,
    offset_ps: np.ndarray,
    dur_ps: np.ndarray,
    stat_value: np.ndarray,
    has_stat: np.ndarray,
    stat_meta_id: int,
    extra_stats: list[tuple[int, np.ndarray, np.ndarray]] | None = None,
) -> bytes:
    """The bytes of repeated XLine.events (field 4) for the given columns."""
    n = len(meta)
    meta_m, meta_l = _varint_matrix(meta)
    off_m, off_l = _varint_matrix(offset_ps)
    dur_m, dur_l = _varint_matrix(dur_ps)
    parts = [
        _const([0x08], n),
        (meta_m, meta_l),
        _const([0x10], n, offset_ps > 0),
        (off_m, np.where(offset_ps > 0, off_l, 0)),
        _const([0x18], n, dur_ps > 0),
        (dur_m, np.where(dur_ps > 0, dur_l, 0)),
    ]
    stats = [
        (stat_meta_id, stat_value, has_stat),
        *(extra_stats or []),
    ]
    for mid, values, mask in stats:
        val_m, val_l = _varint_matrix(values)
        stat_len = 2 + 1 + val_l  # 0x08 id, 0x20 value tag, value
        parts += [
            _const([0x22], n, mask),
            (stat_len.astype(np.uint8)[:, None], mask.astype(np.int64)),
            _const([0x08, mid], n, mask),
            _const([0x20], n, mask),
            (val_m, np.where(mask, val_l, 0)),
        ]
    body, body_len = _concat_fields(parts, n)
    assert body_len.max() < 128
    wrapped = [
        _const([0x22], n),
        (body_len.astype(np.uint8)[:, None], np.ones(n, np.int64)),
        (np.zeros((n, 0), np.uint8), np.zeros(n, np.int64)),
    ]
    head, head_len = _concat_fields(wrapped, n)
    # Interleave 2-byte heads with bodies.
    total = head_len + body_len
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(total, out=offsets[1:])
    out = np.zeros(int(offsets[-1]), dtype=np.uint8)
    out[offsets[:-1]] = 0x22
    out[offsets[:-1] + 1] = body_len.astype(np.uint8)
    body_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(body_len, out=body_offsets[1:])
    dest = np.repeat(offsets[:-1] + 2 - body_offsets[:-1], body_len) + np.arange(len(body))
    out[dest] = body
    del head
    return out.tobytes()


def _field_bytes(field: int, payload: bytes) -> bytes:
    length = len(payload)
    varint = bytearray()
    while True:
        byte = length & 0x7F
        length >>= 7
        varint.append(byte | (0x80 if length else 0))
        if not length:
            break
    return bytes([(field << 3) | 2]) + bytes(varint) + payload


def synthetic_xspace_bytes(
    n_events: int,
    n_lines: int = 8,
    ops_per_step: int = 2000,
    n_names: int = 200,
    stat_every: int = 4,
    seed: int = 0,
    extra_stat_every: int = 0,
    base_ns: int = 1_700_000_000_000_000_000,
) -> bytes:
    """Serialized XSpace with about ``n_events`` events (see module docstring)."""
    rng = np.random.default_rng(seed)
    per_line = max(1, n_events // max(1, n_lines - 1))
    plane = XPlane(id=1, name="/host:CPU")
    names = ["train"] + [
        f"model/layer{k % 50}/op{k}:{['MatMul', 'Conv2D', 'Relu', 'Add', 'Cast'][k % 5]}"
        for k in range(n_names)
    ]
    for i, name in enumerate(names, start=1):
        plane.event_metadata[i].id = i
        plane.event_metadata[i].name = name
    for i, name in enumerate(["bytes", "step_num", "_r", "flops"], start=1):
        plane.stat_metadata[i].id = i
        plane.stat_metadata[i].name = name
    lines_bytes = []
    op_ns = 1000
    for line_index in range(n_lines):
        dur_ns = rng.integers(200, 900, size=per_line)
        start_ns = np.arange(per_line, dtype=np.int64) * op_ns
        meta = rng.integers(2, n_names + 2, size=per_line)
        has_stat = (np.arange(per_line) % stat_every) == 0
        values = rng.integers(1, 1 << 20, size=per_line)
        header = XPlane()  # reuse protobuf for the small line header fields
        line = header.lines.add()
        line.id, line.name = line_index + 1, f"thread-{line_index}"
        line.timestamp_ns = base_ns
        line.duration_ps = int(per_line * op_ns * 1000)
        line_head = line.SerializeToString()
        if line_index == 0:
            # The step markers get their own thread, like a driver loop with ops elsewhere.
            n_steps = max(1, per_line // ops_per_step)
            step_start = np.arange(n_steps, dtype=np.int64) * ops_per_step * op_ns
            step_events = _encode_events(
                np.ones(n_steps, np.int64),
                step_start * 1000,
                np.full(n_steps, ops_per_step * op_ns * 1000 - 1000),
                np.arange(n_steps),
                np.ones(n_steps, bool),
                2,
                [(3, np.ones(n_steps, np.int64), np.ones(n_steps, bool))],
            )
            lines_bytes.append(_field_bytes(3, line_head + step_events))
            continue
        extra = []
        if extra_stat_every > 0:
            flops = rng.integers(1, 1 << 30, size=per_line)
            extra.append((4, flops, (np.arange(per_line) % extra_stat_every) == 0))
        events = _encode_events(meta, start_ns * 1000, dur_ns * 1000, values, has_stat, 1, extra)
        lines_bytes.append(_field_bytes(3, line_head + events))
    plane_bytes = plane.SerializeToString() + b"".join(lines_bytes)
    space = XSpace(hostnames=["synthetic"])
    return _field_bytes(1, plane_bytes) + space.SerializeToString()


def real_density_xspace_bytes(n_events: int, seed: int = 0) -> bytes:
    """`synthetic_xspace_bytes` at the stat density of real TensorFlow captures: 1.5 stats per
    op event (every op ``bytes``, every second op ``flops``)."""
    return synthetic_xspace_bytes(n_events, stat_every=1, extra_stat_every=2, seed=seed)
