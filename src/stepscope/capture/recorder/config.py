"""What the flight recorder keeps and when it saves: `Triggers` and `RecorderConfig`.

Every bound is checked when the recorder starts, so a wrong value is one clear line then,
not a surprise at 3 a.m. Times are seconds (a user setting), sizes bytes.
"""

from __future__ import annotations

from dataclasses import field

from stepscope.errors import StepscopeError
from stepscope.records import record

# Trigger names, as saved in each run's marker file and shown in the run list.
SLOW_STEP = "slow_step"
EXCEPTION = "exception"
SIGNAL = "signal"
REMOTE = "remote"  # `stepscope capture --recent`
PEER = "peer"  # another rank's trigger fired
HANG = "hang"
USER = "user"
TRIGGERS = (SLOW_STEP, EXCEPTION, SIGNAL, REMOTE, PEER, HANG, USER)
UNLIMITED = (USER, REMOTE)  # asked for by a person: never rate-limited


# Each wake-up of a recorder thread costs the training thread a GIL hand-over, which cost
# more than the wake-up's own work on the shared VM measured (docs/flight_recorder.md#costs):
# the recorder samples stacks at 10 Hz, not a capture's 25 Hz, and its watchdog wakes twice
# a second, to stay under 1% of step time. A capture (minutes, not days) keeps 25 Hz.
DEFAULT_SAMPLER_HZ = 10
DEFAULT_POLL_S = 0.5


class InvalidRecorderConfigError(StepscopeError, ValueError):
    """A recorder setting is outside its range."""


@record
class Triggers:
    """When the recorder saves on its own (a user's `save` always saves).

    ``slow_step_factor``: a step longer than this many times the 99th percentile (for steady
    steps, the median) of the ``median_steps`` steps before it (0 turns it off). It arms
    after the first ``warmup_steps`` steps (never part of the median), once the typical
    step has settled: the median of the last ``settle_steps`` steps within
    ``settle_spread`` times the median of the ``settle_steps`` before them (steps with a
    tail wider than that also wait for ``median_steps`` steps; `recorder.slow`).
    ``slow_floor_s``: a slow step is also at least this much longer than the median (a
    busy machine's scheduler alone holds a step back by tens of ms; 0: no floor).
    ``escalation_factor``: a slow step this many times worse (against the median) than the
    slow step saved less than ``min_interval_s`` ago is saved despite the rate limit (0:
    never).
    ``hang_s``: a step open this long (0: off). ``on_exception``: an exception leaving a step
    or the program. ``on_sigusr1``: the signal (installed only where the program has no
    handler). ``min_interval_s``: at most one automatic save per trigger per this many
    seconds (user saves are not limited). ``after_steps``: a trigger waits this many more
    steps before saving, so the run also holds the steps after it (a hang saves at once).
    ``capture_next_steps``: after saving the ring, capture this many next steps in full
    (framework profilers and device tracers on) as a second run with the same trigger id
    (not after a hang or an exception that ends the program; 0: off).
    """

    slow_step_factor: float = 3.0
    slow_floor_s: float = 0.1
    median_steps: int = 100
    warmup_steps: int = 20
    settle_steps: int = 20
    settle_spread: float = 1.5
    escalation_factor: float = 2.0
    hang_s: float = 300.0
    on_exception: bool = True
    on_sigusr1: bool = True
    min_interval_s: float = 300.0
    after_steps: int = 0
    capture_next_steps: int = 0

    def __post_init__(self) -> None:
        if self.slow_step_factor != 0 and not self.slow_step_factor > 1:
            _bad("slow_step_factor", self.slow_step_factor, "> 1 (or 0 to turn it off)")
        if not self.slow_floor_s >= 0:
            _bad("slow_floor_s", self.slow_floor_s, ">= 0 seconds (0: no floor)")
        _check_int("median_steps", self.median_steps, 3)
        _check_int("warmup_steps", self.warmup_steps, 0)
        _check_int("settle_steps", self.settle_steps, 3)
        if not self.settle_spread >= 1:
            _bad("settle_spread", self.settle_spread, ">= 1 (a median over another)")
        if self.escalation_factor != 0 and not self.escalation_factor > 1:
            _bad("escalation_factor", self.escalation_factor, "> 1 (or 0: never escalate)")
        if not self.hang_s >= 0:
            _bad("hang_s", self.hang_s, ">= 0 seconds (0 turns it off)")
        if not self.min_interval_s >= 0:
            _bad("min_interval_s", self.min_interval_s, ">= 0 seconds")
        _check_int("after_steps", self.after_steps, 0)
        _check_int("capture_next_steps", self.capture_next_steps, 0)


@record
class RecorderConfig:
    """``keep_steps``: steps whose events the ring keeps; ``max_bytes``: the ring's memory
    bound (events and stack samples, estimated; the oldest go first); ``history_steps``: per
    step summaries kept (much longer than events, ~100 bytes each); ``max_disk_bytes``: the
    recorder's saves in the log directory together (the oldest are removed first);
    ``peers``: other ranks' profiler servers (``host:port``) asked to save the same steps
    (with ``peer_token`` when they require one); ``loader_steps``: while the loop marks no
    step, the fetches of a torch DataLoader mark them (`recorder.fetch_steps`; False: off)."""

    logdir: str
    keep_steps: int = 50
    triggers: Triggers = field(default_factory=Triggers)
    max_bytes: int = 64 << 20
    history_steps: int = 100_000
    max_disk_bytes: int = 1 << 30
    sampler_hz: int = DEFAULT_SAMPLER_HZ
    hostname: str | None = None
    peers: tuple[str, ...] = ()
    peer_token: str | None = None
    poll_s: float = DEFAULT_POLL_S
    loader_steps: bool = True

    def __post_init__(self) -> None:
        _check_int("keep_steps", self.keep_steps, 1)
        _check_int("max_bytes", self.max_bytes, 1 << 16)
        _check_int("history_steps", self.history_steps, 1)
        _check_int("max_disk_bytes", self.max_disk_bytes, 1 << 16)
        _check_int("sampler_hz", self.sampler_hz, 0)
        if not isinstance(self.triggers, Triggers):
            raise InvalidRecorderConfigError(
                "stepscope.recorder: triggers must be a stepscope.recorder.Triggers, got "
                f"{type(self.triggers).__name__}"
            )
        if not 0.001 <= self.poll_s <= 10:
            _bad("poll_s", self.poll_s, "from 0.001 to 10 seconds")
        if not isinstance(self.loader_steps, bool):
            _bad("loader_steps", self.loader_steps, "True or False")
        for peer in self.peers:
            host, sep, port = str(peer).rpartition(":")
            if not sep or not host or not port.isdigit():
                _bad("peers", peer, "a list of host:port addresses of profiler servers")


def _check_int(name: str, value: object, low: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        _bad(name, value, f"an int >= {low}")


def _bad(name: str, value: object, want: str) -> None:
    raise InvalidRecorderConfigError(f"stepscope.recorder: {name} must be {want}, got {value!r}")
