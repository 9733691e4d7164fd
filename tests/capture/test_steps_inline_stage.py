"""`stepscope.steps` records its loader's input stage inline: the same events, depths, stats
and budget as the per-event path (`stepscope.data`'s `_run_stage`) it replaces."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.capture import annotations as _ann
from stepscope.capture import data


class _PerEvent(data.InstrumentedIterator[Any]):
    """Not the class itself: `steps` takes the per-event path (`next()`, `_run_stage`)."""


class _Boom(Exception):
    pass


@data.stage("Decode")
def _decode(i: int) -> int:
    return i * 2


def _source(kind: str) -> Iterator[int]:
    for i in range(6):
        if kind == "raises" and i == 3:
            raise _Boom("the loader fails")
        yield _decode(i) if kind == "nested" else i


def _record(
    tmp_path: Path, kind: str, per_event: bool, max_events: int = 1_000_000
) -> tuple[list[tuple[Any, ...]], list[list[bool]], int, int]:
    """The loop's events (name, depth, stats with ids numbered by first sight), which event
    holds which, the budget's attempts and how many times it was reported full."""
    options = stepscope.ProfilerOptions(max_events=max_events, python_sampler_hz=0)
    stepscope.start(tmp_path / f"{kind}-{per_event}-{max_events}", options)
    tracer = _ann._tracer
    assert tracer is not None
    budget = tracer.budget
    told = [0]
    report_full: Callable[[], None] = budget.report_full

    def counted() -> None:
        told[0] += 1
        report_full()

    budget.report_full = counted  # type: ignore[method-assign]
    try:
        cls = _PerEvent if per_event else data.InstrumentedIterator
        iterator = cls(_source(kind), "Loader", data._new_id())
        try:
            for step, _batch in stepscope.steps(iterator, start=5):
                with stepscope.trace("body"):
                    pass
                if kind == "break" and step == 7:
                    break
        except _Boom:
            assert kind == "raises"
        events = list(tracer.buffer().events)
        attempts = budget.attempts
    finally:
        stepscope.stop()
    ids: dict[int, int] = {}

    def stats(s: dict[str, Any] | None) -> Any:
        if s is None:
            return None
        named = ("id", "parent_id")
        return {k: ids.setdefault(v, len(ids)) if k in named else v for k, v in s.items()}

    shape = [(name, depth, stats(s)) for name, _start, _end, depth, s in events]
    holds = [[a[1] <= b[1] and b[2] <= a[2] for b in events] for a in events]
    return shape, holds, attempts, told[0]


@pytest.mark.parametrize("kind", ["exhausted", "break", "raises", "nested"])
def test_the_inline_stage_records_what_the_per_event_path_records(
    kind: str, tmp_path: Path
) -> None:
    inline = _record(tmp_path, kind, per_event=False)
    per_event = _record(tmp_path, kind, per_event=True)
    assert inline == per_event
    shape = inline[0]
    names = [name for name, _depth, _stats in shape]
    assert "Iterator::Loader" in names and data.GET_NEXT_EVENT in names
    if kind == "nested":
        assert "Iterator::Loader::Decode" in names
    if kind == "exhausted":  # the last fetch fed no batch, as `_run_stage` says
        assert shape[-1][2][data.END_OF_SEQUENCE_STAT] == 1


def test_the_inline_stage_takes_the_budget_as_the_per_event_path(tmp_path: Path) -> None:
    """Every limit from the first event to past the loop's last: the same events kept, the
    same attempts counted, the budget reported full once, by the same event."""
    for limit in range(1, 40):
        inline = _record(tmp_path, "exhausted", per_event=False, max_events=limit)
        per_event = _record(tmp_path, "exhausted", per_event=True, max_events=limit)
        assert inline == per_event, limit
        assert inline[3] == (1 if inline[2] > limit else 0)
