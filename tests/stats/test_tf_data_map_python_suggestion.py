"""The tf.data bottleneck tool's suggestion for a map whose function runs Python is the input
pipeline page's advice for it (decision 1027; decision 1025 gave that advice).

The Keras fixture (tests/support/fixtures.py: ``tf/keras``) maps through a ``tf.py_function``
in a sequential ``Map``. Main's tf_data_bottleneck_analysis still said "'Map' transforms
elements too slowly. Use num_parallel_calls=tf.data.AUTOTUNE ... avoid tf.py_function / Python
code inside it" while the input pipeline page and the overview named the function and the GIL.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.model import open_run
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from tests.support.fixtures import FIXTURES


def _ctx(name: str) -> ToolContext:
    run = open_run(str(FIXTURES / "tf" / name))
    return ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})


def test_the_py_function_maps_suggestion_is_the_input_pages_advice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path))
    ctx = _ctx("keras")
    tf_data = output.to_json(get_tool("tf_data_bottleneck_analysis").build(ctx))
    pages = output.to_json(get_tool("input_pipeline_analyzer").build(ctx))["pipelines"]
    [top] = [a for a in tf_data["analyses"] if a["bottleneck_iterator"]][:1]
    [page] = [p for p in pages if p["bottleneck"] == top["bottleneck_long_name"]]
    assert "holds the GIL" in page["advice"]
    assert (
        top["suggestion"]
        == f"'{top['bottleneck_iterator']}' transforms elements too slowly. " + (page["advice"])
    )
    assert "Use num_parallel_calls" not in top["suggestion"]


def test_a_map_without_python_keeps_its_kinds_suggestion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """big_ctl's ParallelMapV2 runs no Python: the map's own fix, as on the input page."""
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path))
    tf_data = output.to_json(get_tool("tf_data_bottleneck_analysis").build(_ctx("big_ctl")))
    suggestions = [a["suggestion"] for a in tf_data["analyses"] if a["bottleneck_iterator"]]
    assert suggestions
    assert not any("holds the GIL" in s for s in suggestions)
