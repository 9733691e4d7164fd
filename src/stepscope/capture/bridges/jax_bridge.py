"""JAX bridge: ``jax.profiler.start_trace`` / ``stop_trace`` under a stepscope session.

Runs when the program has imported ``jax``, or when asked for with
``configure(frameworks=["jax"])``. JAX's profiler (TSL, see `tsl`) records the host side of
jitted calls (``PjitFunction``, compilation, the PjRt client's threads) and, on GPUs and TPUs,
``/device:*`` planes with XLA ops and modules. ``host_tracer_level`` follows the session;
JAX's Python tracer stays off (stepscope has its own).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stepscope.capture.bridges.base import BridgeError
from stepscope.capture.bridges.tsl import TslBridge


class JaxBridge(TslBridge):
    name = "jax"
    title = "JAX"
    module = "jax"

    def start_profiler(self, logdir: str) -> None:
        import jax

        options = jax.profiler.ProfileOptions()
        options.host_tracer_level = self.options.host_tracer_level
        options.python_tracer_level = 0
        try:
            jax.profiler.start_trace(logdir, profiler_options=options)
        except RuntimeError as exc:
            if "already" in str(exc).lower():
                raise BridgeError(
                    "not run: a JAX trace is already running (jax.profiler.start_trace or "
                    "jax.profiler.trace); stop it, or let stepscope run it"
                ) from exc
            raise

    def stop_profiler(self) -> None:
        import jax

        jax.profiler.stop_trace()

    def annotation(self) -> Callable[[str], Any]:
        import jax

        annotation: Callable[[str], Any] = jax.profiler.TraceAnnotation
        return annotation
