"""The untraced place after a fetch that `stepscope.steps` / `stepscope.data` wrapped in
TensorFlow's ``IteratorGetNextOp::DoCompute`` is named after the loader it wraps: a PyTorch
loop's host time read "mostly after 'IteratorGetNextOp::DoCompute'" (decision 731). A
TensorFlow profile keeps TensorFlow's own name."""

from __future__ import annotations

from stepscope.stats import build_step_db
from stepscope.stats.host.untraced import where_untraced
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

STEPS = 6


def _loop(framework_op: str) -> str:
    """10 ms marked steps: the wrapped fetch (2 ms, the loader's stage inside), then 8 ms that
    nothing traces; ``framework_op`` once on another thread (what tells the framework);
    where the host time is placed."""
    builder = XSpaceBuilder("py")
    host = builder.plane("/host:CPU")
    main = host.line(7, "MainThread")
    for k in range(STEPS):
        t = k * 10 * MS
        main.event("train", t, 10 * MS, {"step_num": k, "_r": 1})
        main.event("IteratorGetNextOp::DoCompute", t, 2 * MS, {"id": 1, "iter_num": k})
        main.event("Iterator::DataLoader", t + MS // 10, 2 * MS - MS // 5, {"id": 2})
    host.line(8, "other").event(framework_op, 0, MS // 10)
    db = build_step_db(build(builder))
    return where_untraced(db.untraced, db.n_steps, int(db.dur_ns.sum()), with_python=False)


def test_a_wrapped_fetch_is_named_after_its_loader() -> None:
    assert "mostly after 'Iterator::DataLoader' and before '(step end)'" in _loop("aten::mm")


def test_a_tensorflow_profile_keeps_its_own_name() -> None:
    where = _loop("EagerExecute")
    assert "mostly after 'IteratorGetNextOp::DoCompute' and before '(step end)'" in where
