"""XSpace / XPlane headers without protobuf.

`RawColumns` carries the small structures of a profile (hostnames, plane names, metadata
maps, plane stats) as these plain classes, read through protobuf's attribute names
(``stat_metadata``, ``event_metadata``, ``stats``, ``WhichOneof``): the Kineto importer
builds them itself and the C decoder parses them from an `.xplane.pb` file, which keeps
protobuf (11-30 ms of CPU at import, 2.6 MB) off both paths. The pure-Python decoder (and a
C module built before the header parsers) converts protobuf's messages to them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field
from typing import Any

from stepscope.records import record

HeaderValue = int | float | str | bytes


@record
class HeaderStat:
    """An XStat: ``which`` names the oneof field that holds ``value`` (``"int64_value"``...)."""

    metadata_id: int
    which: str  # "" when the stat holds no value
    value: HeaderValue | None

    def WhichOneof(self, group: str) -> str | None:  # protobuf's name: read as a message
        return self.which or None

    def __getattr__(self, name: str) -> Any:  # as protobuf's: the field's own type
        if name.endswith("_value") and name == self.which:
            return self.value
        raise AttributeError(name)


@record
class HeaderStatMetadata:
    """A stat metadata entry of a plane header: id and name."""

    id: int
    name: str


@record
class HeaderEventMetadata:
    """An event metadata entry of a plane header: id, names and its stats."""

    id: int
    name: str
    display_name: str
    stats: list[HeaderStat] = field(default_factory=list)


@record
class PlaneHeader:
    """An XPlane without lines."""

    id: int
    name: str
    event_metadata: dict[int, HeaderEventMetadata]
    stat_metadata: dict[int, HeaderStatMetadata]
    stats: list[HeaderStat]


@record
class SpaceHeader:
    """An XSpace without planes."""

    hostnames: list[str]
    errors: list[str]
    warnings: list[str]


# XStat's oneof fields by number, as the C parser reports them (0: none).
_ONEOF = {2: "double_value", 3: "uint64_value", 4: "int64_value", 5: "str_value"}
_ONEOF.update({6: "bytes_value", 7: "ref_value"})


def _stats(rows: Iterable[tuple[int, int, HeaderValue | None]]) -> list[HeaderStat]:
    return [HeaderStat(meta, _ONEOF.get(number, ""), value) for meta, number, value in rows]


def space_header_of(parsed: tuple[list[str], list[str], list[str]]) -> SpaceHeader:
    """From `_fastwire.space_header`'s tuple."""
    hostnames, errors, warnings = parsed
    return SpaceHeader(hostnames, errors, warnings)


def plane_header_of(parsed: tuple[Any, ...]) -> PlaneHeader:
    """From `_fastwire.plane_header`'s tuple (a later map entry replaces an earlier one with
    the same key, as in protobuf)."""
    plane_id, name, events, stat_metadata, stats = parsed
    return PlaneHeader(
        plane_id,
        name,
        {key: HeaderEventMetadata(i, n, d, _stats(s)) for key, i, n, d, s in events},
        {key: HeaderStatMetadata(i, n) for key, i, n in stat_metadata},
        _stats(stats),
    )


def _message_stats(stats: Iterable[Any]) -> list[HeaderStat]:
    out = []
    for stat in stats:
        which = stat.WhichOneof("value")
        out.append(
            HeaderStat(stat.metadata_id, which or "", getattr(stat, which) if which else None)
        )
    return out


def space_header_from_message(space: Any) -> SpaceHeader:
    """From a parsed XSpace message (its planes are not read)."""
    return SpaceHeader(list(space.hostnames), list(space.errors), list(space.warnings))


def plane_header_from_message(plane: Any) -> PlaneHeader:
    """From a parsed XPlane message (its lines are not read)."""
    return PlaneHeader(
        plane.id,
        plane.name,
        {
            key: HeaderEventMetadata(m.id, m.name, m.display_name, _message_stats(m.stats))
            for key, m in plane.event_metadata.items()
        },
        {key: HeaderStatMetadata(m.id, m.name) for key, m in plane.stat_metadata.items()},
        _message_stats(plane.stats),
    )
