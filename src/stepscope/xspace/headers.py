"""XSpace / XPlane headers without protobuf, for importers that build columns directly.

`RawColumns` carries the small structures of a profile (hostnames, plane names, metadata
maps, plane stats) as protobuf messages when they come from an `.xplane.pb` file. The Kineto
importer builds its columns itself; giving it these plain classes instead (read through the
same attribute names: ``stat_metadata``, ``event_metadata``, ``stats``, ``WhichOneof``) keeps
protobuf (16-30 ms of CPU at import, 2.6 MB) off the PyTorch trace path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

HeaderValue = int | float | str | bytes


@dataclass(frozen=True)
class HeaderStat:
    """An XStat: ``which`` names the oneof field that holds ``value`` (``"int64_value"``...)."""

    metadata_id: int
    which: str
    value: HeaderValue

    def WhichOneof(self, group: str) -> str:  # protobuf's name: read as a message
        return self.which

    def __getattr__(self, name: str) -> Any:  # as protobuf's: the field's own type
        if name.endswith("_value") and name == self.which:
            return self.value
        raise AttributeError(name)


@dataclass(frozen=True)
class HeaderStatMetadata:
    id: int
    name: str


@dataclass(frozen=True)
class HeaderEventMetadata:
    id: int
    name: str
    display_name: str
    stats: list[HeaderStat] = field(default_factory=list)


@dataclass(frozen=True)
class PlaneHeader:
    """An XPlane without lines."""

    id: int
    name: str
    event_metadata: dict[int, HeaderEventMetadata]
    stat_metadata: dict[int, HeaderStatMetadata]
    stats: list[HeaderStat]


@dataclass(frozen=True)
class SpaceHeader:
    """An XSpace without planes."""

    hostnames: list[str]
    errors: list[str]
    warnings: list[str]
