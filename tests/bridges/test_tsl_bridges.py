"""The TensorFlow and JAX bridges on real CPU runs (each in a subprocess; skipped where the
framework is not installed: see scripts/test_bridges.sh and docs/bridges.md)."""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.capture.bridges.base import BridgeSet
from stepscope.capture.bridges.sync import SYNC_PREFIX
from stepscope.capture.bridges.tsl import TslBridge
from stepscope.capture.options import ProfilerOptions
from stepscope.model import load_profile, open_run
from stepscope.model.from_xspace import profile_from_xspace
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.formats import load_xspace
from stepscope.xspace.merge import env_stats
from tests.support.capture import events, named
from tests.support.scripts import run_script

pytestmark = pytest.mark.integration

JAX_SCRIPT = """
import json, sys
import jax, jax.numpy as jnp
import stepscope
f = jax.jit(lambda x: jnp.tanh(x @ x).sum())
x = jnp.ones((64, 64))
f(x).block_until_ready()
stepscope.start(sys.argv[1])
for s in range(6):
    with stepscope.step(s):
        f(x * s).block_until_ready()
print(json.dumps({"run": str(stepscope.stop())}))
"""

TF_SCRIPT = """
import json, sys
import tensorflow as tf
import stepscope
data = tf.data.Dataset.range(10_000).map(lambda v: tf.cast(v, tf.float32) * 2.0)
batches = iter(data.batch(8).prefetch(2))
w = tf.Variable(tf.ones((8, 8)))

@tf.function
def train_step(b):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.matmul(tf.reshape(b, (1, 8)), w))
    w.assign_sub(0.01 * tape.gradient(loss, w))
    return loss

train_step(next(batches))
stepscope.start(sys.argv[1])
for s in range(6):
    with stepscope.step(s):
        train_step(next(batches))
print(json.dumps({"run": str(stepscope.stop())}))
"""


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _capture(script: str, tmp_path: Path) -> tuple[Any, Path, list[str]]:
    run_dir = Path(run_script(script, str(tmp_path))["run"])
    path = next(run_dir.glob("*.xplane.pb"))
    return load_profile(path), run_dir, list(load_xspace(path).warnings)


def _main_line(profile: Any) -> Any:
    return next(line for line in profile.lines if line.name == "MainThread")


def _nested_in_steps(profile: Any, names: list[dict[str, Any]]) -> bool:
    steps = named(profile, "train")
    return all(
        any(s["start_ns"] <= e["start_ns"] and e["end_ns"] <= s["end_ns"] for s in steps)
        for e in names
    )


def _overview(run_dir: Path) -> dict[str, Any]:
    run = open_run(str(run_dir))
    ctx = ToolContext(run, run.hosts[0].host, ProfileStore(use_cache=False))
    page: dict[str, Any] = output.to_json(get_tool("overview_page").build(ctx))
    return page


@pytest.mark.skipif(not _installed("jax"), reason="pip install jax==0.10.2 jaxlib==0.10.2")
def test_jax_ops_join_stepscope_steps_on_one_clock(tmp_path: Path) -> None:
    profile, run_dir, warnings = _capture(JAX_SCRIPT, tmp_path)
    main = _main_line(profile)
    calls = [
        e for e in events(profile) if e["name"].startswith("PjitFunction") and e["tid"] == main.id
    ]
    assert len(calls) >= 6 and _nested_in_steps(profile, calls)
    lines = {line.name.split("/")[0] for line in profile.lines}
    assert "tf_XLAPjRtCpuClient" in lines  # JAX's own threads come along
    idx = np.flatnonzero(profile.line == main.index)
    assert (profile.start_ns[idx] >= 0).all()
    assert not any(e["name"].startswith(SYNC_PREFIX) for e in events(profile))
    assert warnings == []
    page = _overview(run_dir)
    # JAX's bridge wrote no step marker of its own: stepscope's six are all whole (644)
    assert page["step_source"] == "marker" and len(page["steps"]) == 6


@pytest.mark.skipif(not _installed("tensorflow"), reason="pip install tensorflow-cpu==2.21.0")
def test_tensorflow_ops_and_tf_data_join_stepscope_steps(tmp_path: Path) -> None:
    profile, run_dir, warnings = _capture(TF_SCRIPT, tmp_path)
    main = _main_line(profile)
    runs = [
        e
        for e in events(profile)
        if e["name"].startswith("EagerLocalExecute: __inference_train_step") and e["tid"] == main.id
    ]
    assert len(runs) == 6 and _nested_in_steps(profile, runs)
    assert any(line.name.startswith("tf_data") for line in profile.lines)
    assert named(profile, "Iterator::Root::Prefetch")
    assert not any(e["name"].startswith(SYNC_PREFIX) for e in events(profile))
    assert warnings == []
    page = _overview(run_dir)
    # TF's bridge marks each FunctionRun with `_r`; stepscope's own six markers stay whole
    # whatever bridges ran (671: XProf's rule had dropped the first and the last, 4)
    assert page["step_source"] == "marker" and len(page["steps"]) == 6


class _RecordedJax(TslBridge):
    """A TSL bridge whose "profiler" wrote the JAX-on-GPU fixture (no framework needed)."""

    name, title = "recorded", "JAX"

    def __init__(self, fixture: Path) -> None:
        super().__init__(ProfilerOptions())
        self.fixture = fixture

    def start_profiler(self, logdir: str) -> None:
        self.logdir = logdir

    def stop_profiler(self) -> None:
        target = Path(self.logdir) / "plugins" / "profile" / "run" / "host.xplane.pb"
        target.parent.mkdir(parents=True)
        shutil.copyfile(self.fixture, target)

    def annotation(self) -> Any:
        return lambda name: contextlib.nullcontext()


def test_device_planes_of_a_jax_gpu_profile_are_merged(fixtures_dir: Path) -> None:
    fixture = fixtures_dir / "xspace" / "gpu_jax_fused_attention.xplane.pb"
    env = env_stats(load_xspace(fixture))
    start, stop = int(env["profile_start_time"]), int(env["profile_stop_time"])
    bridge = _RecordedJax(fixture)
    bridge.start()
    bridge.stop()
    bridge.sync.markers.clear()  # markers never reached a file: relative times, Unix clock
    bridge.sync.wall_ns, bridge.sync.perf_ns = start, 0
    builder = XSpaceBuilder(hostname="worker")
    builder.plane("/host:CPU").line(1, "MainThread").event("train", 0, stop - start)
    space = builder.build()
    BridgeSet([bridge]).merge_into(space, 0, stop - start)
    assert bridge.tmpdir is None  # temporary files removed
    profile = profile_from_xspace(space)
    gpu = next(p for p in profile.planes if p.name == "/device:GPU:0")
    assert gpu.line_count >= 1 and gpu.stats["core_count"] == 256
    device = [
        e
        for e in events(profile)
        if e["tid"] in {ln.id for ln in profile.lines if ln.plane == gpu.index}
    ]
    original = profile_from_xspace(load_xspace(fixture))
    assert len(device) == sum(
        ln.event_count for ln in original.lines if original.planes[ln.plane].name == "/device:GPU:0"
    )
    assert min(e["start_ns"] for e in device) >= 0
    assert max(e["end_ns"] for e in device) <= stop - start
    assert any("unix time" in w for w in space.warnings)


TF_EAGER_SCRIPT = """
import json, sys
import tensorflow as tf
import stepscope
w = tf.Variable(tf.ones((64, 64)))
x = tf.ones((16, 64))
stepscope.start(sys.argv[1])
for s in stepscope.steps(range(5)):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.nn.relu(tf.matmul(x, w)))
    w.assign_sub(0.01 * tape.gradient(loss, w))
print(json.dumps({"run": str(stepscope.stop())}))
"""


@pytest.mark.skipif(not _installed("tensorflow"), reason="pip install tensorflow-cpu==2.21.0")
def test_tensorflow_eager_ops_are_the_op_table(tmp_path: Path) -> None:
    """A TF eager loop (no tf.function): op_stats lists MatMul, Relu... by op name and type,
    run eagerly, not TensorFlow's runtime events (decision 1032)."""
    _, run_dir, _ = _capture(TF_EAGER_SCRIPT, tmp_path)
    run = open_run(str(run_dir))
    ctx = ToolContext(run, run.hosts[0].host, ProfileStore(use_cache=False))
    rows = output.to_json(get_tool("op_stats").build(ctx))["rows"]
    host = {(r["name"], r["type"]): r for r in rows if r["side"] == "host"}
    for op in ("MatMul", "Relu", "ReadVariableOp"):
        assert host[(op, op)]["occurrences"] >= 5 and host[(op, op)]["eager_percent"] == 100
    assert not {name for name, _ in host} & {"KernelAndDeviceFunc::Run", "EagerKernelExecute"}


TF_MIXED_SCRIPT = """
import json, sys
import tensorflow as tf
import stepscope
w = tf.Variable(tf.ones((64, 8)))
batches = iter(tf.data.Dataset.range(10_000).batch(64).repeat())

@tf.function
def train_step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.matmul(x, w))
    w.assign_sub(0.01 * tape.gradient(loss, w))
    return loss

train_step(tf.ones((16, 64)))
stepscope.start(sys.argv[1])
for s in range(5):
    b = tf.cast(tf.reshape(next(batches), (1, 64)), tf.float32)
    x = tf.tile((b - tf.reduce_mean(b)) / 1000.0, (16, 1))
    train_step(x)
print(json.dumps({"run": str(stepscope.stop())}))
"""


@pytest.mark.skipif(not _installed("tensorflow"), reason="pip install tensorflow-cpu==2.21.0")
def test_tensorflow_eager_ops_beside_a_function_are_rows(tmp_path: Path) -> None:
    """A TF loop with eager data prep beside its tf.function: op_stats lists the eager ops
    (Cast, Sub, Tile...) as eager rows beside the function's graph ops, and not the function's
    call, its constants or the iterator's fetch (decision 1022)."""
    _, run_dir, _ = _capture(TF_MIXED_SCRIPT, tmp_path)
    run = open_run(str(run_dir))
    ctx = ToolContext(run, run.hosts[0].host, ProfileStore(use_cache=False))
    rows = output.to_json(get_tool("op_stats").build(ctx))["rows"]
    host = {(r["name"], r["type"]): r for r in rows if r["side"] == "host"}
    for op in ("Cast", "Sub", "Tile", "RealDiv"):
        assert host[(op, op)]["occurrences"] >= 5 and host[(op, op)]["eager_percent"] == 100
    # the function's own "Mean:Mean" shares the eager Mean's row, as in XProf's (keyed by name)
    assert 0 < host[("Mean", "Mean")]["eager_percent"] < 100
    # the graph's op type is "_MklMatMul" where TensorFlow's oneDNN rewrite runs (the CPU
    # decides: x86 with AVX-512 and others), "MatMul" elsewhere
    graph = [r for (name, kind), r in host.items() if name != kind and kind.endswith("MatMul")]
    assert graph and all(r["eager_percent"] == 0 for r in graph)
    names = {name for name, _ in host}
    assert not {"_EagerConst", "IteratorGetNext"} & names
    assert not any("__inference" in name or name.startswith("Eager") for name in names)
