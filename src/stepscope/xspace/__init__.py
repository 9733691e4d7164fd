"""The raw, XSpace-compatible trace: schema, builder, file I/O and importers.

The names below are bound on first use: they need protobuf (16-30 ms of CPU, 2.6 MB), which
the Kineto JSON path never touches (`wire`'s decoders import it when an XSpace is read).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see stepscope/__init__.py
if TYPE_CHECKING:
    from stepscope.xspace.builder import LineBuilder, PlaneBuilder, Ref, XSpaceBuilder
    from stepscope.xspace.formats import load_xspace
    from stepscope.xspace.io import read_profile_bytes, write_xspace
    from stepscope.xspace.proto.xplane_pb2 import (
        XEvent,
        XEventMetadata,
        XLine,
        XPlane,
        XSpace,
        XStat,
        XStatMetadata,
    )

_HOMES = {
    "stepscope.xspace.builder": ("LineBuilder", "PlaneBuilder", "Ref", "XSpaceBuilder"),
    "stepscope.xspace.formats": ("load_xspace",),
    "stepscope.xspace.io": ("read_profile_bytes", "write_xspace"),
    "stepscope.xspace.proto.xplane_pb2": (
        "XEvent",
        "XEventMetadata",
        "XLine",
        "XPlane",
        "XSpace",
        "XStat",
        "XStatMetadata",
    ),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

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


def __getattr__(name: str) -> object:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'stepscope.xspace' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME_OF})
