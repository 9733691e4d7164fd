"""The bytes of a profile file: local or through fsspec, gzip inflated within the profile
limit. No protobuf and no other stepscope.xspace module here: every reader of profile bytes
(the XSpace reader in `io`, the Kineto importer) shares these without importing the other
(an import cycle through `io`'s deferred-save branch otherwise: `io` -> `deferred` ->
`torch_trace` -> `kineto.importer` -> `io`).
"""

from __future__ import annotations

import io
import mmap
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, cast

from stepscope import limits
from stepscope.errors import ProfileFormatError, empty_file

GZIP_MAGIC = b"\x1f\x8b"


def is_url(path: str | os.PathLike[str]) -> bool:
    """True for fsspec-style URLs such as ``gs://bucket/x`` or ``memory://x``."""
    return "://" in str(path) and not str(path).startswith("file://")


def read_raw_bytes(path: str | os.PathLike[str]) -> bytes:
    """Bytes of a local file or an fsspec URL, with a clear error when it cannot be read."""
    text = str(path)
    limit = limits.max_profile_bytes()
    try:
        if is_url(text):
            try:
                import fsspec
            except ImportError as exc:
                raise ProfileFormatError(
                    text, "is a URL but fsspec is not installed", "pip install fsspec"
                ) from exc
            try:
                opened = fsspec.open(text, "rb")
            except ValueError as exc:  # unknown protocol
                raise ProfileFormatError(
                    text, f"cannot open this URL: {exc}", "check the URL's scheme"
                ) from exc
            with opened as handle:
                data = bytes(handle.read(limit + 1))
        else:
            local = Path(text.removeprefix("file://"))
            size = local.stat().st_size
            if size > limit:
                raise limits.ProfileTooLargeError(text, "this file", size, limit)
            data = local.read_bytes()
        if len(data) > limit:
            raise limits.ProfileTooLargeError(text, "this file", None, limit)
        return data
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
        raise empty_file(path)
    if data[:2] == GZIP_MAGIC:
        data, damaged = gunzip_bounded(data, path)
        if damaged:
            raise ProfileFormatError(
                path, "gzip data is truncated or corrupt", "copy the file again"
            )
        if not data:
            raise ProfileFormatError(path, "file is empty after decompression")
    return data


def map_profile_bytes(path: str | os.PathLike[str]) -> bytes | mmap.mmap:
    """`read_profile_bytes`, except that a local uncompressed file is memory-mapped read-only
    instead of copied into the heap (for the C decoder, which reads it once: at 20M events
    about 0.3 s and 560 MB of heap saved). Close the mapping once decoded."""
    text = str(path)
    if not is_url(text):
        try:
            with open(text.removeprefix("file://"), "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size and handle.read(2) != GZIP_MAGIC:
                    limit = limits.max_profile_bytes()
                    if size > limit:
                        raise limits.ProfileTooLargeError(text, "this file", size, limit)
                    return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            pass  # the plain read reports it, in its words
    return read_profile_bytes(path)


def gunzip_bounded(
    raw: bytes, path: object, limit: int | None = None, chunk: int = 1 << 20
) -> tuple[bytes, bool]:
    """Inflate gzip data (every member) without ever holding more than the profile limit.

    Returns the bytes and whether the stream was truncated or corrupt (the bytes are then
    what preceded the damage). Raises `ProfileTooLargeError` as soon as the inflated size
    passes ``limit`` (default `limits.max_profile_bytes()`): a gzip bomb costs the limit, not
    its ratio. The result is a bytearray (no copy of up to the limit's size), used as bytes.
    """
    stream = GunzipStream(raw, path, limit, chunk)
    out = bytearray()
    for piece in stream.pieces():
        out += piece
    return _as_bytes(out), stream.damaged


class GunzipStream:
    """gzip data (every member, zero padding between members allowed) inflated piece by
    piece, bounded as `gunzip_bounded`: `readinto` hands the text to a reader that never
    holds it whole (the Kineto scanner), and the compressed bytes are read a chunk at a time
    when ``source`` is a file. After the last piece, ``damaged`` tells whether the stream was
    truncated or corrupt (the pieces are then what preceded the damage)."""

    def __init__(
        self,
        source: bytes | BinaryIO,
        path: object,
        limit: int | None = None,
        chunk: int = 1 << 20,
    ) -> None:
        self._read = (io.BytesIO(source) if isinstance(source, bytes) else source).read
        self.path, self.chunk = path, chunk
        self.limit = limits.max_profile_bytes() if limit is None else limit
        self.damaged = False
        self.inflated = 0
        self._pieces = self.pieces()
        self._pending = memoryview(b"")

    def pieces(self) -> Iterator[bytes]:
        read, chunk = self._read, self.chunk
        data = read(chunk)  # compressed bytes not yet given to an inflater
        while data:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            try:
                ended = False  # the input, inside this member: what zlib holds comes out
                while not inflater.eof:
                    if inflater.unconsumed_tail:
                        feed = inflater.unconsumed_tail
                    elif not ended:
                        feed, data = data or read(chunk), b""
                        ended = not feed
                    piece = inflater.decompress(feed, chunk)
                    if ended and not piece:
                        break  # the stream ends inside a member
                    self.inflated += len(piece)
                    if self.inflated > self.limit:
                        raise self._too_large()
                    yield piece
            except zlib.error:
                self.damaged = True
                return
            if not inflater.eof:
                self.damaged = True
                return
            data = inflater.unused_data.lstrip(b"\0")  # the next member starts there,
            while not data:  # after any zero padding
                more = read(chunk)
                if not more:
                    return
                data = more.lstrip(b"\0")
            if len(data) < 2:
                data += read(chunk)  # a magic number cut by a read
            if data[:2] != GZIP_MAGIC:
                return  # trailing bytes that are not gzip are ignored

    def _too_large(self) -> limits.ProfileTooLargeError:
        profile_limit = limits.max_profile_bytes()
        if self.limit >= profile_limit:
            return limits.ProfileTooLargeError(
                self.path, "decompressing this file", None, self.limit
            )
        # the text's bound is a share of the limit (parsing needs more than the text): say so,
        # and name the limit the user set
        text = limits.human_bytes(self.limit)
        return limits.ProfileTooLargeError(
            self.path,
            f"decompressing this file (over {text} of text) and parsing it",
            None,
            profile_limit,
        )

    def readinto(self, buffer: memoryview) -> int:
        """Fill ``buffer`` with the next inflated bytes: their count, 0 at the end."""
        filled = 0
        while filled < len(buffer):
            if not self._pending:
                piece = next(self._pieces, None)
                if piece is None:
                    break
                self._pending = memoryview(piece)
            n = min(len(buffer) - filled, len(self._pending))
            buffer[filled : filled + n] = self._pending[:n]
            self._pending = self._pending[n:]
            filled += n
        return filled


def _as_bytes(data: bytearray) -> bytes:
    """The inflated data without a copy (up to the limit's size): a bytearray reads like bytes
    everywhere it is used (slicing, count, decode, the buffer protocol)."""
    return cast(bytes, data)
