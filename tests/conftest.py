"""Shared test fixtures: real traces are parsed once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

# REPO and tf_xplane are re-exported for older imports: new code imports tests.support.fixtures.
from tests.support.fixtures import FIXTURES, REPO, tf_xplane  # noqa: F401


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"fixtures not found at {FIXTURES}: clone the repo with shared/ beside it")
    return FIXTURES
