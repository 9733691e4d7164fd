"""`step(step_num, name="train")`: mark one training step so every step-based tool finds it.

Encoded exactly as ``tf.profiler.experimental.Trace('train', step_num=s, _r=1)``: a host event
named ``train`` whose stats are ``step_num`` (int64) then ``_r`` (int64 1, "root of a step
group"). XProf groups every event nested in it on the same thread into that step; without
``_r`` (Keras 3's ``Profiled batch``) XProf finds no steps. Put the data fetch inside the step
so input time counts towards it:

    for s in range(n):
        with stepscope.step(s):
            batch = next(batches)
            train(batch)
"""

from __future__ import annotations

import operator

from stepscope.capture.annotations import trace
from stepscope.errors import StepscopeError

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from typing import Any

# XProf counts a step only when an event of non-zero duration nests in its marker on the
# marker's thread (checked with xprof 2.24: an empty marker, or one holding only a 0 ns event,
# is no step). The writer gives each step marker this 1 ns child at its start, so XProf sees
# every step, traced work inside or not; the untraced time stays "All Others" there and in
# stepscope, and op tables leave the anchor out.
STEP_ANCHOR = "stepscope step"


def step(step_num: int, name: str = "train") -> Any:
    """A context manager (or decorator) marking step ``step_num``."""
    try:
        number = operator.index(step_num)
    except TypeError:
        raise StepscopeError(
            f"stepscope.step: step_num must be an int, got {type(step_num).__name__}"
        ) from None
    return trace(name, step_num=number, _r=1)
