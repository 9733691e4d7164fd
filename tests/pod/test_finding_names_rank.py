"""A finding seen on one rank of a job alone names that rank in the job's advice (decision
647): "Every 10 steps (steps 5, 15, 25 and 35), a step spends 103 ms more" left the reader to
find which of the ranks writes its checkpoint there."""

from __future__ import annotations

from stepscope.stats.diagnostics.base import Finding
from stepscope.stats.diagnostics.runner import merge_repeats


def _periodic(host: str, severity: str = "high") -> Finding:
    return Finding(
        "periodic_steps",
        "Some steps do extra work every N steps",
        severity,
        host,
        "Every 10 steps (steps 5, 15, 25 and 35), a step spends 103.16 ms more.",
        "Host work runs on those steps only.",
        611_000_000,
        metrics={"period": 10},
    )


def test_one_ranks_finding_names_its_rank() -> None:
    (f,) = merge_repeats([_periodic("vm.rank1")], 3)
    assert f.summary == (
        "On vm.rank1 (1 of 3 hosts): Every 10 steps (steps 5, 15, 25 and 35), a step spends "
        "103.16 ms more."
    )
    assert f.host == "vm.rank1"


def test_graver_on_one_rank_each_names_its_own() -> None:
    found = merge_repeats([_periodic("vm.rank1"), _periodic("vm.rank0", "low")], 3)
    assert sorted(f.summary.split(":")[0] for f in found) == [
        "On vm.rank0 (1 of 3 hosts)",
        "On vm.rank1 (1 of 3 hosts)",
    ]


def test_a_finding_of_several_ranks_keeps_its_words_and_one_host_none() -> None:
    (f,) = merge_repeats([_periodic("vm.rank1"), _periodic("vm.rank2")], 3)
    assert f.summary.startswith("On 2 of 3 hosts (worst: vm.rank1): Every 10 steps")
    (alone,) = merge_repeats([_periodic("vm")], 1)
    assert alone.summary.startswith("Every 10 steps")
