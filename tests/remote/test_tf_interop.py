"""Interoperability with TensorFlow's own server and client, both ways; XProf opens the files.

TensorFlow runs in child processes (importing it here would cost seconds and memory in every
test run); skipped where TensorFlow is not installed (``pip install tensorflow-cpu``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stepscope.client
from stepscope.capture.remote.server import ProfilerServer
from stepscope.errors import StepscopeError
from tests.support.ports import free_port, ready_port

if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("TensorFlow is not installed (pip install tensorflow-cpu)", allow_module_level=True)
raw_to_tool_data = pytest.importorskip("xprof.convert.raw_to_tool_data")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}

TF_SERVER = textwrap.dedent(
    """
    import sys, threading, os
    import tensorflow as tf
    tf.profiler.experimental.server.start(int(sys.argv[1]))
    x = tf.random.normal((64, 64))

    @tf.function
    def train_step(x):
        return tf.reduce_sum(tf.matmul(x, x))

    train_step(x)
    print("READY", sys.argv[1], flush=True)
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    step = 0
    while True:
        with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
            train_step(x)
        step += 1
    """
)

TF_CLIENT = textwrap.dedent(
    """
    import sys
    import tensorflow as tf
    for address, logdir in zip(sys.argv[1::2], sys.argv[2::2]):
        tf.profiler.experimental.client.trace("grpc://" + address, logdir, 1000)
    print("TRACED", flush=True)
    """
)


def xprof_steps(path: Path) -> list[str]:
    """The step labels of XProf's overview page for ``path`` (XProf's own converter)."""
    data, _ = raw_to_tool_data.xspace_to_tool_data(
        [str(path)], "overview_page", {"use_saved_result": False}
    )
    return [row["c"][0]["v"] for row in json.loads(data)[1]["rows"]]


@pytest.fixture
def tf_server() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", TF_SERVER, str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        ready_port(proc, 180.0)
        yield f"localhost:{port}"
    finally:
        proc.kill()
        proc.wait(10)


def test_stepscope_client_captures_from_tensorflow_server(tf_server: str, tmp_path: Path) -> None:
    result = stepscope.client.trace(f"grpc://{tf_server}", tmp_path, 1000, verbose=False)
    (worker,) = result.workers
    assert worker.state == "ok", worker.line()
    path = worker.path
    assert path is not None and path.name == tf_server.replace(":", "_") + ".xplane.pb"
    assert len(xprof_steps(path)) > 5
    # TensorFlow's server does not implement Monitor; we say so in one line.
    with pytest.raises(StepscopeError, match="does not implement Monitor"):
        stepscope.client.monitor(tf_server, 100)


@pytest.mark.usefixtures("training")
def test_tensorflow_client_captures_from_stepscope_server(
    server_factory: Any, tmp_path: Path
) -> None:
    allowed = tmp_path / "allowed"
    returns: ProfilerServer = server_factory()  # no allowed root: the data goes back to TF
    writes: ProfilerServer = server_factory(allowed_roots=[allowed])  # writes the file itself
    jobs = [(f"localhost:{returns.port}", tmp_path / "tf_a"), (f"localhost:{writes.port}", allowed)]
    done = subprocess.run(
        [sys.executable, "-c", TF_CLIENT, *[str(x) for job in jobs for x in job]],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=240,
    )
    assert done.returncode == 0 and "TRACED" in done.stdout, done.stderr[-3000:]
    for address, logdir in jobs:
        (path,) = (logdir / "plugins" / "profile").glob("*/*.xplane.pb")
        assert path.name == address.replace(":", "_") + ".xplane.pb"
        assert len(xprof_steps(path)) > 5
