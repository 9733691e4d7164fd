"""The page's decoder against the server's encoder for the compact window form (decision 327):
in headless Chromium, `_trace_data.js`'s `decode` of each compact answer gives the arrays of
the plain one (the same values in typed arrays of the same kind: float or integer), and the
page asks for that form."""

from __future__ import annotations

import base64
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.serve.app import RunningServer
from stepscope.tools.trace_viewer import wire as trace_wire
from tests.support.fixtures import FIXTURES, tf_xplane
from tests.support.optional import skip_without
from tests.support.serve import add_tf_run, serving
from tests.support.trace_viewer import close_pages, open_trace

__all__ = ["close_pages"]

if not Path("/usr/bin/chromium").exists():
    pytest.skip("browser tests need /usr/bin/chromium", allow_module_level=True)
skip_without("playwright.sync_api", reason="pip install playwright")

pytestmark = [pytest.mark.browser, pytest.mark.untimed]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    root = tmp_path_factory.mktemp("logs")
    add_tf_run(root, tf_xplane("remote"), "tf", "remote", "localhost_6009.xplane.pb")
    (root / "bert").mkdir()
    shutil.copy(
        FIXTURES / "kineto" / "h100_bert_small_inference.json.gz",
        root / "bert" / "worker0.1.pt.trace.json.gz",
    )
    with serving(root, tmp_path_factory.mktemp("cache")) as running:
        yield running


# Decodes two buffers with the page's own module and lists the arrays that differ (type,
# length or any value; NaN equals NaN).
_COMPARE = """
async function same(plain, packed) {
  const { decode } = await import(new URL('static/pages/_trace_data.js', location.href).href);
  const a = decode(plain).arrays;
  const b = decode(packed).arrays;
  const bad = [];
  for (const name of Object.keys(a)) {
    const x = a[name];
    const y = b[name];
    // Whole numbers from 0 may come as a narrower integer view: the same values, read alike;
    // floats stay Float64Array (or Float32Array), integers integers.
    const floats = (t) => t instanceof Float64Array || t instanceof Float32Array;
    if (!y || floats(x) !== floats(y) || x.length !== y.length) {
      const other = y ? `${y.constructor.name}[${y.length}]` : 'missing';
      bad.push(`${name}: ${x.constructor.name}[${x.length}] vs ${other}`);
      continue;
    }
    for (let i = 0; i < x.length; i += 1) {
      if (x[i] !== y[i] && !(Number.isNaN(x[i]) && Number.isNaN(y[i]))) {
        bad.push(`${name}[${i}]: ${x[i]} vs ${y[i]}`);
        break;
      }
    }
  }
  return { bad, names: Object.keys(a).length, events: a.event ? a.event.length : -1 };
}
"""

_FETCHED = (
    "async (urls) => {"
    + _COMPARE
    + """
  const out = [];
  for (const [plain, packed] of urls) {
    const get = async (u) => (await fetch(u)).arrayBuffer();
    out.push(await same(await get(plain), await get(packed)));
  }
  return out;
}"""
)

_GIVEN = (
    "async ([plain, packed]) => {"
    + _COMPARE
    + """
  const bytes = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0)).buffer;
  return same(bytes(plain), bytes(packed));
}"""
)


@pytest.mark.parametrize("run", ["tf/remote", "bert"])
def test_the_page_decodes_compact_windows_to_the_plain_arrays(
    browser: Any, server: RunningServer, run: str
) -> None:
    page = open_trace(browser, server, run)
    asked = page.evaluate(
        "() => performance.getEntriesByType('resource').map((e) => e.name)"
        ".filter((u) => u.includes('/window?'))"
    )
    assert asked and all("form=compact" in url for url in asked), asked
    span = page.evaluate("() => window.stepscopeTrace.structure.duration_ns")
    base = asked[-1].split("?")[0] + "?" + f"run={run}"
    urls = []
    for t0, t1, res in [(0, span, 8000), (1, span, 8000), (span // 3, span // 2, 1500)]:
        url = f"{base}&t0={t0}&t1={t1}&res={res}"
        urls.append([url, url + "&form=compact"])
    # what the page holds now (its last window, as it asked it) against the plain answer
    urls.append([asked[-1].replace("form=compact", "form=plain"), asked[-1]])
    results = page.evaluate(_FETCHED, urls)
    for result in results:
        assert result["bad"] == [] and result["names"] >= 15 and result["events"] > 0, result
    held = page.evaluate(
        """() => { const d = window.stepscopeTrace.data;
        return [d.n, d.event.constructor.name, d.start.constructor.name]; }"""
    )
    assert held[1:] == ["Int32Array", "Float64Array"] and held[0] > 0
    assert not page.errors


def test_the_page_decodes_every_coding(browser: Any, server: RunningServer) -> None:
    # Each coding the server may choose (runs, base, delta with patches, signed steps, u3,
    # plain beside them), built here, decoded by the page.
    rng = np.random.default_rng(3)
    n = 3000
    arrays: dict[str, tuple[str, np.ndarray]] = {
        "event": ("i4", np.cumsum(rng.integers(1, 900, n))),
        "line": ("i4", np.repeat(np.arange(3), n // 3)),
        "depth": ("i4", rng.integers(0, 12, n)),
        "start": ("f8", np.tile(np.cumsum(rng.integers(0, 9_000_000, n // 3)), 3) + 2**40),
        "dur": ("f8", rng.integers(0, 1 << 24, n).astype(np.float64)),
        "down": ("i4", np.arange(n)[::-1] * 3),
        "swing": ("f8", np.cumsum(np.where(np.arange(n) % 2, 30_000, -20_000))),
        "half": ("f8", np.arange(n) + 0.5),
        "nan": ("f8", np.r_[np.nan, np.arange(n - 1.0)]),
        "kind": ("u1", np.ones(n, dtype=np.uint8)),
        "ids": ("f8", np.arange(n) * 7.0 + 2**33),
    }
    plain = trace_wire.encode({"kind": "window"}, arrays)
    packed = trace_wire.encode({"kind": "window"}, arrays, "compact")
    codings = {(a["dtype"], a.get("enc")) for a in trace_wire.decode(packed)[0]["arrays"]}
    assert {("u3", "delta"), ("u3", "base"), ("i1", "delta"), ("i2", "delta")} <= codings
    assert {("u1", "base"), ("u2", "delta"), ("i4", "runs"), ("u1", "runs")} <= codings
    page = open_trace(browser, server, "bert")
    text = [base64.b64encode(plain).decode(), base64.b64encode(packed).decode()]
    result = page.evaluate(_GIVEN, text)
    assert result == {"bad": [], "names": len(arrays), "events": n}


@pytest.mark.parametrize(("sent", "read"), [("i4", "u4"), ("i4", "i1"), ("i4", "u1"), ("f8", "f4")])
def test_the_page_decodes_codings_into_other_plain_types(
    browser: Any, server: RunningServer, sent: str, read: str
) -> None:
    # The server codes only i4 and f8 arrays today; the page widens those with loops of
    # their own (decision 590) and any other plain type through exact floats. The same
    # header with another "as" (as long: the offsets hold), against Python's reading of it.
    rng = np.random.default_rng(5)
    n = 3000
    arrays: dict[str, tuple[str, np.ndarray]] = {
        "base": (sent, rng.integers(-(1 << 30), -(1 << 30) + 200, n)),
        "u3": (sent, rng.integers(1000, 1000 + (1 << 24), n)),
        "delta": (sent, np.cumsum(rng.integers(0, 900, n)) + 2**30),
        "signed": (sent, np.cumsum(rng.integers(-100, 100, n))),
        "patched": (sent, np.r_[np.arange(n // 2) * 5, np.arange(n - n // 2) * 3 - 2**31]),
    }
    if sent == "f8":  # u4 steps and bases past 2^24: a float32 rounds them
        arrays["u4"] = (sent, rng.integers(0, (1 << 32) - 1, n) + 2**40)
        arrays["steps"] = (sent, np.cumsum(rng.integers(0, 1 << 30, n)))
    packed = bytearray(trace_wire.encode({"kind": "window"}, arrays, "compact"))
    (size,) = struct.unpack("<I", packed[4:8])
    head = bytes(packed[8 : 8 + size]).replace(f'"as":"{sent}"'.encode(), f'"as":"{read}"'.encode())
    packed[8 : 8 + size] = head
    header, wide = trace_wire.decode(bytes(packed))
    codings = {(a["dtype"], a["enc"]) for a in header["arrays"]}
    assert {("u1", "base"), ("u3", "base"), ("u2", "delta"), ("i1", "delta")} <= codings
    assert any(a.get("patches") for a in header["arrays"])
    plain = trace_wire.encode({"kind": "window"}, {k: (read, v) for k, v in wide.items()})
    page = open_trace(browser, server, "bert")
    text = [base64.b64encode(plain).decode(), base64.b64encode(bytes(packed)).decode()]
    assert page.evaluate(_GIVEN, text) == {"bad": [], "names": len(arrays), "events": -1}
