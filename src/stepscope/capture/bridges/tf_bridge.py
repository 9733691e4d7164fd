"""TensorFlow bridge: ``tf.profiler.experimental`` under a stepscope session (see `tsl`).

Runs when the program has imported ``tensorflow`` (Keras on the TensorFlow backend does), or
when asked for with ``configure(frameworks=["tensorflow"])``. TensorFlow's host tracer
records its ops, ``tf.function`` executions, tf.data iterators and runtime threads; its
device tracer records GPUs (CUPTI). Levels follow the session's ``host_tracer_level`` and
``device_tracer_level``; TensorFlow's Python tracer stays off (stepscope has its own).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stepscope.capture.bridges.base import BridgeError
from stepscope.capture.bridges.tsl import TslBridge


class TensorFlowBridge(TslBridge):
    name = "tensorflow"
    title = "TensorFlow"
    module = "tensorflow"

    def start_profiler(self, logdir: str) -> None:
        import tensorflow as tf

        profiler = tf.profiler.experimental
        options = profiler.ProfilerOptions(
            host_tracer_level=self.options.host_tracer_level,
            python_tracer_level=0,
            device_tracer_level=self.options.device_tracer_level,
        )
        try:
            profiler.start(logdir, options=options)
        except tf.errors.AlreadyExistsError as exc:
            raise BridgeError(
                "not run: another TensorFlow profiler is running (tf.profiler.experimental."
                "start or a profiler server capture); stop it, or let stepscope run it"
            ) from exc

    def stop_profiler(self) -> None:
        import tensorflow as tf

        tf.profiler.experimental.stop()

    def annotation(self) -> Callable[[str], Any]:
        import tensorflow as tf

        trace: Callable[[str], Any] = tf.profiler.experimental.Trace
        return trace
