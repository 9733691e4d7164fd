"""Several hosts' step descriptions said once (decision 397)."""

from __future__ import annotations

from stepscope.stats.steps.describe_hosts import describe_hosts

RANK = (
    "{n} iterations each starting at top-level event 'aten::randn' (once per repeat of "
    "'DistributedDataParallel.forward') every {ms} ms (no step markers in the profile)"
)


def test_ranks_alike_but_for_their_figures_are_said_once_with_ranges() -> None:
    texts = [RANK.format(n=30, ms=ms) for ms in ("60.6", "58.9", "61.1", "59.8")]
    texts[2] = RANK.format(n=29, ms="61.1")
    assert describe_hosts(texts) == "on each of 4 hosts: " + RANK.format(n="29-30", ms="58.9-61.1")


def test_equal_descriptions_once_and_different_ones_each() -> None:
    assert describe_hosts(["step markers", "step markers"]) == "step markers"
    assert describe_hosts(["step markers", "inferred 3"]) == "step markers; inferred 3"
    assert describe_hosts([]) == ""
