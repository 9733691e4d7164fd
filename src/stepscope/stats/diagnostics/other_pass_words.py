"""What to change when steps, or the gaps between them, hold another DataLoader's pass: an
evaluation or validation loop run every N training steps (decisions 780 and 783), and the
step numbers they name."""

from __future__ import annotations

PASS_CHANGE = (
    "Run it every more steps or over a fixed subset of its batches, give its DataLoader "
    "workers so its batches are made ahead, or evaluate saved checkpoints in another process."
)
# the periodic steps hold the pass (a loop evaluating inside its iteration)
IN_STEPS_FIX = (
    "Those steps run another DataLoader's pass ({n} more fetches each): an evaluation or "
    "validation loop inside the training loop. " + PASS_CHANGE
)
# the gaps between steps hold it (a trainer evaluating between its marked steps)
IN_GAPS_FIX = (
    "The gaps after steps {after} run another DataLoader's pass ({n} fetches each): an "
    "evaluation or validation loop between training steps (a Trainer's eval_steps, "
    "Lightning's val_check_interval, an evaluation every N steps). " + PASS_CHANGE
)
# a gap holding this many DataLoader fetches or more holds another pass: the training
# loop's own next batch is one of them when its marker leaves the fetch out
GAP_PASS_FETCHES = 3
LISTED = 6  # step numbers listed; more are given as the first ones and a count


def listed_steps(nums: tuple[int, ...] | list[int]) -> str:
    """ "4, 9 and 14": step numbers in a sentence, the first ones and a count past `LISTED`."""
    if len(nums) > LISTED:
        return ", ".join(str(k) for k in nums[: LISTED - 1]) + f", ... ({len(nums)} steps)"
    if len(nums) == 1:
        return str(nums[0])
    return ", ".join(str(k) for k in nums[:-1]) + f" and {nums[-1]}"
