"""The log-directory layout, in one place: where runs and host files live.

TensorFlow's layout, which TensorBoard, XProf and stepscope all read and write:
``<logdir>/plugins/profile/<run>/<host>.xplane.pb``. A run is named by the local time it
started (``YYYY_MM_DD_HH_MM_SS``); a host file by the host name with ``:``, ``/`` and ``\\``
replaced by ``_`` (a worker ``localhost:6009`` writes ``localhost_6009.xplane.pb``).

Standard library only, so capture (writing runs) and model (finding them) share it.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from stepscope.errors import StepscopeError

PROFILE_DIRS = ("plugins", "profile")  # <logdir>/plugins/profile/<run>/
HOST_FILE_SUFFIX = ".xplane.pb"
# a capture's host file when its PyTorch trace is kept to be merged when read (decision 910,
# `stepscope.xspace.deferred`): the host's name is taken by either file
DEFERRED_HOST_SUFFIX = ".deferred.pb"
# The host selector that means every host of a run (XProf's name for it).
ALL_HOSTS = "ALL_HOSTS"


def profile_root(logdir: str | os.PathLike[str]) -> Path:
    """``<logdir>/plugins/profile``, where TensorFlow and stepscope keep runs."""
    return Path(logdir).joinpath(*PROFILE_DIRS)


def is_run_dir(parts: list[str]) -> bool:
    """Whether a path split into its parts is ``.../plugins/profile/<run>``."""
    return parts[-3:-1] == list(PROFILE_DIRS)


def default_hostname() -> str:
    import socket  # here: most readers of a log directory never name a host (3 ms at import)

    return socket.gethostname() or "localhost"


def run_name_for(start_wall_ns: int) -> str:
    """TensorFlow's run directory name: local time ``YYYY_MM_DD_HH_MM_SS``."""
    return time.strftime("%Y_%m_%d_%H_%M_%S", time.localtime(start_wall_ns / 1e9))


def host_file_name(hostname: str) -> str:
    """A host's profile file name: ``localhost:6009`` -> ``localhost_6009.xplane.pb``."""
    # Separators and control characters (a NUL from a remote worker's answer) become "_";
    # 200 characters keep the name within every file system's limit.
    safe = re.sub(r"[:/\\\x00-\x1f\x7f]", "_", hostname)[:200] or "localhost"
    return f"{safe}{HOST_FILE_SUFFIX}"


def host_taken(run_dir: Path, file_name: str) -> bool:
    """Whether ``run_dir`` holds the host file ``file_name`` (`host_file_name`), saved either
    way (a dangling symlink takes the name too)."""
    stem = file_name[: -len(HOST_FILE_SUFFIX)]
    return any(os.path.lexists(run_dir / name) for name in (file_name, stem + DEFERRED_HOST_SUFFIX))


def run_directory(logdir: str | os.PathLike[str], run_name: str, hostname: str) -> Path:
    """``<logdir>/plugins/profile/<run_name>``, suffixed ``_2``, ``_3``... if it already holds
    this host's file (hosts of one job saving in the same second share a run)."""
    root = profile_root(logdir)
    candidate = root / run_name
    suffix = 2
    while host_taken(candidate, host_file_name(hostname)):
        candidate = root / f"{run_name}_{suffix}"
        suffix += 1
    return candidate


def new_run_dir(logdir: str | os.PathLike[str], run_name: str | None = None) -> Path:
    """``<logdir>/plugins/profile/<run_name or local time>``, suffixed if it exists."""
    name = run_name or time.strftime("%Y_%m_%d_%H_%M_%S")
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        raise StepscopeError(f"run name {name!r} must be a plain directory name")
    root = profile_root(logdir)
    candidate, suffix = root / name, 2
    while candidate.exists():
        candidate, suffix = root / f"{name}_{suffix}", suffix + 1
    return candidate


def check_logdir(logdir: str | os.PathLike[str], who: str = "stepscope.start") -> str:
    """``logdir`` as a path, or a one-line error naming ``who`` was given what: checked when
    it is given (a callback's session starts at its first profiled step, minutes later, and
    a file where the directory goes failed only at the save)."""
    try:
        text: object = os.fspath(logdir)
    except TypeError:
        text = None
    if not isinstance(text, str) or not text:
        raise StepscopeError(f"{who}: logdir must be a non-empty path, got {logdir!r}")
    if "://" in text:
        raise StepscopeError(
            f"{who}: logdir {text!r} is a URL; capture writes to a local directory "
            "(copy the run afterwards)"
        )
    if os.path.exists(text) and not os.path.isdir(text):
        raise StepscopeError(f"{who}: logdir {text!r} is a file; give a directory")
    return text
