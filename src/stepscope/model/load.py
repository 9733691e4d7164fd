"""Open one host of a run as a `Profile`: convert (XSpace or Kineto JSON) or read the cache."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from stepscope.model import cache
from stepscope.model.from_xspace import profile_from_bytes, profile_from_xspace
from stepscope.model.profile import Profile
from stepscope.model.runs import HostFile, format_of, host_name_of
from stepscope.xspace.io import read_profile_bytes

# progress(stage): conversions of large files report what they are doing and how long it took.
Progress = Callable[[str], None]
PROGRESS_MIN_BYTES = 10_000_000  # below this a conversion takes well under a second


def _convert(host: HostFile, progress: Progress | None) -> Profile:
    if progress is None or host.size_bytes < PROGRESS_MIN_BYTES:
        return _convert_quietly(host, None)
    started = time.monotonic()
    profile = _convert_quietly(host, progress)
    progress(
        f"converted {profile.n_events:,} events in {time.monotonic() - started:.1f} s "
        "(cached for next time)"
    )
    return profile


def _convert_quietly(host: HostFile, progress: Progress | None) -> Profile:
    if host.format == "kineto":
        from stepscope.xspace.kineto import kineto_to_xspace

        if progress:
            progress(f"importing PyTorch trace {host.path} ({host.size_bytes / 1e6:.1f} MB)")
        space = kineto_to_xspace(host.path)
        return profile_from_xspace(space, source=host.path, hostname=host.host)
    if progress:
        progress(f"converting {host.path} ({host.size_bytes / 1e6:.1f} MB)")
    return profile_from_bytes(read_profile_bytes(host.path), source=host.path, hostname=host.host)


def open_host(
    host: HostFile,
    use_cache: bool = True,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
) -> Profile:
    """The profile of ``host``; cached conversions are reused while the file is unchanged."""
    if not use_cache:
        return _convert(host, progress)
    entry = cache.entry_dir(host.path, cache_dir)
    cached = cache.load(entry)
    if cached is not None:
        return cached
    profile = _convert(host, progress)
    try:
        cache.save(profile, entry)
    except OSError as exc:  # a read-only cache must not stop analysis
        print(f"stepscope: could not write cache {entry}: {exc.strerror or exc}", file=sys.stderr)
    return profile


def open_file(path: str, use_cache: bool = True, progress: Progress | None = None) -> Profile:
    """Any single profile file (format from its name)."""
    from stepscope.model import fs

    fmt = format_of(path) or "xspace"
    host = HostFile(host_name_of(path), path, fmt, fs.size(path))
    return open_host(host, use_cache=use_cache, progress=progress)


def stderr_progress() -> Progress:
    """A progress reporter for the CLI: prints stages with elapsed time to stderr."""
    started = time.monotonic()

    def report(stage: str) -> None:
        print(f"[{time.monotonic() - started:5.1f}s] {stage}", file=sys.stderr, flush=True)

    return report
