"""A job's eager share per step is the job's (decision 1061): each rank's eager ops' time in
each job step, their mean scaled to the job's step as its breakdown is, beside the job's step
time; one host of it (`--host`) is told its own. Before, a run of several hosts kept only the
capture's share (decision 1029: one host only).

The ranks are `tests.support.tf_mixed_loop`'s loop with different eager work: rank h1 runs
one eager op more each step, so its steps are longer and pace the job.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.cli.main import main
from stepscope.model.from_xspace import profile_from_xspace
from stepscope.stats.op_metrics import eager_ns_by_step
from stepscope.stats.steps.breakdown import build_step_db
from tests.support.tf_mixed_loop import mixed_space

OPS = {"h0": ("Cast", "Sub"), "h1": ("Cast", "RealDiv", "Sub")}


def _words(eager: np.ndarray, steps: np.ndarray, job: bool) -> str:
    return (
        f"{np.median(eager) / 1e6:.2f} ms of a median {np.median(steps) / 1e6:.2f} ms "
        f"{'job step' if job else 'step'}, {eager.mean() / 1e6:.2f} ms of the mean "
        f"{steps.mean() / 1e6:.2f} ms"
        + (", the ranks' mean scaled to the job's step as its breakdown is" if job else "")
    )


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, str]]:
    """The run directory, and what the job and each host should say per step."""
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "1000")
    run = tmp_path / "logs" / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    eager, steps, said = [], [], {}
    for host, ops in OPS.items():
        space = mixed_space(ops, steps=6, host=host)
        (run / f"{host}.xplane.pb").write_bytes(space.SerializeToString())
        profile = profile_from_xspace(space)
        db = build_step_db(profile)
        eager.append(eager_ns_by_step(profile, db.start_ns, db.dur_ns))
        steps.append(db.dur_ns)
        said[host] = _words(eager[-1], db.dur_ns, job=False)
    # the same step numbers on both ranks: the job's step is the slower rank's (h1's), its
    # parts the ranks' mean stretched to it
    assert len(steps[0]) == len(steps[1]) and steps[1].mean() > steps[0].mean()
    job_step = steps[1]
    stretch = job_step / np.mean(steps, axis=0)
    job_eager = (np.mean(eager, axis=0) * stretch).round().astype(np.int64)
    said["job"] = _words(job_eager, job_step, job=True)
    assert said["job"] not in (said["h0"], said["h1"])
    return run, said


def test_a_jobs_headline_and_advice_give_the_jobs_eager_time_per_step(
    job: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    run, said = job
    assert main(["report", str(run), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert f"outside any tf.function: {said['job']}" in out  # the headline
    assert f"runs eagerly (the ranks' eager ops: {said['job']})" in out  # the advice


def test_one_host_of_the_job_is_told_its_own(
    job: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    run, said = job
    for host in OPS:
        assert main(["report", str(run), "--host", host, "--no-cache"]) == 0
        out = capsys.readouterr().out
        assert f"outside any tf.function: {said[host]}" in out
        assert f"runs eagerly (the host's eager ops: {said[host]})" in out
