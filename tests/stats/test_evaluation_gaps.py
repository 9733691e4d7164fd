"""An evaluation run between marked steps (a Trainer's eval_steps) is told as another
DataLoader's pass in the gaps, with what to change about it, not as "the next batch is
loaded between steps" (decision 783). A gap holding only the training batch's fetch still is
that: tests/stats/test_generic_input_fix.py."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.stats.diagnostics.base import Finding
from stepscope.vocab.profiler import STEP_HOLDS_FETCH_STAT
from tests.support.analysis import MS, build
from tests.support.fetch_loop import sampled_main
from tests.support.findings import host_findings
from tests.support.loader import LOOP_NEXT
from tests.support.periodic_loop import EVAL_NEXT

STEPS = 22  # the first and the last are dropped: steps 1-20 are read


def _loop(every: int, batches: int) -> Profile:
    """Marked 10 ms steps, a trainer callback's (begun at the trainer's boundary: they hold
    their fetch, of 1 ms); after every ``every``-th step an evaluation: ``batches`` fetches of
    another loader (1 ms) each followed by a 3 ms forward op, and the fetch ending that pass."""
    builder, main, _ = sampled_main()
    t = 0
    for k in range(STEPS):
        marker = {"step_num": k, "_r": 1, STEP_HOLDS_FETCH_STAT: 1}
        main.event("train", t, 10 * MS, marker)
        main.event(LOOP_NEXT, t, MS)
        main.event("aten::mm", t + MS, 9 * MS)
        t += 10 * MS
        if k % every == every - 1:
            for _ in range(batches):
                main.event(EVAL_NEXT, t, MS)
                main.event("aten::linear", t + MS, 3 * MS)
                t += 4 * MS
            main.event(EVAL_NEXT, t, MS)
            t += MS
    return build(builder)


def _gaps(profile: Profile) -> Finding:
    return host_findings(profile)["step_gaps"]


def test_an_evaluation_between_steps_is_told_as_another_loaders_pass() -> None:
    found = _gaps(_loop(every=5, batches=4))
    assert found.metrics["gap_count"] == 4  # after steps 4, 9, 14 and 19
    assert "4 of them (68.00 ms) hold another DataLoader's pass, 5 fetches each" in (found.summary)
    assert found.fix.startswith(
        "The gaps after steps 4, 9, 14 and 19 run another DataLoader's pass (5 fetches each)"
    )
    assert "Run it every more steps or over a fixed subset of its batches" in found.fix
    assert "The next batch is loaded between steps" not in found.fix
