"""A Kineto import's ProfilerStep#N carries `_r` for XProf (decision 617); stepscope keeps
reading them as PyTorch's steps, each whole: none is dropped as XProf drops a marker run's
first and last."""

from __future__ import annotations

from pathlib import Path

from stepscope.model import profile_from_xspace
from stepscope.stats.steps.markers import find_step_markers
from stepscope.xspace.kineto import kineto_to_xspace
from tests.support.kineto import write_trace

STEPS = 7


def _trace(folder: Path) -> Path:
    events = []
    for k in range(STEPS):
        t0 = 1000 + k * 1000
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{k}",
                "pid": 1,
                "tid": 1,
                "ts": t0,
                "dur": 900,
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::mm",
                "pid": 1,
                "tid": 1,
                "ts": t0 + 100,
                "dur": 500,
            }
        )
    return write_trace(folder, events)


def test_imported_profiler_steps_are_roots_and_stay_pytorchs_steps(tmp_path: Path) -> None:
    profile = profile_from_xspace(kineto_to_xspace(_trace(tmp_path)))
    roots = profile.stat_events("_r")
    assert [profile.event_name(int(r)) for r in roots] == [
        f"ProfilerStep#{k}" for k in range(STEPS)
    ]
    steps = find_step_markers(profile)
    assert steps.source == "profiler_step"
    assert len(steps) == STEPS  # a marker run of more than 5 would lose its first and last
    assert steps.step_num.tolist() == list(range(STEPS))


def test_an_imported_serving_annotation_is_a_root_and_stays_a_serving_step(
    tmp_path: Path,
) -> None:
    """vLLM's annotation of its engine step: XProf's step too, stepscope's serving step."""
    name = "execute_context_1(888_788544)_generation_0(0)"
    events = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": name,
            "pid": 1,
            "tid": 1,
            "ts": 1000,
            "dur": 900,
        },
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::mm",
            "pid": 1,
            "tid": 1,
            "ts": 1100,
            "dur": 500,
        },
        {
            "ph": "X",
            "cat": "gpu_user_annotation",
            "name": name,
            "pid": 0,
            "tid": 7,
            "ts": 1200,
            "dur": 600,
            "args": {"device": 0, "stream": 7},
        },
    ]
    profile = profile_from_xspace(kineto_to_xspace(write_trace(tmp_path, events)))
    roots = profile.stat_events("_r")
    assert len(roots) == 1  # the host's annotation; its GPU copy is no root
    assert not profile.planes[profile.lines[int(profile.line[roots[0]])].plane].is_device
    steps = find_step_markers(profile)
    assert steps.source == "serving" and len(steps) == 1
