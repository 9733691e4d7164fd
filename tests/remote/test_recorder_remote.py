"""The flight recorder over the profiler server: `stepscope capture --recent` and one rank's
trigger making the other ranks save the same steps."""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

import stepscope
import stepscope.recorder as rec
from stepscope.capture.remote.client import NoTraceCollectedError, trace
from stepscope.capture.remote.server import ProfilerServer
from stepscope.cli.main import main
from stepscope.xspace.proto import profiler_service_pb2 as pb
from stepscope.xspace.proto import profiler_service_pb2_grpc as pb_grpc
from tests.support.capture import load_run, named

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture(autouse=True)
def _no_leaked_recorder() -> Iterator[None]:
    yield
    if rec.is_running():
        rec.stop()


def _loop(done: threading.Event, slow_at: int = -1) -> None:
    """2 ms steps; step ``slow_at`` lasts 50 times the median step measured so far in this
    run (at least 0.3 s), so it is slow by the recorder's 20x rule however loaded the
    machine is."""
    step, took = 0, []
    while not done.is_set():
        slow = max(0.3, 50 * statistics.median(took)) if step == slow_at and took else 0.002
        began = time.perf_counter()
        with stepscope.step(step), stepscope.trace("compute"):
            time.sleep(slow)
        took.append(time.perf_counter() - began)
        step += 1


@pytest.fixture
def recording(tmp_path: Path) -> Iterator[rec.Recorder]:
    no_slow = rec.Triggers(slow_step_factor=0)
    recorder = rec.start(str(tmp_path / "worker"), hostname="w0", sampler_hz=0, triggers=no_slow)
    done = threading.Event()
    thread = threading.Thread(target=_loop, args=(done,), name="training", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60  # some steps to keep: wait for them, however slow the machine
    while recorder.ring.steps_seen < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    yield recorder
    done.set()
    thread.join(5)


def _marker(run_dir: Path, host: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / f"{host}.recorder.json").read_text())
    return data


def test_capture_recent_returns_the_recorders_last_steps(
    server: ProfilerServer, recording: rec.Recorder, tmp_path: Path, capsys: Any
) -> None:
    assert (
        main(
            [
                "capture",
                server.address,
                "--logdir",
                str(tmp_path / "me"),
                "--recent",
                "5s",
                "--no-progress",
            ]
        )
        == 0
    )
    assert "flight recorders for their last 5000 ms" in capsys.readouterr().err
    (mine,) = (tmp_path / "me").rglob("*.xplane.pb")
    assert len(named(load_run(mine.parent), "train")) >= 3
    (theirs,) = recording.saved  # kept on the worker's side too, marked
    marker = _marker(theirs, "w0")
    assert marker["trigger"] == "remote"
    assert marker["reason"].startswith("stepscope capture --recent 5s from ")


def test_a_capture_from_a_recording_process_is_served_from_the_recorder(
    server: ProfilerServer, recording: rec.Recorder, tmp_path: Path
) -> None:
    """`stepscope server --recorder` holds the process's one recording: a plain capture (ours,
    TensorFlow's client, XProf's button) was refused with ALREADY_EXISTS on every try and
    ended "No trace event was collected" (decision 576). It is now the recorder's steps of
    the capture's duration, marked as such on the worker's side."""
    result = trace(server.address, tmp_path / "me", 500, verbose=False, num_tracing_attempts=1)
    (mine,) = result.paths
    assert len(named(load_run(Path(mine).parent), "train")) >= 3
    (theirs,) = recording.saved
    marker = _marker(theirs, "w0")
    assert marker["trigger"] == "remote"
    assert marker["reason"].startswith("a 500 ms capture from ")
    assert marker["reason"].endswith(", taken from the flight recorder")
    # TensorFlow's client asks for no XSpace in the answer: it gets the file's bytes as tool
    # data (the server may write nowhere), as from a capture without the recorder
    opts = pb.ProfileOptions(version=1, host_tracer_level=2, duration_ms=300)
    asked = pb.ProfileRequest(
        duration_ms=300, opts=opts, repository_root=str(tmp_path / "tf"), session_id="s"
    )
    with grpc.insecure_channel(server.address) as channel:
        answer = pb_grpc.ProfilerServiceStub(channel).Profile(asked, timeout=30)
    assert not answer.empty_trace
    assert [t.name for t in answer.tool_data] == ["xplane.pb"]
    assert answer.tool_data[0].data


def test_capture_recent_without_a_recorder_says_so(server: ProfilerServer, tmp_path: Path) -> None:
    with pytest.raises(NoTraceCollectedError):
        trace(server.address, tmp_path, 1000, recent=True, verbose=False, num_tracing_attempts=1)


def test_rank_1_trigger_makes_rank_0_save_the_same_steps(
    spawn_workers: Any, tmp_path: Path
) -> None:
    (rank0,) = spawn_workers(1, "--recorder", str(tmp_path), "--hostname", "rank0")
    # arms after 5 + 5 steps whatever this machine's load does to their spread
    triggers = rec.Triggers(
        warmup_steps=5, settle_steps=5, settle_spread=100.0, slow_step_factor=20.0
    )
    recorder = rec.start(
        str(tmp_path),
        hostname="rank1",
        peers=[rank0.address],
        sampler_hz=0,
        triggers=triggers,
        poll_s=0.05,
    )
    done = threading.Event()
    thread = threading.Thread(target=_loop, args=(done, 40), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not recorder.saved and time.monotonic() < deadline:
            time.sleep(0.05)
        assert recorder.saved, "rank 1 saw no slow step"
        run_dir = recorder.saved[0]
        theirs = run_dir / "rank0.recorder.json"
        while not theirs.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        done.set()
        thread.join(5)
    mine = _marker(run_dir, "rank1")
    assert mine["trigger"] == "slow_step" and "step 40 took" in mine["reason"]
    marker = _marker(run_dir, "rank0")
    assert marker["trigger"] == "peer"
    assert marker["reason"].startswith("rank1 saved its last steps (slow_step)")
    assert (run_dir / "rank0.xplane.pb").exists()  # one run, both ranks


def test_a_capture_terminated_before_its_start_saves_nothing(
    server: ProfilerServer, recording: rec.Recorder
) -> None:
    """A capture scheduled ahead (``start_timestamp_ns``) and terminated before it began
    recorded nothing: the recorder saved an empty run all the same, a run in the worker's log
    directory the user never asked for (decision 614)."""
    start_ns = time.time_ns() + 30_000_000_000
    opts = pb.ProfileOptions(
        version=1, host_tracer_level=2, duration_ms=500, start_timestamp_ns=start_ns
    )
    asked = pb.ProfileRequest(duration_ms=500, opts=opts, session_id="ahead", emit_xspace=True)
    with grpc.insecure_channel(server.address) as channel:
        stub = pb_grpc.ProfilerServiceStub(channel)
        future = stub.Profile.future(asked, timeout=60)
        deadline = time.monotonic() + 30
        while "ahead" not in server.servicer._running and time.monotonic() < deadline:
            time.sleep(0.01)
        stub.Terminate(pb.TerminateRequest(session_id="ahead"), timeout=10)
        answer = future.result(timeout=30)
    assert answer.empty_trace
    assert recording.saved == []
