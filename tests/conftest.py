"""Shared test fixtures: real traces are parsed once per session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepscope.store import location

# REPO and tf_xplane are re-exported for older imports: new code imports tests.support.fixtures.
from tests.support.fixtures import FIXTURES, REPO, tf_xplane  # noqa: F401


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"fixtures not found at {FIXTURES}: clone the repo with shared/ beside it")
    return FIXTURES


@pytest.fixture(scope="session", autouse=True)
def _own_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every session gets an empty store (`stepscope.store`): results never come from what an
    older checkout cached in the user's cache directory under the same version number."""
    saved = os.environ.get(location.ENV_VAR)
    os.environ[location.ENV_VAR] = str(tmp_path_factory.mktemp("stepscope_cache"))
    yield
    if saved is None:
        os.environ.pop(location.ENV_VAR, None)
    else:
        os.environ[location.ENV_VAR] = saved
