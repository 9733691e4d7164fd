"""A PyTorch trace exported by the bridge, as the columns merged into a capture's profile.

`convert_exported` is what the PyTorch bridge does with ``torch.profiler``'s exported Chrome
trace (`stepscope.capture.bridges.torch_bridge`): the Kineto importer's raw columns, the clock
map found from the bridge's sync markers, and the warnings the bridge gives. The bridge runs it
at ``stop()`` (the eager save); the reader of a deferred save runs it when the run is first
read (`stepscope.xspace.deferred`), on the same file and the same markers, so both give the
same profile.
"""

from __future__ import annotations

from stepscope.xspace.clock_sync import ClockSync, find_markers_in_columns
from stepscope.xspace.merge import ClockMap
from stepscope.xspace.trace_notes import diagnose
from stepscope.xspace.wire import RawColumns

SYNC_OP = "aten::empty"


def convert_exported(
    path: str, sync: ClockSync, logs: list[str], cuda: bool
) -> tuple[RawColumns, ClockMap, list[str]]:
    """The trace at ``path`` as raw columns, its clock map onto ``time.perf_counter_ns`` (from
    ``sync``'s markers) and the bridge's warnings about it (``logs``: what torch printed)."""
    from stepscope.xspace.kineto import kineto_to_columns

    # The columns route (the C scanner streams the file): no protobuf message per event; the
    # merge and the write stay on arrays (`BridgeSet.merge_into`).
    columns = kineto_to_columns(path)
    columns.space_header.hostnames.clear()
    found = find_markers_in_columns(columns, "/host:CPU", child=SYNC_OP)
    clock, how = sync.clock_map(found.stamps)
    head = columns.space_header
    warnings = diagnose([*logs, *head.errors, *head.warnings])
    if cuda and not warnings and launches_without_kernels(columns):
        warnings.append(
            "GPU kernels were launched but CUPTI recorded none: check that CUPTI works "
            "(python -c 'import torch; print(torch.cuda.is_available())' and the driver logs)"
        )
    if how.startswith("unix"):
        warnings.append(f"clock aligned by {how}; events may be off by a few microseconds")
    return columns, clock, warnings


def launches_without_kernels(columns: RawColumns) -> bool:
    """Whether the trace launched GPU kernels but holds no device plane."""
    planes = columns.plane_headers
    if any(p.name.startswith("/device:") for p in planes):
        return False
    names = (m.name for p in planes for m in p.event_metadata.values())
    return any(n.startswith(("cudaLaunchKernel", "cuLaunchKernel")) for n in names)
