"""The clock alignment of framework traces: `stepscope.xspace.clock_sync` (moved there so the
deferred PyTorch save's reader, in the xspace layer, aligns a trace as the bridge did)."""

from stepscope.xspace.clock_sync import (
    DEFAULT_MARKERS,
    SYNC_PREFIX,
    ClockSync,
    Estimate,
    FoundMarkers,
    Marker,
    Probe,
    find_markers,
    find_markers_in_columns,
)

__all__ = [
    "DEFAULT_MARKERS",
    "SYNC_PREFIX",
    "ClockSync",
    "Estimate",
    "FoundMarkers",
    "Marker",
    "Probe",
    "find_markers",
    "find_markers_in_columns",
]
