"""The Kineto import rules applied event by event: the tests' oracle for the column route.

The importer reads a trace one way (`stepscope.xspace.kineto`: scanned into columns, routed
with numpy). This package reads it as the importer once did, one Python object per event
(`decode`: msgspec records; `events.EventRouter`: each to its plane and line; `memory`: the
Memory line), into a plain `XSpaceBuilder`, and shares only the importer's steps after
routing (`importer.finish`: flows, thread names, plane stats, warnings). The tests compare
the two profiles (`tests.support.kineto.assert_same_profile`); where the column route reads a
form otherwise on purpose (decision 210), the test says so (tests/xspace/test_kineto_rare.py).
"""

from __future__ import annotations

import os

from stepscope.errors import ProfileFormatError
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.kineto import importer
from stepscope.xspace.kineto.devices import MEMORY_LINE_ID
from stepscope.xspace.proto.xplane_pb2 import XSpace
from tests.support.kineto_oracle.decode import decode_trace
from tests.support.kineto_oracle.events import EventRouter
from tests.support.kineto_oracle.memory import memory_events


def per_event_xspace(path: str | os.PathLike[str]) -> XSpace:
    """The trace at ``path`` read event by event (see the module docstring)."""
    source = str(path)
    warnings: list[str] = []
    data = importer._read(path, warnings)
    try:
        trace = decode_trace(data, source, warnings)
        if not trace.has_events_list:
            raise ProfileFormatError(
                source,
                "is JSON but not a PyTorch profiler (Kineto) trace: it has no traceEvents list",
                "expected the .json / .json.gz written by torch.profiler",
            )
        doc = trace.header
        base = doc.get("baseTimeNanoseconds")
        builder = XSpaceBuilder(hostname=importer._hostname(doc, source))
        router = EventRouter(builder, base if type(base) is int else 0)
        if not trace.event_count:
            warnings.append("the trace has no events")
        router.route_all(trace.chunks())

        def add_memory(sizes: dict[int, int]) -> None:
            if not router.memory:
                return
            line = router.host.line(MEMORY_LINE_ID, "Memory")
            for name, start, stats in memory_events(router.memory, router.ops_by_thread, sizes):
                router.emit(router.host, line, name, "", start, 0, stats, "cpu_instant_event")

        importer.finish(router, doc, warnings, add_memory)
        return builder.build()
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:
        raise ProfileFormatError(  # as the importer says it
            source,
            f"cannot convert this trace: {type(exc).__name__}: {str(exc)[:120]}",
            "the file looks damaged; if torch.profiler wrote it as is, please report it",
        ) from exc
