"""The HTTP API on a fake registry: routes, formats, options, caching, both adapters."""

from __future__ import annotations

import fnmatch
import gzip
import json
import os
from pathlib import Path

import httpx
import pytest

from stepscope.serve.routes import STATIC_DIR, static_files
from stepscope.serve.state import ServerState
from stepscope.serve.wsgi import WsgiApp, compile_path
from tests.support.serve import RUN_A, RUN_B, FakeTools, add_run, wsgi_get


def test_runs_hosts_and_tools_come_from_discovery_and_registry(client: httpx.Client) -> None:
    runs = client.get("/api/runs").json()
    assert [r["run"] for r in runs["runs"]] == [RUN_A]
    assert runs["runs"][0]["hosts"] == ["vm", "w1"]
    hosts = client.get(f"/api/runs/{RUN_A}/hosts").json()
    assert hosts == {"run": RUN_A, "hosts": ["vm", "w1", "ALL_HOSTS"], "default": "ALL_HOSTS"}
    tools = client.get("/api/tools").json()
    assert [t["name"] for t in tools] == ["fake_stats", "fake_single"]
    assert tools[0]["options"][0] == {
        "name": "include_idle",
        "description": "count idle time",
        "default": "true",
        "choices": ["true", "false"],
    }
    assert tools[0]["page"] is None  # no static/pages/fake_stats.js: the UI will not list it
    listed = client.get("/api/tools", params={"run": RUN_A, "host": "ALL_HOSTS"}).json()
    assert [t["available"] for t in listed] == [True, False]  # fake_single needs one host


def test_runs_the_flight_recorder_saved_carry_its_trigger_and_reason(
    client: httpx.Client, logdir: Path
) -> None:
    assert client.get("/api/runs").json()["runs"][0]["saved_by"] is None
    (run_dir,) = [p.parent for p in logdir.rglob("vm.xplane.pb")]
    marker = {"trigger": "slow_step", "reason": "step 30 took 10.1 ms", "step": 30, "x": "x" * 500}
    (run_dir / "vm.recorder.json").write_text(json.dumps(marker))
    add_run(logdir, next(logdir.rglob("vm.xplane.pb")), "train/2026_01_02_00_00_00")
    (logdir / "train/plugins/profile/2026_01_02_00_00_00/vm.recorder.json").write_text("{bad")
    runs = client.get("/api/runs").json()["runs"]
    assert runs[0]["saved_by"] == {
        "trigger": "slow_step",
        "reason": "step 30 took 10.1 ms",
        "host": "vm",
        "step": 30,
        "part": "before",
        "steps": None,  # a marker written before decision 530: unknown, not mid-run
        "steps_before": None,
        "steps_from": "",  # marked steps (decision 815)
        "hung": None,  # not a hang
    }
    assert runs[1]["saved_by"] is None  # an unreadable marker is ignored (and logged)


def test_the_recorders_step_history_is_served(client: httpx.Client, logdir: Path) -> None:
    """``/api/recorder``: the marker and the step summaries the recorder held when it saved
    (its ``<host>.recorder_steps.json``), as columns; 404 for a run it did not save."""
    (run_dir,) = [p.parent for p in logdir.rglob("vm.xplane.pb")]
    run = client.get("/api/runs").json()["runs"][0]["run"]
    assert client.get("/api/recorder", params={"run": run}).status_code == 404
    marker = {"trigger": "exception", "reason": "ValueError: x", "steps": [3, 7]}
    (run_dir / "vm.recorder.json").write_text(json.dumps(marker))
    rows = [[k, 1_000 * k, 900 + k, 5] for k in range(1, 8)]
    history = {"fields": ["step_num", "start_ns", "dur_ns", "thread_id"], "steps": rows}
    (run_dir / "vm.recorder_steps.json").write_text(json.dumps(history))
    got = client.get("/api/recorder", params={"run": run}).json()
    assert got["host"] == "vm" and got["marker"] == marker
    assert got["trigger_step"] == 7  # an exception: the last step kept
    assert got["history"]["step_num"] == list(range(1, 8))
    assert got["history"]["dur_ns"] == [900 + k for k in range(1, 8)]
    (run_dir / "vm.recorder_steps.json").write_text("[1, 2")  # damaged: the marker still served
    assert client.get("/api/recorder", params={"run": run}).json()["history"] is None


def test_tool_json_csv_and_options(client: httpx.Client, fake_tools: FakeTools) -> None:
    r = client.get("/api/tool/fake_stats", params={"run": RUN_A, "host": "vm"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    data = r.json()
    assert data["hosts"] == ["vm"] and data["idle"] == "true" and data["nan"] is None
    r = client.get("/api/tool/fake_stats", params={"run": RUN_A, "include_idle": "false"})
    assert r.json()["host"] == "ALL_HOSTS" and r.json()["idle"] == "false"
    r = client.get("/api/tool/fake_stats", params={"run": RUN_A, "host": "vm", "format": "csv"})
    assert r.headers["content-type"].startswith("text/csv")
    assert "attachment" in r.headers["content-disposition"]
    assert r.text.startswith("name,value\nrun,a/2026")
    bad = [
        ({"run": RUN_A, "format": "xml"}, 400, "no format"),
        ({"run": RUN_A, "include_idle": "maybe"}, 400, "must be one of"),
        ({"run": RUN_A, "colour": "red"}, 400, "no option 'colour'"),
        ({"run": RUN_A, "host": "nope"}, 404, "has no host 'nope'"),
        ({"run": "missing/run"}, 404, "no run 'missing/run'"),
    ]
    for params, status, message in bad:
        r = client.get("/api/tool/fake_stats", params=params)
        assert r.status_code == status, params
        assert message in r.json()["error"]
    r = client.get("/api/tool/fake_single", params={"run": RUN_A, "host": "ALL_HOSTS"})
    assert r.status_code == 400 and "one host at a time" in r.json()["error"]
    assert client.get("/api/tool/fake_single", params={"run": RUN_A}).json()["host"] == "vm"
    r = client.get("/api/tool/nope", params={"run": RUN_A})
    assert r.status_code == 404 and "tools: fake_stats, fake_single" in r.json()["error"]
    assert client.get("/api/other").status_code == 404
    assert client.post("/api/runs").status_code == 403  # any POST needs the token first


def test_results_are_cached_revalidated_and_recomputed_when_files_change(
    client: httpx.Client, fake_tools: FakeTools, logdir: Path
) -> None:
    params = {"run": RUN_A, "host": "vm"}
    first = client.get("/api/tool/fake_stats", params=params)
    again = client.get("/api/tool/fake_stats", params=params)
    assert len(fake_tools.builds) == 1 and again.content == first.content
    etag = first.headers["etag"]
    r = client.get("/api/tool/fake_stats", params=params, headers={"If-None-Match": etag})
    assert r.status_code == 304 and len(fake_tools.builds) == 1
    client.get("/api/tool/fake_stats", params={**params, "include_idle": "false"})
    assert len(fake_tools.builds) == 2  # options are part of the key
    host_file = next(logdir.rglob("vm.xplane.pb"))
    stat = host_file.stat()
    os.utime(host_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    r = client.get("/api/tool/fake_stats", params=params, headers={"If-None-Match": etag})
    assert r.status_code == 200 and r.headers["etag"] != etag and len(fake_tools.builds) == 3


def test_new_runs_appear_without_restart(client: httpx.Client, logdir: Path) -> None:
    assert len(client.get("/api/runs").json()["runs"]) == 1
    add_run(logdir, next(logdir.rglob("vm.xplane.pb")), RUN_B)
    assert client.get("/api/tool/fake_stats", params={"run": RUN_B}).status_code == 200
    assert [r["run"] for r in client.get("/api/runs").json()["runs"]] == [RUN_A, RUN_B]


def test_gzip_and_static_assets(client: httpx.Client) -> None:
    # This machine's clients get answers as they are (decision 290; other machines' get
    # gzip: tests/tools/test_trace_viewer_tool.py::test_windows_go_uncompressed_to_this_machine).
    r = client.get(
        "/api/tool/fake_stats", params={"run": RUN_A}, headers={"Accept-Encoding": "gzip"}
    )
    assert r.status_code == 200 and "content-encoding" not in r.headers
    index = client.get("/")
    assert index.status_code == 200 and "text/html" in index.headers["content-type"]
    assert "default-src 'self'" in index.headers["content-security-policy"]
    assert client.get("/index.html").content == index.content
    js = client.get("/static/app.js")
    assert js.headers["content-type"].startswith("text/javascript")
    assert js.headers["x-content-type-options"] == "nosniff"
    assert (
        client.get("/static/app.js", headers={"If-None-Match": js.headers["etag"]}).status_code
        == 304
    )
    assert client.get("/static/nope.js").status_code == 404


def test_wsgi_adapter_answers_like_the_asgi_app(client: httpx.Client, wsgi: WsgiApp) -> None:
    for path, query in [
        ("/api/runs", ""),
        (f"/api/runs/{RUN_A}/hosts", ""),
        ("/api/tools", ""),
        ("/api/tool/fake_stats", f"run={RUN_A}&host=vm"),
        ("/api/tool/fake_stats", f"run={RUN_A}&format=csv"),
        ("/api/tool/fake_stats", "run=..%2F..%2Fetc"),
        ("/api/nope", ""),
        ("/static/app.js", ""),
    ]:
        expected = client.get(path + ("?" + query if query else ""))
        status, headers, body = wsgi_get(wsgi, path, query)
        assert status == expected.status_code, path
        assert body == expected.content, path
        assert headers["content-type"] == expected.headers["content-type"]
    status, headers, body = wsgi_get(
        wsgi, "/api/tool/fake_stats", f"run={RUN_A}", {"Accept-Encoding": "gzip"}
    )
    assert headers["content-encoding"] == "gzip"
    assert json.loads(gzip.decompress(body))["run"] == RUN_A


def test_wsgi_prefix_and_path_patterns(state: ServerState) -> None:
    from stepscope.serve.routes import build_routes

    app = WsgiApp(build_routes(state), prefix="/data/plugin/stepscope/ui")
    status, _, body = wsgi_get(app, "/data/plugin/stepscope/ui/api/runs")
    assert status == 200 and json.loads(body)["runs"][0]["run"] == RUN_A
    assert compile_path("/api/runs/{run:path}/hosts").match("/api/runs/a/b/hosts")["run"] == "a/b"
    assert compile_path("/x/{name}").match("/x/a/b") is None


def test_every_ui_asset_is_package_data() -> None:
    """A wheel ships only what pyproject's package-data names: every file the UI serves must
    match one of those patterns, or an installed (non-editable) stepscope serves a broken UI."""
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+")
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["stepscope.serve"]
    for name in static_files():
        relative = (STATIC_DIR / name).relative_to(STATIC_DIR.parent).as_posix()
        assert any(
            fnmatch.fnmatch(relative, p) and relative.count("/") == p.count("/") for p in patterns
        ), f"{relative} is not package data"
