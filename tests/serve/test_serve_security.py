"""Requests can never read outside the log directory; the server listens on loopback by default."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from stepscope.cli.main import build_parser
from stepscope.errors import NotFoundError
from stepscope.serve import security
from stepscope.serve.app import _prepare, is_loopback, start_server
from stepscope.serve.state import ServerState
from tests.support.serve import RUN_A, FakeTools, add_run, make_logdir

TRAVERSALS = [
    "../../etc",
    "../../../../../../etc/passwd",
    "..",
    "a/../../etc",
    "/etc/passwd",
    "%2e%2e%2f%2e%2e%2fetc",  # what a doubly encoded request leaves after one decoding
    "..%2f..%2fetc",
    "..\\..\\windows",
    "C:\\Windows",
    "file:///etc/passwd",
    "~root",
    "run\x00.pb",
]


@pytest.fixture(scope="module")
def shared_client(
    tmp_path_factory: pytest.TempPathFactory, fixtures_dir: Path
) -> Iterator[httpx.Client]:
    """One real server for the module's read-only traversal cases (a server per case cost more
    than the cases themselves)."""
    logdir = make_logdir(tmp_path_factory.mktemp("logs"), fixtures_dir)
    state = ServerState(logdir, tools=FakeTools().specs, rediscover_s=0.0, use_cache=False)
    server = start_server(logdir, state=state)
    try:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            yield c
    finally:
        server.stop()


@pytest.mark.parametrize("value", TRAVERSALS)
def test_traversal_in_query_parameters_is_refused(shared_client: httpx.Client, value: str) -> None:
    client = shared_client
    for params in ({"run": value}, {"run": RUN_A, "host": value}):
        r = client.get("/api/tool/fake_stats", params=params)
        assert r.status_code == 404, (params, r.text)
        assert r.headers["content-type"].startswith("application/json")
        assert "refused" in r.json()["error"] or "no host" in r.json()["error"]
    r = client.get("/api/tools", params={"run": value})
    assert r.status_code == 404


def raw_get(url: str, target: str) -> tuple[int, bytes]:
    """Send ``target`` byte for byte (clients normalise '..' and re-encode; attackers do not)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(
            f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


@pytest.mark.parametrize(
    "target",
    [
        "/api/runs/..%2F..%2Fetc/hosts",
        "/api/runs/%2e%2e/%2e%2e/etc/hosts",
        "/api/runs/%252e%252e%252fetc/hosts",
        "/api/tool/fake_stats?run=..%2F..%2F..%2Fetc%2Fpasswd",
        "/api/tool/fake_stats?run=%252e%252e%252f%252e%252e%252fetc",
        "/api/tool/..%2F..%2Fetc%2Fpasswd",
        "/static/../routes.py",
        "/static/..%2Froutes.py",
        "/static/%2e%2e/%2e%2e/serve/routes.py",
        "/static/%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/../../../../etc/passwd",
        "/static//etc/passwd",
    ],
)
def test_traversal_in_paths_is_refused(shared_client: httpx.Client, target: str) -> None:
    status, body = raw_get(str(shared_client.base_url), target)
    assert status in (400, 404), target
    assert b"root:" not in body and b"def build_routes" not in body


def test_symlinks_out_of_the_logdir_are_not_served(
    tmp_path: Path, logdir: Path, fake_tools: FakeTools
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.xplane.pb"
    secret.write_bytes(next(logdir.rglob("vm.xplane.pb")).read_bytes())
    evil = logdir / "evil" / "plugins" / "profile" / "2026_01_03_00_00_00"
    evil.mkdir(parents=True)
    os.symlink(secret, evil / "vm.xplane.pb")
    os.symlink(outside, logdir / "linked_dir")  # not followed by discovery either
    state = ServerState(logdir, tools=fake_tools.specs, use_cache=False)
    assert [r.name for r in state.runs()] == [RUN_A]
    with pytest.raises(NotFoundError):
        state.run("evil/2026_01_03_00_00_00")
    # A run with one escaping host keeps only its other hosts.
    add_run(logdir, secret, "mixed/2026_01_04_00_00_00")
    mixed = logdir / "mixed" / "plugins" / "profile" / "2026_01_04_00_00_00"
    (mixed / "w1.xplane.pb").unlink()
    os.symlink(secret, mixed / "w1.xplane.pb")
    assert state.run("mixed/2026_01_04_00_00_00").host_names == ["vm"]


def test_check_name_accepts_ordinary_names() -> None:
    for name in ["ctl/2026_11_22_00_46_33", "localhost_6009", "ALL_HOSTS", "rank0.1", "a..b"]:
        assert security.check_name("run", name) == name
    for bad in ["", "x" * 2000, "a/../b", "%41"]:
        with pytest.raises(security.RefusedError):
            security.check_name("run", bad)


def test_loopback_by_default_and_warning_elsewhere(logdir: Path) -> None:
    args = build_parser().parse_args(["serve", str(logdir)])
    assert args.host == "127.0.0.1" and args.port == 6006
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    warnings: list[str] = []
    _server, sock, _state, url, _token = _prepare(logdir, "0.0.0.0", 0, False, warnings.append)
    sock.close()  # bound only to see the warning; never served
    assert warnings and "anyone who can reach this machine" in warnings[0]
    _server, sock, _state, url, _token = _prepare(logdir, "127.0.0.1", 0, False, warnings.append)
    sock.close()
    assert len(warnings) == 1 and url.startswith("http://127.0.0.1:")


def test_foreign_host_header_is_refused(client: httpx.Client) -> None:
    """A page on another site that rebinds its DNS name to 127.0.0.1 cannot read the API."""
    r = client.get("/api/runs", headers={"Host": "attacker.example"})
    assert r.status_code == 403 and "--allow-host" in r.json()["error"]
