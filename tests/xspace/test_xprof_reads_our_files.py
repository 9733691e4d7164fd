"""Files stepscope writes load in XProf 2.24 (run only where the `xprof` package is installed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from stepscope.xspace import load_xspace, write_xspace
from tests.support.fixtures import FIXTURES

pytestmark = [pytest.mark.integration, pytest.mark.untimed]


raw_to_tool_data = pytest.importorskip("xprof.convert.raw_to_tool_data")


def _xprof(path: Path, tool: str) -> object:
    data, _content_type = raw_to_tool_data.xspace_to_tool_data([str(path)], tool, {})
    return json.loads(data)


@pytest.mark.parametrize("name", ["ctl", "keras_marked"])
def test_rewritten_fixture_gives_xprof_the_same_results(name: str, tmp_path: Path) -> None:
    source = next((FIXTURES / "tf" / name).rglob("*.xplane.pb"))
    # XProf writes cache files beside the profile: work on copies.
    original = tmp_path / "a" / "plugins" / "profile" / "run" / "vm.xplane.pb"
    original.parent.mkdir(parents=True)
    shutil.copy(source, original)
    ours = write_xspace(
        load_xspace(source), tmp_path / "b" / "plugins" / "profile" / "run" / "vm.xplane.pb"
    )
    for tool in ("overview_page", "input_pipeline_analyzer"):
        assert _xprof(ours, tool) == _xprof(original, tool), tool
