"""Golden tests: the step breakdown of a real JAX CPU profile against XProf 2.24.2's.

`jax/cnn_cpu` (SOURCES.md) runs its XLA thunks on thread-pool threads that no step reaches
and feeds batches from a Python producer thread; XProf counts neither, and counts the idle
time after the step's dispatch as host compute in 8 of its 18 steps (a 0 ns StartRegion held
current by its sweep, see `stepscope.stats.steps.sweep`). Expected figures are read from the
fixture's ``xprof_reference``, never written here.
"""

from __future__ import annotations

import json
import re

import pytest

from stepscope.stats import build_step_db, summarize_steps
from tests.support.analysis import FIXTURES
from tests.support.gpu_fixtures import fixture_profile

_REF = FIXTURES / "jax" / "cnn_cpu" / "xprof_reference"
_PROFILE = "jax/cnn_cpu/plugins/profile/2026_11_23_18_00_35/vm.xplane.pb"


def _reference_steps() -> dict[str, dict[str, float]]:
    table = json.loads((_REF / "overview_page.json").read_text())[1]
    columns = [c["id"] for c in table["cols"]]
    return {
        row["c"][0]["v"]: dict(zip(columns, [c.get("v") for c in row["c"]], strict=True))
        for row in table["rows"]
    }


def test_each_jax_step_matches_xprof_to_the_microsecond() -> None:
    reference = _reference_steps()
    db = build_step_db(fixture_profile(_PROFILE))
    cats = db.category_ns()
    assert list(db.names) == list(reference)
    for k, step in enumerate(db.names):
        ref = reference[step]
        assert db.dur_ns[k] / 1e6 == pytest.approx(ref["stepTimeMs"], abs=1e-3), step
        assert cats["host_compute"][k] / 1e6 == pytest.approx(ref["hostComputeTimeMs"], abs=1e-3)
        assert cats["input"][k] / 1e6 == pytest.approx(ref["infeedTimeMs"], abs=1e-3), step
        assert cats["other"][k] / 1e6 == pytest.approx(ref["otherTimeMs"], abs=1e-3), step


def test_jax_all_others_share_matches_xprof() -> None:
    text = (_REF / "summary.txt").read_text()
    share = float(re.search(r"because ([\d.]+)% of the total step time", text).group(1))  # type: ignore[union-attr]
    summary = summarize_steps({"host": build_step_db(fixture_profile(_PROFILE))})
    assert summary.n_steps == int(re.search(r"^\s*steps: (\d+)", text, re.M).group(1))  # type: ignore[union-attr]
    assert summary.percent("other") == pytest.approx(share, abs=0.05)
