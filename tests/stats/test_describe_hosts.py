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
    named = describe_hosts(["step markers", "inferred 3"], ("a", "b"))
    assert named == "a: step markers; b: inferred 3"
    assert describe_hosts([]) == ""


def test_ranks_that_found_their_steps_differently_are_named() -> None:
    """A 3-rank DDP job whose slow rank found its steps another way: the three sentences,
    joined, did not say which rank found which (decision 666)."""
    other = "40 repeats of top-level event 'DistributedDataParallel.forward' every 158.4 ms"
    texts = [RANK.format(n=40, ms="158.5"), RANK.format(n=40, ms="163.7"), other]
    said = describe_hosts(texts, ("vm.rank0", "vm.rank1", "vm.rank2"))
    assert said == (
        "vm.rank0, vm.rank1: " + RANK.format(n=40, ms="158.5-163.7") + "; vm.rank2: " + other
    )
