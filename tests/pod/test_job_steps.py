"""ALL_HOSTS as one job (issue #26): the job's step time is the pacing rank's, the slowest on
average (decision 398; XProf's ALL_HOSTS rule, per step the slowest, is shown beside it), with
the ranks' mean and spread and XProf's breakdown; the overview, `stepscope report --host
ALL_HOSTS` and the pod viewer give one row per rank."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from stepscope.cli.main import main
from stepscope.stats import build_step_db, summarize_steps
from stepscope.xspace.builder import XSpaceBuilder
from tests.pod.builders import MS, fetch_samples, gloo_job, untraced_job, write_run
from tests.support.analysis import build


def _two_hosts() -> dict:
    """Host a's steps take 10 ms, host b's 14 ms (4 ms more input)."""
    dbs = {}
    for host, input_ms in (("a", 2), ("b", 6)):
        b = XSpaceBuilder(host)
        line = b.plane("/host:CPU").line(1, "MainThread")
        for k in range(6):
            t = k * 20 * MS
            line.event("train", t, (8 + input_ms) * MS, {"step_num": k, "_r": 1})
            line.event(
                "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t, input_ms * MS
            )
            line.event("aten::mm", t + input_ms * MS, 8 * MS)
        dbs[host] = build_step_db(build(b))
    return dbs


def test_all_hosts_step_is_the_slowest_ranks_and_categories_add_up() -> None:
    """Before issue #26 the ALL_HOSTS step was the hosts' mean (12 ms here)."""
    summary = summarize_steps(_two_hosts())
    assert summary.n_steps == 4  # the first and last of 6 marker steps dropped
    assert summary.dur_ns.tolist() == [14 * MS] * 4
    total = sum(summary.category_ns.values())
    assert np.array_equal(total, summary.dur_ns)
    # the ranks' mean breakdown (input 4, compute 8 of a 12 ms mean) stretched to 14 ms
    assert summary.category_ns["input"].tolist() == [round(4 * MS * 14 / 12)] * 4
    assert summary.rank_dur_ns.tolist() == [[10 * MS] * 4, [14 * MS] * 4]
    assert summary.first_host_category_ns["input"].tolist() == [2 * MS] * 4  # XProf's: host a's


def _lockstep(periods: dict[str, list[int]]) -> dict:
    """Hosts whose marked steps last ``periods`` ms each, back to back."""
    dbs = {}
    for host, ms in periods.items():
        b = XSpaceBuilder(host)
        line = b.plane("/host:CPU").line(1, "MainThread")
        t = 0
        for k, d in enumerate(ms):
            line.event("train", t * MS, d * MS, {"step_num": k, "_r": 1})
            line.event("aten::mm", t * MS, d * MS)
            t += d
        dbs[host] = build_step_db(build(b))
    return dbs


def test_ranks_in_lockstep_give_their_common_period_not_each_steps_largest() -> None:
    """Two ranks in lockstep, 10 ms a step, whose boundaries fall apart by 2 ms (8 and 12 ms
    steps in turn): each step's largest is 12 ms, the job's period 10 (decision 398)."""
    summary = summarize_steps(
        _lockstep({"a": [10, 8, 12, 8, 12, 8, 12, 10], "b": [10, 12, 8, 12, 8, 12, 8, 10]})
    )
    assert summary.rank_dur_ns.max(axis=0).tolist() == [12 * MS] * 6
    assert float(summary.dur_ns.mean()) == 10 * MS


def test_the_pacing_rank_is_the_slowest_on_average() -> None:
    summary = summarize_steps(
        _lockstep({"a": [10, 9, 11, 9, 11, 10], "b": [10, 13, 12, 14, 13, 10]})
    )
    assert summary.dur_ns.tolist() == [13 * MS, 12 * MS, 14 * MS, 13 * MS]  # b's


def _tool(run: Path, tool: str, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["tool", str(run), tool, "--workers", "0", "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def slow_input_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_run(
        tmp_path_factory.mktemp("job"),
        gloo_job(4, input_ms=lambda rank, step: 20.0 if rank == 3 else 1.0),
    )


def test_overview_at_all_hosts_gives_the_job_and_its_ranks(
    slow_input_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    overview = _tool(slow_input_run, "overview_page", capsys)
    job = overview["job"]
    assert job["ranks"] == 4 and job["step_time_ms"] == overview["step_time_ms"]
    assert job["xprof_step_time_ms"] == job["step_time_ms"]  # XProf's rule is the same
    assert "first host's (vm.rank0)" in job["xprof_note"]
    rows = {r["host"]: r for r in job["rows"]}
    assert rows["vm.rank3"]["role"] == "straggler" and rows["vm.rank3"]["input_ms"] == 20.0
    assert rows["vm.rank3"]["late_arrivals"] == 20  # 2 buckets x 10 compared steps
    for host in ("vm.rank0", "vm.rank1", "vm.rank2"):
        assert rows[host]["role"] == "waiting"
        # ready at 5 ms, rank 3's buckets arrive at 24 and 25 ms and leave at 24.5 and 25.5:
        # waiting from its second bucket's enqueue at 6 ms (decision 1035)
        assert rows[host]["waiting_ms"] == pytest.approx(19.0)
        assert rows[host]["collectives_ms"] == pytest.approx(20.5)
    assert job["straggler_rule"] == "collective arrival"
    [text] = job["stragglers"]
    assert text.startswith("vm.rank3 is late at steps 1-10") and "in input" in text


def test_report_shows_the_job_step_time_and_one_row_per_rank(
    slow_input_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(slow_input_run), "--host", "ALL_HOSTS", "--workers", "0"]) == 0
    text = capsys.readouterr().out
    flat = " ".join(text.split())
    assert "Job step time (vm.rank0's, the slowest rank on average)" in flat
    assert "XProf 2.24.2's ALL_HOSTS step time is per step the slowest host's" in flat
    rows = [line.split() for line in text.splitlines() if line.startswith("  vm.rank")]
    lines = {row[0]: row for row in rows if len(row) == 9}
    assert lines["vm.rank3"][1] == "straggler" and lines["vm.rank0"][1] == "waiting"
    assert "Straggler: vm.rank3 is late at steps 1-10" in text


def test_pod_viewer_workers_carry_role_waiting_and_offsets(
    slow_input_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pod = _tool(slow_input_run, "pod_viewer", capsys)
    assert pod["straggler_rule"] == "collective arrival" and "clock offsets" in pod["clock"]
    workers = {w["host"]: w for w in pod["workers"]}
    assert workers["vm.rank3"]["role"] == "straggler" and workers["vm.rank3"]["wait_ms"] == 0
    assert workers["vm.rank1"]["role"] == "waiting"
    assert workers["vm.rank1"]["clock_offset_ms"] == pytest.approx(0.0, abs=1e-6)
    assert workers["vm.rank3"]["breakdown_ms"]["input"] == pytest.approx(20.0)


def test_a_large_jobs_report_stays_a_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """24 ranks, more than the table's 16: the title counts the hosts, the rank table shows
    the straggler first and 15 more, and says where the rest are (a 256-rank report was 390
    lines, 23 of title). 40 ranks cost 1.2 s of CPU, 24 0.75 s (decision 715)."""
    from tests.pod.builders import data_parallel_job

    run = data_parallel_job(
        tmp_path, ranks=24, steps=8, compute_ms=lambda rank, step: 8.0 if rank == 21 else 5.0
    )
    assert main(["report", str(run), "--workers", "0", "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].startswith("stepscope report — host ALL_HOSTS (24 hosts: rank0 ")
    rows = [line.split() for line in text.splitlines() if line.startswith("  rank")][1:]
    assert len(rows) == 16 and rows[0][:2] == ["rank21", "straggler"]
    assert "... 8 more ranks: `stepscope tool RUN pod_viewer` lists every one" in text


def test_a_ranks_table_too_wide_for_the_report_is_split_not_clipped() -> None:
    """Long host names made the Ranks table wider than 80 columns and the last columns were
    cut ("wa…"): it is split in two tables that keep every figure."""
    from stepscope.cli.report_render import _fitted

    heads = ["rank", "role", "step ms", "input", "compute", "host", "collect.", "waiting", "last"]
    row = ["a100_triton_tiny_rank", "straggler", "13336.32", "0.00", "0.00", "13336.31"]
    lines = _fitted([[*row, "10.78", "10.69", "12"]], heads, 78)
    assert max(map(len, lines)) <= 80 and not any("…" in line for line in lines)
    assert "10.69" in " ".join(lines) and "13336.31" in " ".join(lines)
    assert _fitted([["r0", "-", "1.00", "0", "0", "0", "0", "0", "0"]], heads, 78)[0].startswith(
        "  rank  role"
    )


def test_the_pod_viewer_gives_each_worker_the_ranks_tables_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rank 1 waits 6 ms a step on its Python batch generator, untraced: the Ranks table says
    input 7 ms (decision 388), and the pod viewer said input 0 for it beside "All others"
    (XProf's categories): a user read two answers. `bound_ms` is the table's, per worker and
    per step; `breakdown_ms` stays XProf's."""
    builders = untraced_job()
    fetch_samples(builders[1], step_ms=20, at_ms=5, gap_ms=6)
    run = write_run(tmp_path, builders)
    rows = {r["host"]: r for r in _tool(run, "overview_page", capsys)["job"]["rows"]}
    pod = _tool(run, "pod_viewer", capsys)
    for w in pod["workers"]:
        row = rows[w["host"]]
        keys = ("input", "compute", "host", "collectives")
        assert w["bound_ms"] == {k: row[f"{k}_ms"] for k in keys}, w["host"]
    worker = {w["host"]: w for w in pod["workers"]}["r1"]
    assert (worker["bound_ms"]["input"], worker["breakdown_ms"]["input"]) == (7.0, 1.0)
    for step in pod["steps"]:
        r1 = {w["host"]: w for w in step["workers"]}["r1"]
        assert r1["bound_ms"]["input"] == 7.0 and r1["breakdown_ms"]["input"] == 1.0
    assert main(["tool", str(run), "pod_viewer", "--csv", "--no-cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split(",")
    r1_rows = [dict(zip(header, x.split(","), strict=True)) for x in lines[1:] if ",r1," in x]
    assert r1_rows and {r["bound_input_ms"] for r in r1_rows} == {"7.0"}
