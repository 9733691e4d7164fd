"""The collector interface between a capture session and a framework's profiler (a bridge).

A session drives each bridge through four calls:

- ``prepare()`` on the thread that called `stepscope.start`, before any ``delay_ms``:
  ``torch.profiler`` records only the thread that started it and must be stopped there;
- ``start()`` when recording begins (after ``delay_ms``, on the timer thread);
- ``stop()`` when recording ends (the thread calling `stepscope.stop`, or the duration timer);
- ``collect()`` when the profile is saved: the framework's planes as a `BridgeOutput`, with
  the `ClockMap` that puts its times on stepscope's clock (``time.perf_counter_ns``).

`BridgeSet` runs the calls for every bridge of a session. A bridge that fails never costs the
rest of the profile: its exception becomes one ``stepscope: <framework> bridge: ...`` line on
stderr and in ``XSpace.warnings`` (with how to fix it, see `diagnose`), and the bridge is left
out of the later calls. `merge_into` converts and merges everything when the profile is built.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING

from stepscope import log
from stepscope.errors import StepscopeError
from stepscope.records import record
from stepscope.xspace.trace_notes import (  # noqa: F401 (diagnose: the bridges' name for it)
    CUPTI_UNAVAILABLE,
    INSUFFICIENT_PRIVILEGES,
    as_line,
    diagnose,
    failure_text,
)

if TYPE_CHECKING:
    from stepscope.capture.options import ProfilerOptions
    from stepscope.xspace.merge import ClockMap
    from stepscope.xspace.proto.xplane_pb2 import XSpace
    from stepscope.xspace.wire import RawColumns


class BridgeError(StepscopeError):
    """A bridge cannot run; the message says why and how to fix it."""


@record(frozen=False)
class BridgeOutput:
    """What a bridge recorded, ready to merge: an XSpace message, or raw columns (merged on
    arrays and written by the columnar writer: no protobuf message per event)."""

    space: XSpace | RawColumns
    clock: ClockMap  # the space's stored ns -> time.perf_counter_ns()
    line_ids: dict[str, dict[int, int]] = field(default_factory=dict)  # see merge_xspace
    warnings: list[str] = field(default_factory=list)


class Bridge:
    """Base class of the framework bridges (all calls default to doing nothing)."""

    name = "bridge"  # id used in `configure` and STEPSCOPE_BRIDGES
    title = "Bridge"  # the framework, for messages
    module = ""  # the framework's top-level module: in sys.modules = the program uses it

    def __init__(self, options: ProfilerOptions) -> None:
        self.options = options

    @classmethod
    def wanted(cls, options: ProfilerOptions) -> bool:
        """Whether the bridge runs by default (its framework imported) with these options."""
        return True

    def prepare(self) -> None:
        """On the thread calling `stepscope.start`."""

    def start(self) -> None:
        """Recording begins."""

    def stop(self) -> None:
        """Recording ends."""

    def collect(self) -> BridgeOutput | None:
        """The recorded planes (None when there is nothing)."""
        return None

    def close(self) -> None:
        """Release what the bridge holds (temporary files); always called last."""


def report(message: str) -> str:
    """Tell a bridge's message the way every stepscope message looks (`stepscope.log`);
    return it."""
    line = as_line(message)
    log.warn(line)
    return line


class BridgeSet:
    """The bridges of one session, each call guarded so that one failure stays local."""

    def __init__(
        self,
        bridges: list[Bridge],
        warnings: list[str] | None = None,
        imported_later: dict[str, str] | None = None,
    ) -> None:
        self.bridges = list(bridges)
        self.warnings = list(warnings or [])  # already reported lines, for XSpace.warnings
        # frameworks ``auto`` found not imported at the start (title -> module): one the
        # program imports during the session runs unprofiled, said at the stop
        self._imported_later = dict(imported_later or {})
        self._failed: set[int] = set()
        self._closed = False
        self._outputs: list[BridgeOutput | None] | None = None  # collected once

    def __len__(self) -> int:
        return len(self.bridges)

    def _each(self, phase: str, call: str) -> None:
        for index, bridge in enumerate(self.bridges):
            if index not in self._failed:
                self._guard(index, bridge, phase, getattr(bridge, call))

    def _guard(self, index: int, bridge: Bridge, phase: str, func: Callable[[], object]) -> object:
        try:
            return func()
        except Exception as exc:  # a bridge must never break the capture
            self._failed.add(index)
            self.warnings.append(report(failure_message(bridge.title, phase, exc)))
            return None

    def prepare(self) -> None:
        self._each("starting", "prepare")

    def start(self) -> None:
        self._each("starting", "start")

    def stop(self, keep: bool = True) -> None:
        """Stop every bridge; without ``keep`` (``stop(save=False)``) discard what they hold."""
        self._each("stopping", "stop")
        if not keep:
            self.close()
            return
        for title, module in self._imported_later.items():
            if sys.modules.get(module) is not None:
                # a script that calls stepscope.start() before `import torch` read "unknown,
                # CPU" with no op and no step, and nothing said why (decision 621)
                self.warnings.append(
                    report(
                        f"{title} was imported after stepscope.start(): its ops were not "
                        f"recorded (a framework's bridge starts with the session); import "
                        f"{module} before stepscope.start(), or set STEPSCOPE_BRIDGES={module} to "
                        "have the session import it"
                    )
                )

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for bridge in self.bridges:
            try:
                bridge.close()
            except Exception as exc:  # cleanup only: say so, go on
                report(f"{bridge.title} bridge: could not clean up: {exc}")

    def deferred(self) -> Bridge | None:
        """The bridge whose trace a deferred save keeps as written (decision 910), or None: the
        set is one bridge, not failed, not collected yet, that can export its trace and is
        set to defer (the PyTorch bridge, `TorchSettings.save`)."""
        if self._outputs is not None or self._closed or self._failed or len(self.bridges) != 1:
            return None
        bridge = self.bridges[0]
        check = getattr(bridge, "deferrable", None)
        return bridge if callable(check) and check() else None

    def collect(self) -> list[BridgeOutput]:
        return [out for out in self._collected() if out is not None]

    def _collected(self) -> list[BridgeOutput | None]:
        """Per bridge its output (None: it failed or gave none), collected once."""
        if self._outputs is None:
            self._outputs = [self._collect_one(index, b) for index, b in enumerate(self.bridges)]
        return self._outputs

    def _collect_one(self, index: int, bridge: Bridge) -> BridgeOutput | None:
        if index in self._failed:
            return None
        out = self._guard(index, bridge, "converting its trace", bridge.collect)
        if not isinstance(out, BridgeOutput):
            return None
        for line in out.warnings:
            self.warnings.append(report(f"{bridge.title} bridge: {line}"))
        return out

    def merge_into(
        self, space: XSpace, start_perf_ns: int, stop_perf_ns: int
    ) -> XSpace | RawColumns:
        """Collect every bridge's planes and merge them into the saved ``space``; returns the
        profile: ``space`` itself, or raw columns when a bridge gave columns.

        ``space`` stores times relative to the recording start (``start_perf_ns``); events a
        framework saw outside [start, stop] are dropped. Bridges giving XSpace messages are
        merged into ``space`` itself; raw columns (the PyTorch bridge's) are merged on arrays
        with ``space``'s columns, and the result is written by `columns_pb.encode_space`.
        """
        from stepscope.xspace.merge import merge_xspace
        from stepscope.xspace.wire import RawColumns

        window = (0, stop_perf_ns - start_perf_ns)
        columnar: list[BridgeOutput] = []
        try:
            for out in self.collect():
                if isinstance(out.space, RawColumns):
                    columnar.append(out)
                    continue
                merge_xspace(
                    space,
                    out.space,  # an XSpace message
                    out.clock.shifted(-start_perf_ns),
                    window=window,
                    line_ids=out.line_ids,
                )
        except Exception as exc:  # a merge bug must not lose stepscope's own events
            self.warnings.append(report(failure_message("framework", "merging its trace", exc)))
        finally:
            self.close()
        space.warnings.extend(self.warnings)
        if not columnar:
            return space
        return self._merge_columns(space, columnar, start_perf_ns, window)

    def _merge_columns(
        self,
        space: XSpace,
        outputs: list[BridgeOutput],
        start_perf_ns: int,
        window: tuple[int, int],
    ) -> XSpace | RawColumns:
        from stepscope.xspace.merge_columns import merge_columns
        from stepscope.xspace.wire import RawColumns, decode_columns

        try:
            merged = decode_columns(space.SerializeToString())
            for out in outputs:
                assert isinstance(out.space, RawColumns)
                merged = merge_columns(
                    merged,
                    out.space,
                    out.clock.shifted(-start_perf_ns),
                    window=window,
                    line_ids=out.line_ids,
                )
            return merged
        except Exception as exc:  # a merge bug must not lose stepscope's own events
            space.warnings.append(report(failure_message("framework", "merging its trace", exc)))
            return space


def failure_message(title: str, phase: str, exc: BaseException) -> str:
    """One line: which bridge failed, when, why, and the fix where one is known."""
    if isinstance(exc, BridgeError):
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"{title} bridge: {text}"
    return failure_text(title, phase, exc)
