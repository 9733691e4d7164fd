"""The trace header: what the importer reads from it, and msgspec decoders for it.

The events are scanned into columns (`scan`, `pyscan`); the header (the document's other
keys) is decoded into `HeaderOnly`, a record of the keys in `HEADER_KEYS`, and read as a
dict (`header_dict`).
"""

from __future__ import annotations

from typing import Any

import msgspec

# Header fields that become stats of the trace's XSpace (the Task Environment plane).
HEADER_STATS = (
    "schemaVersion",
    "displayTimeUnit",
    "baseTimeNanoseconds",
    "trace_id",
    "record_shapes",
    "profile_memory",
    "with_stack",
    "with_flops",
    "with_modules",
    "cupti_version",
    "cuda_runtime_version",
    "cuda_driver_version",
    "hip_runtime_version",
    "hip_driver_version",
    "roctracer_version",
)
# What the importer reads from the header (everything except the events).
HEADER_KEYS = (*HEADER_STATS, "deviceProperties", "distributedInfo", "WARNING", "ERROR")


_Header = msgspec.defstruct(
    "_Header",
    [(key, Any, msgspec.UNSET) for key in HEADER_KEYS]
    # One pass: the events array is split into raw slices while the header is decoded.
    + [("traceEvents", list[msgspec.Raw] | msgspec.UnsetType, msgspec.UNSET)],
)
_HEADER = msgspec.json.Decoder(_Header)
# The header alone (the columns path decodes the events with its own scanner).
HeaderOnly = msgspec.defstruct("HeaderOnly", [(key, Any, msgspec.UNSET) for key in HEADER_KEYS])


def header_dict(header: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in HEADER_KEYS:
        value = getattr(header, key)
        if value is not msgspec.UNSET:
            out[key] = value
    return out
