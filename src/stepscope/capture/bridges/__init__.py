"""Framework bridges: PyTorch, TensorFlow and JAX profilers merged into a stepscope capture.

Which bridges a session runs:

- ``"auto"`` (the default): each framework the program has already imported (``torch``,
  ``tensorflow``, ``jax`` in ``sys.modules``; installed is not enough) whose bridge wants the
  session's options (PyTorch: ``device_tracer_level >= 1``);
- a list of names (``"pytorch"``/``"torch"``, ``"tensorflow"``/``"tf"``, ``"jax"``): exactly
  those, importing the framework if needed; a missing one is reported (stderr and the
  profile's warnings) and the capture goes on without it;
- ``"none"``: no bridge.

Set it with `configure` (wins) or the environment variable ``STEPSCOPE_BRIDGES`` (``auto``,
``none`` or a comma-separated list), e.g. for a remote capture. `register` adds a bridge of
your own (a `Bridge` subclass). See docs/bridges.md.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from stepscope.capture.bridges.base import Bridge, BridgeError, BridgeOutput, BridgeSet, report
from stepscope.errors import StepscopeError

if TYPE_CHECKING:
    from stepscope.capture.bridges.torch_bridge import TorchSettings
    from stepscope.capture.options import ProfilerOptions

__all__ = [
    "Bridge",
    "BridgeError",
    "BridgeOutput",
    "BridgeSet",
    "bridges_for",
    "configure",
    "import_traces",
    "register",
    "requested",
    "torch_trace_handler",
]

ENV_VAR = "STEPSCOPE_BRIDGES"
# name -> (framework module, bridge module, bridge class, how to install)
_BUILTIN = {
    "pytorch": ("torch", "torch_bridge", "PyTorchBridge", "pip install torch"),
    "tensorflow": ("tensorflow", "tf_bridge", "TensorFlowBridge", "pip install tensorflow"),
    "jax": ("jax", "jax_bridge", "JaxBridge", "pip install jax"),
}
_ALIASES = {"torch": "pytorch", "tf": "tensorflow"}
_TITLES = {"pytorch": "PyTorch", "tensorflow": "TensorFlow", "jax": "JAX"}

_frameworks: str | tuple[str, ...] | None = None  # None: STEPSCOPE_BRIDGES, else "auto"
_torch_settings: TorchSettings | None = None
_registered: list[type[Bridge]] = []


def _names(frameworks: str | Iterable[str]) -> str | tuple[str, ...]:
    if isinstance(frameworks, str):
        text = frameworks.strip().lower()
        if text in ("auto", ""):
            return "auto"
        if text in ("none", "off", "0"):
            return "none"
        frameworks = text.split(",")
    names = []
    known = {*(_BUILTIN), *(b.name for b in _registered)}
    for raw in frameworks:
        name = _ALIASES.get(raw.strip().lower(), raw.strip().lower())
        if name not in known:
            raise StepscopeError(
                f"unknown framework bridge {raw!r}; choose from {', '.join(sorted(known))}, "
                "'auto' or 'none'"
            )
        names.append(name)
    return tuple(dict.fromkeys(names))


def configure(
    frameworks: str | Iterable[str] = "auto", *, torch: TorchSettings | None = None
) -> None:
    """Choose the bridges of the next sessions (see the module docstring).

    ``torch``: the ``torch.profiler`` settings (`TorchSettings`: record_shapes, profile_memory,
    with_stack, with_flops, with_modules).
    """
    global _frameworks, _torch_settings
    _frameworks = _names(frameworks)
    _torch_settings = torch


def requested() -> str | tuple[str, ...]:
    """``"auto"``, ``"none"`` or the names asked for (`configure`, else STEPSCOPE_BRIDGES)."""
    if _frameworks is not None:
        return _frameworks
    return _names(os.environ.get(ENV_VAR, "auto"))


def register(bridge: type[Bridge]) -> None:
    """Run ``bridge`` in every session from now on (when its ``module`` is imported)."""
    if bridge not in _registered:
        _registered.append(bridge)


def _builtin_class(name: str) -> type[Bridge]:
    _module, module_name, class_name, _hint = _BUILTIN[name]
    module = importlib.import_module(f"{__name__}.{module_name}")
    cls: type[Bridge] = getattr(module, class_name)
    return cls


def bridges_for(options: ProfilerOptions) -> BridgeSet:
    """The bridges a session with ``options`` runs now (nothing is started yet)."""
    warnings: list[str] = []
    try:
        mode = requested()
    except StepscopeError as exc:  # a bad STEPSCOPE_BRIDGES: say so, capture without bridges
        return BridgeSet([], [report(f"{ENV_VAR}: {exc}")])
    if mode == "none":
        return BridgeSet([])
    bridges: list[Bridge] = []
    absent: dict[str, str] = {}  # auto: frameworks not imported yet, title -> module
    for name, (module, _m, _c, hint) in _BUILTIN.items():
        explicit = mode != "auto" and name in mode
        if mode != "auto" and not explicit:
            continue
        if sys.modules.get(module) is None:  # None: imports of it are blocked
            if not explicit:
                absent[_TITLES[name]] = module
                continue
            try:
                importlib.import_module(module)
            except ImportError as exc:
                warnings.append(
                    report(
                        f"{_TITLES[name]} bridge: not run: it was asked for but {module} cannot "
                        f"be imported ({exc}); install it ({hint}) or drop it from the bridges"
                    )
                )
                continue
        cls = _builtin_class(name)
        if not explicit and not cls.wanted(options):
            continue
        if name == "pytorch":
            bridges.append(cls(options, _torch_settings))  # type: ignore[call-arg]
        else:
            bridges.append(cls(options))
    for cls in _registered:
        chosen = (
            cls.name in mode if mode != "auto" else (not cls.module or cls.module in sys.modules)
        )
        if chosen and (mode != "auto" or cls.wanted(options)):
            bridges.append(cls(options))
    return BridgeSet(bridges, warnings, imported_later=absent)


def __getattr__(name: str) -> Any:
    # Imported on first use: they pull in the XSpace code (protobuf, NumPy).
    if name in ("import_traces", "torch_trace_handler"):
        from stepscope.capture.bridges import traces

        return getattr(traces, name)
    if name == "TorchSettings":
        from stepscope.capture.bridges.torch_bridge import TorchSettings

        return TorchSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
