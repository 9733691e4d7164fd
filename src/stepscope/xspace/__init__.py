"""The raw, XSpace-compatible trace: schema, builder, file I/O and importers."""

from stepscope.xspace.builder import LineBuilder, PlaneBuilder, Ref, XSpaceBuilder
from stepscope.xspace.io import load_xspace, read_profile_bytes, write_xspace
from stepscope.xspace.proto.xplane_pb2 import (
    XEvent,
    XEventMetadata,
    XLine,
    XPlane,
    XSpace,
    XStat,
    XStatMetadata,
)

__all__ = [
    "LineBuilder",
    "PlaneBuilder",
    "Ref",
    "XEvent",
    "XEventMetadata",
    "XLine",
    "XPlane",
    "XSpace",
    "XSpaceBuilder",
    "XStat",
    "XStatMetadata",
    "load_xspace",
    "read_profile_bytes",
    "write_xspace",
]
