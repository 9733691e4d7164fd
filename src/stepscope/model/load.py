"""Open one host of a run as a `Profile`: convert it (its format's reader, from
`stepscope.xspace.formats`) or read the cache."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from stepscope.model.from_xspace import profile_from_columns
from stepscope.model.profile import Profile
from stepscope.model.runs import HostFile, size_of
from stepscope.xspace import formats

# progress(stage, fraction=None): conversions of large files report their stage and how far
# along they are (0..1); a plain message has no fraction.
Progress = Callable[..., None]
PROGRESS_MIN_BYTES = 10_000_000  # below this a conversion takes well under a second


def _convert(host: HostFile, progress: Progress | None, threads: int | None = None) -> Profile:
    if progress is None or host.size_bytes < PROGRESS_MIN_BYTES:
        return _convert_quietly(host, None, threads)
    return _convert_quietly(host, progress, threads)


def _convert_quietly(host: HostFile, progress: Progress | None, threads: int | None) -> Profile:
    def stage(text: str, fraction: float) -> None:
        if progress is not None:
            progress(f"{text} ({host.size_bytes / 1e6:.1f} MB)", fraction)

    raw = formats.get(host.format).read(host.path, threads, stage)
    stage("building columns", 0.6)
    return profile_from_columns(raw, host.path, host.host)


def open_host(
    host: HostFile,
    use_cache: bool = True,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    threads: int | None = None,
) -> Profile:
    """The profile of ``host``; cached conversions are reused while the file is unchanged.
    ``threads``: decoding workers (default ``$STEPSCOPE_THREADS``)."""
    if not use_cache:
        return _convert(host, progress, threads)
    from stepscope.model import cache  # the store's modules: only with a cache
    from stepscope.store import background

    entry = cache.entry_dir(host.path, cache_dir)
    background.wait(entry)  # this process is writing it: read it once written
    cached = cache.load(entry)
    if cached is not None:
        return cached
    started = time.monotonic()
    profile = _convert(host, progress, threads)
    # Written after the caller has its answer (`stepscope.store.background`); the arrays are
    # not changed after conversion, so the thread writes what was converted.
    background.write_later(entry, lambda: cache.save(profile, entry), "cache")
    if host.size_bytes >= PROGRESS_MIN_BYTES and progress is not None:
        elapsed = time.monotonic() - started
        progress(f"converted {profile.n_events:,} events in {elapsed:.1f} s (caching it)", 1.0)
    return profile


def open_file(
    path: str | os.PathLike[str], use_cache: bool = True, progress: Progress | None = None
) -> Profile:
    """Any single profile file (format from its name, `formats.of_file`: a name no format
    claims is read as the first format, TensorFlow's XSpace)."""
    path = os.fspath(path)  # the cache's metadata and the readers take the text
    fmt = formats.of_file(path)
    host = HostFile(fmt.host_name(formats.base_name(path)), path, fmt.name, size_of(path, fmt))
    return open_host(host, use_cache=use_cache, progress=progress)
