"""A training process with a stepscope profiler server, for the multi-worker tests.

    python tests/remote/worker.py [--token T] [--allowed-root DIR] [--framework jax|tensorflow]
                                  [--recorder LOGDIR --hostname NAME]

Prints ``READY <port>`` once the server listens (on a free loopback port), then runs short
steps until its stdin closes (the test ended) or it is killed. With ``--framework`` each step
also runs a tiny compiled function of that framework (imported before the server starts).
With ``--recorder`` the flight recorder runs too, saving under LOGDIR as host NAME.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable

import stepscope
import stepscope.recorder
import stepscope.server


def _framework_step(name: str) -> Callable[[], object]:
    """A tiny jitted (JAX) / tf.function (TensorFlow) matmul, compiled once up front."""
    if name == "jax":
        import jax
        import jax.numpy as jnp

        f = jax.jit(lambda x: (x @ x).sum())
        x = jnp.ones((32, 32))

        def run() -> object:
            return f(x).block_until_ready()

    else:
        import tensorflow as tf

        g = tf.function(lambda y: tf.reduce_sum(tf.matmul(y, y)))
        y = tf.ones((32, 32))

        def run() -> object:
            return g(y).numpy()

    run()
    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--token")
    parser.add_argument("--allowed-root", action="append", default=[])
    parser.add_argument("--framework", choices=["jax", "tensorflow"])
    parser.add_argument("--recorder")
    parser.add_argument("--hostname")
    args = parser.parse_args()
    if args.recorder:
        # saves only when asked (a loaded test machine makes slow steps of its own)
        no_slow = stepscope.recorder.Triggers(slow_step_factor=0)
        stepscope.recorder.start(
            args.recorder, hostname=args.hostname, sampler_hz=0, triggers=no_slow
        )
    work = _framework_step(args.framework) if args.framework else (lambda: None)
    server = stepscope.server.start(0, token=args.token, allowed_roots=args.allowed_root)
    print(f"READY {server.port}", flush=True)
    # The test holds our stdin: when it closes (test over, or the test process died) we exit.
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    step = 0
    while True:
        with stepscope.step(step), stepscope.trace("compute"):
            work()
            time.sleep(0.002)
        step += 1


if __name__ == "__main__":
    main()
