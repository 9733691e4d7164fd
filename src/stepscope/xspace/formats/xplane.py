"""TensorFlow's XSpace (``<host>.xplane.pb[.gz]``), the format stepscope itself writes.

Host files live in TensorFlow's log-directory layout, ``plugins/profile/<run>/``, one per host,
named after it. Reading maps the file (the C decoder) or reads it, and decodes it into raw
columns (`stepscope.xspace.wire`); importing copies the XSpace as it is.
"""

from __future__ import annotations

import mmap
import os
import re

from stepscope.errors import ProfileFormatError
from stepscope.xspace.formats import InputFormat, Stage, base_name
from stepscope.xspace.io import map_profile_bytes, parse_xspace, read_profile_bytes
from stepscope.xspace.wire import RawColumns, accelerated, decode_columns

TYPE_CHECKING = False  # not typing's: see stepscope/__init__.py
if TYPE_CHECKING:
    from stepscope.xspace.proto.xplane_pb2 import XSpace

_XPLANE = re.compile(r"^(?:(.*)\.)?xplane\.pb(?:\.gz)?$")


def host_name(base: str) -> str:
    match = _XPLANE.match(base)
    if match:
        return match.group(1) or "localhost"
    for suffix in (".pb.gz", ".pb"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def decode_file(path: str | os.PathLike[str], threads: int | None = None) -> RawColumns:
    """The raw columns of an `.xplane.pb[.gz]` file. A local uncompressed file is memory-mapped
    for the C decoder (decision 70); the file's bytes are released before the model is built
    (peak memory)."""
    data = map_profile_bytes(path) if accelerated() else read_profile_bytes(path)
    try:
        return decode_bytes(data, str(path), threads)
    finally:
        if isinstance(data, mmap.mmap):
            data.close()


def decode_bytes(data: bytes | mmap.mmap, source: str, threads: int | None = None) -> RawColumns:
    """The raw columns of an XSpace's bytes; `ProfileFormatError` naming ``source`` when they
    are not one."""
    try:
        raw = decode_columns(data, source, threads)
    except ValueError as exc:
        raise ProfileFormatError(
            source,
            "not a valid XSpace profile (truncated or corrupt protobuf data)",
            "re-capture or copy the file again",
        ) from exc
    if not raw.plane_headers:
        raise ProfileFormatError(
            source, "is not an XSpace profile: it holds no planes", "expected a .xplane.pb file"
        )
    return raw


def _read(path: str, threads: int | None, stage: Stage) -> RawColumns:
    stage("reading", 0.0)
    stage("decoding", 0.2)  # the file is mapped, not read, when the C decoder is built
    return decode_file(path, threads)


def _to_xspace(path: str) -> tuple[XSpace, str]:
    return parse_xspace(read_profile_bytes(path), path), host_name(base_name(path))


FORMAT = InputFormat(
    name="xspace",
    title="XSpace profile",
    patterns=("*.xplane.pb[.gz]",),
    layout="session",
    host_file=lambda base: _XPLANE.match(base) is not None,
    claims=lambda base: _XPLANE.match(base) is not None or base.endswith((".pb", ".pb.gz")),
    host_name=host_name,
    read=_read,
    to_xspace=_to_xspace,
)
