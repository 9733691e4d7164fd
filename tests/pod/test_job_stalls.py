"""A real gloo DDP job whose rank 1 another process stops (SIGSTOP) for 400 ms twice while
it records (decision 645): two stalls of 200 steps, fewer than the straggler rules' 5% of
the steps, named at the steps the other ranks' scripts timed long, with its sampler's
missing readings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stepscope.cli.main import main
from tests.support.ddp_runs import job

pytestmark = pytest.mark.integration


def test_a_rank_stopped_twice_is_named_at_those_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    truths = job(
        tmp_path,
        *("--ranks", "3", "--stop-rank", "1", "--stop-ms", "400", "--stop-at", "0.6", "1.2"),
        *("--steps", "200", "--base-compute-ms", "2"),
    )
    [run] = (tmp_path / "plugins" / "profile").iterdir()
    assert main(["tool", str(run), "pod_viewer", "--workers", "0", "--no-cache"]) == 0
    pod: dict[str, Any] = json.loads(capsys.readouterr().out)
    # the steps rank 0's script timed over 300 ms: it waited there for rank 1 (its first step
    # holds the capture's start: no stall). Not rank 1's own: a stop that lands between its
    # script's timings is in none of its steps (CI, 02:35: rank 1 timed one, rank 0 two).
    long = [k for k, s in enumerate(truths[0]["step_s"]) if s > 0.3 and k > 0]
    assert len(long) == 2, truths[0]["step_s"]
    # (another rank may be late too on a busy machine, descheduled by turns)
    (late,) = [s for s in pod["stragglers"] if s["host"].endswith(".rank1")]
    # named at those steps, or at the end of the step before (stopped before its collective)
    assert len(late["steps"]) == 2, (late, long)
    assert all(k in long or k + 1 in long for k in late["steps"]), (late, long)
    assert (
        "its process did not run: stepscope's sampler in it took no reading"
        in (late["explanation"])
    )


def test_a_rank_pausing_once_is_named_at_that_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rank 2 sleeps 400 ms once, at step 60 of 150 (a checkpoint): every rank's script times
    that step long; the job is named stalled there by rank 2, its sleeping line sampled
    (decision 685). 400 ms: many times what this machine's load makes a rank late by."""
    truths = job(
        tmp_path,
        *("--ranks", "3", "--sleep-rank", "2", "--sleep-ms", "400", "--sleep-at", "60"),
        *("--steps", "150", "--base-compute-ms", "2"),
    )
    assert all(t["step_s"][60] > 0.4 for t in truths), [t["step_s"][60] for t in truths]
    [run] = (tmp_path / "plugins" / "profile").iterdir()
    assert main(["tool", str(run), "pod_viewer", "--workers", "0", "--no-cache"]) == 0
    pod: dict[str, Any] = json.loads(capsys.readouterr().out)
    (late,) = [s for s in pod["stragglers"] if s["host"].endswith(".rank2")]
    text = late["explanation"]
    assert 60 in late["steps"], late
    if late["steps"] != [60]:
        # a loaded machine also made it last by a few ms at other steps: a straggler, most
        # of its late time at step 60 (decision 546), said apart
        assert "most of it" in text and "at step 60:" in text, text
        return
    assert text.startswith(f"{late['host']} stalled the job once, at step 60 of"), text
    assert "neither on a core nor waiting for one" in text
    assert "ddp_job.py" in text  # the sampled line of the sleep


def test_a_rank_stopped_inside_the_collective_without_readings_is_said_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rank 1, first in step 60's all-reduce (the others arrive 100 ms later), is stopped
    there 500 ms; the capture has no sampler: the job's page says the call lasted long on
    every rank, who arrived last, and that which rank held it is not known (decision 686)."""
    truths = job(
        tmp_path,
        *("--ranks", "3", "--stop-rank", "1", "--stop-ms", "500", "--stop-inside", "60"),
        *("--sampler-hz", "0", "--steps", "150", "--base-compute-ms", "2"),
    )
    assert all(t["step_s"][60] > 0.5 for t in truths), [t["step_s"][60] for t in truths]
    [run] = (tmp_path / "plugins" / "profile").iterdir()
    assert main(["tool", str(run), "overview_page", "--workers", "0", "--no-cache"]) == 0
    overview: dict[str, Any] = json.loads(capsys.readouterr().out)
    (note,) = overview["job"]["held_alike"]
    assert note.startswith("Stalled inside a collective: at step 60 every rank had arrived"), note
    assert "which rank is not known: no rank has CPU readings" in note
    # the job's headline, over all its steps (the advice's may be the steps once warm)
    assert overview["bound_by"]["headline"].startswith("Stalled inside a collective")
