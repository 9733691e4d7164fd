"""Whether the loop marks its steps: the recorder's slow-step and hang triggers read the steps
`stepscope.steps` / `stepscope.step` open, and a plain ``for x, y in loader:`` loop opens none.
Its 445 ms checkpoint step among 4.5 ms ones was neither saved nor told (decision 731), so a
recorder that has seen no step says so, once. A loop over a torch DataLoader has its steps
found at its fetches now (`fetch_steps`, decision 815): the line is for the other loops."""

from __future__ import annotations

import logging
import time

log = logging.getLogger("stepscope.recorder")  # the recorder's own logger, as its others

NO_STEPS_WARN_S = 60.0  # said this long (s) after the start, or at the stop if sooner
NO_STEPS_TEXT = (
    "stepscope flight recorder: no step seen in the %.0f s since it started: its slow-step "
    "and hang triggers need the loop's steps marked (for step, batch in "
    "stepscope.steps(loader), or with stepscope.step(i)) or a loop over a torch DataLoader, "
    "whose fetches it takes as the steps' starts; an exception, SIGUSR1, a remote "
    "request or stepscope.recorder.save() still saves what it holds"
)


class UnmarkedWatch:
    """Says once that no step opened: `NO_STEPS_WARN_S` after `started`, or at the stop."""

    def __init__(self) -> None:
        self.started_ns = 0
        self.told = False

    def started(self) -> None:
        self.started_ns = time.perf_counter_ns()

    def check(self, any_step: bool, at_stop: bool = False) -> None:
        """``any_step``: whether a step has opened since the start."""
        if self.told or any_step or not self.started_ns:
            return
        elapsed_s = (time.perf_counter_ns() - self.started_ns) / 1e9
        if at_stop or elapsed_s >= NO_STEPS_WARN_S:
            self.told = True
            log.warning(NO_STEPS_TEXT, elapsed_s)
