"""A job whose one rank waits on its input is told so by rank, not by the ranks' mean
(decision 601): one rank of four waiting 40% of its step time and three waiting 2% read
"11.5% of the step time is input" and "MODERATELY input-bound" with a generic fix."""

from __future__ import annotations

from pathlib import Path

from stepscope.stats.rank_input import RankInput, advice, apart
from tests.pod.builders import gloo_job, write_run
from tests.support.pod import tool_json


def _job(tmp_path: Path, slow: tuple[int, ...]) -> Path:
    """4 DDP ranks on gloo, 10 steps: the ranks in ``slow`` load each batch for 7 ms, the
    others for 0.3 ms; 8 ms of compute each."""
    builders = gloo_job(
        4, 10, input_ms=lambda r, s: 7.0 if r in slow else 0.3, compute_ms=lambda r, s: 8.0
    )
    return write_run(tmp_path / "logs", builders)


def test_one_input_bound_rank_is_named_with_its_fix(tmp_path: Path) -> None:
    run = _job(tmp_path, slow=(2,))
    page = tool_json(run, "overview_page", tmp_path / "cache", None)
    details = page["recommendation"]["details"]
    mine = [d for d in details if "vm.rank2 is input-bound" in d]
    assert len(mine) == 1, details
    line = mine[0]
    # 7 ms of its 16.6 ms steps, the others 0.3 ms of theirs: the figures are each rank's
    assert line.startswith("HIGH: Only vm.rank2 is input-bound: it waits for input 4")
    assert "the other 3 ranks 1.8%" in line and "is the ranks' mean)" in line
    assert "On vm.rank2, prepare batches ahead of the step (" in line
    # the ranks' mean is no longer the input advice
    assert not [d for d in details if " of the step time is input: " in d], details
    statement = page["input_bound"]["statement"]
    assert "That is the ranks' mean; vm.rank2 is HIGHLY input-bound: it waits" in statement
    pipeline = tool_json(run, "input_pipeline_analyzer", tmp_path / "cache", None)
    assert pipeline["input_bound"]["statement"] == statement


def test_ranks_waiting_alike_keep_the_means_advice(tmp_path: Path) -> None:
    page = tool_json(_job(tmp_path, slow=(0, 1, 2, 3)), "overview_page", tmp_path / "c", None)
    assert "ranks' mean" not in page["input_bound"]["statement"]
    assert not [d for d in page["recommendation"]["details"] if "is input-bound" in d]


def test_a_rank_of_ten_is_named_where_the_mean_is_under_the_threshold() -> None:
    """40% on one of ten ranks, 1% on the others: a mean of 4.9%, under the input line's 5%;
    the rank is named all the same, with its own fix."""
    shares = [
        RankInput(f"r{k}", 40.0 if k == 5 else 1.0, 4.0 if k == 5 else 0.1) for k in range(10)
    ]
    alone, rest = apart(shares)
    assert [p.host for p in alone] == ["r5"] and len(rest) == 9
    assert advice(alone, rest, 4.9, "pytorch").startswith(
        "HIGH: Only r5 is input-bound: it waits for input 40.0% of its step time (4.00 ms per "
        "step), the other 9 ranks 1.0% (the steps' 4.9% is the ranks' mean). On r5, prepare "
        "batches ahead of the step (DataLoader(num_workers=N, persistent_workers=True), or a "
        "background thread or process for a Python loader)"
    )
    # two ranks of two: the other's share is the bar
    two = [RankInput("a", 40.0, 4.0), RankInput("b", 2.0, 0.2)]
    assert [p.host for p in apart(two)[0]] == ["a"]
    # three of four waiting alike: the mean says it
    most = [RankInput(h, s, 1.0) for h, s in (("a", 40.0), ("b", 38.0), ("c", 41.0), ("d", 2))]
    assert apart(most)[0] == []
