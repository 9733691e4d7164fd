"""The eager share of a TensorFlow loop is told per step, as a user times a step (decision
1029): decision 1026's "86.1% of the host ops' time ran eagerly" was the capture's share, and
a user comparing it with a script's per-step timings had no step's figure to compare.

The loops are `tests.support.tf_mixed_loop`'s: eager ops of 100 us each beside a
tf.function call per step, and a 2 ms eager op run once mid-loop.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.cli.main import main
from stepscope.stats.op_metrics import build_op_metrics, eager_ns_by_step
from stepscope.stats.steps.breakdown import build_step_db
from tests.support.tf_mixed_loop import US, mixed_loop, mixed_space


def test_the_eager_ops_time_is_summed_in_each_step() -> None:
    """Each step's eager ops (Cast and Sub, 200 us), the 2 ms op in the step it ran in; the
    first iteration's ops, before the first step the steps' inference begins, in none."""
    profile = mixed_loop(("Cast", "Sub"), steps=6, between="MatrixInverse")
    db = build_step_db(profile)
    per_step = eager_ns_by_step(profile, db.start_ns, db.dur_ns)
    assert per_step.tolist() == [2000 * US, 200 * US, 200 * US, 200 * US, 400 * US]
    table = build_op_metrics(mixed_loop(("Cast", "Sub"), steps=6, between="MatrixInverse")).host
    assert int(table.eager_self_ns.sum()) == int(per_step.sum()) + 200 * US


def test_no_eager_op_no_time() -> None:
    profile = mixed_loop(())
    db = build_step_db(profile)
    assert not eager_ns_by_step(profile, db.start_ns, db.dur_ns).any()


def test_the_compute_headline_gives_the_eager_time_per_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(mixed_space(("Cast", "RealDiv", "Sub"), steps=6).SerializeToString())
    profile = mixed_loop(("Cast", "RealDiv", "Sub"), steps=6)
    db = build_step_db(profile)
    per_step = eager_ns_by_step(profile, db.start_ns, db.dur_ns)
    words = (
        f"{np.median(per_step) / 1e6:.2f} ms of a median {np.median(db.dur_ns) / 1e6:.2f} ms "
        f"step, {per_step.mean() / 1e6:.2f} ms of the mean {db.dur_ns.mean() / 1e6:.2f} ms"
    )
    monkeypatch.setenv("COLUMNS", "1000")
    assert main(["report", str(path), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert f"outside any tf.function: {words}" in out  # the headline
    assert f"runs eagerly (the host's eager ops: {words})" in out  # the advice
