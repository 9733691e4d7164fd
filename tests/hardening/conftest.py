"""Hardening tests: hostile inputs run under a small profile-memory limit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from stepscope import limits
from tests.support.fixtures import ctl_run_dir


@pytest.fixture
def small_limit() -> Iterator[int]:
    """A 64 MiB profile limit for the test, restored afterwards."""
    limit = 64 << 20
    limits.configure(limit)
    yield limit
    limits.configure(None)


@pytest.fixture(params=["c", "python"])
def decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test with the C decoder and with the pure-Python fallback."""
    from tests.support.native import c_off, c_on

    (c_off if request.param == "python" else c_on)(monkeypatch, "_fastwire")
    return str(request.param)


@pytest.fixture
def host_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the tf/ctl profile in a fresh run directory, with a fresh cache directory."""
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    return ctl_run_dir(tmp_path / "logs") / "h.xplane.pb"
