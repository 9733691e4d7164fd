"""Capture tests: no session may leak from one test into the next."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stepscope.capture import session


@pytest.fixture(autouse=True)
def _no_leaked_session() -> Iterator[None]:
    yield
    if session._session is not None:
        try:
            session.stop(save=False)
        except Exception:
            session._session = None
