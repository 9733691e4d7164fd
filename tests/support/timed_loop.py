"""A loop script that times its own iterations (``step``) and its ``next()`` (``fetch``) with
``time.perf_counter_ns``, run in a fresh interpreter: what it measured beside the step
database stepscope reads from the same run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stepscope.stats import StepDb, build_step_db
from tests.support.capture import load_run
from tests.support.scripts import run_script

# the end of every such script: stop the capture and print what it measured
REPORT = """
run = stepscope.stop()
print(json.dumps({"run": str(run), "fetch": fetch, "step": step}))
"""


def run_timed_loop(code: str, tmp_path: Path) -> tuple[dict[str, Any], StepDb]:
    """Run ``code`` (a loop filling the lists ``step`` and ``fetch``, its capture started in
    ``sys.argv[1]``) then `REPORT`; what it measured and the run's step database."""
    measured = run_script(code + REPORT, str(tmp_path))
    return measured, build_step_db(load_run(Path(measured["run"])))
