"""A JAX CPU profile captured now (jax.profiler, a producer thread feeding batches, blocking
every third step) has XProf's per-step breakdown in stepscope, step by step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepscope.model import load_profile
from stepscope.stats import build_step_db
from tests.support.capture import run_script

pytestmark = pytest.mark.integration

# Step times and categories agree to the microsecond (17 captures, load 4.8-10.3: every step
# to the nanosecond, decision 740). One of four CI runs failed with one step 6.9 us off: a 0 ns
# `ThreadpoolListener::StartRegion` as the step's last event held host compute to the step's
# end, where XProf's sweep holds nothing after the step's last boundary. A rule-level
# difference is tens of us to ms per step (the thread-grouping bug this test was written for
# was 30% of the step).
CATEGORY_TOLERANCE_MS = 1e-3

SCRIPT = """
import json, sys, time, threading, queue
import numpy as np
import jax, jax.numpy as jnp

@jax.jit
def train_step(w, x):
    for _ in range(3):
        w = w - 1e-3 * (x.T @ (x @ w))
    return w

q = queue.Queue(maxsize=2)
def producer():
    rng = np.random.default_rng(0)
    for _ in range(30):
        time.sleep(0.004)
        q.put(rng.standard_normal((256, 256)).astype(np.float32))
threading.Thread(target=producer, daemon=True).start()
w = train_step(jnp.zeros((256, 256)), jnp.ones((256, 256))).block_until_ready()
jax.profiler.start_trace(sys.argv[1])
for i in range(20):
    with jax.profiler.StepTraceAnnotation("train", step_num=i):
        w = train_step(w, jax.device_put(q.get()))
        if i % 3 == 0:
            w.block_until_ready()
jax.profiler.stop_trace()
print(json.dumps({"logdir": sys.argv[1]}))
"""


def test_each_step_matches_xprof(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    convert = pytest.importorskip("xprof.convert.raw_to_tool_data")
    run_script(SCRIPT, str(tmp_path))
    [path] = tmp_path.rglob("*.xplane.pb")
    data, _ = convert.xspace_to_tool_data(
        [str(path)], "input_pipeline_analyzer", {"use_saved_result": False}
    )
    table = json.loads(data)[1]
    columns = [c["id"] for c in table["cols"]]
    reference = {
        row["c"][0]["v"]: dict(zip(columns, [c.get("v") for c in row["c"]], strict=True))
        for row in table["rows"]
    }
    db = build_step_db(load_profile(path))
    cats = db.category_ns()
    assert list(db.names) == list(reference)
    for k, step in enumerate(db.names):
        ref = reference[step]
        assert db.dur_ns[k] / 1e6 == pytest.approx(ref["stepTimeMs"], abs=1e-3), step
        for ours, theirs in (("host_compute", "hostComputeTimeMs"), ("other", "otherTimeMs")):
            assert cats[ours][k] / 1e6 == pytest.approx(ref[theirs], abs=CATEGORY_TOLERANCE_MS), (
                step,
                ours,
            )
