"""Query answers are gzip whichever compressor is installed (ISA-L or zlib's fallback)."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from stepscope.serve import compress as compress_module


def _body() -> bytes:
    rng = np.random.default_rng(0)  # a window's look: ascending ids, repeated rows, floats
    return b"".join(
        [
            np.arange(50_000, dtype=np.int32).tobytes(),
            np.repeat(np.arange(50, dtype=np.int32), 1000).tobytes(),
            np.sort(rng.integers(0, 10**9, 50_000)).astype(np.float64).tobytes(),
        ]
    )


@pytest.mark.parametrize("isal", [True, False])
def test_gzip_round_trip_and_smaller(isal: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if isal:
        pytest.importorskip("isal")
    else:
        monkeypatch.setattr(compress_module, "_isal", None)
    body = _body()
    packed = compress_module.compress(body)
    assert packed[:2] == b"\x1f\x8b"  # a gzip member, as Content-Encoding: gzip says
    assert gzip.decompress(packed) == body
    assert len(packed) < len(body) / 2
    assert compress_module.compress(body) == packed  # no timestamp: same bytes every time
