"""PyTorch's record_function labels that hold ops are annotations, ranked after the ops
(decision 1074): a100_nccl_rank0's op_stats put ``## backward ##`` first among the host ops,
33% of their self time, all of it its thread waiting for the autograd thread's ops."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stepscope.model import open_run
from stepscope.tools import output
from stepscope.tools.context import ToolContext
from stepscope.tools.op_stats import build
from stepscope.tools.overview_page import top_ops
from tests.support.kineto import write_trace

MAIN, AUTOGRAD, COMMS = 1, 2, 3


def _x(cat: str, name: str, ts: float, dur: float, tid: int) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


def _context(tmp_path: Path) -> ToolContext:
    events = [
        _x("user_annotation", "ProfilerStep#1", 0, 1000, MAIN),
        _x("user_annotation", "## forward ##", 10, 200, MAIN),
        _x("cpu_op", "aten::linear", 20, 150, MAIN),
        # the backward: its thread waits while the autograd thread runs the ops
        _x("user_annotation", "## backward ##", 300, 600, MAIN),
        _x("cpu_op", "aten::ones_like", 305, 5, MAIN),
        _x("cpu_op", "aten::mm", 320, 250, AUTOGRAD),
        _x("cpu_op", "aten::mm", 600, 250, AUTOGRAD),
        # a collective's annotation holds no op: it is the work it names
        _x("user_annotation", "nccl:all_reduce", 650, 100, COMMS),
        _x("cpu_op", "aten::add_", 920, 30, MAIN),
    ]
    run = open_run(str(write_trace(tmp_path, events)))
    return ToolContext(run, run.host_names[0])


def test_annotations_holding_ops_rank_after_the_ops(tmp_path: Path) -> None:
    rows = [r for r in output.to_json(build(_context(tmp_path)))["rows"] if r["side"] == "host"]
    ranked = [(r["rank"], r["type"], r["name"]) for r in rows]
    assert ranked == [
        (1, "aten::mm", "aten::mm"),
        (2, "aten::linear", "aten::linear"),
        (3, "nccl:all_reduce", "nccl:all_reduce"),  # by its self time, among the ops
        (4, "aten::add_", "aten::add_"),
        (5, "aten::ones_like", "aten::ones_like"),
        # 595 us of self time, all of it waiting: after every op, as an annotation
        (6, "Annotation", "## backward ##"),
        (7, "Annotation", "## forward ##"),
    ]
    # the shares stay those of the host's self time: they add up to 100% down the side
    assert rows[-1]["cumulative_self_time_percent"] == 100.0
    backward = next(r for r in rows if r["name"] == "## backward ##")
    assert backward["self_time_us"] == 595.0


def test_the_overviews_top_host_ops_follow_the_same_rank(tmp_path: Path) -> None:
    from stepscope.tools import _analysis as analysis

    ops = top_ops(analysis.host_ops(_context(tmp_path)), count=3)
    assert [o.name for o in ops] == ["aten::mm", "aten::linear", "nccl:all_reduce"]
