"""`stepscope serve` keeps freed heap memory for its next requests (decision 241)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from stepscope.serve import heap


def _recording(
    calls: list[tuple[int, int]], answer: int = 1
) -> Callable[[], Callable[[int, int], int]]:
    def mallopt(param: int, value: int) -> int:
        calls.append((param, value))
        return answer

    return lambda: mallopt


@pytest.fixture
def no_user_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in heap.USER_SETTINGS:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_user_settings")
def test_glibc_keeps_freed_memory_up_to_the_thresholds() -> None:
    calls: list[tuple[int, int]] = []
    assert heap.keep_freed_memory(_recording(calls))
    assert calls == [
        (heap.M_MMAP_THRESHOLD, heap.MMAP_THRESHOLD_BYTES),
        (heap.M_TRIM_THRESHOLD, heap.TRIM_THRESHOLD_BYTES),
    ]
    refused: list[tuple[int, int]] = []
    assert not heap.keep_freed_memory(_recording(refused, answer=0))


@pytest.mark.usefixtures("no_user_settings")
def test_nothing_changes_without_glibc() -> None:
    assert not heap.keep_freed_memory(lambda: None)


@pytest.mark.parametrize("name", heap.USER_SETTINGS)
def test_the_users_malloc_settings_win(
    name: str, monkeypatch: pytest.MonkeyPatch, no_user_settings: None
) -> None:
    monkeypatch.setenv(name, "1")
    calls: list[tuple[int, int]] = []
    assert not heap.keep_freed_memory(_recording(calls))
    assert calls == []
