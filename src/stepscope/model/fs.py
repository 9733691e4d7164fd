"""A thin file-system layer: local paths directly, URLs (``gs://``, ``s3://``, ``memory://``)
through fsspec when it is installed. Paths are handled as '/'-separated strings.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from typing import Any

from stepscope.errors import StepscopeError
from stepscope.xspace.io import is_url


def _fsspec(path: str) -> tuple[Any, str]:
    try:
        import fsspec
    except ImportError as exc:
        raise StepscopeError(f"{path}: reading URLs needs fsspec (pip install fsspec)") from exc
    try:
        filesystem, inner = fsspec.core.url_to_fs(path)
    except (ValueError, ImportError) as exc:  # an unknown protocol, a backend not installed
        raise StepscopeError(f"{path}: cannot open this URL: {exc}") from None
    return filesystem, inner


def normalize(path: str | os.PathLike[str]) -> str:
    text = str(path)
    if is_url(text):
        return text.rstrip("/")
    return os.path.abspath(os.path.expanduser(text.removeprefix("file://")))


def isdir(path: str) -> bool:
    if is_url(path):
        filesystem, inner = _fsspec(path)
        return bool(filesystem.isdir(inner))
    return os.path.isdir(path)


def isfile(path: str) -> bool:
    if is_url(path):
        filesystem, inner = _fsspec(path)
        return bool(filesystem.isfile(inner))
    return os.path.isfile(path)


def size(path: str) -> int:
    if is_url(path):
        filesystem, inner = _fsspec(path)
        return int(filesystem.size(inner) or 0)
    return os.path.getsize(path)


def signature(path: str) -> str:
    """Changes whenever the file changes: size and modification time (or etag)."""
    if is_url(path):
        filesystem, inner = _fsspec(path)
        info = filesystem.info(inner)
        stamp = (
            info.get("mtime") or info.get("LastModified") or info.get("etag") or info.get("created")
        )
        return f"{info.get('size')}:{stamp}"
    st = os.stat(path)
    return f"{st.st_size}:{st.st_mtime_ns}"


def _open_binary(path: str) -> Any:
    """A binary file object for a local path or a URL; the caller closes it."""
    if is_url(path):
        filesystem, inner = _fsspec(path)
        return filesystem.open(inner, "rb")
    return open(path, "rb")


def read_head(path: str, limit: int) -> bytes:
    """Up to ``limit`` bytes from the start of a file, decompressed when it ends in ``.gz``;
    b"" when the file cannot be read (the caller only sniffs what the file holds)."""
    try:
        with _open_binary(path) as handle:
            if path.endswith(".gz"):
                with gzip.GzipFile(fileobj=handle) as unzipped:
                    return unzipped.read(limit)
            return bytes(handle.read(limit))
    except (OSError, EOFError, zlib.error):
        return b""


def read_tail(path: str, limit: int) -> bytes:
    """Up to ``limit`` bytes from the end of a file, decompressed when it ends in ``.gz`` (the
    whole stream is inflated: about 0.4 s per 150 MB of text); b"" when it cannot be read."""
    try:
        with _open_binary(path) as handle:
            if path.endswith(".gz"):
                kept = b""
                with gzip.GzipFile(fileobj=handle) as unzipped:
                    while chunk := unzipped.read(1 << 20):
                        kept = (kept + chunk)[-limit:]
                return kept
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - limit))
            return bytes(handle.read(limit))
    except (OSError, EOFError, zlib.error):
        return b""


def join(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/{name}" if is_url(base) else os.path.join(base, name)


def relpath(path: str, root: str) -> str:
    if is_url(root):
        filesystem, inner_root = _fsspec(root)
        inner = filesystem._strip_protocol(path)
        rel = inner[len(inner_root.rstrip("/")) :].strip("/")
        return rel or "."
    return os.path.relpath(path, root).replace(os.sep, "/")


def walk(root: str) -> Iterator[tuple[str, list[str]]]:
    """(directory, file names) for every directory below root, sorted for stable output."""
    if is_url(root):
        filesystem, inner = _fsspec(root)
        for dirpath, _dirs, files in filesystem.walk(inner):
            yield filesystem.unstrip_protocol(dirpath), sorted(files)
        return
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        yield dirpath, sorted(filenames)
