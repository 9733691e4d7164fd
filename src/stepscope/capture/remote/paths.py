"""Service addresses, session ids and file names of remote capture, and where a server may write.

Files follow TensorFlow's layout: ``<logdir>/plugins/profile/<session>/<host_port>.xplane.pb``,
the worker's address with ``:`` replaced by ``_`` (``localhost:6009`` -> ``localhost_6009``),
unless the workers' recordings name them apart (`stepscope.capture.remote.naming`).

A server writes a profile itself only when the client asked it to (``emit_xspace`` false) and
the target resolves (symlinks followed) inside one of the roots the server was started with;
nothing a request says can reach anywhere else (``..``, absolute session ids, symlinks out).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from stepscope.errors import StepscopeError
from stepscope.logdir import PROFILE_DIRS, host_file_name, run_name_for

GRPC_PREFIX = "grpc://"
MAX_DURATION_MS = 10 * 60 * 1000  # longer captures are refused: a capture holds every event
MAX_DELAY_MS = 10 * 60 * 1000  # a start further ahead than this is refused
_SESSION_ID = re.compile(r"^[A-Za-z0-9_.\-]{1,200}$")
_HOST_PORT = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+):(\d{1,5})$")


def parse_service_addresses(text: str | Sequence[str]) -> list[str]:
    """``"grpc://h1:p1, h2:p2"`` (or a list) -> ``["h1:p1", "h2:p2"]``, checked, deduplicated."""
    parts = text.split(",") if isinstance(text, str) else list(text)
    addresses: list[str] = []
    for raw in parts:
        item = str(raw).strip()
        if not item:
            continue
        if item.startswith(GRPC_PREFIX):
            item = item[len(GRPC_PREFIX) :]
        elif "://" in item:
            raise StepscopeError(
                f"service address {item!r}: only grpc://host:port addresses can be captured from"
            )
        item = item.rstrip("/")
        match = _HOST_PORT.match(item)
        if match is None or not 0 < int(match.group(1)) < 65536:
            raise StepscopeError(
                f"service address {item!r} is not host:port (e.g. grpc://localhost:6009)"
            )
        if item not in addresses:
            addresses.append(item)
    if not addresses:
        raise StepscopeError("no service address given (e.g. grpc://localhost:6009)")
    return addresses


def host_file(address: str) -> str:
    """A worker's profile file: ``localhost:6009`` -> ``localhost_6009.xplane.pb``."""
    return host_file_name(address)


def new_session_id(now_ns: int | None = None) -> str:
    """TensorFlow's session (run) name: the local time ``YYYY_MM_DD_HH_MM_SS``."""
    return run_name_for(time.time_ns() if now_ns is None else now_ns)


def is_safe_session_id(session_id: str) -> bool:
    """One plain directory name: letters, digits, ``_ . -``; never ``.`` or ``..``."""
    return bool(_SESSION_ID.match(session_id)) and session_id not in (".", "..")


def repository_root(logdir: str | os.PathLike[str]) -> Path:
    """``<logdir>/plugins/profile``, where TensorFlow and stepscope keep runs."""
    return Path(logdir).joinpath(*PROFILE_DIRS)


def resolve_roots(roots: Iterable[str | os.PathLike[str]]) -> tuple[Path, ...]:
    """The allowed roots as real absolute paths (symlinks resolved once, at server start)."""
    return tuple(Path(os.path.realpath(os.path.abspath(os.fspath(r)))) for r in roots)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def writable_target(
    repository_root: str, session_id: str, host_name: str, allowed: Sequence[Path]
) -> tuple[Path | None, str]:
    """Where a server may write this profile, or (None, why not)."""
    if not allowed:
        return None, "the server was started without allowed_roots, so it writes no files"
    if not repository_root:
        return None, "the request names no repository_root"
    if "://" in repository_root or "\x00" in repository_root or not os.path.isabs(repository_root):
        return None, f"repository_root {repository_root!r} is not an absolute local path"
    if not is_safe_session_id(session_id):
        return None, f"session_id {session_id[:80]!r} is not a plain directory name"
    target = Path(repository_root) / session_id / host_file(host_name or "localhost")
    real = Path(os.path.realpath(target))
    if any(_inside(real, root) for root in allowed):
        return real, ""
    shown = ", ".join(str(r) for r in allowed)
    return None, f"repository_root {repository_root!r} is outside the allowed roots ({shown})"
