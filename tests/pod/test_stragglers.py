"""Stragglers of synthetic 8-rank data-parallel jobs: the pod viewer and diagnostics name the
late rank, its steps and the reason, and never blame the ranks that waited in all-reduce."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepscope.cli.main import main
from stepscope.stats.stragglers import ranges
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.io import write_xspace
from tests.pod.builders import data_parallel_job


def _tool(run: Path, tool: str, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["tool", str(run), tool, "--workers", "0"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def slow_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rank 5 waits 5 ms longer for its data at steps 10-20."""
    return data_parallel_job(
        tmp_path_factory.mktemp("input"),
        input_ms=lambda rank, step: 6.0 if rank == 5 and 10 <= step <= 20 else 1.0,
    )


@pytest.fixture(scope="module")
def slow_gpu(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rank 2's GPU computes 8 ms where the others take 5 ms, every step."""
    return data_parallel_job(
        tmp_path_factory.mktemp("gpu"),
        compute_ms=lambda rank, step: 8.0 if rank == 2 else 5.0,
    )


def test_pod_viewer_names_the_rank_slow_in_input(
    slow_input: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pod = _tool(slow_input, "pod_viewer", capsys)
    [late] = pod["stragglers"]  # the seven ranks that waited are not stragglers
    assert late["host"] == "rank5" and late["step_ranges"] == "10-20"
    assert late["reason"] == "input" and late["late_ms_per_step"] == pytest.approx(5.0)
    assert late["waiters"] == 7 and "rank5 is late at steps 10-20" in late["explanation"]
    heat = pod["heatmap"]
    assert heat["hosts"][5] == "rank5" and len(heat["step_ms"]) == 8
    col = heat["steps"].index(15)
    assert heat["late_ms"][5][col] == pytest.approx(5.0)
    assert heat["wait_ms"][0][col] == pytest.approx(5.0) and heat["wait_ms"][5][col] == 0
    assert [row[col] for row in heat["late"]] == [r == 5 for r in range(8)]
    col = heat["steps"].index(5)  # before the slow stretch nobody is late, nor waits
    assert not any(row[col] for row in heat["late"])
    assert [row[col] for row in heat["wait_ms"]] == pytest.approx([0.0] * 8, abs=1e-6)


def test_diagnostics_blame_the_slow_gpu_not_the_waiters(
    slow_gpu: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = _tool(slow_gpu, "diagnostics", capsys)["findings"]
    [skew] = [f for f in found if f["id"] == "host_skew"]
    assert skew["metrics"]["straggler"] == "rank2"
    assert skew["metrics"]["reason"] == "device_compute"
    assert "rank2 is late" in skew["summary"] and "device compute" in skew["summary"]
    assert [e["name"] for e in skew["events"]] == ["rank2"]
    # Waiters' collective findings say how much was waiting, and rank more mildly than the
    # straggler finding: 84 ms of each waiter's 112 ms in all-reduce was waiting for rank2.
    # The seven waiters' findings are one, naming them (it was said seven times).
    [waiters] = [f for f in found if f["id"] == "collectives" and f["host"] != "rank2"]
    assert waiters["host"] == "" and waiters["summary"].startswith("On 7 of 8 hosts")
    assert waiters["metrics"]["hosts"] == ", ".join(f"rank{k}" for k in range(8) if k != 2)
    assert waiters["metrics"]["waiting_for_late_ranks_ms"] == pytest.approx(84.0)
    assert "waiting for the late rank rank2 (see" in waiters["summary"]
    assert waiters["severity"] != "high" and waiters["time_ms"] == pytest.approx(7 * 28.0)


def test_diagnostics_name_the_input_straggler_and_its_steps(
    slow_input: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = _tool(slow_input, "diagnostics", capsys)["findings"]
    [skew] = [f for f in found if f["id"] == "host_skew"]
    assert skew["steps"] == list(range(10, 21)) and skew["metrics"]["reason"] == "input"
    assert "The late rank waits for its data: give its DataLoader more workers" in skew["fix"]
    # Only the straggler's own input finding may rank high (its input share is the overview's
    # "highly input-bound"); the ranks that waited for it are never blamed.
    high = [f for f in found if f["host"] != "" and f["severity"] == "high"]
    assert [(f["host"], f["id"]) for f in high] == [("rank5", "input_bound")]


def test_balanced_job_has_no_straggler(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = data_parallel_job(tmp_path, ranks=4, steps=12)
    assert _tool(run, "pod_viewer", capsys)["stragglers"] == []
    found = _tool(run, "diagnostics", capsys)["findings"]
    assert "host_skew" not in {f["id"] for f in found}


def test_cpu_straggler_in_untraced_host_work_gets_host_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CPU-only workers, one whose steps hold 6 ms more untraced time: the fix is about host
    work, not a GPU's clocks (it fell back to the device-compute advice)."""
    run = tmp_path / "plugins" / "profile" / "job"
    run.mkdir(parents=True)
    for h in range(3):
        builder = XSpaceBuilder(f"w{h}")
        main_thread = builder.plane("/host:CPU").line(7, "MainThread")
        step_ms = 10 if h == 1 else 4
        for k in range(12):
            t = k * step_ms * 1_000_000
            main_thread.event("train", t, step_ms * 1_000_000, {"step_num": k, "_r": 1})
            main_thread.event("forward", t, 3_000_000)
        write_xspace(builder.build(), run / f"w{h}.xplane.pb")
    found = _tool(run, "diagnostics", capsys)["findings"]
    [skew] = [f for f in found if f["id"] == "host_skew"]
    assert skew["metrics"]["straggler"] == "w1" and skew["metrics"]["reason"] == "other"
    assert "no traced op covers" in skew["fix"] and "GPU" not in skew["fix"]


def test_pod_viewer_says_what_held_every_rank_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every all-reduce of steps 10 and 20 lasts 100 ms after the last rank arrived, and no
    rank has CPU readings: no straggler, and the job's note (decision 686) on the page whose
    Stragglers card said only "No straggler" (decision 722)."""
    run = data_parallel_job(
        tmp_path, ranks=3, allreduce_ms=lambda s: 100.0 if s in (10, 20) else 1.0
    )
    pod = _tool(run, "pod_viewer", capsys)
    assert pod["stragglers"] == []
    (note,) = pod["held_alike"]
    assert note.startswith("Stalled inside a collective: at steps 10, 20 every rank had arrived")
    overview = _tool(run, "overview_page", capsys)
    assert overview["job"]["held_alike"] == [note]


def test_step_ranges() -> None:
    assert ranges([3, 10, 11, 12, 25]) == "3, 10-12, 25" and ranges([]) == ""


# Own time of a rank that waits for nobody, per step, in `data_parallel_job`: input 1 ms, the
# launch gap 0.05 ms, compute 5 ms, all-reduce 1 ms, the gap before the next step 0.1 ms.
OWN_MS = 7.15


@pytest.mark.parametrize(("late_share", "flagged"), [(0.05, False), (0.12, True)])
def test_lateness_threshold_is_ten_percent_of_the_median_rank(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], late_share: float, flagged: bool
) -> None:
    """Rank 1 computes longer at every step: 5% of a step late is noise, 12% is a straggler."""
    extra_ms = late_share * OWN_MS
    run = data_parallel_job(
        tmp_path,
        ranks=4,
        steps=8,
        compute_ms=lambda rank, step: 5.0 + (extra_ms if rank == 1 else 0.0),
    )
    pod = _tool(run, "pod_viewer", capsys)
    heat = pod["heatmap"]
    steps = heat["steps"]  # the pod steps (a profile's first and last may be partial)
    assert heat["late_ms"][1] == pytest.approx([extra_ms] * len(steps), abs=0.01)
    if not flagged:
        assert pod["stragglers"] == [] and not any(map(any, heat["late"]))
        return
    [late] = pod["stragglers"]
    assert late["host"] == "rank1" and late["step_ranges"] == ranges(steps)
    assert late["reason"] == "device_compute" and late["waiters"] == 3


def test_an_amd_straggler_reads_its_clocks_with_rocm_smi(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The diagnostics tool (every rank's vendor from its kept device caps) names rocm-smi
    for a slow AMD GPU, not nvidia-smi (decision 1040)."""
    run = data_parallel_job(
        tmp_path,
        ranks=4,
        compute_ms=lambda rank, step: 8.0 if rank == 2 else 5.0,
        device_name="AMD Instinct MI300X",
    )
    found = _tool(run, "diagnostics", capsys)["findings"]
    [skew] = [f for f in found if f["id"] == "host_skew"]
    assert skew["metrics"]["reason"] == "device_compute"
    assert "rocm-smi --showclocks" in skew["fix"] and "nvidia-smi" not in skew["fix"]
