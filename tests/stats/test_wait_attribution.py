"""A step thread waiting for a computation running elsewhere (JAX on XLA's CPU thread pool,
a tf.function's executor) is that computation's time, not untraced host work."""

from __future__ import annotations

from stepscope.stats import build_step_db, summarize_steps
from stepscope.stats.bound import bound_by
from stepscope.stats.diagnostics.base import HostData
from stepscope.stats.diagnostics.host_steps import untraced_host_work
from stepscope.stats.gpu.kernels import build_kernel_db
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

US = 1_000
STEPS = 8


def _jax_cpu_loop(pool_busy: bool = True) -> XSpaceBuilder:
    """Per 10 ms step: dispatching the jitted train_step (1 ms), then `block_until_ready`:
    untraced on the step thread, ended by an `Await`; XLA runs the program on its pool from
    0.2 ms to 9.5 ms (the computation the thread waits for)."""
    builder = XSpaceBuilder("jax")
    host = builder.plane("/host:CPU")
    main = host.line(1, "MainThread")
    pool = host.line(2, "tf_XLAPjRtCpuClient/-7")
    eigen = host.line(3, "tf_XLAEigen/-3")
    for k in range(STEPS):
        t0 = k * 20 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("PjitFunction(train_step)", t0, MS)
        main.event("CommonPjRtBuffer::Await", t0 + MS, 1 * US)
        main.event("CommonPjRtBuffer::Await", t0 + 9_990 * US, 1 * US)
        if pool_busy:
            pool.event("ThunkExecutor::Execute", t0 + 200 * US, 5 * MS)
            pool.event("dot", t0 + 300 * US, 4 * MS)
            eigen.event("ThunkExecutor::Execute", t0 + 5 * MS, 4_500 * US)
    return builder


def test_waiting_for_xlas_pool_is_compute() -> None:
    db = build_step_db(build(_jax_cpu_loop()))
    # XProf's categories: the pool is no step's work, the wait is "All Others"
    assert db.category_ns()["other"].min() > 8 * MS
    limits = db.limit_ns()
    # 1 ms dispatching + the wait while the pool computes (to 9.5 ms): compute
    assert limits["compute"].tolist() == [9_500 * US] * (STEPS - 2)
    # the wait after the computation ended (9.5 -> 9.991 ms) is an idle wait
    assert limits["waits"].tolist() == [491 * US] * (STEPS - 2)
    headline = bound_by(summarize_steps({"h": db}))
    assert headline.first == "compute"
    assert "tf_XLAPjRtCpuClient, tf_XLAEigen" in headline.headline
    assert "that wait is this compute, not host overhead" in headline.headline


def test_no_untraced_host_work_finding_for_a_wait_on_compute() -> None:
    profile = build(_jax_cpu_loop())
    data = HostData("h", profile, build_step_db(profile), build_kernel_db(profile))
    assert untraced_host_work(data, {}) is None  # was "HIGH: 90% untraced host work"


def test_a_wait_with_nothing_running_is_an_idle_wait() -> None:
    db = build_step_db(build(_jax_cpu_loop(pool_busy=False)))
    limits = db.limit_ns()
    assert limits["waits"].tolist() == [8_991 * US] * (STEPS - 2)
    assert bound_by(summarize_steps({"h": db})).first == "waits"
