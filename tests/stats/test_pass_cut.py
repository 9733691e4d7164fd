"""A pass over another DataLoader at the end of a step ends that step (decision 1034): a loop
validating every N steps inside its iteration reads its training steps' time and breakdown,
and the gaps' finding tells the validation; a pass before the step's own work, or followed
by other long work, stays in its step (the periodic-steps finding's, decision 780)."""

from __future__ import annotations

import numpy as np

from stepscope.stats.steps.breakdown import build_step_db
from stepscope.stats.summary import summarize_steps
from tests.support.analysis import MS
from tests.support.findings import host_findings
from tests.support.gpu_fixtures import GpuTrace
from tests.support.loader import LOOP_NEXT
from tests.support.periodic_loop import EVAL_NEXT, evaluating_loop

PASSES = (9, 19, 29, 39, 49)  # steps 1-58 are read (XProf's rule drops the ends)


def test_a_validation_at_the_end_of_every_10th_step_is_in_no_step() -> None:
    # 9 ms steps (a 1 ms fetch, 8 ms of compute); every 10th then validates over 5 batches
    # of another loader (1 ms fetch, 3 ms forward each, and the fetch ending the pass)
    profile = evaluating_loop(60, 10, 5, slowed=())
    db = build_step_db(profile)
    assert db.n_steps == 58
    assert (db.dur_ns == 9 * MS).all()  # the script's training step, not 30 ms every 10th
    summary = summarize_steps({"h": db})
    assert summary.step_stats().avg_ms == 9.0
    assert (summary.category_ns["input"] == summary.category_ns["input"][0]).all()
    assert (
        "steps 9, 19, 29, 39, 49 end before another DataLoader's pass at their end "
        "(6 fetches, 21.00 ms each (median): an evaluation or validation loop), which is in "
        "no step, as a script timing its training step leaves it out"
    ) in db.description
    found = host_findings(profile)
    assert "periodic_steps" not in found  # no step is slower: the pass is told in the gaps
    gaps = found["step_gaps"]
    assert (
        "5 of them (105.00 ms) hold another DataLoader's pass, 6 fetches each: an evaluation "
        "or validation loop."  # nothing after it
    ) in gaps.summary
    assert gaps.fix.startswith("The gaps after steps 9, 19, 29, 39 and 49 run another")


def test_a_validation_before_the_steps_work_stays_in_its_step() -> None:
    db = build_step_db(evaluating_loop(60, 10, 5, slowed=(), first=True))
    k = np.isin(db.step_num, PASSES)
    assert (db.dur_ns[k] == 30 * MS).all() and (db.dur_ns[~k] == 9 * MS).all()
    assert "another DataLoader's pass" not in db.description


def test_a_validation_followed_by_a_checkpoint_stays_in_its_step() -> None:
    db = build_step_db(evaluating_loop(60, 10, 5, slowed=(), tail_ms=12))
    k = np.isin(db.step_num, PASSES)
    assert (db.dur_ns[k] == 42 * MS).all() and (db.dur_ns[~k] == 9 * MS).all()


def test_the_passes_kernels_are_in_no_step_on_a_gpu() -> None:
    # marked GPU steps: a 1 ms fetch, a 7 ms kernel the host waits for; every 5th step then
    # validates: 3 batches (a 1 ms fetch, a 2 ms kernel each), and the fetch ending the pass
    trace = GpuTrace()
    t = 0
    for k in range(22):
        evaluating = k % 5 == 4
        dur = 9 * MS + (10 * MS if evaluating else 0)
        trace.step(k, t, dur)
        trace.op(LOOP_NEXT, t, MS)
        trace.launch(t + MS, "volta_sgemm", t + 1_100_000, 7 * MS)
        trace.op("cudaStreamSynchronize", t + 1_010_000, 7_990_000)
        at = t + 9 * MS
        for _ in range(3 if evaluating else 0):
            trace.op(EVAL_NEXT, at, MS)
            trace.launch(at + MS, "volta_sgemm", at + 1_100_000, 2 * MS)
            at += 3 * MS
        if evaluating:
            trace.op(EVAL_NEXT, at, MS)
        t += dur
    db = build_step_db(trace.profile())
    assert db.n_steps == 20
    assert (db.dur_ns == 9 * MS).all()
    k = np.isin(db.step_num, (4, 9, 14, 19))
    compute = db.category_ns()["device_compute"]
    assert (compute[k] == compute[~k][0]).all()  # the training kernel only


def test_a_validation_followed_by_a_checkpoint_is_in_no_step_after_the_optimizer() -> None:
    # the same loop saving a checkpoint (12 ms, untraced) after each validation, its step
    # trained by a PyTorch optimizer before the pass: the step ends at the pass, and the save
    # after it is in no step with it (decision 1013)
    profile = evaluating_loop(60, 10, 5, slowed=(), tail_ms=12, optimizer=True)
    db = build_step_db(profile)
    assert (db.dur_ns == 9 * MS).all()
    assert (
        "(6 fetches, 21.00 ms each (median): an evaluation or validation loop), with 12.00 ms "
        "each (median) of other work after the pass's last fetch in 5 of them (a checkpoint's "
        "save, logging), all in no step, as a script timing its training step leaves them out"
    ) in db.description
    gaps = host_findings(profile)["step_gaps"]
    assert (
        "5 of them (165.00 ms) hold another DataLoader's pass, 6 fetches each: an evaluation "
        "or validation loop, and 60.00 ms of it after the pass's last fetch (a checkpoint's "
        "save, logging)."
    ) in gaps.summary


def test_a_validation_in_the_middle_of_a_step_ends_it_after_the_optimizer() -> None:
    # a validation between the optimizer step and the step's logging (a 5 ms weight norm)
    db = build_step_db(
        evaluating_loop(60, 10, 5, slowed=(), tail_ms=5, optimizer=True, logged=True)
    )
    assert (db.dur_ns == 9 * MS).all()
    # without the optimizer's mark the logging after the pass is the step's own work
    db = build_step_db(evaluating_loop(60, 10, 5, slowed=(), tail_ms=5, logged=True))
    k = np.isin(db.step_num, PASSES)
    assert (db.dur_ns[k] == 35 * MS).all() and (db.dur_ns[~k] == 9 * MS).all()


def test_a_validation_before_the_optimizer_stays_in_its_step() -> None:
    db = build_step_db(evaluating_loop(60, 10, 5, slowed=(), first=True, optimizer=True))
    k = np.isin(db.step_num, PASSES)
    assert (db.dur_ns[k] == 30 * MS).all() and (db.dur_ns[~k] == 9 * MS).all()


def test_the_untraced_setup_before_a_validation_after_the_optimizer_is_in_no_step() -> None:
    # 2 ms of untraced Python between the optimizer step and the pass's first event
    # (``model.eval()``, the pass's iterator; a thread descheduled there): the step ends with
    # its optimizer step, as the script's clock does (decision 1015)
    db = build_step_db(evaluating_loop(60, 10, 5, slowed=(), optimizer=True, setup_ms=2))
    assert (db.dur_ns == 9 * MS).all()
    assert "steps 9, 19, 29, 39, 49 end before another DataLoader's pass" in db.description
    # without the optimizer's mark nothing says where the step's own work ended
    db = build_step_db(evaluating_loop(60, 10, 5, slowed=(), setup_ms=2))
    k = np.isin(db.step_num, PASSES)
    assert (db.dur_ns[k] == 11 * MS).all() and (db.dur_ns[~k] == 9 * MS).all()


def test_a_validation_between_the_backward_and_the_optimizer_stays_in_its_step() -> None:
    # the optimizer steps (1 ms) after the pass: the script's clock holds the pass, and the
    # step must not end at it, leaving its optimizer step out (decision 1016)
    db = build_step_db(evaluating_loop(60, 10, 5, slowed=(), inner=True))
    k = np.isin(db.step_num, PASSES)
    assert (db.dur_ns[k] == 30 * MS).all() and (db.dur_ns[~k] == 9 * MS).all()
    assert "another DataLoader's pass" not in db.description
