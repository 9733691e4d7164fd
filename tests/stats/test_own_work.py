"""The profilers' own start/stop work is no step's and no op's (it was 46% of the host op
time of a JAX capture: `jax.profiler.stop_trace`, recorded by JAX's Python tracer)."""

from __future__ import annotations

from stepscope.stats import build_op_metrics, build_step_db
from stepscope.stats.events import NOT_COUNTED, classify_events
from stepscope.stats.host.own_work import profiler_work
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build


def _jax_capture(stop_inside_last_step: bool = False) -> XSpaceBuilder:
    """4 steps of 10 ms of jitted calls, then `stop_trace` (40 ms, with what it calls)."""
    builder = XSpaceBuilder("jax")
    main = builder.plane("/host:CPU").line(1, "python")
    for k in range(4):
        t0 = k * 10 * MS
        main.event("train", t0, 10 * MS, {"step_num": k, "_r": 1})
        main.event("$train.py:30 train_step", t0, 8 * MS)
        main.event("PjitFunction(train_step)", t0 + MS, 6 * MS)
    stop = 35 * MS if stop_inside_last_step else 45 * MS
    main.event("$profiler.py:271 stop_trace", stop, 40 * MS)
    main.event("$xplane.py:88 export", stop + MS, 30 * MS)
    main.event("ProfilerSession::CollectData", stop + 2 * MS, 20 * MS)
    return builder


def test_stop_trace_and_what_it_calls_are_not_ops() -> None:
    profile = build(_jax_capture())
    own = profiler_work(profile)
    names = {profile.event_name(i) for i in own.nonzero()[0].tolist()}
    assert names == {
        "$profiler.py:271 stop_trace",
        "$xplane.py:88 export",
        "ProfilerSession::CollectData",
    }
    host = build_op_metrics(profile).host
    assert not any("stop_trace" in n or "export" in n for n in host.names)
    assert set(host.names) == {"$train.py:30 train_step", "PjitFunction(train_step)"}


def test_stop_trace_is_no_steps_work() -> None:
    profile = build(_jax_capture(stop_inside_last_step=True))
    assert (classify_events(profile)[profiler_work(profile)] == NOT_COUNTED).all()
    db = build_step_db(profile)
    last = db.category_ns()["host_compute"][-1]
    assert last == 8 * MS  # the train_step frame only, not the stop's 5 ms inside the step
