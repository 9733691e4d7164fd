"""A plain PyTorch loop over a DataLoader -- no stepscope call inside it -- measuring its own
truth (decision 351).

    python -m tests.support.plain_loader_job LOGDIR [--context fork|spawn] [--workers 2]
        [--persistent] [--warm-epochs 0] [--epochs 1] [--steps 12] [--item-ms 5]
        [--work sleep|numpy] [--hz 100] [--kill-worker-after STEP] [--step-sleep-ms 0]

``stepscope.start(LOGDIR)`` ... ``stepscope.stop()`` around ``for x, y in loader`` (a small
model step each, then ``--step-sleep-ms`` of the step's own host work). ``--warm-epochs``
run before ``start`` (with ``--persistent``, the workers are then started outside the
session). Writes ``truth.json`` beside the run: per step the
time in ``next()``, and per worker process (pid) the dataset's own ``__getitem__`` time
(time.perf_counter_ns in the worker, inside the recording) and items.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import torch

_TRUTH_DIR = "STEPSCOPE_TEST_TRUTH_DIR"


class Items(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __init__(self, item_s: float, work: str) -> None:
        self.item_s = item_s
        self.work = work
        self.log = os.environ[_TRUTH_DIR]

    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        t0 = time.perf_counter_ns()
        if self.work == "numpy":
            x = decode(i, self.item_s)
        else:
            time.sleep(self.item_s)
            x = np.full(64, float(i), np.float32)
        t1 = time.perf_counter_ns()
        with open(os.path.join(self.log, f"items.{os.getpid()}"), "a") as f:
            f.write(f"{t0} {t1}\n")
        return torch.from_numpy(x), torch.tensor(i % 10)


def decode(i: int, item_s: float) -> np.ndarray:
    """CPU work of about ``item_s`` seconds: a numpy 'decode'."""
    end = time.perf_counter() + item_s
    x = np.full(64, float(i), np.float32)
    while time.perf_counter() < end:
        x = np.tanh(x @ np.eye(64, dtype=np.float32))
    return x


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("logdir")
    p.add_argument("--context", default="fork")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--persistent", action="store_true")
    p.add_argument("--warm-epochs", type=int, default=0)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--item-ms", type=float, default=5.0)
    p.add_argument("--work", default="sleep")
    p.add_argument("--hz", type=int, default=100)
    p.add_argument("--kill-worker-after", type=int, default=-1)
    p.add_argument("--step-sleep-ms", type=float, default=0.0)
    args = p.parse_args(argv)
    import stepscope

    truth_dir = Path(args.logdir, "truth")
    truth_dir.mkdir(parents=True, exist_ok=True)
    os.environ[_TRUTH_DIR] = str(truth_dir)
    loader = torch.utils.data.DataLoader(
        Items(args.item_ms / 1e3, args.work),
        batch_size=args.batch,
        num_workers=args.workers,
        persistent_workers=args.persistent,
        multiprocessing_context=args.context if args.workers else None,
    )
    model = torch.nn.Linear(64, 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def epoch(next_s: list[float], kill_after: int = -1) -> None:
        it = iter(loader)
        for k in range(args.steps):
            if k == kill_after:  # a worker killed mid-pass: torch raises in next()
                os.kill(it._workers[-1].pid, signal.SIGKILL)  # type: ignore[attr-defined]
                try:
                    while True:
                        next(it)
                except RuntimeError as exc:
                    next_s.append(-1.0)
                    print("killed:", exc)
                    return
            t0 = time.perf_counter()
            x, y = next(it)
            next_s.append(time.perf_counter() - t0)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if args.step_sleep_ms:
                time.sleep(args.step_sleep_ms / 1e3)
        del it

    for _ in range(args.warm_epochs):
        epoch([])
    for f in truth_dir.iterdir():  # the dataset's truth counts inside the recording only
        f.unlink()
    start_ns = time.perf_counter_ns()
    stepscope.start(args.logdir, stepscope.ProfilerOptions(python_sampler_hz=args.hz))
    next_s: list[float] = []
    for _ in range(args.epochs):
        epoch(next_s, args.kill_worker_after)
    run = stepscope.stop()
    stop_ns = time.perf_counter_ns()
    epoch([])  # the loader goes on after the session (persistent workers outlive it)
    workers: dict[str, dict[str, float]] = {}
    for f in truth_dir.iterdir():
        spans = [tuple(map(int, line.split())) for line in f.read_text().splitlines()]
        inside = [(a, b) for a, b in spans if start_ns <= a and b <= stop_ns]
        workers[f.name.split(".")[1]] = {
            "items": len(inside),
            "get_item_ms": sum(b - a for a, b in inside) / 1e6,
        }
    truth = {"run": str(run), "next_s": next_s, "workers": workers, "main_pid": os.getpid()}
    Path(args.logdir, "truth.json").write_text(json.dumps(truth))


if __name__ == "__main__":
    main()
