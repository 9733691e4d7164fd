"""A TensorFlow MultiWorkerMirroredStrategy job on CPU, one process per worker, measuring its
own truth.

    python -m tests.support.tf_mwms_job LOGDIR --workers 2 [--slow-input K] [--port P]

Starts ``--workers`` processes with their ``TF_CONFIG`` (localhost ports); each runs a custom
training loop (``strategy.run`` of a ``tf.function`` whose gradients are all-reduced by TF's
collective ops) between ``stepscope.start(LOGDIR)`` and ``stepscope.stop()`` with defaults,
marks steps with ``stepscope.step``, and writes ``truth.worker<k>.json``: per step the time in
``next()`` and in the step call, by ``time.perf_counter``, and ``compute_only_s``, the median
time of the same step without its all-reduce (so the step call less it is the time in the
collective). ``--slow-input K``: worker K's
batches take ``--input-ms`` each to make (a Python generator sleeping). ``--slow-map K``:
every worker's batches come from a tf.data pipeline whose map is a ``tf.numpy_function``,
worker K's busy in Python ``--map-ms`` a batch (it holds the GIL: decision 670). ``--late-start
K``: worker K calls ``stepscope.start`` ``--late-ms`` after its warm-up, the others at once.
``--tf-server``: no ``stepscope.start``; each worker runs TensorFlow's profiler server
(``tf.profiler.experimental.server.start``) and this launcher captures ``--capture-ms`` from
both with `stepscope.client.trace` once both are in their measured steps (into LOGDIR).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def worker(args: argparse.Namespace) -> None:
    import tensorflow as tf

    import stepscope

    index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
    if args.prof_ports:
        tf.profiler.experimental.server.start(int(args.prof_ports.split(",")[index]))
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    delay_s = args.input_ms / 1e3 if index == args.slow_input else 0.0

    def batches() -> Any:
        rng = 0
        while True:
            if delay_s:
                time.sleep(delay_s)
            rng += 1
            yield (
                tf.random.stateless_normal([args.batch, 32], seed=[index, rng]),
                tf.random.stateless_normal([args.batch, 1], seed=[rng, index]),
            )

    with strategy.scope():
        model = tf.keras.Sequential(
            [tf.keras.Input((32,)), tf.keras.layers.Dense(128, "relu"), tf.keras.layers.Dense(1)]
        )
        opt = tf.keras.optimizers.SGD(0.01)

    @tf.function
    def train_step(x: Any, y: Any) -> Any:
        def step(x: Any, y: Any) -> Any:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((model(x) - y) ** 2)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return loss

        return strategy.run(step, args=(x, y))

    # The same step without the all-reduce, on a plain copy of the model: this worker's own
    # compute, so that (step call - compute) is its time in the collective.
    plain = tf.keras.models.clone_model(model)
    plain_opt = tf.keras.optimizers.SGD(0.01)

    @tf.function
    def compute_step(x: Any, y: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((plain(x) - y) ** 2)
        grads = tape.gradient(loss, plain.trainable_variables)
        plain_opt.apply_gradients(zip(grads, plain.trainable_variables, strict=True))
        return loss

    data = batches() if args.slow_map < 0 else _mapped(tf, args, index)
    for _ in range(3):  # warm up: tracing and the collectives' first rendezvous
        train_step(*next(data))
    x0, y0 = next(data)
    compute_step(x0, y0)
    times = []
    for _ in range(7):
        t = time.perf_counter()
        compute_step(x0, y0)
        times.append(time.perf_counter() - t)
    truth: dict[str, Any] = {"step_s": [], "next_s": [], "train_s": []}
    if index == args.late_start:  # its capture begins after the others' first step did
        time.sleep(args.late_ms / 1e3)
    if args.prof_ports:  # the launcher captures from the profiler servers from now
        (Path(args.truth_dir) / f"ready.worker{index}").touch()
    else:
        stepscope.start(args.logdir)
    for s in range(args.steps):
        with stepscope.step(s):
            t0 = time.perf_counter()
            x, y = next(data)
            t1 = time.perf_counter()
            train_step(x, y)
            t2 = time.perf_counter()
        truth["step_s"].append(t2 - t0)
        truth["next_s"].append(t1 - t0)
        truth["train_s"].append(t2 - t1)
    truth["run_dir"] = "" if args.prof_ports else str(stepscope.stop())
    truth["compute_only_s"] = sorted(times)[len(times) // 2]  # the median
    truth["worker"] = index
    truth["prof_port"] = int(args.prof_ports.split(",")[index]) if args.prof_ports else 0
    Path(args.truth_dir, f"truth.worker{index}.json").write_text(json.dumps(truth))
    # A last all-reduce as a barrier (the first worker leads TF's coordination service: a
    # worker still saving when it exits is killed), then no worker leaves before every one
    # has come out of it (each says so with a file: none still receives from another), and
    # no teardown (the services' shutdown is racy).
    train_step(*next(data))
    _all_out(Path(args.truth_dir), index, args.workers)
    sys.stdout.flush()
    os._exit(0)


def _mapped(tf: Any, args: argparse.Namespace, index: int) -> Any:
    """An endless tf.data pipeline of (x, y) batches through a ``numpy_function`` map, busy
    in Python ``args.map_ms`` a batch on the slow worker, returning at once elsewhere."""
    import numpy as np

    busy_s = args.map_ms / 1e3 if index == args.slow_map else 0.0

    def decode(x: Any) -> Any:
        t = time.perf_counter()
        while time.perf_counter() - t < busy_s:  # Python work, the GIL held
            pass
        return x

    def mapped(x: Any, y: Any) -> Any:
        x = tf.numpy_function(decode, [x], tf.float32)
        x.set_shape([args.batch, 32])
        return x, y

    rng = np.random.default_rng(index)
    xs = rng.random((args.batch * 16, 32), dtype=np.float32)
    ys = rng.random((args.batch * 16, 1), dtype=np.float32)
    ds = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(args.batch, drop_remainder=True)
    return iter(ds.repeat().map(mapped))


def _all_out(folder: Path, index: int, workers: int, timeout_s: float = 120.0) -> None:
    """Marks this worker out of its last all-reduce and waits until every worker is (a
    condition, not a pause: however slow the machine); after the deadline it leaves anyway,
    as a worker that died would leave the others."""
    (folder / f"out.worker{index}").touch()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all((folder / f"out.worker{k}").exists() for k in range(workers)):
            return
        time.sleep(0.01)


def _capture(args: argparse.Namespace, ports: list[int], procs: list[Any]) -> None:
    """Captures ``--capture-ms`` from the workers' profiler servers once every worker is in
    its measured steps (or has exited: the job's failure is then told by its exit codes)."""
    import stepscope.client

    ready = [Path(args.truth_dir, f"ready.worker{k}") for k in range(args.workers)]
    while not all(r.exists() for r in ready) and all(p.poll() is None for p in procs):
        time.sleep(0.01)
    if all(p.poll() is None for p in procs):
        addresses = ",".join(f"grpc://localhost:{p}" for p in ports)
        stepscope.client.trace(addresses, args.logdir, args.capture_ms, verbose=False)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("logdir")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--slow-input", type=int, default=-1)
    p.add_argument("--input-ms", type=float, default=40.0)
    p.add_argument("--slow-map", type=int, default=-1)
    p.add_argument("--map-ms", type=float, default=12.0)
    p.add_argument("--late-start", type=int, default=-1)
    p.add_argument("--late-ms", type=float, default=300.0)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--truth-dir", default=None)
    p.add_argument("--tf-server", action="store_true")
    p.add_argument("--capture-ms", type=int, default=1000)
    p.add_argument("--prof-ports", default="", help=argparse.SUPPRESS)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.truth_dir = args.truth_dir or args.logdir
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.worker:
        worker(args)
        return 0
    Path(args.truth_dir).mkdir(parents=True, exist_ok=True)
    ports = _free_ports(2 * args.workers)
    hosts = [f"localhost:{p}" for p in ports[: args.workers]]
    prof_ports = ports[args.workers :]
    procs = []
    logs = [Path(args.truth_dir, f"worker{k}.stderr") for k in range(args.workers)]
    for k, log in enumerate(logs):
        config = {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": k}}
        env = {**os.environ, "TF_CONFIG": json.dumps(config), "TF_CPP_MIN_LOG_LEVEL": "2"}
        env["CUDA_VISIBLE_DEVICES"] = ""
        cmd = [sys.executable, "-m", "tests.support.tf_mwms_job", *sys.argv[1:], "--worker"]
        if args.tf_server:
            cmd += ["--prof-ports", ",".join(map(str, prof_ports))]
        with log.open("wb") as err:  # each worker's own: which one failed first, and how
            procs.append(subprocess.Popen(cmd, env=env, stderr=err))
    if args.tf_server:
        _capture(args, prof_ports, procs)
    codes = [p.wait() for p in procs]
    saved = all(Path(args.truth_dir, f"truth.worker{k}.json").exists() for k in range(len(procs)))
    if not saved:
        for k, (code, log) in enumerate(zip(codes, logs, strict=True)):
            tail = log.read_text(errors="replace")[-1500:]
            print(f"worker {k} exited with {code}; its stderr ends:\n{tail}", file=sys.stderr)
    return 0 if saved else next((c for c in codes if c), 1)


if __name__ == "__main__":
    sys.exit(main())
