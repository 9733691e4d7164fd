"""XProf 2.24.2 (the test extra's `xprof`) on a capture of the stand-in pipeline's requests:
it finds the steps stepscope finds, from the requests' own `_r` marks (decision 651)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepscope.stats.steps.markers import find_step_markers
from tests.support.capture import load_run
from tests.support.fake_transformers import pipeline_run
from tests.support.xprof_live import step_rows

pytestmark = pytest.mark.integration


def test_xprof_finds_the_requests_stepscope_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xprof")
    from xprof.convert import raw_to_tool_data

    run, _ = pipeline_run(tmp_path, monkeypatch)
    (path,) = sorted(Path(run).glob("*.xplane.pb"))
    data, _ = raw_to_tool_data.xspace_to_tool_data([str(path)], "overview_page", {})
    rows = step_rows(json.loads(data.decode() if isinstance(data, bytes) else data))
    steps = find_step_markers(load_run(run))
    assert len(steps) == 7
    # XProf's own rule drops the first and the last of more than 5 marked steps; each step
    # it keeps is named by the request's step_num, stepscope's index, and spans the same
    names = {f"Pipeline.__call__ {k}" for k in (1, 2)} | {f"Pipeline batch {k}" for k in (3, 4, 5)}
    assert set(rows) == names
    for name, row in rows.items():
        k = int(name.rsplit(" ", 1)[1])
        span_ms = (steps.end_ns[k] - steps.start_ns[k]) / 1e6
        assert row["stepTimeMs"] == pytest.approx(span_ms, abs=1e-6), name
