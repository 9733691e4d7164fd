"""PyTorch bridge: ``torch.profiler`` (Kineto) under a stepscope session.

Runs when the program has imported ``torch`` (it is never imported just because it is
installed) and ``device_tracer_level >= 1``, or when asked for with
``configure(frameworks=["pytorch"])``. Activities: CPU ops (``host_tracer_level >= 1``) and
CUDA (``device_tracer_level >= 1`` and ``torch.cuda.is_available()``); ``record_shapes`` and
``profile_memory`` on when CUDA is traced, ``with_stack`` off (see `TorchSettings`).

Allocations (``profile_memory``, the memory profile's only input) are recorded on a CUDA capture
and not on a CPU-only one unless asked for, with ``TorchSettings(profile_memory=True)`` or
``$STEPSCOPE_TORCH_PROFILE_MEMORY=1`` (decision 960): torch's own default is off, XProf's memory
profile is about device memory, and on a CPU loop recording the host allocator's events costs
every stop (200 steps of a small MLP: 0.28 s of CPU with them, 0.21 s without;
docs/benchmarks.md).

Conversion reuses the Kineto importer (docs/formats/kineto.md): the trace is exported as
Chrome-trace JSON into a temporary directory and read into raw columns like any
``*.pt.trace.json`` (`kineto_to_columns`; merged on arrays and written by the columnar writer,
decision 195), so a live capture and an imported trace give the same planes: CPU ops with
``Input Dims``, ``record_function`` annotations, ``ProfilerStep#N``, ``/device:GPU:N`` planes
with one line per stream, ``kernel_details``, ``memcpy_details``, correlation ids, NCCL args,
allocator events as ``MemoryAllocation`` / ``MemoryDeallocation``. Times are put on
stepscope's clock with marker events (`sync`): each marker is a ``record_function`` around one
``torch.empty(0)``, whose dispatcher timestamps are bracketed by ``perf_counter_ns``.

Thread rules (PyTorch's, found the hard way): the profiler records only the thread that
started it (plus autograd's threads) and must be stopped by that thread; stopping it from
another thread crashes the process at export. Hence:

- the profiler starts in ``prepare`` (the thread calling `stepscope.start`), also when
  ``delay_ms`` defers recording; what it sees during the delay is dropped at merge;
- with ``duration_ms`` the session is stopped by a timer thread, so the bridge does not run
  and says why;
- `stepscope.stop` from another thread leaves the profiler running (it is stopped by the next
  `stepscope.start` on its own thread) and the profile says so.

A ``torch.profiler`` the user already runs on this thread wins: the bridge stays off and says
how to merge it instead (`trace_handler`).

Start without ``torch._inductor`` (issue #30, decision 455): ``torch.profiler.profile.start``
runs ``prepare_trace``, which looks ``torch._inductor`` up to read its CUDA-graphs setting, and
that lookup imports the lazy module (with ``torch._dynamo``): 1.4-1.9 s of a process's first
start on torch 2.13, where nothing else imported it (an inference or evaluation loop; making a
``torch.optim`` optimizer imports it anyway). `start_profiler` does ``prepare_trace``'s work
itself: torch's own lower-level profiler (``torch.autograd.profiler.profile``, made from the
same activities, device and settings, its ``_prepare_trace``), then torch's ``start_trace``,
``stop`` and export as before; so the trace is the same, CPU or CUDA. Where the module is
imported already, where ``TORCHINDUCTOR_CUDAGRAPHS`` is set (the setting the lookup reads), or
where this torch lacks those calls, torch's own ``start`` runs (the last said once in the log).
"""

from __future__ import annotations

import inspect
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from stepscope.capture.bridges.base import Bridge, BridgeError, BridgeOutput
from stepscope.capture.bridges.logs import captured_output
from stepscope.capture.options import ProfilerOptions
from stepscope.log import module_logger
from stepscope.records import record
from stepscope.xspace.clock_sync import ClockSync

# Profilers a `stepscope.stop` on the wrong thread could not stop: {thread ident: profiler}.
_orphans: dict[int, Any] = {}
logger = module_logger(__name__)
# Why torch's own start ran (it imports torch._inductor), once said: {reason}.
_said: set[str] = set()


@record
class TorchSettings:
    """Options of the ``torch.profiler.profile`` the bridge runs."""

    # None: when CUDA is traced. Shapes feed the FLOP/byte estimates of ops that launch kernels
    # and nothing else but the trace viewer's details; they make torch's stop, which runs on
    # the training thread, 2.5x slower (decision 75).
    record_shapes: bool | None = None
    # None: as $STEPSCOPE_TORCH_PROFILE_MEMORY says, else when CUDA is traced. Allocations are
    # the memory profile's only input; on a CPU-only loop they cost every stop (decision 960).
    profile_memory: bool | None = None
    with_stack: bool = False  # Python stacks per op: large traces, slow export
    with_flops: bool = False
    with_modules: bool = False
    # "deferred": `stepscope.stop()` keeps torch's trace as exported and the run merges it when
    # first read; "eager": converted and merged into one .xplane.pb at stop; "": as
    # $STEPSCOPE_TORCH_SAVE says, else deferred (decision 910, docs/bridges.md)
    save: str = ""


SAVE_ENV = "STEPSCOPE_TORCH_SAVE"
SAVE_MODES = ("deferred", "eager")
DEFAULT_SAVE = "deferred"


def save_mode(settings: TorchSettings) -> str:
    """How a capture with this bridge is saved: "deferred" or "eager" (`TorchSettings.save`,
    else ``$STEPSCOPE_TORCH_SAVE``, else the default); anything else reads as the default."""
    mode = (settings.save or os.environ.get(SAVE_ENV, "")).strip().lower()
    return mode if mode in SAVE_MODES else DEFAULT_SAVE


def record_shapes_for(settings: TorchSettings, cuda: bool) -> bool:
    """Whether the profiler records input shapes: as set, or else when CUDA is traced."""
    return cuda if settings.record_shapes is None else settings.record_shapes


PROFILE_MEMORY_ENV = "STEPSCOPE_TORCH_PROFILE_MEMORY"
_ON = ("1", "on", "true", "yes")
_OFF = ("0", "off", "false", "no")


def profile_memory_for(settings: TorchSettings, cuda: bool) -> bool:
    """Whether the profiler records allocations: as set (`TorchSettings.profile_memory`), else
    as ``$STEPSCOPE_TORCH_PROFILE_MEMORY`` says (1/on/true/yes, 0/off/false/no), else when CUDA
    is traced. Another value of the variable reads as unset, said once in the log."""
    if settings.profile_memory is not None:
        return settings.profile_memory
    text = os.environ.get(PROFILE_MEMORY_ENV, "").strip().lower()
    if text in _ON:
        return True
    if text in _OFF:
        return False
    why = f"{PROFILE_MEMORY_ENV}={text!r}"
    if text and why not in _said:
        _said.add(why)
        logger.warning(
            "stepscope: PyTorch bridge: %s is neither on (1, on, true, yes) nor off (0, off, "
            "false, no): allocations are recorded when CUDA is traced",
            why,
        )
    return cuda


def trace_only_options(settings: TorchSettings) -> dict[str, Any]:
    """``experimental_config=_ExperimentalConfig(trace_only=True)`` where torch has it, else
    nothing (decision 225).

    The bridge reads only the exported Chrome trace, never the profiler's Python events, so
    torch's stop may skip building them (its ``TransferEvents``/``materializeOpEvents``; the
    trace written is the same, checked on torch 2.13: the same events and args). Not with
    ``with_stack``: torch needs the events for stacks and would warn and turn it off."""
    if settings.with_stack:
        return {}
    try:
        from torch._C._profiler import _ExperimentalConfig

        return {"experimental_config": _ExperimentalConfig(trace_only=True)}
    except (ImportError, TypeError):  # torch before the flag: the full stop
        return {}


def _lower_profiler(torch: Any, profiler: Any) -> tuple[Any, dict[str, Any]]:
    """The class and arguments ``profiler.prepare_trace`` would make its lower-level profiler
    (``torch.autograd.profiler.profile``) with; `TypeError` naming what this torch lacks."""
    lower = getattr(getattr(getattr(torch, "autograd", None), "profiler", None), "profile", None)
    if lower is None or not callable(getattr(lower, "_prepare_trace", None)):
        raise TypeError("torch.autograd.profiler.profile._prepare_trace is missing")
    if not callable(getattr(profiler, "start_trace", None)):
        raise TypeError("torch.profiler.profile.start_trace is missing")
    try:
        # Options the bridge never sets, which prepare_trace would pass on: left at their
        # defaults the lower-level profiler's own defaults are the same.
        if (
            profiler.profiler is not None
            or getattr(profiler, "_use_cupti_monitor", False)
            or getattr(profiler, "acc_events", False)
            or getattr(profiler, "custom_trace_id_callback", None) is not None
            or getattr(profiler, "post_processing_timeout_s", None) is not None
            or getattr(profiler, "activity_filters", None)
        ):
            raise TypeError("the profiler is not a new one with default options")
        options = {
            "use_cpu": torch.profiler.ProfilerActivity.CPU in profiler.activities,
            "use_device": profiler.use_device,
            "record_shapes": profiler.record_shapes,
            "with_flops": profiler.with_flops,
            "profile_memory": profiler.profile_memory,
            "with_stack": profiler.with_stack,
            "with_modules": profiler.with_modules,
            "use_kineto": True,
            "experimental_config": profiler.experimental_config,
        }
    except AttributeError as exc:
        raise TypeError(f"torch.profiler.profile has no {exc.name or exc}") from None
    try:
        inspect.signature(lower).bind(**options)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"torch.autograd.profiler.profile takes other arguments ({exc})") from None
    return lower, options


def start_profiler(torch: Any, profiler: Any) -> None:
    """Start a new ``torch.profiler.profile`` as its ``start()`` does, without importing
    ``torch._inductor`` where it is not imported yet (module docstring; decision 455)."""
    if "torch._inductor" in sys.modules or "TORCHINDUCTOR_CUDAGRAPHS" in os.environ:
        profiler.start()  # nothing to save, or a setting only torch's lookup reads
        return
    try:
        lower, options = _lower_profiler(torch, profiler)
    except TypeError as exc:
        why = str(exc)
        if why not in _said:
            _said.add(why)
            logger.info(
                "stepscope: PyTorch bridge: torch.profiler's own start, which imports "
                "torch._inductor (1-2 s, once a process): %s",
                why,
            )
        profiler.start()
        return
    lower_profiler = lower(**options)
    lower_profiler._prepare_trace()
    profiler.profiler = lower_profiler
    profiler.start_trace()


def profiler_active(torch: Any) -> bool:
    """Whether a torch profiler (the user's) already records this thread."""
    autograd = getattr(getattr(torch, "_C", None), "_autograd", None)
    enabled = getattr(autograd, "_profiler_enabled", None)
    try:
        if enabled is not None and enabled():
            return True
    except Exception:
        pass
    legacy = getattr(getattr(torch, "autograd", None), "profiler", None)
    return bool(getattr(legacy, "_is_profiler_enabled", False))


class PyTorchBridge(Bridge):
    name = "pytorch"
    title = "PyTorch"
    module = "torch"

    def __init__(self, options: ProfilerOptions, settings: TorchSettings | None = None) -> None:
        super().__init__(options)
        self.settings = settings or TorchSettings()
        self.profiler: Any = None
        self.owner = 0
        self.stopped = False
        self.sync = ClockSync()
        self.logs: list[str] = []
        self.cuda = False
        self._torch: Any = None  # the modules, once prepare imported them
        self._record_function: Any = None

    @classmethod
    def wanted(cls, options: ProfilerOptions) -> bool:
        return options.device_tracer_level >= 1

    def prepare(self) -> None:
        if self.options.duration_ms is not None:
            raise BridgeError(
                "not run: this capture ends by itself (duration_ms, or a remote capture) on "
                "another thread, and torch.profiler must be stopped on the thread that started "
                "it. For PyTorch events, profile from the training thread: stepscope.start() / "
                "stepscope.stop(), or `with stepscope.profile(...)`"
            )
        import torch
        from torch.profiler import ProfilerActivity, profile, record_function

        orphan = _orphans.pop(threading.get_ident(), None)
        if orphan is not None:
            with captured_output([]):
                orphan.stop()
        if profiler_active(torch):
            raise BridgeError(
                "not run: a torch.profiler is already recording this thread, and two cannot run "
                "at once. Either let stepscope run it (remove your torch.profiler.profile), or "
                "keep yours and write its traces as stepscope runs with on_trace_ready="
                "stepscope.capture.bridges.torch_trace_handler(logdir)"
            )
        activities = []
        if self.options.host_tracer_level >= 1:
            activities.append(ProfilerActivity.CPU)
        self.cuda = self.options.device_tracer_level >= 1 and torch.cuda.is_available()
        if self.cuda:
            activities.append(ProfilerActivity.CUDA)
        if not activities:
            raise BridgeError("not run: host_tracer_level=0 and no GPU to trace")
        s = self.settings
        self._torch, self._record_function = torch, record_function
        with captured_output(self.logs):
            profiler = profile(
                activities=activities,
                record_shapes=record_shapes_for(s, self.cuda),
                profile_memory=profile_memory_for(s, self.cuda),
                with_stack=s.with_stack,
                with_flops=s.with_flops,
                with_modules=s.with_modules,
                **trace_only_options(s),
            )
            start_profiler(torch, profiler)
        self.profiler = profiler
        self.owner = threading.get_ident()
        self.sync.emit(self._probe, batch=0)

    def _probe(self, name: str) -> tuple[int, int]:
        with self._record_function(name):
            before = time.perf_counter_ns()
            self._torch.empty(0)
            after = time.perf_counter_ns()
        return before, after

    def stop(self) -> None:
        if self.profiler is None or self.stopped:
            return
        if threading.get_ident() != self.owner:
            _orphans[self.owner] = self.profiler
            self.profiler = None
            raise BridgeError(
                "PyTorch events are missing: stepscope.stop() ran on another thread than "
                "stepscope.start(), and torch.profiler can only be stopped on the thread that "
                "started it (it is stopped at the next stepscope.start() there). Call both on "
                "the training thread"
            )
        self.sync.emit(self._probe, batch=1)
        with captured_output(self.logs):
            self.profiler.stop()
        self.stopped = True

    def collect(self) -> BridgeOutput | None:
        if self.profiler is None or not self.stopped:
            return None
        from stepscope.xspace.torch_trace import convert_exported

        with tempfile.TemporaryDirectory(prefix="stepscope-torch-") as tmp:
            path = Path(tmp) / "trace.pt.trace.json"
            self.export(path)
            columns, clock, warnings = convert_exported(str(path), self.sync, self.logs, self.cuda)
        return BridgeOutput(columns, clock, {}, warnings)

    def export(self, path: Path) -> None:
        """Write torch's Chrome trace to ``path`` and free the profiler's events."""
        assert self.profiler is not None
        with captured_output(self.logs):
            self.profiler.export_chrome_trace(str(path))
        self.profiler = None  # its events are in the file now: free them

    def deferrable(self) -> bool:
        """Whether a deferred save keeps this trace: set so (`save_mode`), stopped on its
        thread, the trace not taken yet."""
        return self.profiler is not None and self.stopped and save_mode(self.settings) != "eager"
