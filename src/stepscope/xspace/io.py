"""Reading and writing `.xplane.pb` files (raw or gzip-compressed), locally or through fsspec.

A profile the user gave us is never modified: writes go to new files, atomically.
"""

from __future__ import annotations

import gzip
import os
import tempfile
import zlib
from pathlib import Path

from google.protobuf.message import DecodeError

from stepscope.errors import ProfileFormatError
from stepscope.xspace.proto.xplane_pb2 import XSpace

GZIP_MAGIC = b"\x1f\x8b"


def is_url(path: str | os.PathLike[str]) -> bool:
    """True for fsspec-style URLs such as ``gs://bucket/x`` or ``memory://x``."""
    return "://" in str(path) and not str(path).startswith("file://")


def read_raw_bytes(path: str | os.PathLike[str]) -> bytes:
    """Bytes of a local file or an fsspec URL, with a clear error when it cannot be read."""
    text = str(path)
    try:
        if is_url(text):
            try:
                import fsspec
            except ImportError as exc:
                raise ProfileFormatError(
                    text, "is a URL but fsspec is not installed", "pip install fsspec"
                ) from exc
            with fsspec.open(text, "rb") as handle:
                return bytes(handle.read())
        return Path(text.removeprefix("file://")).read_bytes()
    except FileNotFoundError as exc:
        raise ProfileFormatError(text, "no such file", "check the path") from exc
    except IsADirectoryError as exc:
        raise ProfileFormatError(text, "is a directory, not a profile file") from exc
    except PermissionError as exc:
        raise ProfileFormatError(text, "permission denied", "check the file's permissions") from exc


def read_profile_bytes(path: str | os.PathLike[str]) -> bytes:
    """The uncompressed bytes of a profile file (gzip is detected by its magic number)."""
    data = read_raw_bytes(path)
    if not data:
        raise ProfileFormatError(
            path, "file is empty", "the capture may have failed; capture again"
        )
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise ProfileFormatError(
                path, "gzip data is truncated or corrupt", "copy the file again"
            ) from exc
        if not data:
            raise ProfileFormatError(path, "file is empty after decompression")
    return data


def parse_xspace(data: bytes, path: str | os.PathLike[str] = "<bytes>") -> XSpace:
    """Parse XSpace bytes, turning protobuf's errors into a `ProfileFormatError`."""
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


def load_xspace(path: str | os.PathLike[str]) -> XSpace:
    """Read an `.xplane.pb` (optionally gzip-compressed) into an `XSpace` message."""
    return parse_xspace(read_profile_bytes(path), path)


def write_xspace(space: XSpace, path: str | os.PathLike[str], compress: bool = False) -> Path:
    """Write ``space`` to ``path`` atomically (temp file + rename); gzip if ``compress``.

    Raises `OSError` subclasses with the failing path when the directory is not writable.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = space.SerializeToString()
    if compress:
        data = gzip.compress(data, compresslevel=6)
    handle, tmp_name = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return target
