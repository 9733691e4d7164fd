"""How a plain PyTorch DataLoader's worker processes are reached, and how busy the machine's
cores were meanwhile (decision 351).

A loop over ``DataLoader(..., num_workers=2)`` with no stepscope call in it starts its workers
in ``iter(loader)``. While a session that saves records, `install` wraps the public
``torch.utils.data.DataLoader.__iter__``: an ``iter()`` that will start workers runs inside
`stepscope.capture.loader_workers.capturing` (the loader's ``worker_init_fn`` wrapped for the
workers that call starts, fork, spawn and forkserver alike); it, and a persistent loader's
later ``iter()`` (its workers resumed, not started), are marked ``iter(DataLoader)`` on the
loop's thread, where an epoch begins (decisions 562, 605); every other call goes straight
to torch's, after installing again the fetch probe left waiting for such a loop (decision
1006). `uninstall` puts torch's back at `stop()` (unless something wrapped it since: then
ours stays, doing nothing while no session records). torch is never imported here: a program
that has not imported ``torch.utils.data`` when the session starts is not hooked.

`CpuUse`: the machine's idle cores over the recording, from ``/proc/stat`` (Linux), so that
the advice "add workers" can say whether there are cores to run them.
"""

from __future__ import annotations

import os
import sys

from stepscope.capture import fetch_probe, loader_workers
from stepscope.capture.annotations import trace
from stepscope.vocab.profiler import CPU_COUNT_STAT, CPU_IDLE_STAT
from stepscope.vocab.pytorch import DATALOADER_ITER

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from typing import Any


def _dataloader_class() -> Any:
    module = sys.modules.get("torch.utils.data.dataloader")
    return getattr(module, "DataLoader", None) if module is not None else None


def install() -> None:
    """Wrap ``DataLoader.__iter__`` (idempotent; nothing without torch's data module)."""
    cls = _dataloader_class()
    current = cls.__dict__.get("__iter__") if isinstance(cls, type) else None
    if current is None or getattr(current, "_stepscope", False):
        return

    def __iter__(self: Any, _original: Any = current) -> Any:
        if fetch_probe.dormant is not None:  # the loop begins: the fetch probe back (d. 1006)
            fetch_probe.loop_begins(sys._getframe(1))
        if not loader_workers.armed():
            return _original(self)
        workers = _workers(self)
        if not workers:
            return _original(self)
        name = f"DataLoader({type(getattr(self, 'dataset', None)).__name__})"
        if workers == _RESUMED:
            # a persistent loader's next pass: its workers run already, but the iter() still
            # waits for each to resume and refills their queues (decision 605)
            with trace(DATALOADER_ITER, loader=name):
                return _original(self)
        from stepscope.capture.data import _new_id

        # the workers' start, on the loop's thread: the epoch's wait before its first fetch
        with (
            loader_workers.capturing(self, name, _new_id()),
            trace(DATALOADER_ITER, loader=name),
        ):
            return _original(self)

    __iter__.__wrapped__ = current  # type: ignore[attr-defined]
    __iter__.__doc__ = current.__doc__
    __iter__._stepscope = True  # type: ignore[attr-defined]
    cls.__iter__ = __iter__


def uninstall() -> None:
    """torch's ``__iter__`` back, if ours is still the one there."""
    cls = _dataloader_class()
    current = cls.__dict__.get("__iter__") if isinstance(cls, type) else None
    if current is not None and getattr(current, "_stepscope", False):
        cls.__iter__ = current.__wrapped__


_STARTED, _RESUMED = "started", "resumed"


def _workers(loader: Any) -> str:
    """What this ``iter()`` does with the loader's worker processes: `_STARTED` (new
    workers, captured by the hook), `_RESUMED` (a persistent loader's later pass: its workers
    run from an earlier one and are reused, not started; the epoch begins there all the
    same, its ``_reset`` waiting for each to resume before sending their first indices), or
    "" (no workers, or a pass of a loader stepscope instruments already: its hook is set)."""
    if not loader_workers.is_worker_loader(loader):
        return ""
    if isinstance(getattr(loader, "worker_init_fn", None), loader_workers.WorkerHook):
        return ""
    running = getattr(loader, "persistent_workers", False) and (
        getattr(loader, "_iterator", None) is not None
    )
    return _RESUMED if running else _STARTED


def _proc_stat() -> tuple[int, int] | None:
    """(idle jiffies, all jiffies) of every CPU together, None off Linux."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        values = [int(x) for x in fields[1:9]]
    except (OSError, ValueError):
        return None
    if fields[:1] != ["cpu"] or len(values) < 5:
        return None
    return values[3] + values[4], sum(values)  # idle + iowait, all


class CpuUse:
    """The machine's CPU time from `start` to `stats` (called at the recording's end)."""

    def __init__(self) -> None:
        self.first = _proc_stat()

    def stats(self) -> dict[str, int | float]:
        """``cpu_count`` (cores this process may run on) and ``cpu_idle_cores`` (the
        machine's idle cores on average over the recording, at most ``cpu_count``)."""
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
        out: dict[str, int | float] = {CPU_COUNT_STAT: cores}
        last = _proc_stat()
        if self.first is not None and last is not None and last[1] > self.first[1]:
            idle_share = (last[0] - self.first[0]) / (last[1] - self.first[1])
            online = os.cpu_count() or cores
            out[CPU_IDLE_STAT] = round(min(max(idle_share, 0.0) * online, cores), 2)
        return out
