"""Stopping `stepscope serve`: Ctrl-C during an answer is a clean stop (decision 400), SIGTERM
lets the store's writes finish (decision 402)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepscope.serve.access import ASGIApp, Message, Receive, Scope, Send
from stepscope.serve.shutdown import AnswerCancelled
from stepscope.store import entries
from tests.support.serve import RUN_A

# `stepscope serve` whose run list blocks until the test lets it go: an answer that is still
# being computed when the user presses Ctrl-C, whatever the machine's speed.
CHILD = """
import sys, time
from pathlib import Path
from stepscope.cli.main import main
from stepscope.serve.state import ServerState

started, release = Path(sys.argv[2]), Path(sys.argv[3])
listed = ServerState.runs

def slow_runs(self):
    started.touch()
    while not release.exists():
        time.sleep(0.02)
    return listed(self)

ServerState.runs = slow_runs
sys.exit(main(["serve", sys.argv[1], "--port", "0"]))
"""


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert proc.poll() is None, "the server ended before the request reached it"
        assert time.monotonic() < deadline, "the request never reached the handler"
        time.sleep(0.02)


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.integration
def test_ctrl_c_during_an_answer_stops_cleanly(logdir: Path, tmp_path: Path) -> None:
    started, release = tmp_path / "started", tmp_path / "release"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(logdir), str(started), str(release)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        # a terminal's job takes Ctrl-C even when this run was started where SIGINT is
        # ignored (a background job of a shell without job control), which it inherits
        preexec_fn=_sigint_default,
    )
    answer: dict[str, object] = {}

    def ask(url: str) -> None:
        try:
            reply = httpx.get(url + "api/runs", timeout=120)
            answer.update(status=reply.status_code, body=reply.text)
        except httpx.HTTPError as exc:
            answer["error"] = repr(exc)

    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        assert match, line
        asking = threading.Thread(target=ask, args=(match.group(1),))
        asking.start()
        _wait_for(started, proc)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal sends
        asking.join(120)
        release.touch()  # the computation ends on its own; its answer is dropped
        _out, err = proc.communicate(timeout=120)
    finally:
        release.touch()
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert answer.get("status") == 503, answer
    assert "stopped before this answer was ready" in str(answer["body"])
    assert "Traceback" not in err and "Exception in ASGI" not in err, err
    assert proc.returncode == 130, (proc.returncode, err)
    lines = [x for x in err.splitlines() if x.strip()]
    assert lines == [
        "stepscope: stopped; 1 answer(s) still being computed were dropped",
        "stepscope: interrupted",
    ], err


# `stepscope serve` whose converted profile is written only once the main thread has ended:
# the write is still pending when SIGTERM comes, and finishes only if the process exits as
# a program does (its writes joined) instead of dying of the signal.
TERM_CHILD = """
import sys, threading, time
from stepscope.cli.main import main
from stepscope.model import cache

saved = cache.save

def late_save(*args):
    while threading.main_thread().is_alive():
        time.sleep(0.02)
    saved(*args)

cache.save = late_save
sys.exit(main(["serve", sys.argv[1], "--port", "0"]))
"""


@pytest.mark.integration
def test_sigterm_lets_the_stores_writes_finish(logdir: Path, tmp_path: Path) -> None:
    """A service manager's stop (SIGTERM) after an answer: the converted profile's pending
    write is finished, so the next start reads it instead of converting again (decision 402)."""
    script, cache_dir = tmp_path / "child.py", tmp_path / "cache"
    script.write_text(TERM_CHILD)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(logdir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "STEPSCOPE_CACHE_DIR": str(cache_dir)},
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        match = re.search(r"(http://127\.0\.0\.1:\d+/)", proc.stdout.readline())
        assert match
        reply = httpx.get(
            match.group(1) + "api/tool/trace_viewer/window",
            params={"run": RUN_A, "host": "vm"},
            timeout=120,
        )
        assert reply.status_code == 200, reply.text
        os.killpg(proc.pid, signal.SIGTERM)
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, err)
    assert "Traceback" not in err, err
    written = [p.parent for p in (cache_dir / "profiles").glob("*/*/manifest.json")]
    assert written and all(entries.verify(p) for p in written)


def _cancelled_app(send_first: bool) -> ASGIApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if send_first:
            await send({"type": "http.response.start", "status": 200, "headers": []})
        raise asyncio.CancelledError

    return app


def _run_on_a_thread(coro: Any) -> None:
    """``asyncio.run`` on a thread of its own: in the whole suite an earlier test leaves an
    event loop running on the main thread, where ``asyncio.run`` refuses to start."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(coro)
        except BaseException as exc:  # handed to the test's thread
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]


@pytest.mark.parametrize("send_first", [False, True])
def test_a_cancelled_answer_is_a_503_not_an_error(send_first: bool) -> None:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.request"}

    app = AnswerCancelled(_cancelled_app(send_first))
    _run_on_a_thread(app({"type": "http"}, receive, send))  # no CancelledError escapes
    if send_first:  # the answer had begun: nothing more can be said on that connection
        assert [m["status"] for m in sent if "status" in m] == [200]
    else:
        assert sent[0]["status"] == 503
        assert b"stopped before this answer was ready" in sent[1]["body"]
