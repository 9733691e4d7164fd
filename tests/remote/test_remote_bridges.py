"""Remote captures run the TensorFlow and JAX bridges, as `stepscope.start` does.

The workers are separate processes that imported the framework and run a tiny compiled
function in every `stepscope.step`; a capture through `stepscope.client.trace` must hold the
framework's host ops on the training thread's line (where they nest in the steps).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import pytest

from stepscope.capture import bridges
from stepscope.capture.bridges import Bridge
from stepscope.capture.remote.client import trace
from stepscope.model.load import open_host
from stepscope.model.runs import open_run
from stepscope.xspace.formats import load_xspace
from stepscope.xspace.proto.xplane_pb2 import XSpace

from .conftest import Worker

pytestmark = pytest.mark.integration

TYPE_CHECKING = False
if TYPE_CHECKING:
    from stepscope.capture.remote.server import ProfilerServer

HOST = "/host:CPU"


def _host_lines(space: XSpace) -> dict[int, set[str]]:
    """Host line id -> the names of its events."""
    plane = next(p for p in space.planes if p.name == HOST)
    meta = {i: m.name for i, m in plane.event_metadata.items()}
    return {line.id: {meta[e.metadata_id] for e in line.events} for line in plane.lines}


def _capture(worker: Worker, tmp_path: Path) -> tuple[XSpace, Path]:
    result = trace(f"grpc://{worker.address}", str(tmp_path), 400, verbose=False)
    assert len(result.paths) == 1, result.lines()
    return load_xspace(result.paths[0]), result.paths[0]


def _spawn(
    spawn_workers: Callable[..., list[Worker]],
    monkeypatch: pytest.MonkeyPatch,
    framework: str,
    bridges_env: str | None = None,
) -> Worker:
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed")
    if bridges_env is None:  # the worker inherits the environment: default selection (auto)
        monkeypatch.delenv("STEPSCOPE_BRIDGES", raising=False)
    else:
        monkeypatch.setenv("STEPSCOPE_BRIDGES", bridges_env)
    return spawn_workers(1, "--framework", framework)[0]


def _assert_loads(path: Path) -> None:
    run = open_run(str(path.parent))
    profile = open_host(run.hosts[0], use_cache=False)
    assert profile.n_events > 0


@pytest.mark.timeout(60)
def test_remote_capture_includes_jax_host_ops(
    spawn_workers: Callable[..., list[Worker]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    worker = _spawn(spawn_workers, monkeypatch, "jax")
    space, path = _capture(worker, tmp_path)
    assert not [w for w in space.warnings if "JAX bridge" in w], list(space.warnings)
    lines = _host_lines(space)
    # JAX's ops are on the training thread's line, with stepscope's step and trace events.
    training = [names for names in lines.values() if "compute" in names]
    assert training, lines
    assert any(name.startswith("PjitFunction") for name in training[0]), sorted(training[0])
    # The server thread's line (only clock markers, dropped) is not in the profile.
    assert all(names for names in lines.values())
    assert not any(n.startswith("stepscope.clock_sync.") for ns in lines.values() for n in ns)
    _assert_loads(path)


@pytest.mark.timeout(60)
def test_remote_capture_honours_stepscope_bridges_none(
    spawn_workers: Callable[..., list[Worker]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    worker = _spawn(spawn_workers, monkeypatch, "jax", bridges_env="none")
    space, _path = _capture(worker, tmp_path)
    names = set().union(*_host_lines(space).values())
    assert "compute" in names
    assert not any(name.startswith("PjitFunction") for name in names), sorted(names)


@pytest.mark.timeout(90)
def test_remote_capture_includes_tensorflow_ops(
    spawn_workers: Callable[..., list[Worker]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    worker = _spawn(spawn_workers, monkeypatch, "tensorflow")
    space, path = _capture(worker, tmp_path)
    assert not [w for w in space.warnings if "TensorFlow bridge" in w], list(space.warnings)
    lines = _host_lines(space)
    training = [names for names in lines.values() if "compute" in names]
    assert training
    # The tf.function runs on the training thread's line; its ops (MatMul) on TF's threads.
    assert "FunctionRun" in training[0], sorted(training[0])
    assert any("MatMul" in name for names in lines.values() for name in names), lines
    _assert_loads(path)


class _Broken(Bridge):
    name = "broken"
    title = "Broken"

    def start(self) -> None:
        raise RuntimeError("boom")


def test_bridge_failure_keeps_the_remote_capture(
    server_factory: Callable[..., ProfilerServer],
    training: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(bridges, "_registered", [_Broken])
    monkeypatch.setattr(bridges, "_frameworks", ("broken",))
    server = server_factory()
    result = trace(f"grpc://{server.address}", str(tmp_path), 200, verbose=False)
    space = load_xspace(result.paths[0])
    assert any("Broken bridge failed while starting" in w for w in space.warnings)
    assert "compute" in set().union(*_host_lines(space).values())
