"""A PyTorch loop fed through a ``queue.Queue`` that a thread fills from a DataLoader: its
steps begin at the queue's ``get``, before the model's forward (decision 1014).

The loop ``x, y = q.get()``, the forward, the loss, the backward and the optimizer step;
only ``stepscope.start``/``stop`` around it. The steps are inferred from a repeat after the
forward (the loss or the backward leads them), and the wait in ``get`` is untraced: decision
1012's tail moved a step's start back to its fetch only when hardly any traced time came
between the wait and the lead, so each step ran from one lead to the next, the next
batch's wait and forward in it (real capture, /tmp/ptloop/queue-plain: 5 of 60 steps
within 0.5 ms of the script's clock, the median step off by 4.01 ms, the worst by 11.8).
"""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.stats import build_step_db
from tests.support.analysis import MS, build
from tests.support.fetch_loop import LOOP, TRAIN, sampled_main, timed_fetches

GET = f"{LOOP};batches (train.py:60);get (queue.py:180);wait (threading.py:327)"
STEPS = 29


def _queue_loop() -> tuple[Profile, list[int]]:
    """Inferred steps: the wait in ``get`` (0, 4, 2 or 6 ms, the sampler in it), the
    forward's three ``aten::linear`` (2 ms, 6 ms every 5th step: the producer's Python
    contends for the cores), the loss, the backward (4 ms), the optimizer step (3 ms). The
    probe timed the first 4 fetches. Also the script's clock: each step from ``get`` to the
    optimizer step's end."""
    builder, main, samples = sampled_main()
    t, truth, timed = 0, [], []
    for k in range(STEPS):
        wait = (0, 4, 2, 6)[k % 4] * MS
        forward = (6 if k % 5 == 3 else 2) * MS
        began = t
        if k < 4:
            timed.append((t, wait + MS // 20))
        if wait:
            stats = {"stack": GET, "samples": wait // MS, "next_frames": "2"}
            samples.event("wait", t, wait, stats)
        t += wait + MS // 20  # the loop's own Python after the get
        for _ in range(3):
            main.event("aten::linear", t, forward // 3)
            t += forward // 3
        main.event("aten::cross_entropy_loss", t, MS // 2)
        t += MS // 2
        main.event("autograd::engine::evaluate_function: AddmmBackward0", t, 4 * MS)
        samples.event("forward", t, 4 * MS, {"stack": TRAIN, "samples": 4})
        t += 4 * MS
        main.event("Optimizer.step#AdamW.step", t, 3 * MS)
        t += 3 * MS
        truth.append(t - began)
        t += MS // 10
    timed_fetches(builder, "get (queue.py)", "main (train.py)", timed)
    return build(builder), truth


def test_each_step_begins_at_its_wait_in_the_queue_before_its_forward() -> None:
    profile, truth = _queue_loop()
    db = build_step_db(profile)
    assert "each begins earlier, at its" in db.description
    # steps 1 on but the last: as the script timed them (0.1 ms of the loop's Python before
    # the get is the previous step's; a step that found its batch waiting, no gap, begins
    # at its lead still, and its forward is the previous step's), not off by up to 8 ms
    for k in range(1, len(db.dur_ns) - 1):
        assert abs(int(db.dur_ns[k]) - truth[k]) <= MS // 4, (k, db.dur_ns[k], truth[k])
