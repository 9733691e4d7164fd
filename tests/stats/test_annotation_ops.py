"""`stepscope.trace` spans are host ops next to the framework ops of a capture."""

from __future__ import annotations

import time
from pathlib import Path

import stepscope
from stepscope.model import open_run
from stepscope.tools import output
from stepscope.tools.context import ToolContext
from stepscope.tools.op_stats import build


def test_trace_spans_are_listed_as_host_ops(tmp_path: Path) -> None:
    stepscope.start(str(tmp_path))
    for step, _batch in enumerate(stepscope.data.instrument([1, 2, 3], name="Loader")):
        with stepscope.step(step), stepscope.trace("forward"):
            time.sleep(0.001)
    run_dir = stepscope.stop()
    run = open_run(str(run_dir))
    rows = output.to_json(build(ToolContext(run, run.host_names[0])))["rows"]
    kinds = {(r["name"], r["type"]) for r in rows if r["side"] == "host"}
    assert ("forward", "Annotation") in kinds
    assert any(name.startswith("Iterator::") for name, _ in kinds)
    assert not any(name == "train" for name, _ in kinds)  # step markers are not ops


def test_capture_names_repeated_in_op_metrics_match() -> None:
    """The stats layer repeats capture's names (it does not import capture): they must agree."""
    from stepscope.capture.save import ANNOTATION_STAT
    from stepscope.capture.step import STEP_ANCHOR
    from stepscope.stats import op_metrics

    assert op_metrics.STEP_ANCHOR == STEP_ANCHOR
    assert op_metrics.ANNOTATION_STAT == ANNOTATION_STAT
