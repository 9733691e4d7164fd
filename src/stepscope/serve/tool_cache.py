"""Computed tool outputs per (run, host, tool, options), kept while the profile files are unchanged.

The key says what was asked; the fingerprint (size and mtime of every host file involved) says
what it was computed from. A changed fingerprint recomputes; the ETag derives from both, so a
browser revalidating an unchanged result gets 304 without any computation. Concurrent requests
for the same key wait for one computation instead of repeating it.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import field
from typing import Any

from stepscope import __version__
from stepscope.records import record
from stepscope.serve.http import json_bytes
from stepscope.tools import output
from stepscope.tools.registry import ToolResult

Key = tuple[str, str, str, tuple[tuple[str, str], ...]]  # run, host, tool, sorted options


def make_key(run: str, host: str, tool: str, options: dict[str, str]) -> Key:
    return (run, host, tool, tuple(sorted(options.items())))


def etag_for(key: Key, fingerprint: str) -> str:
    digest = hashlib.sha1(repr((__version__, key, fingerprint)).encode("utf-8")).hexdigest()
    return f'"{digest[:24]}"'


@record(frozen=False)
class CachedTool:
    result: ToolResult
    fingerprint: str
    etag: str
    json: bytes
    _csv: bytes | None = field(default=None, repr=False)

    def csv(self) -> bytes:
        """The CSV form, made on first use (most requests only want JSON)."""
        if self._csv is None:
            try:
                self._csv = output.to_csv(self.result).encode("utf-8")
            except TypeError:
                raise ValueError("this tool has no CSV output") from None
        return self._csv

    @property
    def size_bytes(self) -> int:
        return len(self.json) + len(self._csv or b"")


class ToolCache:
    """An LRU of `CachedTool`s bounded by the bytes of their serialized forms."""

    def __init__(self, max_bytes: int = 256 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Key, CachedTool] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[Key, threading.Lock] = {}
        self.hits = 0
        self.misses = 0

    def peek(self, key: Key, fingerprint: str) -> CachedTool | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.fingerprint != fingerprint:
                return None
            self._entries.move_to_end(key)
            return entry

    def get(self, key: Key, fingerprint: str, compute: Callable[[], Any]) -> CachedTool:
        """The result for ``key``, computed (once, whoever asks) when stale or missing."""
        entry = self.peek(key, fingerprint)
        if entry is not None:
            self.hits += 1
            return entry
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            entry = self.peek(key, fingerprint)  # another request may have computed it meanwhile
            if entry is not None:
                self.hits += 1
                return entry
            self.misses += 1
            result = compute()
            entry = CachedTool(
                result, fingerprint, etag_for(key, fingerprint), json_bytes(output.to_json(result))
            )
            self._store(key, entry)
            return entry

    def _store(self, key: Key, entry: CachedTool) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            total = sum(e.size_bytes for e in self._entries.values())
            while total > self.max_bytes and len(self._entries) > 1:
                _, evicted = self._entries.popitem(last=False)
                total -= evicted.size_bytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
