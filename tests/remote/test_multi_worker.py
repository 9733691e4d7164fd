"""Several workers in several processes (loopback ports), captured at once.

Each worker is `worker.py`: a stepscope profiler server plus a loop of 2 ms steps.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

import stepscope.client
from stepscope.capture.remote.client import CaptureJob, NoTraceCollectedError
from stepscope.cli.main import main as cli_main
from tests.remote.helpers import read_saved

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _file(logdir: Path, session: str, address: str) -> Path:
    return logdir / "plugins" / "profile" / session / (address.replace(":", "_") + ".xplane.pb")


def test_capture_from_three_workers(spawn_workers: Any, tmp_path: Path) -> None:
    """One request per worker, in parallel: all three are capturing at once (a client
    asking one after the other never has two), and each saves its recording."""
    workers = spawn_workers(3)
    job = CaptureJob([w.address for w in workers], tmp_path, 1500)
    thread = threading.Thread(target=job.run)
    thread.start()
    deadline = time.monotonic() + 20
    while not all(w.state == "capturing" for w in job.workers):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    thread.join(30)
    assert not thread.is_alive()
    assert [w.state for w in job.workers] == ["ok"] * 3, [w.line() for w in job.workers]
    for worker in workers:
        saved = read_saved(_file(tmp_path, job.session_id, worker.address))
        assert saved.named("train")


def test_a_worker_killed_mid_capture(spawn_workers: Any, tmp_path: Path) -> None:
    workers = spawn_workers(3)
    job = CaptureJob([w.address for w in workers], tmp_path, 1500, num_tracing_attempts=2)
    thread = threading.Thread(target=job.run)
    thread.start()
    deadline = time.monotonic() + 20
    while not all(w.state == "capturing" for w in job.workers):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    workers[1].kill()  # its answer was due in 1.5 s: the capture is cut short
    thread.join(30)
    assert not thread.is_alive()
    states = [w.state for w in job.workers]
    assert states == ["ok", "failed", "ok"], [w.line() for w in job.workers]
    assert "unavailable" in job.workers[1].reason
    assert job.workers[1].attempt == 2  # retried once, then reported
    for i in (0, 2):
        assert read_saved(_file(tmp_path, job.session_id, workers[i].address)).named("train")
    assert not _file(tmp_path, job.session_id, workers[1].address).exists()


def test_a_dead_worker_is_reported_and_the_others_saved(
    spawn_workers: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], dead: str
) -> None:
    (alive,) = spawn_workers(1)
    status = cli_main(
        [
            "capture",
            f"grpc://{alive.address},grpc://{dead}",
            "--logdir",
            str(tmp_path),
            "--duration-ms",
            "300",
            "--tries",
            "2",
        ]
    )
    assert status == 0
    out, err = capsys.readouterr()
    assert f"{alive.address}: ok -> " in err
    assert f"{dead}: failed after 2 attempt(s): unavailable" in err
    assert "(1 of 2 worker(s) saved)" in out
    assert len(list(tmp_path.rglob("*.xplane.pb"))) == 1


def test_only_dead_workers_exit_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dead: str
) -> None:
    status = cli_main(["capture", f"grpc://{dead}", "--logdir", str(tmp_path), "--tries", "1"])
    assert status == 1
    err = capsys.readouterr().err
    assert "No trace event was collected" in err and ": failed: unavailable" in err


def test_two_clients_at_once_one_waits_its_turn(spawn_workers: Any, tmp_path: Path) -> None:
    (worker,) = spawn_workers(1)
    results: dict[str, Any] = {}

    def capture(name: str) -> None:
        try:
            results[name] = stepscope.client.trace(
                worker.address, tmp_path / name, 400, num_tracing_attempts=4, verbose=False
            )
        except NoTraceCollectedError as exc:
            results[name] = exc.result

    threads = [threading.Thread(target=capture, args=(n,)) for n in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    attempts = sorted(r.workers[0].attempt for r in results.values())
    assert [r.workers[0].state for r in results.values()] == ["ok", "ok"]
    assert attempts[0] == 1 and attempts[1] >= 2  # the second was busy, retried, then got it


def test_token_across_processes(spawn_workers: Any, tmp_path: Path) -> None:
    (worker,) = spawn_workers(1, "--token", "t0k3n")
    with pytest.raises(NoTraceCollectedError):
        stepscope.client.trace(worker.address, tmp_path, 300, token="nope", verbose=False)
    result = stepscope.client.trace(worker.address, tmp_path, 300, token="t0k3n", verbose=False)
    assert result.workers[0].state == "ok"
