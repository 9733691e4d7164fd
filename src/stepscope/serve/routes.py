"""The HTTP routes, generated from the tool registry, as framework-neutral handlers.

    GET / and /index.html                   the UI (static/index.html)
    GET /static/{path}                      UI assets (a fixed whitelist: the files shipped)
    GET /api/runs                           {"logdir", "runs": [{"run", "hosts", "saved_by"...}]}
    GET /api/runs/{run}/hosts               {"run", "hosts": [... , "ALL_HOSTS"]}
    GET /api/tools?run=&host=               the registry's tools, with availability for run/host
    GET /api/units                          {"tools": {tool: {field path: unit}}}: declared units
    GET /api/recorder?run=&host=            a flight recorder run: {"host", "marker", "history",
                                            "trigger_step"} (docs/flight_recorder.md)
    GET /api/compare?base=&base_host=&cand=&cand_host=   the diff of two runs (compare_route.py)
    GET /api/tool/<name>?run=&host=&format=json|csv&<options>   one route per declared tool
    GET /api/tool/<name>/<endpoint>?run=&host=&<params>   a tool's follow-up queries (endpoints)

Error answers are JSON ``{"error": message, "status": code}``: 404 for unknown or refused
names, 400 for a bad option or format, 422 when the profile cannot give what the tool needs.
"""

from __future__ import annotations

import hashlib
import re
import sys
import traceback
from pathlib import Path

from stepscope.errors import NotFoundError, StepscopeError
from stepscope.model import ALL_HOSTS
from stepscope.model.runs import recorder_record, saved_by, trigger_step
from stepscope.serve import security
from stepscope.serve.compare_route import compare_handler
from stepscope.serve.compress import compress
from stepscope.serve.http import (
    JSON_TYPE,
    ApiRequest,
    ApiResponse,
    Handler,
    RouteSpec,
    error_response,
    json_response,
)
from stepscope.serve.security import BadRequestError, check_host, check_options, check_tool_host
from stepscope.serve.state import ServerState
from stepscope.serve.tool_cache import etag_for, make_key
from stepscope.tools.registry import ToolEndpoint, ToolSpec

STATIC_DIR = Path(__file__).parent / "static"
_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".woff2": "font/woff2",
    ".json": JSON_TYPE,
    ".md": "text/plain; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}
_RESERVED_QUERY = ("run", "host", "format")
# The UI needs nothing from elsewhere; the browser enforces that (and so do the browser tests).
CSP = (
    "default-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "style-src 'self' 'unsafe-inline'; font-src 'self'; object-src 'none'; base-uri 'self'; "
    "frame-ancestors 'self'"
)


def guarded(handler: Handler) -> Handler:
    """Maps errors to JSON answers: users get one clear line, never a traceback."""

    def handle(request: ApiRequest) -> ApiResponse:
        try:
            return handler(request)
        except NotFoundError as exc:
            return error_response(404, str(exc))
        except BadRequestError as exc:
            return error_response(400, str(exc))
        except StepscopeError as exc:
            return error_response(422, str(exc))
        except Exception as exc:  # a bug: report it, keep serving
            traceback.print_exc(file=sys.stderr)
            return error_response(500, f"internal error: {type(exc).__name__}: {exc}")

    return handle


def _not_modified(request: ApiRequest, etag: str) -> bool:
    return etag in [t.strip() for t in request.header("if-none-match").split(",")]


def static_files(root: Path = STATIC_DIR) -> dict[str, Path]:
    """The files the UI may fetch, relative '/'-separated names; nothing else is served."""
    return {
        p.relative_to(root).as_posix(): p
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix in _CONTENT_TYPES and "__pycache__" not in p.parts
    }


_FILE_CACHE: dict[Path, tuple[int, int, bytes, str]] = {}  # path -> mtime, size, body, etag


def _read_static(path: Path) -> tuple[bytes, str]:
    """The file's bytes and ETag, re-read only when it changed (edits show without restart)."""
    st = path.stat()
    cached = _FILE_CACHE.get(path)
    if cached and cached[:2] == (st.st_mtime_ns, st.st_size):
        return cached[2], cached[3]
    body = path.read_bytes()
    etag = '"' + hashlib.sha1(body).hexdigest()[:24] + '"'
    _FILE_CACHE[path] = (st.st_mtime_ns, st.st_size, body, etag)
    return body, etag


def _file_response(request: ApiRequest, path: Path) -> ApiResponse:
    body, etag = _read_static(path)
    headers = {"ETag": etag, "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
    if path.suffix == ".html":
        headers["Content-Security-Policy"] = CSP
    if _not_modified(request, etag):
        return ApiResponse(304, b"", _CONTENT_TYPES[path.suffix], headers)
    return ApiResponse(200, body, _CONTENT_TYPES[path.suffix], headers)


def _page_of(spec: ToolSpec, files: dict[str, Path]) -> str | None:
    name = f"pages/{spec.name}.js"
    return f"static/{name}" if name in files else None


def _endpoint_handler(state: ServerState, spec: ToolSpec, endpoint: ToolEndpoint) -> Handler:
    def handle(request: ApiRequest) -> ApiResponse:
        query = request.query
        run = state.run(query.get("run", ""))
        host = check_tool_host(
            run, spec, query.get("host") or state.default_host(run, spec.multi_host)
        )
        state.fingerprint(run, host)  # notices changed files (drops stale profiles)
        params = {k: v for k, v in query.items() if k not in ("run", "host")}
        try:
            body, content_type = state.analysis(run).endpoint(spec, endpoint.name, host, params)
        except ValueError as exc:
            raise BadRequestError(str(exc)) from None
        # Never stored by the browser: these answers have no validator, so a stored copy is
        # never reused (the page keeps its own decoded windows), and storing one cost
        # Chromium about 4 ms of a 2 MB window's 21 ms in the page (decision 445).
        headers = {"Cache-Control": "no-store"}
        # Compressed here at the fastest level (the middleware's level 9 costs ~20x more on
        # these megabyte answers); a set Content-Encoding makes the middleware pass it through.
        if len(body) >= 1024 and "gzip" in request.header("accept-encoding"):
            body = compress(body)
            headers.update({"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
        return ApiResponse(200, body, content_type, headers)

    return handle


def _tool_handler(state: ServerState, spec: ToolSpec) -> Handler:
    def handle(request: ApiRequest) -> ApiResponse:
        query = request.query
        fmt = query.get("format", "json")
        if fmt not in spec.formats:
            raise BadRequestError(
                f"tool {spec.name!r} has no format {fmt[:20]!r}; formats: {', '.join(spec.formats)}"
            )
        run = state.run(query.get("run", ""))
        host = check_tool_host(
            run, spec, query.get("host") or state.default_host(run, spec.multi_host)
        )
        options = check_options(spec, {k: v for k, v in query.items() if k not in _RESERVED_QUERY})
        key = make_key(run.name, host, spec.name, options)
        fingerprint = state.fingerprint(run, host)
        etag = etag_for(key, fingerprint) + (";csv" if fmt == "csv" else "")
        headers = {"ETag": etag, "Cache-Control": "no-cache"}
        if _not_modified(request, etag):
            return ApiResponse(304, b"", "application/json", headers)
        entry = state.tool_cache.get(
            key,
            fingerprint,
            lambda: state.analysis(run).result(
                spec, host, options, with_host_errors=True, check_available=False
            ),
        )
        if fmt == "csv":
            safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{spec.name}-{run.name}-{host}")
            headers["Content-Disposition"] = f'attachment; filename="{safe}.csv"'
            return ApiResponse(200, entry.csv(), "text/csv; charset=utf-8", headers)
        return ApiResponse(200, entry.json, JSON_TYPE, headers)

    return handle


def build_routes(state: ServerState, static_root: Path = STATIC_DIR) -> list[RouteSpec]:
    files = static_files(static_root)

    def index(request: ApiRequest) -> ApiResponse:
        return _file_response(request, files["index.html"])

    def static(request: ApiRequest) -> ApiResponse:
        name = request.path_params.get("path", "")
        if name not in files:
            raise NotFoundError(f"no file {name[:80]!r} in the UI's assets")
        return _file_response(request, files[name])

    def runs(request: ApiRequest) -> ApiResponse:
        listed = state.runs()
        return json_response(
            {
                "logdir": state.logdir,
                "runs": [
                    {
                        "run": r.name,
                        "hosts": r.host_names,
                        "size_bytes": r.size_bytes,
                        "formats": sorted({h.format for h in r.hosts}),
                        "saved_by": saved_by(r),
                    }
                    for r in listed
                ],
            },
            headers={"Cache-Control": "no-store"},
        )

    def hosts(request: ApiRequest) -> ApiResponse:
        run = state.run(request.path_params.get("run", ""))
        names = run.host_names + ([ALL_HOSTS] if len(run.hosts) > 1 else [])
        return json_response({"run": run.name, "hosts": names, "default": state.default_host(run)})

    def categories(request: ApiRequest) -> ApiResponse:
        """Step-time categories (key, label, colour) in stacking order: the UI's only copy."""
        from stepscope.stats.events import category_table

        return json_response({"categories": category_table()})

    def recorder(request: ApiRequest) -> ApiResponse:
        """What the flight recorder wrote about a run it saved: its trigger and findings, and
        the step summaries it held (the step-history chart of the run's banner)."""
        run = state.run(request.query.get("run", ""))
        host = request.query.get("host") or None
        if host is not None:
            check_host(run, host)
        record = recorder_record(run, host)
        if record is None:  # the marker is written last: maybe after the run was listed
            run = security.find_run(state.runs(max_age_s=0.0), run.name)
            record = recorder_record(run, host)
        if record is None:
            raise NotFoundError(f"the flight recorder did not save run {run.name!r}")
        record["trigger_step"] = trigger_step(record["marker"])
        return json_response(record, headers={"Cache-Control": "no-cache"})

    def units(request: ApiRequest) -> ApiResponse:
        """The declared unit of every tool field (the UI's one number formatter reads them)."""
        from stepscope.tools.field_docs import field_units

        return json_response({"tools": field_units()}, headers={"Cache-Control": "no-cache"})

    def tools(request: ApiRequest) -> ApiResponse:
        run_name, host = request.query.get("run"), request.query.get("host")
        run = state.run(run_name) if run_name else None
        if run is not None and host:
            check_host(run, host)
        listed = []
        for spec in state.tools():
            entry = {
                "name": spec.name,
                "title": spec.title,
                "description": spec.description,
                "formats": list(spec.formats),
                "multi_host": spec.multi_host,
                "order": spec.order,
                "page": _page_of(spec, files),
                "options": [
                    {
                        "name": o.name,
                        "description": o.description,
                        "default": o.default,
                        "choices": list(o.choices),
                    }
                    for o in spec.options
                ],
            }
            if run is not None:
                entry["available"] = _available(state, spec, run.name, host)
            listed.append(entry)
        return json_response(listed)

    def unknown_tool(request: ApiRequest) -> ApiResponse:
        state.tool(request.path_params.get("tool", ""))  # raises 404 with the list of tools
        raise NotFoundError("no such route")  # pragma: no cover - tools have their own routes

    def capture_off(request: ApiRequest) -> ApiResponse:
        reason = "capture from the UI is offered by `stepscope serve` only"
        return json_response({"enabled": False, "offered": False, "reason": reason})

    def unknown_api(request: ApiRequest) -> ApiResponse:
        raise NotFoundError(
            f"no API route /api/{request.path_params.get('path', '')[:80]}; routes: "
            "/api/runs, /api/runs/{run}/hosts, /api/tools, /api/tool/{tool}, /api/categories, "
            "/api/units, /api/recorder, "
            "/api/compare"
        )

    routes = [
        RouteSpec("/", index, "index", blocking=False),
        RouteSpec("/index.html", index, "index.html", blocking=False),  # TensorBoard drops a '/'
        RouteSpec("/static/{path:path}", static, "static", blocking=False),
        RouteSpec("/api/runs", runs, "runs"),
        RouteSpec("/api/runs/{run:path}/hosts", hosts, "hosts"),
        RouteSpec("/api/tools", tools, "tools"),
        RouteSpec("/api/categories", categories, "categories", blocking=False),
        RouteSpec("/api/units", units, "units"),
        RouteSpec("/api/recorder", recorder, "recorder"),
        RouteSpec("/api/compare", compare_handler(state), "compare"),  # serve/compare_route.py
        # `stepscope serve` answers this itself (serve/capture_routes.py); elsewhere (WSGI,
        # TensorBoard) the Capture Profile dialog learns here that it is not offered.
        RouteSpec("/api/capture", capture_off, "capture_off"),
    ]
    routes += [
        RouteSpec(f"/api/tool/{spec.name}", _tool_handler(state, spec), f"tool:{spec.name}")
        for spec in state.tools()
    ]
    routes += [  # follow-up queries a tool declares (ToolSpec.endpoints)
        RouteSpec(
            f"/api/tool/{spec.name}/{ep.name}",
            _endpoint_handler(state, spec, ep),
            f"tool:{spec.name}:{ep.name}",
        )
        for spec in state.tools()
        for ep in spec.endpoints
    ]
    routes += [
        RouteSpec("/api/tool/{tool:path}", unknown_tool, "unknown_tool"),
        RouteSpec("/api/{path:path}", unknown_api, "unknown_api"),
    ]
    return [RouteSpec(r.path, guarded(r.handler), r.name, r.blocking) for r in routes]


def _available(state: ServerState, spec: ToolSpec, run_name: str, host: str | None) -> bool:
    """Whether the tool has something to show for the run/host (False when that check fails)."""
    run = state.run(run_name)
    chosen = host or state.default_host(run)  # as the UI chooses: ALL_HOSTS if several
    if chosen == ALL_HOSTS and not spec.multi_host:
        return False
    try:
        return state.analysis(run).available(spec, chosen)
    except StepscopeError:
        return False
    except Exception:  # a bug in one tool's check must not hide every tool: report, skip it
        traceback.print_exc(file=sys.stderr)
        return False
