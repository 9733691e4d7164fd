"""A tf.data map whose function runs Python through tf.py_function gets the GIL's advice, not
the generic map advice (decision 1025).

The Keras fixture (tests/support/fixtures.py: ``tf/keras``) maps through a ``tf.py_function``
in a sequential ``Map``: its ``EagerPyFunc:EagerPyFunc`` runs 192 times on tf.data's thread.
Main told it "A map/interleave transformation is the bottleneck: set
num_parallel_calls=tf.data.AUTOTUNE, cache() after expensive deterministic work, and vectorize
the map", which says nothing of the Python: and a user's map that already had
num_parallel_calls=AUTOTUNE (/tmp/tfjax/keras_pyfn.py) was told to set it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.model import open_run
from stepscope.model.load import open_file
from stepscope.stats.input.input_pipeline import is_parallel_map, py_function_map_advice
from stepscope.stats.input.map_python import map_python
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from tests.support.fixtures import FIXTURES, tf_xplane


def test_the_maps_python_calls_are_counted_with_their_overlap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path))
    found = map_python(open_file(tf_xplane("keras"), use_cache=False))
    assert found is not None
    assert found.types == ("EagerPyFunc",) and found.names == ("",)  # the type's own name
    assert found.calls == 192
    assert found.at_once == pytest.approx(1.0)  # a sequential map: one at a time
    assert "tf.py_function(..., name=...) names it here" in found.describe()


def test_the_overview_gives_a_py_function_map_the_gils_advice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path))
    run = open_run(str(FIXTURES / "tf" / "keras"))
    ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})
    details = output.to_json(get_tool("overview_page").build(ctx))["recommendation"]["details"]
    [line] = [d for d in details if d.startswith("Input pipeline bottleneck")]
    assert "runs Python through tf.py_function (EagerPyFunc" in line
    assert "holds the GIL" in line and "the map runs its calls one at a time" in line
    assert "set num_parallel_calls=tf.data.AUTOTUNE" not in line
    pipes = output.to_json(get_tool("input_pipeline_analyzer").build(ctx))["pipelines"]
    assert any("holds the GIL" in p["advice"] for p in pipes)


def test_a_parallel_map_is_told_its_calls_wait_for_the_gil() -> None:
    """A map with num_parallel_calls: one at a time means the GIL, not the map."""
    assert is_parallel_map("Iterator::Root::Prefetch::MapAndBatch")
    assert not is_parallel_map("Iterator::Root::ForeverRepeat[0]::BatchV2::Map")
    one = py_function_map_advice("runs Python", 1.1, parallel=True)
    assert "its calls ran one at a time, and more num_parallel_calls only queue" in one
    some = py_function_map_advice("runs Python", 1.8, parallel=True)
    assert "only its waits (sleeps, file reads" in some
