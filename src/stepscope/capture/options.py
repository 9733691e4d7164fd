"""What a capture records: `ProfilerOptions`, with TensorFlow's meanings and defaults.

Levels (`tensorflow.ProfileOptions`, xspace/proto/profiler_service.proto):
- ``host_tracer_level``: 0 records no annotations; 1 user annotations (`trace`, `step`,
  `stepscope.data`); 2 adds expensive ops and 3 is verbose in TensorFlow. stepscope's own host
  tracer only has user annotations, so 1, 2 and 3 record the same; the value is still saved
  so framework bridges can honour it.
- ``python_tracer_level``: 0 off, 1 every Python function call on every thread.
- ``device_tracer_level``: 0 off, 1 on. Saved for framework bridges; the core capture records
  no device activity itself.
- ``python_sampler_hz``: samples per second of the Python stacks of the threads running steps
  (`stepscope.capture.python_sampler`), 0 off; off too with ``host_tracer_level=0`` (samples
  are host traces). stepscope's own; TensorFlow has no such option.
  The default's cost is measured by ``benchmarks/bench_capture.py`` (under 2% of step time).

Timing: ``delay_ms`` waits before recording starts; ``duration_ms`` stops and saves on its own
after that much recording (see `stepscope.capture.session`). ``max_events`` bounds the events
kept in memory (all tracers together); what goes over is counted and reported, never kept.
"""

from __future__ import annotations

from stepscope.errors import StepscopeError

# Not `typing.TYPE_CHECKING`: importing typing (and dataclasses) would double the cost of
# `import stepscope`, which must stay negligible for a library imported by training scripts.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stepscope.xspace.proto.profiler_service_pb2 import ProfileOptions

# About 100 bytes of Python objects per buffered event: the default caps a capture near 100 MB.
DEFAULT_MAX_EVENTS = 1_000_000
# 25 Hz: the rate whose whole cost (sampling under the GIL, the sampler thread's wake-ups and
# the GIL hand-overs they force) stays under 2% of the training process's CPU per step in
# benchmarks/bench_capture.py (100 Hz cost 4-6%; decision 59).
DEFAULT_SAMPLER_HZ = 25
MAX_SAMPLER_HZ = 10_000

_FIELDS = (
    "host_tracer_level",
    "python_tracer_level",
    "device_tracer_level",
    "delay_ms",
    "duration_ms",
    "max_events",
    "python_sampler_hz",
)
_LEVEL_RANGES = {
    "host_tracer_level": (0, 3),
    "python_tracer_level": (0, 1),
    "device_tracer_level": (0, 1),
    "python_sampler_hz": (0, MAX_SAMPLER_HZ),
}


class InvalidOptionsError(StepscopeError, ValueError):
    """A `ProfilerOptions` field has a value outside its documented range."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class ProfilerOptions:
    """Options of one capture; the defaults are TensorFlow's (host 2, device 1, python 0), and
    the Python stack sampler at `DEFAULT_SAMPLER_HZ`.

    An immutable record with dataclass-like behaviour (keyword fields, equality, hashing,
    ``replace``), written by hand so that importing it does not import `dataclasses`.
    """

    __slots__ = _FIELDS
    host_tracer_level: int
    python_tracer_level: int
    device_tracer_level: int
    delay_ms: int | None
    duration_ms: int | None
    max_events: int
    python_sampler_hz: int

    def __init__(
        self,
        host_tracer_level: int = 2,
        python_tracer_level: int = 0,
        device_tracer_level: int = 1,
        delay_ms: int | None = 0,
        duration_ms: int | None = None,
        max_events: int = DEFAULT_MAX_EVENTS,
        python_sampler_hz: int = DEFAULT_SAMPLER_HZ,
    ) -> None:
        values = (
            host_tracer_level,
            python_tracer_level,
            device_tracer_level,
            delay_ms,
            duration_ms,
            max_events,
            python_sampler_hz,
        )
        for name, value in zip(_FIELDS, values, strict=True):
            object.__setattr__(self, name, value)
        self._validate()

    def _validate(self) -> None:
        for name, (low, high) in _LEVEL_RANGES.items():
            value = getattr(self, name)
            if not _is_int(value) or not low <= value <= high:
                raise InvalidOptionsError(
                    f"ProfilerOptions.{name} must be an int from {low} to {high}, got {value!r}"
                )
        if self.delay_ms is not None and (not _is_int(self.delay_ms) or self.delay_ms < 0):
            raise InvalidOptionsError(
                f"ProfilerOptions.delay_ms must be an int >= 0 (or None), got {self.delay_ms!r}"
            )
        if self.duration_ms is not None and (
            not _is_int(self.duration_ms) or self.duration_ms <= 0
        ):
            raise InvalidOptionsError(
                "ProfilerOptions.duration_ms must be an int > 0, or None to record until stop(),"
                f" got {self.duration_ms!r}"
            )
        if not _is_int(self.max_events) or self.max_events <= 0:
            raise InvalidOptionsError(
                f"ProfilerOptions.max_events must be an int > 0, got {self.max_events!r}"
            )

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in _FIELDS)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ProfilerOptions is immutable; use .replace({name}=...)")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProfilerOptions):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __reduce__(self) -> tuple[Any, ...]:
        return (ProfilerOptions, self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in _FIELDS)
        return f"ProfilerOptions({fields})"

    def replace(self, **changes: Any) -> ProfilerOptions:
        """A copy with some fields changed (like `dataclasses.replace`)."""
        unknown = set(changes) - set(_FIELDS)
        if unknown:
            raise InvalidOptionsError(f"ProfilerOptions has no field(s) {sorted(unknown)}")
        return ProfilerOptions(**{**dict(zip(_FIELDS, self._values(), strict=True)), **changes})

    @property
    def delay_ns(self) -> int:
        return (self.delay_ms or 0) * 1_000_000

    def to_proto(self, repository_path: str = "", session_id: str = "") -> ProfileOptions:
        """The options as TensorFlow serializes them into the `Task Environment` plane."""
        from stepscope.xspace.proto.profiler_service_pb2 import ProfileOptions

        proto = ProfileOptions(
            version=1,
            include_dataset_ops=True,
            host_tracer_level=self.host_tracer_level,
            device_tracer_level=self.device_tracer_level,
            python_tracer_level=self.python_tracer_level,
            repository_path=repository_path,
            session_id=session_id,
        )
        if self.duration_ms is not None:
            proto.duration_ms = self.duration_ms
        return proto


def resolve_options(options: ProfilerOptions | None) -> ProfilerOptions:
    """``options`` or the defaults; anything else is a clear error, not an AttributeError later."""
    if options is None:
        return ProfilerOptions()
    if not isinstance(options, ProfilerOptions):
        raise InvalidOptionsError(
            f"options must be a stepscope.ProfilerOptions, got {type(options).__name__}"
        )
    return options
