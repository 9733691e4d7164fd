"""Input staged inside a step: batch building and the host-to-device copy before the step's
compute count as input in the verdict (XProf calls such loops 0% input)."""

from __future__ import annotations

import numpy as np

from stepscope.stats import build_step_db, summarize_steps
from stepscope.stats.advice import classify_steps
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build


def _loop(transfer: str, compute: str, with_transfer: bool = True) -> XSpaceBuilder:
    """6 steps of 10 ms: 2 ms building the batch, 0.6 ms copying it (``transfer``), then the
    step's compute (``compute``) and 1 ms of traced Python after it."""
    builder = XSpaceBuilder("loop")
    main = builder.plane("/host:CPU").line(1, "python")
    for k in range(6):
        t0 = 1_000 * MS + k * 10 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("$batches.py:10 make_batch", t0, 2 * MS)
        if with_transfer:
            main.event(transfer, t0 + 2 * MS, 6 * MS // 10)
        main.event(compute, t0 + 3 * MS, 5 * MS)
        main.event("$train.py:40 log_metrics", t0 + 8 * MS, MS)
    return builder


def test_jax_batch_building_and_device_put_are_input() -> None:
    db = build_step_db(build(_loop("$api.py:2035 device_put", "PjitFunction(train_step)")))
    assert db.category_ns()["input"].sum() == 0  # as XProf counts it
    assert db.staged_ns.tolist() == [26 * MS // 10] * db.n_steps
    bound = classify_steps(summarize_steps({"host": db}))
    assert bound.classification == "high" and round(bound.percent) == 26
    assert "building the batch and copying it to the device" in bound.statement


def test_torch_to_device_before_forward_is_input() -> None:
    db = build_step_db(build(_loop("aten::to", "nn.Module: Net")))
    assert db.staged_ns.tolist() == [26 * MS // 10] * db.n_steps


def test_no_traced_transfer_no_staged_input() -> None:
    db = build_step_db(build(_loop("", "PjitFunction(train_step)", with_transfer=False)))
    assert not db.staged_ns.any()
    # a transfer after the compute (fetching results) is not staging either
    late = _loop("$api.py:2035 device_put", "PjitFunction(f)", with_transfer=False)
    line = late.plane("/host:CPU").line(1, "python")
    for k in range(6):
        line.event("$api.py:2035 device_put", 1_000 * MS + k * 10 * MS + 9 * MS, MS // 2)
    assert not np.any(build_step_db(build(late)).staged_ns)


def test_all_hosts_average_the_staged_input_of_paired_steps() -> None:
    jax_host = build_step_db(build(_loop("$api.py:2035 device_put", "PjitFunction(f)")))
    plain = build_step_db(build(_loop("", "PjitFunction(f)", with_transfer=False)))
    summary = summarize_steps({"a": jax_host, "b": plain})
    assert summary.n_steps == jax_host.n_steps
    assert summary.staged_ns.tolist() == [13 * MS // 10] * summary.n_steps
    assert summary.staged_percent() == 13.0
