"""Switching the C accelerators per test (`stepscope.accelerators`).

The default pytest tier runs twice in CI: with the extensions, and with
``STEPSCOPE_PURE_PYTHON=1``. The tests that compare an extension with its pure-Python twin
switch it on themselves (`c_on`), so they run in both tiers; they skip only where the
extension is not built at all (scripts/test.sh fails then, unless told to run the
pure-Python tier alone).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import TypeVar

import pytest

from stepscope import accelerators

T = TypeVar("T")


def require(*names: str) -> None:
    """Skip the test when one of the extensions is not built from the current sources."""
    for name in names or tuple(accelerators.EXTENSIONS):
        if not accelerators.built(name):
            pytest.skip(f"C extension {name} not built ({accelerators.rebuild_command()})")


def c_on(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """The extensions used for the rest of the test (every one: the named ones must be
    built, or the test skips)."""
    require(*names)
    monkeypatch.setenv(accelerators.ENV_VAR, "0")


def c_off(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """The named extensions (all when none is named) switched off for the rest of the test."""
    monkeypatch.setenv(accelerators.ENV_VAR, ",".join(names) or "1")


def module(monkeypatch: pytest.MonkeyPatch, name: str) -> ModuleType:
    """Extension ``name`` itself, switched on for the test."""
    c_on(monkeypatch, name)
    found = accelerators.get(name)
    assert found is not None
    return found


def c_and_python(
    monkeypatch: pytest.MonkeyPatch, compute: Callable[[], T], *names: str
) -> tuple[T, T]:
    """``compute()`` with the named extensions, then without them: (fast, slow)."""
    with monkeypatch.context() as patch:
        c_on(patch, *names)
        fast = compute()
    with monkeypatch.context() as patch:
        c_off(patch, *names)
        slow = compute()
    return fast, slow
