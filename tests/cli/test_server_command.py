"""`stepscope server [flags] -- script.py ARGS`: the profiler server and the flight recorder
around an unchanged training script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stepscope.cli.main import main

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, sys
import stepscope, stepscope.recorder

recorder = stepscope.recorder.current()
for step, _ in stepscope.steps(range(12)):
    with stepscope.trace("compute"):
        pass
saved = stepscope.recorder.save("from the script").result(60)
t = recorder.triggers
print(json.dumps({
    "argv": sys.argv, "name": __name__, "saved": str(saved),
    "keep_steps": recorder.config.keep_steps,
    "slow": t.slow_step_factor, "hang": t.hang_s, "after": t.capture_next_steps,
    "sampler_hz": recorder.config.sampler_hz, "peers": list(recorder.config.peers),
}))
if "--fail" in sys.argv:
    raise RuntimeError("diverged at step 12")
sys.exit(3)
"""


def _server(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    flags = ["--port", "0", "--recorder", "--save-dir", str(tmp_path / "logs")]
    flags += ["--keep-steps", "7", "--slow-factor", "4", "--hang-seconds", "90"]
    flags += ["--capture-next-steps", "2", "--sampler-hz", "0", "--peer", "h1:6010"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(
        [sys.executable, "-m", "stepscope.cli.main", "server", *flags, "--", str(script), *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )


@pytest.mark.integration
def test_the_script_runs_under_the_server_with_the_recorder_flags(tmp_path: Path) -> None:
    proc = _server(tmp_path, "--lr", "0.1")
    assert proc.returncode == 3, proc.stderr  # the script's own exit status
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["argv"] == [str(tmp_path / "train.py"), "--lr", "0.1"]
    assert out["name"] == "__main__"
    assert (out["keep_steps"], out["slow"], out["hang"], out["after"]) == (7, 4.0, 90.0, 2)
    assert out["sampler_hz"] == 0 and out["peers"] == ["h1:6010"]
    marker = json.loads(next(Path(out["saved"]).glob("*.recorder.json")).read_text())
    assert marker["trigger"] == "user" and marker["steps"] == [5, 11]  # keep_steps=7
    assert "stepscope server: serving" in proc.stderr


@pytest.mark.integration
def test_an_uncaught_exception_is_saved_and_its_traceback_printed(tmp_path: Path) -> None:
    proc = _server(tmp_path, "--fail")
    assert proc.returncode == 1
    assert "RuntimeError: diverged at step 12" in proc.stderr
    markers = [json.loads(p.read_text()) for p in tmp_path.glob("logs/**/*.recorder.json")]
    exception = [m for m in markers if m["trigger"] == "exception"]
    assert len(exception) == 1 and "diverged at step 12" in exception[0]["traceback"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--keep-steps", "5"], "stepscope server: --keep-steps needs --recorder"),
        (["--recorder"], "--recorder needs --save-dir DIR"),
        (
            ["--recorder", "--save-dir", "logs", "--slow-factor", "0.5"],
            "slow_step_factor must be > 1 (or 0 to turn it off), got 0.5",
        ),
        (["--recorder", "--save-dir", "logs"], "nothing.py: no such script"),
    ],
)
def test_bad_flags_are_one_line_errors_before_anything_starts(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["server", *argv, "--", "nothing.py"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
