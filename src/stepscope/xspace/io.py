"""Reading and writing `.xplane.pb` files (raw or gzip-compressed), locally or through fsspec.

A profile the user gave us is never modified: writes go to new files, atomically. A profile
file of any format is read as an XSpace by `stepscope.xspace.formats.load_xspace` (its
format's reader; the formats import this module, so it cannot ask them, decision 990).
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

from stepscope import tmpfiles
from stepscope.errors import ProfileFormatError

# The byte readers' home is `raw_io` (see its docstring); their names stay importable from here.
from stepscope.xspace.raw_io import GZIP_MAGIC as GZIP_MAGIC
from stepscope.xspace.raw_io import GunzipStream as GunzipStream
from stepscope.xspace.raw_io import gunzip_bounded as gunzip_bounded
from stepscope.xspace.raw_io import is_url as is_url
from stepscope.xspace.raw_io import map_profile_bytes as map_profile_bytes
from stepscope.xspace.raw_io import read_profile_bytes as read_profile_bytes
from stepscope.xspace.raw_io import read_raw_bytes as read_raw_bytes

TYPE_CHECKING = False  # protobuf only where an XSpace message is parsed: not for reading bytes
if TYPE_CHECKING:
    from stepscope.xspace.proto.xplane_pb2 import XSpace


def parse_xspace(data: bytes, path: str | os.PathLike[str] = "<bytes>") -> XSpace:
    """Parse XSpace bytes, turning protobuf's errors into a `ProfileFormatError`."""
    from google.protobuf.message import DecodeError

    from stepscope.xspace.proto.xplane_pb2 import XSpace

    space = XSpace()
    try:
        space.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise ProfileFormatError(
            path,
            "not a valid XSpace profile (truncated or corrupt protobuf data)",
            "re-capture or copy the file again",
        ) from exc
    if not space.planes:
        raise ProfileFormatError(
            path, "is not an XSpace profile: it holds no planes", "expected a .xplane.pb file"
        )
    return space


def write_xspace(space: XSpace, path: str | os.PathLike[str], compress: bool = False) -> Path:
    """Write ``space`` to the local file ``path`` atomically (temp file + rename); gzip if
    ``compress``. A URL is refused (`ProfileFormatError`): as a local path it would create a
    directory named ``gs:``; URLs are written with `write_url`.

    Raises `OSError` subclasses with the failing path when the directory is not writable.
    """
    if is_url(path):
        raise ProfileFormatError(path, "is a URL, not a local path", "write it with write_url")
    data = space.SerializeToString()
    if compress:
        data = gzip.compress(data, compresslevel=6)
    return tmpfiles.write_bytes(path, data)


def write_url(url: str, data: bytes) -> None:
    """Write ``data`` as the object ``url`` through fsspec (its parents made as needed); object
    stores make an object visible only once it is complete."""
    try:
        import fsspec
    except ImportError as exc:
        raise ProfileFormatError(
            url, "is a URL but fsspec is not installed", "pip install fsspec"
        ) from exc
    try:
        filesystem, inner = fsspec.core.url_to_fs(url)
    except (ValueError, ImportError) as exc:
        raise ProfileFormatError(
            url, f"cannot open this URL: {exc}", "check the URL's scheme"
        ) from exc
    parent = inner.rsplit("/", 1)[0]
    if parent and parent != inner:
        filesystem.makedirs(parent, exist_ok=True)
    with filesystem.open(inner, "wb") as out:
        out.write(data)
