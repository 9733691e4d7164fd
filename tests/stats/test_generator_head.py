"""A PyTorch CPU loop over a plain Python generator that converts its batch with
``torch.from_numpy`` (traced: ``aten::lift_fresh``, twice, at the fetch's end): its steps
begin at ``next()``, before the conversions and the forward (decision 1088).

``for x, y in gen(): loss = mse_loss(model(x), y); loss.backward(); opt.step()``, the
generator asleep 10 ms a batch, only ``stepscope.start``/``stop`` around it. The steps are
inferred from the loss (``aten::broadcast_tensors``), after the forward. The forward is the
next step's head (decision 1014), but the traced time after the fetch's gap was counted to
the step's start, the forward in it: the two conversions between the gap and the forward
made it more spans than the head, and a forward slowed by load (8 ms an op at load 3) more
than 5% of the fetch. So no step moved, each ran from one loss to the next, the next
batch's fetch and forward in it (real capture, /tmp/loops3/run/torch_loop.py gen: 1 of 40
starts within 0.25 ms of the script's ``next()``, up to 78 ms off)."""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats import build_step_db
from stepscope.vocab.profiler import STARTED_ON_THREAD_STAT
from tests.support.analysis import MS, build
from tests.support.fetch_loop import FETCH, TRAIN, sampled_main, timed_fetches

STEPS = 24
US = MS // 1000
FORWARD = ("aten::linear", "aten::relu", "aten::linear", "aten::relu", "aten::linear")
EVAL = "autograd::engine::evaluate_function: "
GRAD = EVAL + "torch::autograd::AccumulateGrad"
LAYER = (EVAL + "AddmmBackward0", GRAD, EVAL + "TBackward0", GRAD)
# the top-level events after the forward, as the real capture's steps have them (us)
UPDATE = (
    ("aten::broadcast_tensors", 4),
    ("aten::mse_loss", 89),
    ("Optimizer.zero_grad#SGD.zero_grad", 90),
    ("aten::ones_like", 16),
    (EVAL + "MseLossBackward0", 37),
    *zip(LAYER, (2000, 12, 4, 2), strict=True),
    (EVAL + "ReluBackward0", 33),
    *zip(LAYER, (230, 16, 7, 3), strict=True),
    (EVAL + "ReluBackward0", 34),
    *zip(LAYER, (316, 3, 4, 2), strict=True),
    ("Optimizer.step#SGD.step", 1174),
)


def _generator_loop() -> tuple[Profile, np.ndarray, np.ndarray]:
    """Inferred steps: the generator's sleep (10 ms, the sampler in it), its two
    ``from_numpy`` conversions 27 us apart, the loop's Python (0.09 ms), the forward (0.4 ms
    an op; 8 ms every 4th step, and the backward's longest op 30 ms), the loss, the backward,
    the optimizer's step, then the
    loop's Python before ``next()`` (0.06 ms). The probe timed the first 4 fetches, to just
    after the conversions. Also the script's clock: each iteration's ``next()`` and its
    end."""
    builder, main, samples = sampled_main()
    builder.plane("/host:CPU").stats[STARTED_ON_THREAD_STAT] = 7  # stepscope.start() there
    t, t0, t2, timed = 0, [], [], []
    for k in range(STEPS):
        t0.append(t)
        fetch = {"stack": FETCH, "samples": 10, "next_frames": "2"}
        samples.event("decode (data.py:30)", t, 10 * MS, fetch)
        t += 10 * MS + 800 * US
        main.event("aten::lift_fresh", t, 10 * US)
        t += 27 * US
        main.event("aten::lift_fresh", t, US // 2)
        if k < 4:
            timed.append((t0[-1], t + 9 * US - t0[-1]))
        t += 90 * US
        op = (8000 if k % 4 == 2 else 400) * US
        for name in FORWARD:
            main.event(name, t, op)
            t += op + 20 * US
        for n, (name, us) in enumerate(UPDATE):
            us = 30000 if n == 5 and k % 4 == 2 else us  # the load slows the backward too
            main.event(name, t, us * US)
            if n == 5:  # the sampler in the backward's longest op
                samples.event("forward", t, us * US, {"stack": TRAIN, "samples": 2})
            t += (us + 8) * US
        t2.append(t)
        t += 60 * US
    timed_fetches(builder, "gen (train.py)", "main (train.py)", timed)
    return build(builder), np.array(t0), np.array(t2)


def test_each_step_begins_at_its_next_before_the_conversions_and_the_forward() -> None:
    profile, t0, t2 = _generator_loop()
    db = build_step_db(profile)
    assert len(db.start_ns) == STEPS, db.description
    assert "each begins earlier, at its batch's fetch" in db.description, db.description
    # on main: step 0 at its timed fetch, every later one at its loss, 13.02 ms late (51.02
    # after a slowed forward)
    off = (db.start_ns - t0) / MS
    assert np.abs(off).max() <= 0.1, off
    # each step the script's iteration, the loop's Python before next() in it (the last
    # one ends with its work, decision 1065)
    script = np.r_[np.diff(t0), t2[-1] - t0[-1]] / MS
    assert np.allclose(db.dur_ns / MS, script, atol=0.1), db.dur_ns / MS - script


def test_the_input_is_the_fetch_and_the_forward_is_the_model() -> None:
    """Each step's input is its generator's 10 ms (with the conversions staged before its
    first model op), not the previous step's; the slowed forwards are compute in their own
    step."""
    profile, _, _ = _generator_loop()
    lim = build_step_db(profile).limit_ns()
    assert np.allclose(lim["input"] / MS, 10.83, atol=0.1), lim["input"] / MS
    slow = np.arange(STEPS) % 4 == 2
    assert (lim["compute"][slow] > 30 * MS).all(), lim["compute"] / MS
    assert (lim["compute"][~slow] < 10 * MS).all(), lim["compute"] / MS
