"""A single host's first trace viewer window imports neither the multi-host modules nor the
analysis ones (the step database's): in a fresh interpreter, structure + window of a TF
profile leave them out of ``sys.modules`` (about 0.13 s of imports a first window waited for)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fixtures import tf_xplane

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
    run_dir = tmp_path / "plugins" / "profile" / "r1"
    run_dir.mkdir(parents=True)
    shutil.copy(tf_xplane("ctl"), run_dir / "h.xplane.pb")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(run_dir), *_LATER],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    before, after = json.loads(out.stdout.strip().splitlines()[-1])
    assert before == []
    assert "stepscope.tools._analysis" in after  # the steps endpoint brings it in
