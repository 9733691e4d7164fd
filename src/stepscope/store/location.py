"""Where the store lives and how its entries are named (the only place that decides).

Standard library only, and no pathlib at import: `stepscope.result_cache` reads its entries
through here before the CLI imports anything else.
"""

from __future__ import annotations

import os
import sys

from stepscope._version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

ENV_VAR = "STEPSCOPE_CACHE_DIR"


def root_dir() -> str:
    """``$STEPSCOPE_CACHE_DIR``, else the platform's user cache directory."""
    env = os.environ.get(ENV_VAR)
    if env:
        return env
    if sys.platform.startswith("linux"):
        # platformdirs' rule on Linux, without its import (25 ms, most of a cached answer).
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        return os.path.join(xdg if xdg.strip() else os.path.expanduser("~/.cache"), "stepscope")
    import platformdirs

    return str(platformdirs.user_cache_dir("stepscope"))


def root(cache_dir: Path | str | None = None) -> Path:
    """The store's directory: ``cache_dir`` when the caller was given one, else `root_dir`."""
    from pathlib import Path

    return Path(cache_dir) if cache_dir else Path(root_dir())


def key(kind: str, version: int | str, *identity: object) -> str:
    """The name of an entry of ``kind`` in format ``version`` derived from ``identity`` (content
    hashes, file signatures, tool names, options...). The stepscope release is part of it, so
    a new release never reads what an older one computed."""
    raw = repr((kind, version, __version__, identity))
    return _blake2b()(raw.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


def _blake2b() -> Callable[..., Any]:
    """BLAKE2b, CPython's own (`hashlib.blake2b` is that same one): importing `hashlib` loads
    OpenSSL too (3.6 MB, 2 ms of every command that keys an entry, a tenth of a kept
    answer's start); a Python built without it gets it from `hashlib`."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - CPython builds it unless told not to
        from hashlib import blake2b
    return blake2b


def entry_name(kind: str, name: str, suffix: str = "") -> str:
    """An entry's path below the root: ``<kind>/<name[:2]>/<name><suffix>`` (the two-letter
    fan-out keeps directories small on pods of thousands of hosts)."""
    return os.path.join(kind, name[:2], name + suffix)


def entry(kind: str, name: str, cache_dir: Path | str | None = None, suffix: str = "") -> Path:
    """The path of the entry ``name`` (a `key`) of ``kind`` under `root`."""
    return root(cache_dir) / entry_name(kind, name, suffix)


_code_stamp: str | None = None


def code_stamp() -> str:
    """Changes whenever stepscope's code does: version, where it is installed, and the count
    and newest mtime of its files (about 1 ms for 220 files). Part of the identity of entries
    that hold analysis results, so an edited checkout never reads what older code computed."""
    global _code_stamp
    if _code_stamp is None:
        newest, count = 0, 0
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for folder, dirs, files in os.walk(package):
            dirs[:] = [d for d in dirs if d not in ("static", "__pycache__")]
            for name in files:
                if name.endswith((".py", ".so", ".pyd")):
                    count += 1
                    newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime_ns)
        _code_stamp = f"{__version__}:{package}:{count}:{newest}"
    return _code_stamp
