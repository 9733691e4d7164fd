"""A step marker that ends after the profiler stopped recording is cut where it stopped
(decision 1075): a100_triton_tiny's ProfilerStep#1 ran 13.3 s past its trace's ``Trace`` span,
and those 13.3 s, in which nothing was recorded, were read as 100% "All Others" (XProf's
"POTENTIALLY input-bound") and 100% Python / host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stepscope.model import profile_from_xspace
from stepscope.stats import build_step_db
from stepscope.stats.advice import classify_steps
from stepscope.stats.summary import summarize_steps
from stepscope.vocab.pytorch import RECORDING_STOP_STAT
from stepscope.xspace.kineto import kineto_to_xspace
from stepscope.xspace.merge import _OWN_ENV_STATS
from tests.support.kineto import write_trace


def _x(cat: str, name: str, ts: float, dur: float, tid: int = 1, **args: Any) -> dict[str, Any]:
    event = {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}
    if args:
        event["args"] = args
    return event


def _events(trace_span: bool) -> list[dict[str, Any]]:
    """A step from 1000 us, its work (a compiled region launching one kernel) until 2000 us;
    the profiler's Trace span ends at 2500 us; the step's annotation at 13 s."""
    events = [
        _x("user_annotation", "ProfilerStep#1", 1000, 13_000_000),
        _x("cpu_op", "Torch-Compiled Region: 0/0", 1010, 1300),
        _x("cuda_runtime", "cudaLaunchKernel", 2000, 50, correlation=7),
        _x("kernel", "triton_poi_fused_add_0", 2060, 2, tid=7, stream=7, correlation=7),
    ]
    if trace_span:
        events.append(_x("Trace", "PyTorch Profiler (0)", 0, 2500, tid="PyTorch Profiler"))
    return events


def _steps(tmp_path: Path, trace_span: bool = True):
    path = write_trace(tmp_path, _events(trace_span))
    return build_step_db(profile_from_xspace(kineto_to_xspace(path)))


def test_a_step_running_past_the_recording_is_cut_where_it_stopped(tmp_path: Path) -> None:
    db = _steps(tmp_path)
    assert db.n_steps == 1
    assert db.dur_ns.tolist() == [1_500_000]  # 1000 us to the span's end at 2500 us
    assert "ProfilerStep#1 runs 12998.50 ms past the end of the recording" in db.description
    assert db.profile_ns == 1_500_000  # the profile's span (from its first event) ends there too
    # the 13 s nobody saw are no verdict's: "All Others" is the recorded step's
    summary = summarize_steps({"h": db})
    assert summary.percent("other") < 50
    assert classify_steps(summary).percent == 0.0
    assert "13000.00 ms" not in summary.description


def test_without_the_profilers_span_the_step_is_the_markers(tmp_path: Path) -> None:
    """No Trace span (a trace cut down by hand), no stop known: the marker's end stands."""
    db = _steps(tmp_path, trace_span=False)
    assert db.dur_ns.tolist() == [13_000_000_000]
    assert "recording" not in db.description


def test_the_import_says_where_the_recording_stopped_and_a_merge_leaves_it(
    tmp_path: Path,
) -> None:
    path = write_trace(tmp_path, _events(True))
    env = next(p for p in kineto_to_xspace(path).planes if p.name == "Task Environment")
    stats = {env_stat_name(env, s): s for s in env.stats}
    assert RECORDING_STOP_STAT in stats
    # a capture merging a Kineto trace keeps its own times, not the trace's (another clock)
    assert RECORDING_STOP_STAT in _OWN_ENV_STATS


def env_stat_name(plane: Any, stat: Any) -> str:
    return plane.stat_metadata[stat.metadata_id].name
