"""A Keras ``model.predict`` captured with stepscope.start()/stop() (decision 583): Keras
traces its dataset and step functions first (three top-level ``tf.function-graph_building``
spans, 8 to 12 ms, 20 and 30 ms apart), then calls ``one_step_on_data_distributed`` once a
batch. The set-up's period is the coarsest and it covered 22% of the traced time the batches
did (over decision 538's 10%): it made 2 steps of the script's 40. Laid out as
/tmp/kpred13/pred.py's capture was (13:28 UTC)."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.stats.steps.infer import infer_steps
from stepscope.vocab.profiler import STARTED_ON_THREAD_STAT
from stepscope.xspace.builder import XSpaceBuilder
from tests.support.analysis import MS, build

STEP = "one_step_on_data_distributed"
BUILD = "tf.function-graph_building"


def _predict(batches: int = 40) -> tuple[Profile, list[float]]:
    """The set-up (three graph buildings, each followed by a conversion), then ``batches`` calls of
    the step function (the first 90 ms: it traces inside), each followed by an eager op and a
    handle's deletion, then the outputs' concatenation. Returns the profile and the step
    calls' starts in ms."""
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    plane.stats[STARTED_ON_THREAD_STAT] = 1
    line = plane.line(1, "python")
    t, starts = 0.0, []

    def ev(name: str, dur: float, gap: float = 0.05) -> None:
        nonlocal t
        line.event(name, int(t * MS), int(dur * MS))
        t += dur + gap

    for at, dur in ((11.7, 8.1), (31.3, 12.3), (61.4, 9.8)):
        t = at
        ev(BUILD, dur)
        ev("convert_to_tensor", 0.2)
    t = 108.1
    for k in range(batches):
        starts.append(t)
        ev(STEP, 90.8 if k == 0 else 1.5)
        ev("TFE_Py_FastPathExecute_C", 0.1)
        ev("TFE_DeleteTensorHandle", 0.002, gap=0.6)
    ev("TFE_Py_FastPathExecute_C", 8.5)  # the outputs' concatenation
    return build(builder), starts


def test_graph_building_before_the_batches_makes_no_steps() -> None:
    profile, starts = _predict()
    found = infer_steps(profile)
    assert found is not None
    assert BUILD not in found.description
    assert f"top-level event '{STEP}'" in found.description
    # step 0 from the capture's start (decision 476), then one step per batch from its call
    assert len(found) >= len(starts) - 1
    assert [round(ns / MS, 3) for ns in found.start_ns[1:].tolist()] == [
        round(ms, 3) for ms in starts[1 : len(found)]
    ]
