"""A JAX multi-process CPU job (``jax.distributed.initialize`` on localhost, gloo collectives)
as a user writes it, measuring its own truth.

    python -m tests.support.jax_job LOGDIR --port P [--ranks 2] [--slow-input 1] [--input-ms 40]

Each process calls ``stepscope.start(LOGDIR)`` / ``stepscope.stop()`` with defaults around
``--steps`` steps of a jitted step whose sum over a sharded batch all-reduces across the
processes, and writes ``truth.rank<k>.json``: per step (time.perf_counter in the same run)
the step time, the time making its batch (``--slow-input``'s rank sleeps ``--input-ms``) and
the time in the jitted step until its result is ready (for a waiter: the all-reduce's wait).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
from pathlib import Path


def work(rank: int, args: argparse.Namespace) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"127.0.0.1:{args.port}", args.ranks, rank)
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    import stepscope

    sharding = NamedSharding(Mesh(np.array(jax.devices()), ("d",)), P("d"))

    @jax.jit
    def step(x: jax.Array) -> jax.Array:
        return jax.lax.with_sharding_constraint(x * 2.0, sharding).sum()

    def batch() -> jax.Array:
        if rank == args.slow_input:
            time.sleep(args.input_ms / 1e3)
        local = np.full((1, 1024), float(rank), np.float32)
        return jax.make_array_from_process_local_data(sharding, local)

    for _ in range(3):  # compiled and warm
        step(batch()).block_until_ready()
    truth: dict[str, list[float]] = {"step_s": [], "input_s": [], "run_s": []}
    stepscope.start(args.logdir)
    for s in range(args.steps):
        with stepscope.step(s):
            t0 = time.perf_counter()
            x = batch()
            t1 = time.perf_counter()
            step(x).block_until_ready()
            t2 = time.perf_counter()
        truth["step_s"].append(t2 - t0)
        truth["input_s"].append(t1 - t0)
        truth["run_s"].append(t2 - t1)
    run = stepscope.stop()
    Path(args.logdir, f"truth.rank{rank}.json").write_text(json.dumps({**truth, "run": str(run)}))
    jax.distributed.shutdown()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("logdir")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--slow-input", type=int, default=1)
    p.add_argument("--input-ms", type=float, default=40.0)
    p.add_argument("--steps", type=int, default=10)
    args = p.parse_args(argv)
    Path(args.logdir).mkdir(parents=True, exist_ok=True)
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=work, args=(r, args)) for r in range(args.ranks)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    codes = [proc.exitcode for proc in procs]
    if any(codes):
        raise SystemExit(f"ranks exited with {codes}")


if __name__ == "__main__":
    main()
