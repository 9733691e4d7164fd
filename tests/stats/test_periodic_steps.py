"""Steps doing extra work every N steps (decision 580): a checkpoint every 5 steps is told
apart from the loop's input stalls, with what the sampler saw there; stalls of one limit that
fall on a period by chance, or a period some of whose steps lack the work, are no period."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.stats.diagnostics.base import Finding
from tests.support.analysis import MS
from tests.support.findings import host_findings
from tests.support.periodic_loop import checkpoint_loop, evaluating_loop


def _found(profile: Profile) -> dict[str, Finding]:
    return host_findings(profile)


def test_a_checkpoint_every_5_steps_is_told_apart_from_input_stalls() -> None:
    # 32 marked steps: steps 1-30 are whole (the first and the last marker are cut)
    found = _found(checkpoint_loop(32, saves=(4, 9, 14, 19, 24, 29), stalls=(2, 17)))
    periodic = found["periodic_steps"]
    assert periodic.steps == (4, 9, 14, 19, 24, 29)
    assert periodic.metrics["every_n_steps"] == 5 and periodic.metrics["limit"] == "host"
    assert periodic.time_ns == 6 * 12 * MS
    assert periodic.summary.startswith("Every 5 steps (steps 4, 9, 14, 19, 24 and 29), ")
    assert "12.00 ms more (median) in Python / host" in periodic.summary
    assert periodic.summary.endswith("_save (serialization.py) (72 of its 120 samples there).")
    assert "checkpointing" in periodic.fix
    # the loop's own stalls stay the slow steps', now told as input
    slow = found["slow_steps"]
    assert slow.steps == (2, 17) and slow.metrics["cause"] == "input"


def test_the_last_step_may_lack_the_work_its_end_being_inferred() -> None:
    # steps 1-29: the last one, 29, lacks the save
    found = _found(checkpoint_loop(31, saves=(4, 9, 14, 19, 24)))
    assert found["periodic_steps"].steps == (4, 9, 14, 19, 24)
    # any other step lacking it: no period
    assert "periodic_steps" not in _found(checkpoint_loop(31, saves=(4, 9, 19, 24, 29)))


def test_stalls_that_fall_on_a_period_by_chance_are_no_period() -> None:
    # input stalls at steps 3, 13 and 23 (each step 10 steps apart, 3 of them) amid two more
    # at other steps: 2 of the other 27 steps stall too, so three on one place of the ~430
    # places tried come by chance (a 0.17 chance); without the two, they are a period
    assert "periodic_steps" not in _found(checkpoint_loop(32, (), stalls=(3, 13, 23, 7, 18)))
    found = _found(checkpoint_loop(32, (), stalls=(3, 13, 23)))
    assert found["periodic_steps"].steps == (3, 13, 23)
    assert found["periodic_steps"].metrics["limit"] == "input"


def test_every_other_step_is_measured_against_the_others_and_the_first_is_one_of_them() -> None:
    # steps 1-30 are whole; every odd one saves 30 ms, the first among them. The median of
    # all steps lies between the two kinds; the first step is one of the saves, no warm-up
    found = _found(checkpoint_loop(32, saves=range(1, 32, 2), save_ms=30))
    periodic = found["periodic_steps"]
    assert periodic.steps == tuple(range(1, 31, 2))
    assert "30.00 ms more (median) in Python / host than the other steps do" in periodic.summary
    assert "those steps take 39.00 ms (median) against 9.00 ms for the others" in periodic.summary
    assert "slow_steps" not in found


def test_an_evaluation_every_10_steps_counts_its_whole_time_and_names_its_pass() -> None:
    # steps 1-58 are whole; every 10th step evaluates over 5 batches of another loader: 6 ms
    # of fetches (input, found clean) and 15 ms of forward ops (compute, where 8 other steps
    # are 20 ms slower by the machine's noise: no period in compute alone); it evaluates
    # before training on its batch, so the pass stays in its step (at a step's end it ends
    # the step: tests/stats/test_pass_cut.py)
    slowed = (3, 12, 17, 25, 33, 44, 46, 52)
    found = _found(evaluating_loop(60, 10, 5, slowed=slowed, first=True))
    periodic = found["periodic_steps"]
    assert periodic.steps == (9, 19, 29, 39, 49)
    assert periodic.time_ns == 5 * 21 * MS  # the whole extra, not the 6 ms of input alone
    assert "15.00 ms in compute and 6.00 ms in input (medians)" in periodic.summary
    assert "each holds 6 more DataLoader fetches than the other steps" in periodic.summary
    assert periodic.fix.startswith("Those steps run another DataLoader's pass (6 more fetches")
    assert periodic.metrics["extra_fetches"] == 6
