"""Bridge tests: each test starts with the default bridge choice and no session running.

Real frameworks run in subprocesses (`run_script`): once ``torch`` is imported, every later
`stepscope.start` in the process would run the PyTorch bridge, which would change what the
other capture tests record; a subprocess also keeps TensorFlow, JAX and PyTorch apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from stepscope.capture import bridges, session

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _clean_bridges(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(bridges.ENV_VAR, raising=False)
    monkeypatch.setattr(bridges, "_frameworks", None)
    monkeypatch.setattr(bridges, "_torch_settings", None)
    monkeypatch.setattr(bridges, "_registered", [])
    yield
    if session._session is not None:
        try:
            session.stop(save=False)
        except Exception:
            session._session = None
