"""Framework-neutral requests and responses.

Route handlers take an `ApiRequest` and return an `ApiResponse`; thin adapters turn them into
Starlette (ASGI) or WSGI calls, so the route logic exists once whichever server hosts it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

from stepscope.records import record

JSON_TYPE = "application/json; charset=utf-8"


@record
class ApiRequest:
    path_params: Mapping[str, str]
    query: Mapping[str, str]  # the last value of each query parameter
    headers: Mapping[str, str] = field(default_factory=dict)  # lower-case names

    def header(self, name: str) -> str:
        return self.headers.get(name.lower(), "")


@record(frozen=False)
class ApiResponse:
    status: int
    body: bytes
    content_type: str = JSON_TYPE
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[ApiRequest], ApiResponse]


@record
class RouteSpec:
    """One GET route. ``path`` uses Starlette's syntax: ``{name}`` and ``{name:path}``."""

    path: str
    handler: Handler
    name: str
    blocking: bool = True  # may take long (I/O, analysis): run off the event loop


def _plain(value: Any) -> Any:
    """NumPy scalars and arrays, tuples and non-finite floats as plain JSON values."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "tolist"):  # numpy scalar or array
        return _plain(value.tolist())
    return value


def json_bytes(data: Any) -> bytes:
    try:
        text = json.dumps(data, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError):  # NaN/inf or NumPy values: browsers reject them in JSON
        text = json.dumps(
            _plain(data), separators=(",", ":"), allow_nan=False, ensure_ascii=False, default=str
        )
    return text.encode("utf-8")


def json_response(
    data: Any, status: int = 200, headers: dict[str, str] | None = None
) -> ApiResponse:
    return ApiResponse(status, json_bytes(data), JSON_TYPE, dict(headers or {}))


def error_response(status: int, message: str) -> ApiResponse:
    return json_response(
        {"error": message, "status": status}, status, {"Cache-Control": "no-store"}
    )
