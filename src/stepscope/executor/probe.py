"""What `stepscope doctor` asks each worker (and this process): versions, whether it can open
a run's files and write its caches, its memory, its malloc setting and where its HTTP server
listens. Runs inside the worker (``Client.run``): standard library and what stepscope
already imports, so a broken worker still answers."""

from __future__ import annotations

import os
import platform
import tempfile
from typing import Any

from stepscope._version import __version__
from stepscope.executor import malloc
from stepscope.executor.worker import mapped, path_map, unreadable_reason
from stepscope.store import location

MAX_FILES = 256  # files of the run each worker opens (the first ones, in run order)


def _version(module: str) -> str:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # not installed, or no metadata
        return ""


def _writable(folder: str) -> str:
    """Why this process cannot write a file in ``folder`` ("" when it can)."""
    try:
        os.makedirs(folder, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".stepscope-doctor-", dir=folder)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        return exc.strerror or str(exc)
    return ""


def _dashboard(worker: Any) -> str:
    """The address the worker's HTTP server (dashboard, /health, /metrics) listens on."""
    server = getattr(worker, "http_server", None)
    if server is None or getattr(server, "port", None) is None:
        return ""
    return f"{getattr(server, 'address', '') or '0.0.0.0'}:{server.port}"


def probe(
    paths: list[str], driver_cache: str, marker: str, dask_worker: Any = None
) -> dict[str, Any]:
    """This process's answers. ``paths``: the run's files as the driver names them;
    ``driver_cache``: the driver's cache directory, where it wrote the file ``marker``;
    ``dask_worker``: the worker (``Client.run`` passes it), None in the driver."""
    worker = dask_worker
    unreadable = []
    for path in paths[:MAX_FILES]:
        reason = unreadable_reason(mapped(path))
        if reason:
            unreadable.append((mapped(path), reason))
    own_cache = location.root_dir()
    try:
        import psutil

        memory_total = int(psutil.virtual_memory().total)
    except ImportError:
        memory_total = 0
    memory_limit = int(
        (getattr(worker, "memory_manager", None) and worker.memory_manager.memory_limit) or 0
    )
    return {
        "stepscope": __version__,
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "distributed": _version("distributed"),
        "host": platform.node(),
        "checked": min(len(paths), MAX_FILES),
        "unreadable": unreadable,
        "path_map": path_map(),
        "own_cache": own_cache,
        "own_cache_error": _writable(os.path.join(own_cache, "summaries")),
        "sees_driver_cache": os.path.exists(os.path.join(driver_cache, marker)),
        # written only where it exists already: a check must not make directories there
        "driver_cache_error": _writable(driver_cache)
        if os.path.isdir(driver_cache)
        else "no such directory",
        "memory_total": memory_total,
        "memory_limit": memory_limit,
        "threads": int((getattr(worker, "state", None) and worker.state.nthreads) or 1),
        "malloc": malloc.setting(),
        "malloc_trim": os.environ.get(malloc.DASK_TRIM_ENV, ""),
        "malloc_kept": malloc.enabled(),
        "dashboard": _dashboard(worker) if worker is not None else "",
    }
