"""Step inference on a loaded loop whose iterations hold a varying number of tensor-handle
deletions (decisions 1002, 1003).

CI's run of b0054418 (2 Dec 12:42 UTC, its timed tier at load 5) captured
tests/capture/test_truth_fetch_loops.py's TensorFlow eager loop over a Python generator
(60 steps by the script's clock: 50.3, 44.9, 35.7, 25.0, 25.4, 27.5 ms ... as the load
fell) and inferred no steps: each iteration calls 'tf.constant' 6 times and
'TFE_Py_ExecuteCancelable' twice, but deleted 0 to 4 tensor handles on the loop's thread
(tf.data's thread deleted the rest), so no stride's periods held the same work often enough.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.model.load import open_file
from stepscope.stats.steps.infer import infer_steps

CAPTURE = Path(__file__).parents[1] / "data" / "tf_eager_generator_loaded.xplane.pb"


def test_a_loaded_eager_loop_s_steps_are_inferred(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path))
    found = infer_steps(open_file(CAPTURE, use_cache=False))
    assert found is not None and abs(len(found.start_ns) - 60) <= 2, found
    # the loop's cycle, not one of its six 'tf.constant' calls: steps of 23-57 ms
    assert "every 6th call" in found.description, found.description
    assert float(np.median(found.end_ns - found.start_ns)) > 20e6
