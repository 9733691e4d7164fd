"""Real CPU DDP jobs (gloo) captured with defaults, against what each rank's script measured
with time.perf_counter in the same run (issue #26): the straggler, its cause and steps; the
waiters' collective wait within 5 points; three runs of one loop agreeing; a balanced job
naming nobody; a 4-rank torchrun job with two stragglers of different causes; the same job
profiled by torch.profiler and imported with `stepscope import` giving the same answers."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.cli.main import main
from tests.support.capture import deferred_files
from tests.support.ddp_runs import SlowInputRuns, Truths
from tests.support.ddp_runs import job as _job

pytestmark = pytest.mark.integration

MACHINE = socket.gethostname()


def _tool(run: Path, tool: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["tool", str(run), tool, "--workers", "0", "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


def _run_of(logdir: Path) -> Path:
    [run] = (logdir / "plugins" / "profile").iterdir()
    return run


def _check_waiters(pod: dict[str, Any], truths: list[dict[str, Any]], late: set[str]) -> None:
    """Each waiter's collective wait per step (median over the steps) within 5 points of
    the share of the step its own all-reduces took, timed by its DDP communication hook."""
    for col, worker in enumerate(pod["workers"]):
        if worker["host"] in late:
            continue
        assert worker["role"] == "waiting", worker
        rank = int(worker["host"].rsplit("rank", 1)[1])
        truth = truths[rank]
        ours, measured = [], []
        for step in pod["steps"]:
            w = step["workers"][col]
            ours.append(100 * w["breakdown_ms"]["collective_wait"] / w["duration_ms"])
            k = step["step_num"]
            measured.append(100 * truth["allreduce_s"][k] / truth["step_s"][k])
        assert float(np.median(ours)) == pytest.approx(float(np.median(measured)), abs=5), (
            worker["host"],
            ours,
            measured,
        )


@pytest.fixture(scope="module")
def slow_input_runs(ddp_slow_input_runs: SlowInputRuns) -> list[tuple[Path, list]]:
    """Three runs of one 2-rank loop whose rank 1 waits 40 ms per batch for its data (the
    session's: tests/capture/test_job_ddp.py reads the first)."""
    runs = [ddp_slow_input_runs.get(k) for k in range(3)]
    return [(_run_of(logdir), truths) for logdir, truths in runs]


def test_slow_input_rank_is_named_with_its_cause_three_times(
    slow_input_runs: list[tuple[Path, list]], capsys: pytest.CaptureFixture[str]
) -> None:
    answers = []
    for run, truths in slow_input_runs:
        assert sorted(p.name for p in run.iterdir()) == [
            *deferred_files(f"{MACHINE}.rank0"),
            *deferred_files(f"{MACHINE}.rank1"),
        ]
        pod = _tool(run, "pod_viewer", capsys)
        [late] = pod["stragglers"]
        steps = pod["heatmap"]["steps"]
        # nearly every compared step (a loaded scheduler can make the other rank as late
        # once), and only steps where its script waited for its batch
        assert 4 * len(late["steps"]) >= 3 * len(steps) and set(late["steps"]) <= set(steps)
        # the script's own clocks: rank 1 waited longer for its batch than rank 0 did
        assert all(truths[1]["next_s"][k] > truths[0]["next_s"][k] for k in late["steps"])
        next_ms = 1e3 * float(np.mean([truths[1]["next_s"][k] for k in late["steps"]]))
        assert late["reason_ms_per_step"] == pytest.approx(next_ms, rel=0.2)  # both means
        _check_waiters(pod, truths, {late["host"]})
        # the rank the others waited for is the slowest worker of those steps, not a rank
        # whose step ended a little later because it waited (was: the waiter in 17 of 29)
        # Not step 0: the ranks begin it at their own times, rank 1 waits there for rank 0
        # in the collective too (40-63 ms in three runs of 2 Dec), and rank 0's one-time
        # work of the first step can outlast rank 1's batch (2 of 7 runs that day, a machine
        # 2.5-4x slower than on 29 Nov): either rank is "the one waited for"
        slowest = {s["step_num"]: s["slowest_worker"] for s in pod["steps"]}
        after_first = [k for k in late["steps"] if k != min(steps)]
        assert after_first and all(slowest[k] == late["host"] for k in after_first), (
            late["steps"],
            slowest,
        )
        answers.append((late["host"], late["reason"]))
    assert answers == [(f"{MACHINE}.rank1", "input")] * 3


def test_slow_compute_rank_is_named_and_its_compute_is_no_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rank 1 computes 40 ms more per step: it is named for its host compute, and its own
    collective wait stays what its comm hook timed (its matmuls, descheduled beside an
    all-reduce span on gloo's thread, once counted as collective wait: 1.46 -> 10.14 ms)."""
    truths = _job(tmp_path, "--ranks", "2", "--slow-compute", "1", "--steps", "12")
    pod = _tool(_run_of(tmp_path), "pod_viewer", capsys)
    [late] = pod["stragglers"]
    assert (late["host"], late["reason"]) == (f"{MACHINE}.rank1", "host_compute")
    steps = pod["heatmap"]["steps"]
    assert 2 * len(late["steps"]) >= len(steps)
    compute_ms = 1e3 * float(np.mean([truths[1]["compute_s"][k] for k in late["steps"]]))
    assert late["reason_ms_per_step"] == pytest.approx(compute_ms, rel=0.2)
    _check_waiters(pod, truths, {late["host"]})
    col = [w["host"] for w in pod["workers"]].index(late["host"])
    ours = [
        100
        * s["workers"][col]["breakdown_ms"]["collective_wait"]
        / s["workers"][col]["duration_ms"]
        for s in pod["steps"]
    ]
    measured = [100 * truths[1]["allreduce_s"][k] / truths[1]["step_s"][k] for k in steps]
    assert float(np.median(ours)) == pytest.approx(float(np.median(measured)), abs=5)


def test_a_rank_sleeping_in_its_step_is_explained_by_its_sleep_not_the_shared_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rank 1 sleeps 30 ms in each step before its forward: late from untraced host work,
    and the Python named is where it slept, not `_engine_run_backward` (every rank's wait for
    the all-reduce inside backward, which the steps' samples named first, decision 417)."""
    _job(tmp_path, "--ranks", "2", "--sleep-rank", "1", "--steps", "20")
    pod = _tool(_run_of(tmp_path), "pod_viewer", capsys)
    [late] = pod["stragglers"]
    assert (late["host"], late["reason"]) == (f"{MACHINE}.rank1", "other")
    # the step function the loop calls, where it slept: its line when that function is on
    # every sample of the steps (the loop's own line), else the function itself (when a
    # sample of the steps fell outside it, in the loop between two of its calls)
    said = late["explanation"].split(f"Python sampled on {MACHINE}.rank1 in that time: ")[1]
    assert said.startswith(("one_step (ddp_job.py:", "one_step (ddp_job.py) ")), said
    assert "_engine_run_backward" not in late["explanation"]


def _slower_steps(truths: list[dict[str, Any]], steps: list[int]) -> list[list[int]]:
    """Per rank, the steps where the script measured its own time (step time less its
    all-reduces) 10% above every other rank's: the truth a straggler must match."""
    own = [[t["step_s"][k] - t["allreduce_s"][k] for k in steps] for t in truths]
    return [
        [
            k
            for i, k in enumerate(steps)
            if all(own[r][i] >= 1.1 * own[o][i] for o in range(len(truths)) if o != r)
        ]
        for r in range(len(truths))
    ]


def test_balanced_job_names_only_what_the_script_measured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both ranks run the same loop. On a quiet machine nobody is named; on a loaded one the
    scheduler can make one rank really slower (its script measures it), and only then, and
    only that rank, may be named, at steps where the script saw it slower."""
    # 100 ms of compute per step: the late threshold (10% of the own time) stays above the
    # few ms a loaded scheduler delays one rank's gloo thread now and then
    truths = _job(tmp_path, "--ranks", "2", "--base-compute-ms", "100")
    pod = _tool(_run_of(tmp_path), "pod_viewer", capsys)
    assert pod["straggler_rule"] == "collective arrival"
    steps = [s["step_num"] for s in pod["steps"]]
    slower = _slower_steps(truths, steps)
    for late in pod["stragglers"]:
        mine = slower[int(late["host"].rsplit("rank", 1)[1])]
        assert 2 * len(set(late["steps"]) & set(mine)) >= len(late["steps"]), (late, slower)
    if max(len(s) for s in slower) < 3:  # balanced, as the script measured it
        assert pod["stragglers"] == []
        found = _tool(_run_of(tmp_path), "diagnostics", capsys)["findings"]
        assert "host_skew" not in {f["id"] for f in found}


def test_four_ranks_two_stragglers_under_torchrun(
    ddp_torchrun_four_ranks: tuple[Path, Truths], capsys: pytest.CaptureFixture[str]
) -> None:
    """Rank 1's loader is slow (60 ms a batch) and rank 3 computes 30 ms more: both are
    named, each with its own cause (before: no straggler, wait 0 on every rank). The job is
    the session's (tests/capture/test_job_ddp.py checks its files)."""
    logdir, truths = ddp_torchrun_four_ranks
    run = _run_of(logdir)
    assert len(list(run.glob("*.deferred.pb"))) == 4  # a host file each (decision 910)
    pod = _tool(run, "pod_viewer", capsys)
    causes = {s["host"]: (s["reason"], s["behind"]) for s in pod["stragglers"]}
    # rank 1 arrives last at every all-reduce (60 ms > 30 ms); rank 3, last of the others,
    # is named next in line, behind rank 1
    assert causes == {
        f"{MACHINE}.rank1": ("input", ""),
        f"{MACHINE}.rank3": ("host_compute", f"{MACHINE}.rank1"),
    }
    _check_waiters(pod, truths, set(causes))
    assert main(["report", str(run), "--workers", "0", "--no-cache"]) == 0
    assert f"Straggler: {MACHINE}.rank1 is late" in capsys.readouterr().out


def test_kineto_traces_of_the_same_job_give_the_same_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = tmp_path / "traces"
    truths = _job(
        traces,
        "--ranks",
        "2",
        "--slow-input",
        "1",
        "--profiler",
        "kineto",
        "--truth-dir",
        str(tmp_path),
    )
    assert main(["import", str(traces), "--logdir", str(tmp_path / "logs"), "--quiet"]) == 0
    run = Path(capsys.readouterr().out.strip())
    pod = _tool(run, "pod_viewer", capsys)
    [late] = pod["stragglers"]
    assert (late["host"], late["reason"]) == ("rank1", "input")
    next_ms = 1e3 * float(np.mean([truths[1]["next_s"][k] for k in late["steps"]]))
    assert late["reason_ms_per_step"] == pytest.approx(next_ms, rel=0.2)  # both means
    _check_waiters(pod, truths, {"rank1"})
