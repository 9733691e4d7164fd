"""Steps that each run several batches say so (decision 816): a Keras fit with
``steps_per_execution=4`` is one ``multi_step_on_iterator`` call, and one step, per 4
batches, whose time read 4 times a batch's and nothing said so. Built traces: each step's
input fetches are tf.data's get-next kernels on a TensorFlow worker thread."""

from __future__ import annotations

from stepscope.stats import build_step_db
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build


def _fit(batches_per_step: int, keras: bool = True, steps: int = 8) -> XSpaceBuilder:
    """``steps`` marked steps of 20 ms, each a call of Keras's training function (or of
    another function) running ``batches_per_step`` batches, each fetched then computed."""
    builder = XSpaceBuilder()
    host = builder.plane("/host:CPU")
    python, worker = host.line(1, "python"), host.line(2, "tf_Compute/1")
    batch_ms = 20 / batches_per_step
    for k in range(steps):
        t = k * 20 * MS
        python.event("train", t, 20 * MS, stats={"step_num": k, "_r": 1})
        name = "multi_step_on_iterator" if keras else "train_function"
        python.event(name, t + MS // 100, 20 * MS - MS // 50)
        for b in range(batches_per_step):
            at = t + int(b * batch_ms * MS) + MS // 10
            worker.event("IteratorGetNextAsOptionalOp::DoCompute", at, MS // 2)
            worker.event("MatMul", at + MS, int(batch_ms * MS) - 2 * MS)
    return builder


def test_a_step_of_four_batches_says_so_and_the_time_of_one() -> None:
    db = build_step_db(build(_fit(4)))
    assert db.n_steps == 6  # XProf's rule drops the first and the last of the 8
    assert "each step runs 4 batches (steps_per_execution=4): 5.00 ms a batch" in db.description


def test_one_batch_a_step_says_nothing() -> None:
    db = build_step_db(build(_fit(1)))
    assert "batches" not in db.description


def test_another_loop_of_batches_in_one_call_says_its_fetches() -> None:
    db = build_step_db(build(_fit(2, keras=False)))
    assert "each step runs 2 batches (2 input fetches in each): 10.00 ms a batch" in (
        db.description
    )


def test_a_fetch_inside_a_fetch_is_one_batch() -> None:
    # `stepscope.steps` over a tf.data iterator (a TensorFlow eager loop): its fetch on the
    # loop's thread holds tf.data's own get-next kernel; every step read as 2 batches
    builder = XSpaceBuilder()
    python = builder.plane("/host:CPU").line(1, "python")
    for k in range(8):
        t = k * 20 * MS
        python.event("train", t, 20 * MS, stats={"step_num": k, "_r": 1})
        python.event("IteratorGetNextOp::DoCompute", t + MS // 10, MS)
        python.event("IteratorGetNextOp::DoCompute", t + MS // 5, MS // 2)
        python.event("MatMul", t + 2 * MS, 15 * MS)
    assert "batches" not in build_step_db(build(builder)).description
    # two fetches one after the other in a step are still two batches
    assert "each step runs 2 batches" in build_step_db(build(_fit(2, keras=False))).description
