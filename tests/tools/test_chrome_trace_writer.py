"""The columnar Chrome-trace writer gives byte for byte the text of the per-event reference
writer."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stepscope.export import chrome_text as ct
from stepscope.export.chrome_trace import chrome_trace_chunks
from stepscope.model import Profile, open_file
from tests.support.chrome_reference import reference_chunks
from tests.support.fixtures import FIXTURES, tf_xplane


@pytest.fixture(scope="module")
def tf_ctl() -> Profile:
    return open_file(str(tf_xplane("ctl")), use_cache=False)


@pytest.fixture(scope="module")
def kineto_gpu() -> Profile:
    return open_file(
        str(FIXTURES / "kineto" / "h100_bert_small_inference.json.gz"), use_cache=False
    )


def _same(profile: Profile, start_ns: int | None = None, end_ns: int | None = None) -> str:
    fast = "".join(chrome_trace_chunks(profile, start_ns, end_ns))
    assert fast == "".join(reference_chunks(profile, start_ns, end_ns))
    return fast


def test_tf_trace_identical_to_reference(tf_ctl: Profile) -> None:
    document = json.loads(_same(tf_ctl))
    assert sum(e["ph"] == "X" for e in document["traceEvents"]) == tf_ctl.n_events


def test_tf_window_identical_to_reference(tf_ctl: Profile) -> None:
    origin = int(tf_ctl.start_ns.min())
    document = json.loads(_same(tf_ctl, origin + 100_000_000, origin + 150_000_000))
    assert 0 < sum(e["ph"] == "X" for e in document["traceEvents"]) < tf_ctl.n_events


def test_kineto_gpu_trace_identical_to_reference(kineto_gpu: Profile) -> None:
    document = json.loads(_same(kineto_gpu))
    events = document["traceEvents"]
    kernels = [e for e in events if e["ph"] == "X" and "stream" in e["args"]]
    assert kernels and all("device" in e["args"] for e in kernels)
    assert any(e["ph"] == "s" for e in events)
    # Floating-point args (Kineto writes some) come out as JSON numbers.
    assert any(isinstance(v, float) for e in events for v in e.get("args", {}).values())


def test_events_without_shown_stats_identical(kineto_gpu: Profile) -> None:
    """Events whose own stats are all hidden: GPU events' args are device/stream alone."""
    kind = kineto_gpu.stats.kind
    saved = kind.copy()
    try:
        kind[:] = np.iinfo(kind.dtype).max  # a kind neither writer shows
        document = json.loads(_same(kineto_gpu))
    finally:
        kind[:] = saved
    device_args = [e["args"] for e in document["traceEvents"] if e.get("cat") == "kernel"]
    # What remains: the metadata's category, then the device and stream.
    assert device_args and all(list(a)[-2:] == ["device", "stream"] for a in device_args)
    assert all(set(a) <= {"category", "device", "stream"} for a in device_args)


def _columns() -> ct.EventColumns:
    """Edge values: negative times, uint64 above 2**63, non-ASCII text, empty args."""
    return ct.EventColumns(
        prefix=',\n{"ph":"X","pid":1,"tid":2,"ts":',
        start_us_ns=np.array([-1_234_567, 0, 999, 2**62], dtype=np.int64),
        dur_ns=np.array([5, -1, 1000, 1], dtype=np.int64),
        cats=['"host"'] * 4,
        names=['"décodé ✓"', '"b"', '"c"', '"d"'],  # JSON allows raw UTF-8
        metas=["", '"category":"x"', "", ""],
        tails=["}}", "}}", '"device":0,"stream":7}}', "}}"],
        pair_count=np.array([3, 1, 0, 1], dtype=np.int64),
        comma=np.array([0, 1, 1, 1, 0], dtype=np.int64),
        keys=['"i"', '"u"', '"s"', '"d"', '"n"'],
        code=np.array([0, 1, 2, 2, 0], dtype=np.int64),
        value=np.array([-(2**63), -1, 0, 0, 42], dtype=np.int64),
        text=["", "", json.dumps("ünï"), "0.5", ""],
    )


def test_formatter_on_edge_values() -> None:
    columns = _columns()
    text = ct.format_events(columns)
    # Floor division, as the reference's "%d.%03d" % (ns // 1000, ns % 1000).
    assert '"ts":-1235.433,"dur":0.005' in text and '"dur":-1.999' in text
    assert '"u":18446744073709551615' in text and '"i":-9223372036854775808' in text
    assert '"name":"décodé ✓"' in text and '"s":"\\u00fcn\\u00ef"' in text
    assert '"args":{"category":"x","d":0.5}}' in text
    assert '"name":"c","args":{"device":0,"stream":7}}' in text
    flows = ct.format_flows(
        np.array([3], dtype=np.int64),
        np.array([1], dtype=np.int64),
        np.array([1, 2], dtype=np.int64),
        np.array([10, 20], dtype=np.int64),
        np.array([1500, 2**40], dtype=np.int64),
        ["ac2g", "flow"],
    )
    assert flows.startswith(',\n{"ph":"s","id":3,"cat":"flow","name":"flow","pid":1,"tid":10,')
