"""Capture tests: no session may leak from one test into the next."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stepscope.capture import session
from tests.support.clock import ManualAlarms


@pytest.fixture(autouse=True)
def _no_leaked_session() -> Iterator[None]:
    yield
    if session._session is not None:
        try:
            session.stop(save=False)
        except Exception:
            session._session = None


@pytest.fixture
def alarms(monkeypatch: pytest.MonkeyPatch) -> ManualAlarms:
    """New sessions read a clock whose ``delay_ms`` / ``duration_ms`` alarms the test fires."""
    clock = ManualAlarms()
    monkeypatch.setattr(session, "CLOCK", clock)
    return clock
