"""A Kineto trace gives the same bytes whichever scanner read it: the C scanner's columns and
the Python scanner's (`STEPSCOPE_PURE_PYTHON=1`) end in one numbering of the stat metadata and
string values (`kineto.canonical`), so the answers that carry ids -- the trace viewer's windows
(names by id) and the Perfetto export (interned ids) -- are byte-identical (decision 110)."""

from __future__ import annotations

import pytest

from stepscope.export.perfetto_trace import perfetto_trace_chunks
from stepscope.tools.analysis import Analysis
from stepscope.tools.trace_viewer import api
from stepscope.xspace.kineto import scan
from tests.support.fixtures import FIXTURES
from tests.support.native import c_and_python

# Small traces (default tier; the windows of the two tiny ones agreed already, the BERT
# trace's did not); every fixture is compared by scripts/dump_answers.py.
TRACES = (
    "a100_triton_tiny.json.gz",
    "cpu_only_gloo_rank34.json.gz",
    "h100_bert_small_inference.json.gz",
)


def _answers(name: str) -> dict[str, bytes]:
    """The trace viewer's windows (whole trace at two resolutions, a zoom) and the Perfetto
    export of one Kineto fixture, imported afresh (no cache)."""
    ctx = Analysis(FIXTURES / "kineto" / name, use_cache=False).context("trace_viewer")
    profile, index = api.trace_of(ctx)
    span = int(index.end_ns - index.origin_ns)
    out = {"route": b"columns" if scan.available() else b"per-event"}
    for k, (t0, t1, res) in enumerate(
        ((0, span, 2000), (0, span, 50), (span // 3, span // 2, 300))
    ):
        params = {"t0": str(t0), "t1": str(max(t1, t0 + 1)), "res": str(res)}
        out[f"window{k}"] = api.window(ctx, params)[0]
    out["perfetto"] = b"".join(perfetto_trace_chunks(profile))
    return out


@pytest.mark.parametrize("name", TRACES)
def test_kineto_window_and_perfetto_bytes_equal_with_and_without_c(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    fast, slow = c_and_python(monkeypatch, lambda: _answers(name), "_kscan")
    assert (fast.pop("route"), slow.pop("route")) == (b"columns", b"per-event")
    assert fast.keys() == slow.keys()
    for answer in fast:
        assert fast[answer] == slow[answer], f"{name}: {answer} differs between C and Python"
