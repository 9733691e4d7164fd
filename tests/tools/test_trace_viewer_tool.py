"""The trace viewer tool and its endpoints, through the server's routes (no browser)."""

from __future__ import annotations

import gzip
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from stepscope.model import open_run
from stepscope.serve.http import ApiRequest, ApiResponse
from stepscope.serve.routes import build_routes
from stepscope.serve.state import ServerState
from stepscope.serve.wsgi import WsgiApp
from stepscope.stats.trace_index.index import index_dir, load_index
from stepscope.tools import _analysis
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.trace_viewer import api
from stepscope.tools.trace_viewer import wire as trace_wire
from tests.support.analysis import count_step_db_builds
from tests.support.fixtures import FIXTURES, ctl_run_dir, tf_xplane

RUN = "remote"


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerState]:
    root = tmp_path_factory.mktemp("logs")
    run = root / "plugins" / "profile" / RUN
    run.mkdir(parents=True)
    shutil.copy(tf_xplane("remote"), run / "localhost_6009.xplane.pb")
    (root / "bert").mkdir()
    shutil.copy(
        FIXTURES / "kineto" / "h100_bert_small_inference.json.gz",
        root / "bert" / "worker0.1.pt.trace.json.gz",
    )
    yield ServerState(root, cache_dir=tmp_path_factory.mktemp("cache"))


def get(
    state: ServerState, path: str, headers: dict[str, str] | None = None, **query: object
) -> ApiResponse:
    routes = {r.path: r for r in build_routes(state)}
    request = ApiRequest({}, {k: str(v) for k, v in query.items()}, headers or {})
    return routes[path].handler(request)


def test_structure(state: ServerState) -> None:
    response = get(state, "/api/tool/trace_viewer", run=RUN)
    assert response.status == 200
    data = json.loads(response.body)
    assert data["events"] == 56_832
    assert [s["name"] for s in data["sections"]] == ["Host Threads"]
    tracks = data["sections"][0]["tracks"]
    assert sum(t["events"] for t in tracks) == data["events"]
    assert max(t["rows"] for t in tracks) > 5  # nested host threads stack up
    assert "steps" not in data  # its own endpoint: the first window does not wait for them
    assert data["counters"][0]["unit"] == "bytes"
    assert data["endpoints"] == ["window", "steps", "search", "event", "select"]


def test_steps_endpoint(state: ServerState) -> None:
    # the step database's steps, as the overview shows them (32 markers, first and last
    # dropped by XProf's rule), not every marker
    steps = json.loads(get(state, "/api/tool/trace_viewer/steps", run=RUN).body)
    overview = json.loads(get(state, "/api/tool/overview_page", run=RUN).body)
    assert steps["number"] == [s["step"] for s in overview["steps"]]
    assert len(steps["number"]) == 30
    assert len(steps["start_ns"]) == len(steps["dur_ns"]) == len(steps["event"]) == 30
    assert steps["start_ns"] == sorted(steps["start_ns"]) and min(steps["dur_ns"]) > 0


def test_the_steps_answer_is_the_tools_json_of_its_columns(state: ServerState) -> None:
    """The endpoint writes its JSON without `output.to_json` (decision 660): the same bytes."""
    body = get(state, "/api/tool/trace_viewer/steps", run=RUN).body
    run = state.run(RUN)
    _, index = api.trace_of(ToolContext(run, run.hosts[0].host, state.store))
    assert body == api._json(api.step_columns(index, index.origin_ns))[0]


def test_index_is_cached_on_disk(state: ServerState) -> None:
    get(state, "/api/tool/trace_viewer", run=RUN)
    profile = state.store.profile(state.run(RUN), "localhost_6009")
    target = index_dir(profile, state.cache_dir)
    assert target is not None and (target / "header.json").exists()
    loaded = load_index(target)
    assert loaded is not None and loaded.n_events == profile.n_events


def test_window_binary_response(state: ServerState) -> None:
    response = get(state, "/api/tool/trace_viewer/window", run=RUN, t0=0, t1=2e9, res=1500)
    assert response.status == 200 and response.content_type == trace_wire.CONTENT_TYPE
    header, arrays = trace_wire.decode(response.body)
    n = header["events"]
    assert 1000 < n < 56_832
    assert all(len(arrays[k]) == n for k in ("event", "line", "depth", "start", "dur", "name"))
    assert arrays["name"].max() < len(header["names"])
    assert header["flows"] == len(arrays["src"]) > 0
    assert header["counters"] and len(arrays["c0.t"]) == 1500
    assert np.all(np.diff(arrays["event"]) > 0)
    # Compressed when the client accepts gzip, and not twice by the WSGI adapter.
    gz = {"accept-encoding": "gzip"}
    zipped = get(state, "/api/tool/trace_viewer/window", gz, run=RUN, t0=0, t1=2e9, res=1500)
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert trace_wire.decode(gzip.decompress(zipped.body))[0]["events"] == n
    app = WsgiApp(build_routes(state))
    captured: dict[str, object] = {}
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": "/api/tool/trace_viewer/window",
        "QUERY_STRING": f"run={RUN}&t0=0&t1=2e9&res=1500",
        "HTTP_ACCEPT_ENCODING": "gzip",
    }
    body = b"".join(app(environ, lambda status, headers: captured.update(headers=headers)))
    assert trace_wire.decode(gzip.decompress(body))[0]["events"] == n


def test_endpoint_answers_are_never_stored_by_the_browser(state: ServerState) -> None:
    """A window (megabytes, per pan) and the other endpoints' answers have no validator: a
    browser that stored them (``no-cache``) wrote each to its HTTP cache for nothing, a
    quarter of a near-full window's time in Chromium (decision 445)."""
    window = get(state, "/api/tool/trace_viewer/window", run=RUN, t0=0, t1=2e9, res=1500)
    steps = get(state, "/api/tool/trace_viewer/steps", run=RUN)
    for response in (window, steps):
        assert response.status == 200
        assert response.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize(
    ("address", "compress_local", "gzipped"),
    [
        ("127.0.0.1", False, False),
        ("::1", False, False),
        ("192.0.2.7", False, True),
        ("127.0.0.1", True, True),
    ],
)
def test_windows_go_uncompressed_to_this_machine(
    state: ServerState, address: str, compress_local: bool, gzipped: bool
) -> None:
    """A page on this machine gets the window as it is (gzip cost the server 6 ms and the page
    16 ms to inflate for a 10.6M-event trace's full view: decision 290); another machine
    gets it gzipped, and so does this one with ``--compress-local`` (an SSH tunnel)."""
    from starlette.testclient import TestClient

    from stepscope.serve.app import create_app

    app = create_app(state.logdir, state=state, compress_local=compress_local)
    query = {"run": RUN, "t0": "0", "t1": "2e9", "res": "1500"}
    gz = {"Accept-Encoding": "gzip, deflate, br, zstd"}  # what Chromium sends
    with TestClient(app, client=(address, 50000)) as client:
        window = client.get("/api/tool/trace_viewer/window", params=query, headers=gz)
        steps = client.get("/api/tool/trace_viewer/steps", params={"run": RUN}, headers=gz)
        script = client.get("/static/app.js", headers=gz)  # through the gzip middleware
    expected = "gzip" if gzipped else None
    for response in (window, steps, script):
        assert response.status_code == 200
        assert response.headers.get("content-encoding") == expected, response.url
    assert trace_wire.decode(window.content)[0]["events"] > 1000  # httpx inflated it if gzip
    assert len(json.loads(steps.content)["number"]) == 30


def test_full_view_is_computed_once_per_resolution_and_tracks(
    state: ServerState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole trace, the request every page opens with, is answered from the index's
    memo once computed; any other window, or other parameters, is computed."""
    structure = json.loads(get(state, "/api/tool/trace_viewer", run=RUN).body)
    span = structure["duration_ns"]
    computed: list[int] = []
    query = api.query_window

    def counting(*args: object, **kwargs: object) -> object:
        computed.append(1)
        return query(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(api, "query_window", counting)
    path = "/api/tool/trace_viewer/window"

    def ask(**params: object) -> bytes:
        response = get(state, path, run=RUN, **params)
        assert response.status == 200
        return response.body

    first = ask(t0=0, t1=span, res=1237)
    assert ask(t0=0, t1=span, res=1237) == first and len(computed) == 1
    assert ask(t0=-5, t1=span * 1.5, res=1237) != first  # zoomed out: a wider answer
    others = [{"res": 1238}, {"res": 1237, "lines": "0"}, {"res": 1237, "counters": "0"}]
    for params in others:
        assert ask(t0=0, t1=span, **params) != first
    assert len(computed) == 5
    assert ask(t0=1, t1=span, res=1237) == ask(t0=1, t1=span, res=1237)  # not the whole
    assert len(computed) == 7
    # What the memo holds is what computing gives (after the others were asked).
    monkeypatch.setattr(api, "query_window", query)
    profile, index = api.trace_of(ToolContext(state.run(RUN), "localhost_6009", state.store))
    t0, t1 = index.origin_ns, index.origin_ns + span
    assert api._window_answer(profile, index, t0, t1, 1237, None, True)[0] == first


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"t0": "x"}, "must be a number"),
        ({"t0": "10", "t1": "5"}, "greater"),
        ({"res": "0"}, "integer from 1"),
        ({"lines": "a-b"}, "bad item"),
    ],
)
def test_window_bad_parameters(state: ServerState, query: dict[str, str], message: str) -> None:
    response = get(state, "/api/tool/trace_viewer/window", run=RUN, **query)
    assert response.status == 400 and message in json.loads(response.body)["error"]


def test_search_event_select(state: ServerState) -> None:
    found = json.loads(
        get(
            state,
            "/api/tool/trace_viewer/search",
            run=RUN,
            q="ITERATOR::ROOT",
            limit=50,
            t0=0,
            t1=5e8,
            res=800,
        ).body
    )
    assert found["total"] > 1000 and len(found["results"]["event"]) == 50
    assert all("iterator::root" in n.lower() for n in found["results"]["name"])
    assert found["results"]["start_ns"] == sorted(found["results"]["start_ns"])
    assert 0 < len(found["window"]["event"]) <= found["window_total"]
    first = found["results"]["event"][0]
    detail = json.loads(get(state, "/api/tool/trace_viewer/event", run=RUN, id=first).body)
    assert detail["event"] == first and detail["name"].startswith("Iterator::Root")
    assert detail["stats"] and detail["section"] == "/host:CPU"
    box = json.loads(
        get(state, "/api/tool/trace_viewer/select", run=RUN, t0=0, t1=3e8, rows="0:0-2,3").body
    )
    assert box["count"] > 0 and box["by_name"][0]["total_ns"] >= box["by_name"][-1]["total_ns"]
    assert get(state, "/api/tool/trace_viewer/search", run=RUN).status == 400
    assert get(state, "/api/tool/trace_viewer/event", run=RUN, id=10**9).status == 400


def test_kineto_event_links_to_its_launch(state: ServerState) -> None:
    data = json.loads(get(state, "/api/tool/trace_viewer", run="bert").body)
    assert data["sections"][0]["name"] == "/device:GPU:0" and data["flows"] > 0
    _, arrays = trace_wire.decode(get(state, "/api/tool/trace_viewer/window", run="bert").body)
    launch = np.flatnonzero(arrays["flow_kind"] == 0)[0]
    kernel = int(arrays["dst"][launch])
    detail = json.loads(get(state, "/api/tool/trace_viewer/event", run="bert", id=kernel).body)
    assert detail["section"] == "/device:GPU:0"
    incoming = [f for f in detail["flows"] if f["direction"] == "in"]
    assert (
        incoming
        and incoming[0]["kind"] == "launch"
        and incoming[0]["event"] == int(arrays["src"][launch])
    )


def test_h100_steps_are_the_overviews(state: ServerState) -> None:
    # The H100 trace's step box listed 2 steps (one twice) where the overview has 1: both
    # read the one step database now.
    steps = json.loads(get(state, "/api/tool/trace_viewer/steps", run="bert").body)
    overview = json.loads(get(state, "/api/tool/overview_page", run="bert").body)
    assert steps["number"] == [s["step"] for s in overview["steps"]] == [6]


def test_steps_track_shares_the_step_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trace viewer's steps come from the store's step database, the one the overview
    uses: whichever tool opens first builds it, the other reuses it."""
    built = count_step_db_builds(monkeypatch, _analysis)
    run = open_run(str(ctl_run_dir(tmp_path)))
    ctx = ToolContext(run, run.hosts[0].host, ProfileStore(use_cache=False))
    _, index = api.trace_of(ctx)
    assert built == []  # the index and its first window need no steps
    db = _analysis.step_db(ctx, run.hosts[0].host)  # the overview's
    assert built == [1]  # not built again for the trace viewer's steps
    assert index.steps.number.tolist() == sorted(db.step_num.tolist())[: len(index.steps.number)]
    assert len(index.steps.number) > 0


def test_first_answer_is_computed_before_the_store_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The converted profile's entry is written after the structure is answered, not while
    the trace index is built (on two busy cores the write took CPU from the first window)."""
    from stepscope.model import cache
    from stepscope.stats.trace_index import index as trace_index
    from stepscope.store import background

    answered = [False]
    saved_while: list[bool] = []
    saved = threading.Event()
    save, build = cache.save, trace_index.build_trace_index

    def recording_save(*args: object) -> None:
        saved_while.append(answered[0])
        saved.set()
        save(*args)  # type: ignore[arg-type]

    def slow_build(*args: object, **kwargs: object) -> trace_index.TraceIndex:
        saved.wait(0.5)  # a bound, not a measurement: the save must not start meanwhile
        return build(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cache, "save", recording_save)
    monkeypatch.setattr(trace_index, "build_trace_index", slow_build)
    run = open_run(str(ctl_run_dir(tmp_path)))
    ctx = ToolContext(run, run.hosts[0].host, ProfileStore(cache_dir=tmp_path / "cache"))
    api.trace_of(ctx)
    answered[0] = True
    background.wait()
    assert saved_while == [True]
