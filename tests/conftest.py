"""Shared test fixtures: real traces are parsed once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"fixtures not found at {FIXTURES}: clone the repo with shared/ beside it")
    return FIXTURES


def tf_xplane(name: str) -> Path:
    """The .xplane.pb of a TensorFlow fixture folder (ctl, ctl_opt, keras, keras_marked, remote)."""
    return next((FIXTURES / "tf" / name).rglob("*.xplane.pb"))
