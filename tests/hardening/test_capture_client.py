"""Issue #13 item 13: the capture client keeps a worker's recording when the log directory
cannot be written, refuses session ids that leave it, and bounds its numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.cli.main import main
from stepscope.errors import StepscopeError
from stepscope.xspace import XSpaceBuilder

pytest.importorskip("grpc")

from stepscope.capture.remote.client import CaptureJob
from stepscope.xspace.proto import profiler_service_pb2 as pb


@pytest.mark.parametrize("session_id", ["/abs/path", "../..", "a/b", "..", ""])
def test_session_ids_outside_the_log_directory_are_refused(tmp_path: Path, session_id: str) -> None:
    with pytest.raises(StepscopeError, match="plain directory name"):
        CaptureJob("127.0.0.1:1", tmp_path, 100, session_id=session_id)


@pytest.mark.parametrize("duration", ["99999999999999999999", "600001"])
def test_huge_durations_are_one_line(
    tmp_path: Path, duration: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["capture", "grpc://127.0.0.1:1", "--logdir", str(tmp_path), "--duration-ms", duration]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "duration_ms must be an integer from 1 to" in err[0]


def test_recording_is_kept_when_the_log_directory_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    logdir = tmp_path / "logs"
    (logdir / "plugins").mkdir(parents=True)
    (logdir / "plugins" / "profile").write_text("a file where the runs directory belongs")
    job = CaptureJob("127.0.0.1:6009", logdir, 100, session_id="s1")
    builder = XSpaceBuilder(hostname="worker")
    builder.plane("/host:CPU").line(1, "main").event("step", 1_000, 10)
    response = pb.ProfileResponse(empty_trace=False)
    response.xspace.CopyFrom(builder.build())
    worker = job.workers[0]
    job._save(worker, response)
    assert worker.path is not None and worker.path.exists()  # was: FAILED, recording lost
    assert str(tmp_path / "cache") in str(worker.path)
    assert "cannot write" in worker.reason and str(worker.path) in worker.reason
    assert worker.path.read_bytes() == response.xspace.SerializeToString()
