"""The trace viewer's compact window form (``form=compact``, decision 327): fewer bytes, and
decoded, the same header and the same arrays (dtype and value) as the plain answer."""

from __future__ import annotations

import gzip
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.model import open_run
from stepscope.serve.routes import build_routes
from stepscope.serve.state import ServerState
from stepscope.serve.wsgi import WsgiApp
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.trace_viewer import api, compact
from stepscope.tools.trace_viewer import wire as trace_wire
from tests.support.fixtures import FIXTURES, tf_xplane

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

Arrays = dict[str, tuple[str, np.ndarray]]


def _same(plain: bytes, packed: bytes) -> None:
    """Both answers decode to the same header (but its array list) and arrays."""
    header, arrays = trace_wire.decode(plain)
    header2, arrays2 = trace_wire.decode(packed)
    listed = header.pop("arrays")
    header2.pop("arrays")
    assert header2 == header
    assert list(arrays2) == list(arrays) == [a["name"] for a in listed]
    for name, values in arrays.items():
        assert arrays2[name].dtype == values.dtype, name
        assert np.array_equal(arrays2[name], values, equal_nan=True), name


def _round_trip(arrays: Arrays) -> tuple[bytes, bytes]:
    header = {"kind": "test"}
    plain, packed = trace_wire.encode(header, arrays), trace_wire.encode(header, arrays, "compact")
    _same(plain, packed)
    return plain, packed


def _entry(packed: bytes, name: str) -> dict[str, Any]:
    return next(a for a in trace_wire.decode(packed)[0]["arrays"] if a["name"] == name)


def test_each_coding_gives_back_the_plain_values() -> None:
    rng = np.random.default_rng(7)
    n = 5000
    line = np.repeat(np.arange(6), n // 6 + 1)[:n]
    start = np.concatenate([np.cumsum(rng.integers(0, 9_000_000, n // 2)) + 40_000_000_000] * 2)
    arrays: Arrays = {
        "event": ("i4", np.cumsum(rng.integers(1, 900, n)) + 1_000_000),  # delta u2
        "line": ("i4", line),  # runs
        "depth": ("i4", rng.integers(0, 12, n)),  # base u1
        "start": ("f8", start),  # delta u3, one patch where it starts over
        "dur": ("f8", rng.integers(0, 1 << 24, n).astype(np.float64)),  # base u3
        "wide": ("f8", rng.integers(-(1 << 40), 1 << 40, n)),  # plain: nothing narrower holds it
        "down": ("i4", np.arange(n)[::-1] * 3),  # delta i1
        "swing": ("i4", rng.integers(-30_000, 30_000, n)),  # base u2
        "half": ("f8", np.arange(n) + 0.5),  # plain: not whole numbers
        "nan": ("f8", np.r_[np.nan, np.arange(n - 1.0)]),  # plain
        "huge": ("f8", np.full(n, 2.0**60) + np.arange(n) * 2**8),  # plain: beyond 2**53
        "short": ("i4", np.arange(5)),  # plain: too short to pay
        "empty": ("f8", np.zeros(0)),
        "kind": ("u1", np.ones(n, dtype=np.uint8)),  # runs
    }
    _, packed = _round_trip(arrays)
    entries = {name: _entry(packed, name) for name in arrays}
    coded = {name: (e["dtype"], e.get("enc")) for name, e in entries.items()}
    assert coded == {
        "event": ("u2", "delta"),
        "line": ("i4", "runs"),
        "depth": ("u1", "base"),
        "start": ("u3", "delta"),
        "dur": ("u3", "base"),
        "wide": ("f8", None),
        "down": ("i1", "delta"),
        "swing": ("u2", "base"),
        "half": ("f8", None),
        "nan": ("f8", None),
        "huge": ("f8", None),
        "short": ("i4", None),
        "empty": ("f8", None),
        "kind": ("u1", "runs"),
    }
    assert _entry(packed, "start")["patches"] == [[n // 2, int(start[n // 2])]]


def test_many_resets_stay_exact() -> None:
    # More resets than the header lists: a wider step type (or base) instead of patches.
    n = 4000
    saw = np.tile(np.arange(40) * 1000, n // 40)
    for code in ("i4", "f8"):
        _, packed = _round_trip({"saw": (code, saw)})
        assert _entry(packed, "saw").get("enc") == "base"
    up_down = np.cumsum(np.where(np.arange(n) % 2, 30_000, -20_000))  # spans 2e7 > 2**24
    _, packed = _round_trip({"z": ("f8", up_down)})
    assert (_entry(packed, "z")["dtype"], _entry(packed, "z")["enc"]) == ("i2", "delta")


def test_unknown_form_is_refused() -> None:
    assert compact.form_of({}) == "plain" and compact.form_of({"form": "compact"}) == "compact"
    with pytest.raises(ValueError, match="'form' must be 'plain' or 'compact'"):
        compact.form_of({"form": "zip"})


@pytest.fixture(scope="module")
def contexts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ToolContext]]:
    """A TensorFlow capture with flows and counters, and a PyTorch (Kineto) trace."""
    root = tmp_path_factory.mktemp("compact")
    sources = {
        "tf": (tf_xplane("ctl"), "h.xplane.pb"),
        "kineto": (FIXTURES / "kineto" / "h100_bert_small_inference.json.gz", "w.pt.trace.json.gz"),
    }
    store = ProfileStore(cache_dir=tmp_path_factory.mktemp("cache"))
    out = {}
    for name, (source, target) in sources.items():
        run_dir = root / name / "plugins" / "profile" / "r"
        run_dir.mkdir(parents=True)
        shutil.copy(source, run_dir / target)
        run = open_run(str(run_dir))
        out[name] = ToolContext(run, run.hosts[0].host, store)
    yield out


@pytest.mark.parametrize("fixture", ["tf", "kineto"])
def test_real_windows_decode_to_the_plain_answer(
    contexts: dict[str, ToolContext], fixture: str
) -> None:
    ctx = contexts[fixture]
    _, index = api.trace_of(ctx)
    span = int(index.end_ns - index.origin_ns)
    sizes = []
    for t0, t1, res in [(0, span, 8000), (1, span, 8000), (span // 3, span // 2, 1500)]:
        params = {"t0": str(t0), "t1": str(t1), "res": str(res)}
        plain, kind = api.window(ctx, params)
        packed, kind2 = api.window(ctx, {**params, "form": "compact"})
        assert kind == kind2 == trace_wire.CONTENT_TYPE
        assert plain == api.window(ctx, {**params, "form": "plain"})[0]
        _same(plain, packed)
        sizes.append((len(packed), len(plain)))
    assert trace_wire.decode(plain)[0]["events"] > 100
    assert all(packed < plain for packed, plain in sizes), sizes
    if fixture == "tf":  # the Kineto trace's windows are mostly its counters' fractions
        assert all(packed < plain / 2 for packed, plain in sizes), sizes
    # the full view's memo keeps each form apart
    full = {"t0": "0", "t1": str(span), "res": "8000"}
    assert api.window(ctx, full)[0][:4] == b"STV1"
    assert api.window(ctx, {**full, "form": "compact"})[0] != api.window(ctx, full)[0]


@pytest.mark.integration  # a second conversion and index of the fixture (0.3 s)
def test_the_tensorboard_plugins_wsgi_path_answers_the_compact_form(
    contexts: dict[str, ToolContext], tmp_path: Path
) -> None:
    # The plugin serves the same page (which asks form=compact) through `WsgiApp`, gzipped.
    run_dir = tmp_path / "plugins" / "profile" / "r"
    run_dir.mkdir(parents=True)
    shutil.copy(tf_xplane("ctl"), run_dir / "h.xplane.pb")
    app = WsgiApp(build_routes(ServerState(tmp_path, cache_dir=tmp_path / "cache")))

    def body(query: str) -> bytes:
        environ = {
            "REQUEST_METHOD": "GET",
            "PATH_INFO": "/api/tool/trace_viewer/window",
            "QUERY_STRING": f"run=r&t0=0&t1=5e8&res=2000{query}",
            "HTTP_ACCEPT_ENCODING": "gzip",
        }
        return gzip.decompress(b"".join(app(environ, lambda status, headers: None)))

    plain, packed = body(""), body("&form=compact")
    assert len(packed) < len(plain)
    _same(plain, packed)
