"""`stepscope serve` as a user runs it: prints the URL, serves, reports errors in one line."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from stepscope.xspace.formats import expected_names

pytestmark = pytest.mark.integration


def serve_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "stepscope.cli.main", "serve", *args]


def test_serve_prints_the_url_and_serves(logdir: Path) -> None:
    proc = subprocess.Popen(
        serve_command(str(logdir), "--port", "0"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        assert match, line
        runs = httpx.get(match.group(1) + "api/runs", timeout=30).json()["runs"]
        assert [r["hosts"] for r in runs] == [["vm", "w1"]]
        assert "<title>stepscope</title>" in httpx.get(match.group(1)).text
    finally:
        proc.terminate()
        proc.wait(10)


def test_serve_errors_are_one_line(tmp_path: Path, logdir: Path) -> None:
    missing = subprocess.run(serve_command(str(tmp_path / "nope")), capture_output=True, text=True)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        f"stepscope: error: {tmp_path / 'nope'}: no such file or directory (give a log "
        f"directory, a run directory .../plugins/profile/<run>, or a profile file: "
        f"{expected_names()})"
    ]
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = str(busy.getsockname()[1])
        taken = subprocess.run(
            serve_command(str(logdir), "--port", port), capture_output=True, text=True
        )
    assert taken.returncode == 2
    assert "cannot listen on 127.0.0.1" in taken.stderr and "--port 0" in taken.stderr


def test_page_url_opens_one_run() -> None:
    from stepscope.serve.app import page_url

    base = "http://127.0.0.1:6006/"
    assert page_url(base) == base
    assert page_url(base, run="ctl/2026_11_22") == base + "#/overview_page?run=ctl%2F2026_11_22"
    assert page_url(base, "r", "op_stats", "vm") == base + "#/op_stats?run=r&host=vm"
