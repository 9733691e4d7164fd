"""How much memory one profile may take: a bound checked before the memory is spent.

A profile is untrusted input (a file in a shared log directory, an upload, a worker's
answer). A few megabytes of gzip can inflate to gigabytes, and a few bytes of protobuf or
JSON can each become tens of bytes of columns or Python objects, so every reader checks,
before allocating, that what it is about to build fits in ``max_profile_bytes()``:

- the inflated bytes of a compressed file (decompression stops at the limit);
- the columns the XSpace decoder will allocate (counted in its first pass);
- the Python objects a JSON parse will create (estimated from a linear count of brackets
  and commas).

The default is a quarter of the memory the process may use (physical memory, a container's
limit or a ``ulimit``; at least 256 MiB), so one
profile can never take the machine down while every real profile the machine can analyze
passes. ``--max-profile-bytes`` (every CLI command) or ``$STEPSCOPE_MAX_PROFILE_BYTES`` set
it; `configure` sets it for the process (the CLI and the server call it once).
"""

from __future__ import annotations

import os
import re

from stepscope.errors import ProfileFormatError

ENV_VAR = "STEPSCOPE_MAX_PROFILE_BYTES"
MIN_DEFAULT_BYTES = 256 << 20
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_configured: int | None = None


class ProfileTooLargeError(ProfileFormatError):
    """Reading a profile would take more memory than `max_profile_bytes` allows."""

    def __init__(self, path: object, what: str, needed: int | None, limit: int) -> None:
        need = f"over {human_bytes(limit)}" if needed is None else human_bytes(needed)
        super().__init__(
            path,
            f"{what} needs {need} of memory, more than the limit of {human_bytes(limit)}",
            f"raise it with --max-profile-bytes or ${ENV_VAR} if this machine has the memory",
        )
        self.needed = needed
        self.limit = limit


def parse_size(text: str) -> int:
    """``"1500000"``, ``"512M"``, ``"2GiB"`` -> bytes. Raises ValueError with a clear message."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"not a size: {text!r} (expected bytes or a number with K, M, G or T)")
    value = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if value <= 0:
        raise ValueError(f"size must be positive: {text!r}")
    return value


def default_max_profile_bytes() -> int:
    """A quarter of the memory this process may use: physical memory, or less where a
    container (cgroup) or a resource limit (``ulimit -v`` / ``-d``) says so."""
    available = [_physical_memory(), _cgroup_memory()]
    try:
        import resource

        for which in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
            soft = resource.getrlimit(which)[0]
            if soft != resource.RLIM_INFINITY:
                available.append(soft)
    except (ImportError, AttributeError, ValueError, OSError):  # not POSIX
        pass
    known = [n for n in available if n is not None and n > 0]
    return max(MIN_DEFAULT_BYTES, min(known) // 4 if known else 2 << 30)


def _physical_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def _cgroup_memory() -> int | None:
    try:
        with open("/sys/fs/cgroup/memory.max") as handle:
            text = handle.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def max_profile_bytes() -> int:
    """The limit in force: `configure`'s value, else the environment's, else the default."""
    if _configured is not None:
        return _configured
    env = os.environ.get(ENV_VAR)
    if env:
        try:
            return parse_size(env)
        except ValueError:
            pass  # the CLI validates it with a clear message; library use falls back
    return default_max_profile_bytes()


def configure(limit: int | None) -> None:
    """Set the process's limit (None: back to the environment / default)."""
    global _configured
    _configured = limit


def check(path: object, what: str, needed: int) -> None:
    """Raise `ProfileTooLargeError` when ``needed`` bytes exceed the limit."""
    limit = max_profile_bytes()
    if needed > limit:
        raise ProfileTooLargeError(path, what, needed, limit)


def human_bytes(n: int) -> str:
    """``n`` bytes as people read it: ``8.0 MiB``."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


# One time policy for every layer (decision 101): the model keeps times as int64 ns, and every
# event's start and end lie strictly within +-TIME_LIMIT_NS (+-146 years around its clock's
# zero), its duration below it. Then the difference of any two times, a start plus a
# duration, and a view reaching a trace length beyond either end all fit in int64; importers
# enforce it (a Kineto event beyond it is skipped and counted, an XSpace file with one is
# refused naming the line), and the trace viewer clamps its windows to it.
TIME_LIMIT_NS = 1 << 62
TIME_LIMIT_TEXT = "+-2**62 ns (146 years) of the clock's zero"
# XSpace stores a duration in int64 picoseconds: 106 days at most. A longer one is damage.
DURATION_LIMIT_NS = ((1 << 63) - 1) // 1000


def clamp_time_ns(value: int) -> int:
    """``value`` (a Python int, however large) strictly within +-`TIME_LIMIT_NS`, as event
    times are: the difference of two such values fits in int64."""
    return max(1 - TIME_LIMIT_NS, min(TIME_LIMIT_NS - 1, value))
