"""A single host's first trace viewer window imports neither the multi-host modules nor the
analysis ones (the step database's): in a fresh interpreter, structure + window of a TF
profile leave them out of ``sys.modules`` (about 0.13 s of imports a first window waited for)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.fixtures import ctl_run_dir
from tests.support.scripts import fresh_python

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

_SCRIPT = """
import json, sys
from stepscope.model import open_run
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.trace_viewer import api, tool
run = open_run(sys.argv[1])
ctx = ToolContext(run, run.hosts[0].host, ProfileStore(use_cache=False))
structure = tool.build(ctx)
api.window(ctx, {"t0": "0", "t1": str(structure.duration_ns), "res": "800"})
before = sorted(m for m in sys.argv[2:] if m in sys.modules)
api.steps(ctx, {})
after = sorted(m for m in sys.argv[2:] if m in sys.modules)
print(json.dumps([before, after]))
"""
_LATER = (
    "stepscope.tools.trace_viewer.pod",
    "stepscope.tools.trace_viewer.pod_api",
    "stepscope.tools._fanout",
    "stepscope.tools._analysis",
)


@pytest.mark.integration  # a fresh interpreter
def test_first_window_imports_only_what_it_uses(tmp_path: Path) -> None:
    out = fresh_python(_SCRIPT, str(ctl_run_dir(tmp_path)), *_LATER)
    before, after = json.loads(out.splitlines()[-1])
    assert before == []
    assert "stepscope.tools._analysis" in after  # the steps endpoint brings it in
