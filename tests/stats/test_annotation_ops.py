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
