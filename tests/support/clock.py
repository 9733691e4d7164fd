"""A session clock whose alarms the test fires: ``delay_ms`` and ``duration_ms`` without
sleeping and without asserting on how long anything took."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stepscope.capture import session


@dataclass
class Alarm:
    seconds: float
    func: Callable[[Any], None]
    session: Any
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualAlarms(session.Clock):
    """The real clocks (events are stamped with them); alarms wait until `fire` is called."""

    def __init__(self) -> None:
        self.alarms: list[Alarm] = []

    def call_later(self, seconds: float, func: Callable[[Any], None], s: Any) -> Alarm:
        alarm = Alarm(seconds, func, s)
        self.alarms.append(alarm)
        return alarm

    def pending(self) -> list[float]:
        """The delays (seconds) of the alarms set and neither fired nor cancelled."""
        return [a.seconds for a in self.alarms if not a.cancelled]

    def fire(self) -> float:
        """Ring the oldest pending alarm now, on this thread; returns its delay."""
        alarm = next(a for a in self.alarms if not a.cancelled)
        self.alarms.remove(alarm)
        alarm.func(alarm.session)
        return alarm.seconds
