"""The page reuses the arrays of windows its cache let go (decision 422): in headless Chromium,
a window decoded into the stores `release` gave back has the values of the plain answer, and
the window the view draws is never given back, even once the cache let it go."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.serve.app import RunningServer
from stepscope.tools.trace_viewer import wire as trace_wire
from tests.support.fixtures import tf_xplane
from tests.support.optional import skip_without
from tests.support.serve import add_tf_run, serving
from tests.support.trace_viewer import close_pages, open_trace

__all__ = ["close_pages"]

if not Path("/usr/bin/chromium").exists():
    pytest.skip("browser tests need /usr/bin/chromium", allow_module_level=True)
skip_without("playwright.sync_api", reason="pip install playwright")

pytestmark = [pytest.mark.browser, pytest.mark.untimed]

RUN = "tf/remote"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    root = tmp_path_factory.mktemp("logs")
    add_tf_run(root, tf_xplane("remote"), "tf", "remote", "localhost_6009.xplane.pb")
    with serving(root, tmp_path_factory.mktemp("cache")) as running:
        yield running


def _window(n: int, seed: int) -> dict[str, tuple[str, np.ndarray]]:
    """A window's arrays in every coding the server may choose (runs, base, delta, u3)."""
    rng = np.random.default_rng(seed)
    return {
        "event": ("i4", np.cumsum(rng.integers(1, 900, n))),
        "line": ("i4", np.repeat(np.arange(3), -(-n // 3))[:n]),
        "start": ("f8", np.cumsum(rng.integers(0, 9_000_000, n)) + 2**40),
        "dur": ("f8", rng.integers(0, 1 << 24, n).astype(np.float64)),
        "ids": ("f8", np.arange(n) * 7.0 + 2**33),
        "kind": ("u1", np.full(n, seed % 3 + 1, dtype=np.uint8)),
    }


# Decodes the first window, gives its arrays back, then decodes the second: each of its
# arrays against the second's plain answer, and which of them reuse the first's stores.
_REUSED = """async ([first, plain, packed]) => {
  const data = await import(new URL('static/pages/_trace_data.js', location.href).href);
  const bytes = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0)).buffer;
  const a = data.decode(bytes(first)).arrays;
  const stores = new Set(Object.values(a).map((x) => x.buffer));
  data.release(a);
  const want = data.decode(bytes(plain)).arrays;
  const got = data.decode(bytes(packed)).arrays;
  const bad = [];
  const reused = [];
  for (const name of Object.keys(want)) {
    const x = want[name];
    const y = got[name];
    if (stores.has(y.buffer)) reused.push(name);
    if (x.length !== y.length || x.some((v, i) => v !== y[i])) bad.push(name);
  }
  return { bad, reused: reused.sort() };
}"""


def test_a_window_decoded_into_given_back_arrays_has_its_own_values(
    browser: Any, server: RunningServer
) -> None:
    # The first window is longer, with other values and 'kind' as runs of another value: a
    # store reused keeps none of them.
    first = trace_wire.encode({"kind": "window"}, _window(3000, 1), "compact")
    second = _window(2900, 2)
    plain = trace_wire.encode({"kind": "window"}, second)
    packed = trace_wire.encode({"kind": "window"}, second, "compact")
    page = open_trace(browser, server, RUN)
    text = [base64.b64encode(b).decode() for b in (first, plain, packed)]
    result = page.evaluate(_REUSED, text)
    assert result["bad"] == []
    assert {"event", "start", "dur", "ids"} <= set(result["reused"]), result
    assert not page.errors


# A client keeping one window: the view shows the first, the second pushes it out (shown:
# kept as it is), the third pushes the second out (given back), whose stores the fourth
# reuses.
_SHOWN = """async () => {
  const data = await import(new URL('static/pages/_trace_data.js', location.href).href);
  const v = window.stepscopeTrace;
  const client = new data.TraceClient(v.client.run, v.client.host);
  client.maxWindows = 1;
  const span = Math.ceil(v.structure.duration_ns);
  const w1 = await client.window(0, span, 3000);
  client.shown = w1;
  const before = [Array.from(w1.start), Array.from(w1.dur), Array.from(w1.event)];
  const w2 = await client.window(1, span, 3000);
  const w2stores = new Set([w2.start.buffer, w2.dur.buffer, w2.event.buffer]);
  await client.window(2, span, 3000);
  const w4 = await client.window(3, span, 3000);
  const fresh = data.decode(await (await fetch(client.url('window',
    { t0: 3, t1: span, res: 3000, form: data.WINDOW_FORM }))).arrayBuffer()).arrays;
  const kept = [w1.start, w1.dur, w1.event].every((x, k) => x.every((y, i) => y === before[k][i]));
  const same = ['start', 'dur', 'event'].every((k) => w4[k].length === fresh[k].length
    && w4[k].every((y, i) => y === fresh[k][i]));
  const w1stores = [w1.start.buffer, w1.dur.buffer, w1.event.buffer];
  return { kept, same, n: w1.n, shownTaken: w1stores.some((s) => w2stores.has(s)),
    reused: [w4.start, w4.dur, w4.event].some((x) => w2stores.has(x.buffer)) };
}"""


def test_the_window_the_view_draws_is_never_given_back(browser: Any, server: RunningServer) -> None:
    page = open_trace(browser, server, RUN)
    result = page.evaluate(_SHOWN)
    assert result["n"] > 100 and result["kept"] and result["same"], result
    assert result["reused"] and not result["shownTaken"], result
    assert not page.errors
