"""The last step of a loop that does extra work at its end reads what the script timed
(decision 608): a checkpoint and an evaluation at step 59 of 60 are in it when the loop did
the same at step 29 (a kind of iteration run once before), the checkpoint's untraced file
write too; extra work the loop never did before is said to be in no step."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.stats.steps.infer import infer_steps
from tests.support.analysis import MS
from tests.support.ckpt_loop import SAMPLE_MS, ckpt_loop
from tests.support.epochs import epochs_loop


def _last(profile: object, n: int) -> tuple[float, float, str]:
    found = infer_steps(profile)  # type: ignore[arg-type]
    assert found is not None
    assert len(found) == n, found.description
    start, end = np.asarray(found.start_ns) / MS, np.asarray(found.end_ns) / MS
    return start[-1], end[-1], found.description


def test_a_last_step_doing_what_one_step_did_before_holds_it() -> None:
    """/tmp/coord13/loops/ckpt.py: a checkpoint every 10 steps, an evaluation every 15, both
    at 29 and 59; step 59 read 14.95 ms (the common work) for the script's 49.88."""
    saves, evals = range(9, 60, 10), range(14, 60, 15)
    profile, spans = ckpt_loop(60, saves, evals)
    start, end, _ = _last(profile, 60)
    assert abs(start - spans[-1][0]) < 1e-3
    assert abs(end - spans[-1][1]) < 1e-3


def test_a_last_checkpoint_holds_its_untraced_write() -> None:
    """The checkpoint's file is written after its last traced op; the same work in steps 9,
    19 and 29 shows that write before the next fetch (15 ms), so the last step holds it."""
    profile, spans = ckpt_loop(40, range(9, 40, 10), write_ms=15.0)
    _, end, _ = _last(profile, 40)
    assert abs(end - spans[-1][1]) < 1e-3
    # capped at the next event: the traced work after the loop begins the capture's end
    profile, spans = ckpt_loop(40, range(9, 40, 10), write_ms=15.0, after_ms=3.0)
    _, end, text = _last(profile, 40)
    assert abs(end - spans[-1][1]) < 0.1
    assert "3.05 ms of traced work after the last one" in text  # the gap before it too


def test_extra_work_never_seen_before_is_said_to_be_in_no_step() -> None:
    """A checkpoint and an evaluation at the last step only: nothing traced tells them from
    code after the loop; the last step ends with the common work and the description says
    how much traced work follows it."""
    profile, spans = ckpt_loop(40, (39,), (39,))
    start, end, text = _last(profile, 40)
    assert abs(end - (start + 8.1)) < 1e-3  # fetch, forward, optimizer step and gaps
    after = spans[-1][1] - end
    assert f"{after:.2f} ms of traced work after the last one" in text


SAVE = "save (serialization.py:1003);_save (serialization.py:1312)"


@pytest.mark.parametrize(
    ("stack", "held"),
    [
        (f"<module> (train.py:28);{SAVE}", True),  # in the loop's body
        (f"<module> (train.py:33);{SAVE}", False),  # after the loop
        ("<module> (train.py:30);__del__ (dataloader.py:1704)", False),  # its iterator dropped
        ("<module> (train.py:20);__next__ (dataloader.py:733)", False),  # the `for`: a fetch
    ],
)
def test_a_last_checkpoint_never_seen_before_is_the_last_steps_where_sampled_in_the_loop(
    stack: str, held: bool
) -> None:
    """/tmp/loops16/ck.py's last iteration only saves (`torch.save`, its file written
    untraced for 267 ms) and read 684.70 ms for the script's 952.45: the trace is the same as
    a save after the loop (decision 639). The stack sampler tells them apart by the line of
    the loop's frame, within the loop's lines the capture recorded (decision 681)."""
    profile, spans = ckpt_loop(40, (39,), write_ms=200.0, last_write_stack=stack)
    start, end, text = _last(profile, 40)
    if held:
        assert abs(end - spans[-1][1]) < SAMPLE_MS / 2  # halfway between two samples
        assert "ms more of the loop's body, untraced (sampled: save (serialization.py))" in text
        assert "after the last one" not in text
    else:
        assert abs(end - (start + 8.1)) < 1e-3  # the common work, as without samples
        assert "more of the loop's body" not in text


def test_the_validation_after_the_last_epoch_stays_out_of_the_last_step() -> None:
    """Epoch 0's last period (its validation, then epoch 1's ``iter()`` and first batch) is a
    kind of period run once, and the last iteration, followed by the same validation, is
    that work but the next epoch's head: a period that begins a new pass is never the last
    iteration's (/tmp/loops14/ev1 read 5.34 ms for the script's 1.92 without it)."""
    profile, *_ = epochs_loop(epochs=2, val=4)
    start, end, text = _last(profile, 16)
    assert end - start < 35.0  # its fetch, copy, optimizer step and zero_grad: 33.8 ms
    assert "ms of traced work after the last one" in text
