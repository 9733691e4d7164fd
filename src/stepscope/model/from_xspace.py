"""XSpace -> columnar `Profile`.

The heavy lifting (walking millions of events) is done by `stepscope.xspace.wire`; here the
plane-local metadata ids are mapped to profile-wide rows and interned names with vectorized
lookups, picoseconds become nanoseconds, and lines are sorted by start time if a writer left
them unsorted.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from stepscope import limits
from stepscope.errors import ProfileFormatError
from stepscope.limits import TIME_LIMIT_NS, TIME_LIMIT_TEXT
from stepscope.model.id_map import lookup, map_ids
from stepscope.model.profile import Line, Plane, Profile, PyStat, Stats
from stepscope.model.strings import StringTable
from stepscope.xspace import formats
from stepscope.xspace.formats.xplane import decode_bytes
from stepscope.xspace.wire import (
    KIND_BYTES,
    KIND_REF,
    KIND_STR,
    RawColumns,
    _stat_value,
)

TYPE_CHECKING = False  # the messages are annotations only: the columnar decoder needs no protobuf
if TYPE_CHECKING:
    from stepscope.xspace.headers import HeaderStat, PlaneHeader
    from stepscope.xspace.proto.xplane_pb2 import XPlane, XSpace, XStat

PS_PER_NS = 1000


def load_profile(
    path: str | os.PathLike[str], hostname: str | None = None, threads: int | None = None
) -> Profile:
    """Read a profile file into a `Profile` by its format's reader (`formats.of_file`: an
    `.xplane.pb[.gz]`, a Kineto trace, a deferred PyTorch save merged...; ``threads``:
    decoding workers, default ``$STEPSCOPE_THREADS``). No cache: `stepscope.model.load`'s
    `open_file` is the cached read."""
    text = os.fspath(path)
    raw = formats.of_file(text).read(text, threads, _quiet)
    return profile_from_columns(raw, str(path), hostname)


def _quiet(text: str, fraction: float) -> None:
    """A read's stage, said to no one."""


def profile_from_xspace(
    space: XSpace, source: str = "<memory>", hostname: str | None = None
) -> Profile:
    return profile_from_bytes(space.SerializeToString(), source=source, hostname=hostname)


def profile_from_bytes(
    data: bytes, source: str = "<bytes>", hostname: str | None = None
) -> Profile:
    return profile_from_columns(decode_bytes(data, source), source, hostname)


def _stat_python(stat: XStat | HeaderStat, plane: XPlane | PlaneHeader) -> PyStat:
    which = stat.WhichOneof("value")
    if which is None:
        return None
    if which == "ref_value":
        ref = plane.stat_metadata.get(stat.ref_value)
        return ref.name if ref is not None else ""
    value: PyStat = getattr(stat, which)
    return value


def profile_from_columns(raw: RawColumns, source: str, hostname: str | None) -> Profile:
    _check_string_memory(raw, source)
    strings = StringTable(s.decode("utf-8", "surrogateescape") for s in raw.strings)
    intern = strings.intern
    empty_id = intern("")

    # Lines and planes (few): plain Python.
    planes: list[Plane] = []
    lines: list[Line] = []
    # Lines of each plane, found in one pass (a crafted file may hold 100,000s of planes).
    lines_of_plane: list[list[int]] = [[] for _ in raw.plane_headers]
    for line_index, raw_line in enumerate(raw.lines):
        lines_of_plane[raw_line.plane].append(line_index)
    for index, header in enumerate(raw.plane_headers):
        plane_lines = [raw.lines[i] for i in lines_of_plane[index]]
        stats = {
            (
                header.stat_metadata[s.metadata_id].name
                if s.metadata_id in header.stat_metadata
                else str(s.metadata_id)
            ): _stat_python(s, header)
            for s in header.stats
        }
        planes.append(Plane(index, header.id, header.name, stats, len(lines), len(plane_lines)))
        for line in plane_lines:
            lines.append(
                Line(
                    len(lines),
                    index,
                    line.id,
                    line.display_id,
                    line.name,
                    line.display_name,
                    line.timestamp_ns,
                    line.duration_ps,
                    line.first_event,
                    line.event_count,
                )
            )

    # Event metadata: one profile-wide row per (plane, id), sorted by id within each plane so
    # plane-local ids map to rows with searchsorted.
    meta_plane: list[int] = []
    meta_id: list[int] = []
    meta_name: list[int] = []
    meta_display: list[int] = []
    meta_stat_rows: list[tuple[int, int, int]] = []  # key, kind, value
    meta_stat_count: list[int] = []
    plane_meta_base: list[int] = []
    # Stat metadata: plane-local id -> string id of the stat name, also sorted per plane.
    stat_keys: list[tuple[np.ndarray, np.ndarray]] = []
    for index, header in enumerate(raw.plane_headers):
        ids = np.array(sorted(header.stat_metadata), dtype=np.int64)
        names = np.array(
            [intern(header.stat_metadata[i].name) for i in ids.tolist()], dtype=np.int32
        )
        stat_keys.append((ids, names))
        plane_meta_base.append(len(meta_id))
        for event_id in sorted(header.event_metadata):
            meta = header.event_metadata[event_id]
            meta_plane.append(index)
            meta_id.append(event_id)
            meta_name.append(intern(meta.name))
            meta_display.append(intern(meta.display_name) if meta.display_name else empty_id)
            for stat in meta.stats:
                key = header.stat_metadata.get(stat.metadata_id)
                value = _stat_python(stat, header)
                meta_stat_rows.append(
                    _encode_meta_stat(
                        strings, key.name if key else str(stat.metadata_id), value, stat
                    )
                )
            meta_stat_count.append(len(meta.stats))
    plane_meta_base.append(len(meta_id))

    n = raw.n_events
    meta_id_arr = np.array(meta_id, dtype=np.int64)
    meta_name_arr = np.array(meta_name, dtype=np.int32)

    # Events: map plane-local metadata ids to rows, plane by plane (events of a plane are a
    # contiguous range because the file nests events inside lines inside planes).
    event_meta = np.zeros(n, dtype=np.int32)
    st_key = np.zeros(len(raw.st_meta), dtype=np.int32)
    st_value = raw.st_value
    for index in range(len(raw.plane_headers)):
        plane_line_idx = lines_of_plane[index]
        if not plane_line_idx:
            continue
        ev_lo = raw.lines[plane_line_idx[0]].first_event
        last = raw.lines[plane_line_idx[-1]]
        ev_hi = last.first_event + last.event_count
        base, top = plane_meta_base[index], plane_meta_base[index + 1]
        event_meta[ev_lo:ev_hi] = map_ids(
            raw.ev_meta[ev_lo:ev_hi],
            meta_id_arr[base:top],
            base,
            _missing_meta(
                strings, meta_plane, meta_id, meta_name, meta_display, meta_stat_count, index
            ),
        )
        st_lo, st_hi = int(raw.ev_stat_start[ev_lo]), int(raw.ev_stat_start[ev_hi])
        ids, names = stat_keys[index]
        unknown = intern("<unknown stat>")  # here: string ids in the order they always had
        st_key[st_lo:st_hi] = lookup(raw.st_meta[st_lo:st_hi], ids, names, unknown)
        # REF values point at stat metadata names: resolve them to string ids.
        refs = np.flatnonzero(raw.st_kind[st_lo:st_hi] == KIND_REF) + st_lo
        if len(refs) and not len(names):  # REF stats in a plane without stat metadata
            st_value[refs] = empty_id
            raw.st_kind[refs] = KIND_STR
        elif len(refs):
            st_value[refs] = lookup(st_value[refs], ids, names, empty_id)
            raw.st_kind[refs] = KIND_STR
    # Metadata rows may have grown (events referring to ids with no metadata entry).
    meta_name_arr = np.array(meta_name, dtype=np.int32)

    # Times: ps offsets -> absolute ns, in place to keep peak memory low.
    # Mapped above (8 bytes per event and per stat): freed before more columns appear.
    raw.ev_meta = raw.st_meta = np.zeros(0, np.int64)
    start_ns = raw.ev_offset_ps
    start_ns //= PS_PER_NS
    dur_ns = raw.ev_duration_ps
    dur_ns //= PS_PER_NS
    _check_times(raw, start_ns, dur_ns, source)
    for line in raw.lines:  # per line, in place: no event-sized temporary
        start_ns[line.first_event : line.first_event + line.event_count] += line.timestamp_ns
    name = meta_name_arr[event_meta] if n else np.zeros(0, np.int32)

    meta_stat_start = np.zeros(len(meta_id) + 1, dtype=np.int64)
    np.cumsum(meta_stat_count, out=meta_stat_start[1:])
    meta_stats_arr = np.array(meta_stat_rows, dtype=np.int64).reshape(-1, 3)
    profile = Profile(
        hostname=hostname or (raw.space_header.hostnames[0] if raw.space_header.hostnames else ""),
        source=source,
        strings=strings,
        planes=planes,
        lines=lines,
        line=raw.ev_line,
        meta=event_meta,
        name=name,
        start_ns=start_ns,
        dur_ns=dur_ns,
        stat_start=raw.ev_stat_start,
        stats=Stats(st_key, raw.st_kind, st_value),
        meta_plane=np.array(meta_plane, dtype=np.int32),
        meta_id=np.array(meta_id, dtype=np.int64),
        meta_name=meta_name_arr,
        meta_display_name=np.array(meta_display, dtype=np.int32),
        meta_stat_start=meta_stat_start,
        meta_stats=Stats(
            meta_stats_arr[:, 0].astype(np.int32),
            meta_stats_arr[:, 1].astype(np.int8),
            meta_stats_arr[:, 2].copy(),
        ),
        errors=list(raw.space_header.errors),
        warnings=list(raw.space_header.warnings),
    )
    sort_lines_by_start(profile)
    return profile


# A decoded str takes its text's bytes (or up to 4x for non-ASCII text; the surrogateescape
# decoding of invalid UTF-8 is the same size) plus the object's header.
STR_OVERHEAD_BYTES = 64


def _check_string_memory(raw: RawColumns, source: str) -> None:
    """The decoded strings count against the profile's memory bound, beside the columns the
    decoder counted: a stat holding a 1 GiB string took 3 GB under a 1.5 GB bound (the
    decoder's copy and the decoded str on top of the file)."""
    text = sum(map(len, raw.strings))
    if text < 1 << 20:
        return  # the usual case: names, a few megabytes at most, within the decoder's count
    columns = sum(
        a.nbytes
        for a in (
            raw.ev_meta, raw.ev_offset_ps, raw.ev_duration_ps, raw.ev_stat_start,
            raw.ev_line, raw.st_meta, raw.st_kind, raw.st_value,
        )
    )  # fmt: skip
    needed = columns + 2 * text + STR_OVERHEAD_BYTES * len(raw.strings)
    limits.check(
        source,
        f"decoding its {len(raw.strings):,} strings ({limits.human_bytes(text)} of text) "
        "beside its columns",
        needed,
    )


def _check_times(raw: RawColumns, offset_ns: np.ndarray, dur_ns: np.ndarray, source: str) -> None:
    """The time policy (`limits.TIME_LIMIT_NS`, decision 101): every event's start and end
    within +-2**62 ns, or the file is refused naming the line (its times would wrap around
    in int64 sums). Offsets and durations in ns are below 2**54 (int64 picoseconds / 1000), so
    only a line whose timestamp is beyond 2**61 needs its events looked at."""
    for line in raw.lines:
        if abs(line.timestamp_ns) < 1 << 61 or not line.event_count:
            continue
        lo, hi = line.first_event, line.first_event + line.event_count
        first = line.timestamp_ns + int(offset_ns[lo:hi].min())
        last = line.timestamp_ns + int((offset_ns[lo:hi] + np.maximum(dur_ns[lo:hi], 0)).max())
        if first <= -TIME_LIMIT_NS or last >= TIME_LIMIT_NS:
            edge = first if first <= -TIME_LIMIT_NS else last
            raise ProfileFormatError(
                source,
                f"line {line.name!r} has events at {edge / 1e9:.0f} s from the clock's zero, "
                f"beyond the {TIME_LIMIT_TEXT} that stepscope's int64 nanoseconds allow",
                "the file is damaged, or its writer's clock was wrong",
            )


def _missing_meta(
    strings: StringTable,
    meta_plane: list[int],
    meta_id: list[int],
    meta_name: list[int],
    meta_display: list[int],
    meta_stat_count: list[int],
    plane: int,
) -> Callable[[int], int]:
    """Adds a metadata row named after the id for events whose metadata is missing."""

    def add(event_meta_id: int) -> int:
        meta_plane.append(plane)
        meta_id.append(event_meta_id)
        meta_name.append(strings.intern(f"<metadata {event_meta_id}>"))
        meta_display.append(strings.intern(""))
        meta_stat_count.append(0)
        return len(meta_id) - 1

    return add


def _encode_meta_stat(
    strings: StringTable, key: str, value: PyStat, stat: XStat | HeaderStat
) -> tuple[int, int, int]:

    which = stat.WhichOneof("value")
    if which == "ref_value":
        return strings.intern(key), KIND_STR, strings.intern(str(value))
    if which in ("str_value", "bytes_value"):
        text = value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)
        kind = KIND_STR if which == "str_value" else KIND_BYTES
        return strings.intern(key), kind, strings.intern(text)
    kind, encoded = _stat_value(stat, {}, [])
    return strings.intern(key), kind, encoded


def sort_lines_by_start(profile: Profile) -> None:
    """Sort events by start time within each line (stable), moving their stats along.

    Writers almost always emit lines sorted; only the lines that are not get reordered, one at
    a time, so the extra memory is that of the largest unsorted line.
    """
    start = profile.start_ns
    for line in profile.lines:
        lo, hi = line.first_event, line.first_event + line.event_count
        if hi - lo < 2 or not np.any(start[lo + 1 : hi] < start[lo : hi - 1]):
            continue
        order = np.argsort(start[lo:hi], kind="stable") + lo
        stat_lo, stat_hi = int(profile.stat_start[lo]), int(profile.stat_start[hi])
        counts = np.diff(profile.stat_start[lo : hi + 1])[order - lo]
        new_start = np.zeros(hi - lo + 1, dtype=np.int64)
        np.cumsum(counts, out=new_start[1:])
        new_start += stat_lo
        src = profile.stat_start[order]
        rows = np.repeat(src - new_start[:-1], counts) + np.arange(stat_lo, stat_hi)
        for table in (profile.stats.key, profile.stats.kind, profile.stats.value):
            table[stat_lo:stat_hi] = table[rows]
        for column in (profile.line, profile.meta, profile.name, profile.start_ns, profile.dur_ns):
            column[lo:hi] = column[order]
        profile.stat_start[lo:hi] = new_start[:-1]
    profile.__dict__.pop("_stat_rows", None)
