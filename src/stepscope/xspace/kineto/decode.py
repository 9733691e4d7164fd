"""The trace header: what the importer reads from it, and its decoders.

The events are scanned into columns (`scan`, `pyscan`); the header (the document's other
keys) is read as a dict of the keys in `HEADER_KEYS`: by `header_of` on the C scanner's route
(the standard library's json where it decodes as msgspec does, so that route imports no
msgspec: 9-10 ms of a cold process), by msgspec (`_HEADER`, `header_dict`) in `pyscan`.
"""

from __future__ import annotations

import json
import math
from functools import cache
from typing import Any

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


def __getattr__(name: str) -> Any:
    """msgspec's header types, made on first use: `_Header` / `_HEADER` (the document with
    its events as raw slices: `pyscan`) and `HeaderOnly` (the header alone). The C scanner's
    route decodes the header with `header_of` and imports no msgspec (issue #30)."""
    if name in ("_Header", "_HEADER", "HeaderOnly"):  # (never for `__path__` and the like)
        return _msgspec_types()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@cache
def _msgspec_types() -> dict[str, Any]:
    import msgspec

    header = msgspec.defstruct(
        "_Header",
        [(key, Any, msgspec.UNSET) for key in HEADER_KEYS]
        # One pass: the events array is split into raw slices while the header is decoded.
        + [("traceEvents", list[msgspec.Raw] | msgspec.UnsetType, msgspec.UNSET)],
    )
    return {
        "_Header": header,
        "_HEADER": msgspec.json.Decoder(header),
        "HeaderOnly": msgspec.defstruct(
            "HeaderOnly", [(key, Any, msgspec.UNSET) for key in HEADER_KEYS]
        ),
        "_ANY": msgspec.json.Decoder(),
    }


def header_dict(header: Any) -> dict[str, Any]:
    """The keys of `HEADER_KEYS` a decoded `_Header` / `HeaderOnly` has."""
    import msgspec

    out: dict[str, Any] = {}
    for key in HEADER_KEYS:
        value = getattr(header, key)
        if value is not msgspec.UNSET:
            out[key] = value
    return out


# JSON the standard library decodes exactly as msgspec does: no escapes (msgspec refuses a
# lone surrogate, json makes one), no NaN/Infinity and no number beyond a double (msgspec
# refuses both, json makes them); text checked as UTF-8 first (json would guess UTF-16).
# Floats are the same correctly rounded doubles. Anything else goes to msgspec itself.
def _finite(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise ValueError(f"number out of range: {text[:40]}")
    return value


def _refused(text: str) -> Any:
    raise ValueError(f"not JSON: {text}")


_PLAIN = json.JSONDecoder(parse_float=_finite, parse_constant=_refused)


def _plain(raw: bytes) -> Any:
    """``raw`` decoded by the standard library, or `_FALLBACK` where msgspec must decide."""
    if b"\\" in raw:
        return _FALLBACK
    try:
        return _PLAIN.decode(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # (UnicodeDecodeError and JSONDecodeError included)
        return _FALLBACK


_FALLBACK = object()


def loads(raw: bytes) -> Any:
    """A JSON value (a string with its quotes, a list, an object) as msgspec decodes it;
    ValueError where msgspec refuses it."""
    value = _plain(raw)
    if value is not _FALLBACK:
        return value
    import msgspec

    try:
        return _msgspec_types()["_ANY"].decode(raw)
    except msgspec.DecodeError as exc:
        raise ValueError(str(exc)) from None


def header_of(text: bytes) -> dict[str, Any]:
    """The `HEADER_KEYS` of a trace header's JSON text (the document without its events), as
    decoding it into `HeaderOnly` gives them; ValueError where msgspec refuses it."""
    doc = _plain(text)
    if type(doc) is dict:
        return {key: doc[key] for key in HEADER_KEYS if key in doc}
    import msgspec

    try:
        return header_dict(msgspec.json.decode(text, type=_msgspec_types()["HeaderOnly"]))
    except msgspec.DecodeError as exc:
        raise ValueError(str(exc)) from None
