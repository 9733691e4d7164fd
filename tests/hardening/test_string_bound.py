"""Issue #28 item 6: decoded strings count against the profile memory bound (a stat of
1 GiB took 3.1 GB under the bound: the decoder's copy and the decoded str beside it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepscope import limits
from tests.support.native import c_on

TEXT = 5 << 20


@pytest.fixture
def eight_mib() -> Iterator[None]:
    limits.configure(8 << 20)
    yield
    limits.configure(None)


def test_xspace_string_beyond_the_bound_is_refused(
    eight_mib: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stepscope.model import profile_from_bytes

    # the C decoder's count (the pure-Python one refuses the file before, by its estimate)
    c_on(monkeypatch, "_fastwire")
    from stepscope.xspace.builder import XSpaceBuilder

    builder = XSpaceBuilder(hostname="h")
    builder.plane("/host:CPU").line(1, "main").event("op", 1000, 1000, {"blob": "x" * TEXT})
    data = builder.build().SerializeToString()
    assert len(data) < 8 << 20  # the file itself is within the bound
    with pytest.raises(limits.ProfileTooLargeError, match="strings"):
        profile_from_bytes(data, source="big.xplane.pb")
    limits.configure(64 << 20)
    assert profile_from_bytes(data).n_events == 1  # within a bound that holds both


def test_kineto_string_beyond_the_bound_is_refused(tmp_path: Path, eight_mib: None) -> None:
    from stepscope.xspace.kineto import kineto_to_columns

    event = {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1}
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"traceEvents": [{**event, "args": {"blob": "y" * TEXT}}]}))
    with pytest.raises(limits.ProfileTooLargeError, match="needs"):
        kineto_to_columns(path)
