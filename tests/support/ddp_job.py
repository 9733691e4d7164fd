"""A CPU DistributedDataParallel job (gloo) as a user writes it, measuring its own truth.

    python -m tests.support.ddp_job LOGDIR --ranks 2 [--slow-input R] [--slow-compute R]
        [--sleep-rank R [--sleep-at K...]] [--stop-rank R [--stop-inside K]]
        [--threads N --one-core] [--sampler-hz HZ] [--start-method spawn]
    torchrun --nproc-per-node 2 -m tests.support.ddp_job LOGDIR --launcher torchrun

Each rank calls ``stepscope.start(LOGDIR)`` / ``stepscope.stop()`` with defaults (no
``hostname=``, no ``run_name=``) around ``--steps`` steps and writes ``truth.rank<k>.json``
beside the run: per step, what it measured with ``time.perf_counter`` in the same run (time
in ``next()``, in ``backward``, in extra compute, and in its all-reduces, timed by a DDP
communication hook from the call to the future's completion). ``--profiler kineto`` profiles
with ``torch.profiler`` + ``tensorboard_trace_handler`` instead (for ``stepscope import``).

The ranks are forked from this process (``torch.multiprocessing.start_processes``), which has
imported torch and what DDP imports when first built (``torch._dynamo``): each rank of
``mp.spawn`` (``--start-method spawn``) imports both in its fresh interpreter, 3.5 s of CPU a
rank on CI's machine, before its first step. stepscope is imported by the ranks only, after
they start, either way.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn


class Slow(torch.utils.data.Dataset):  # type: ignore[type-arg]
    """Samples that take ``delay_s`` each to make (decode, augment...)."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.delay_s:
            time.sleep(self.delay_s)
        return torch.randn(64), torch.randn(1)


def _union_s(spans: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for lo, hi in sorted(spans):
        lo = max(lo, end)
        if hi > lo:
            total, end = total + hi - lo, hi
    return total


def work(rank: int, world: int, args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    if args.one_core:  # every rank on one core, beside a busy loop (`_busy`)
        os.sched_setaffinity(0, {args.one_core_id})
    if args.launcher == "spawn":
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(args.port)
        dist.init_process_group("gloo", rank=rank, world_size=world)
    else:
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.Linear(256, 1))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    spans: list[tuple[float, float]] = []
    # --stop-inside: the step's number while it runs, and the process stopping this rank
    # once its all-reduce is under way (`_inside_stopper`)
    now = {"step": -1}
    inside = _inside_stopper(args) if rank == args.stop_rank and args.stop_inside >= 0 else None

    # unannotated: DDP checks a hook's annotations against its own types
    def timed_allreduce(state, bucket):  # type: ignore[no-untyped-def]
        arrived = time.perf_counter()
        fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()
        if inside is not None and inside.stdin is not None and now["step"] == args.stop_inside:
            now["step"] = -1  # once: its first bucket
            inside.stdin.write(b"stop\n")  # stopped inside its all-reduce, every rank in it
            inside.stdin.flush()

        def done(f: Any) -> Any:
            spans.append((arrived, time.perf_counter()))
            return f.value()[0].div_(world)

        return fut.then(done)

    ddp.register_comm_hook(None, timed_allreduce)
    delay = args.input_ms / 1e3 if rank == args.slow_input else 0.0
    loader = torch.utils.data.DataLoader(
        Slow(delay / args.batch), batch_size=args.batch, num_workers=args.workers
    )
    extra_s = (args.base_compute_ms + (args.compute_ms if rank == args.slow_compute else 0)) / 1e3
    sleep_s = args.sleep_ms / 1e3 if rank == args.sleep_rank else 0.0
    batches = iter(loader)

    def one_step(truth: dict[str, list[float]] | None) -> None:
        t0 = time.perf_counter()
        x, y = next(batches)
        t1 = time.perf_counter()
        at = len(truth["step_s"]) if truth is not None else -1
        now["step"] = at
        if sleep_s and (not args.sleep_at or at in args.sleep_at):
            time.sleep(sleep_s)  # untraced time in the loop's body (Python, I/O, a lock...)
        if at == args.stop_inside and rank != args.stop_rank:
            time.sleep(0.1)  # the stopped rank is first in the all-reduce, waiting for these
        out = ddp(x)
        if extra_s:  # more compute: real matmuls until extra_s passed
            # 256 x 256: each matmul long beside the profiler's and the loop's few µs
            # between ops (untraced time, "All Others"); at 128 x 128 these were a quarter of
            # the loop on a fast core, and the rank's host compute read 31 ms for 41
            a = torch.randn(256, 256)
            while time.perf_counter() - t1 < extra_s:
                a = a @ a
                a = a / a.norm()
        loss = nn.functional.mse_loss(out, y)
        t2 = time.perf_counter()
        loss.backward()
        t3 = time.perf_counter()
        opt.step()
        opt.zero_grad()
        t4 = time.perf_counter()
        if truth is not None:
            truth["step_s"].append(t4 - t0)
            truth["next_s"].append(t1 - t0)
            truth["compute_s"].append((t2 - t1) + (t4 - t3))
            truth["backward_s"].append(t3 - t2)
            truth["allreduce_s"].append(_union_s(spans))
        spans.clear()

    for _ in range(3):  # warm up: DDP's first iterations rebuild buckets
        one_step(None)
    truth: dict[str, Any] = {
        k: [] for k in ("step_s", "next_s", "compute_s", "backward_s", "allreduce_s")
    }
    dist.barrier()
    if args.profiler == "kineto":
        from torch.profiler import ProfilerActivity, profile, tensorboard_trace_handler

        handler = tensorboard_trace_handler(args.logdir, worker_name=f"rank{rank}")
        with profile(activities=[ProfilerActivity.CPU], on_trace_ready=handler) as prof:
            for s in range(args.steps):
                with torch.profiler.record_function(f"ProfilerStep#{s}"):
                    one_step(truth)
        del prof
        run_dir = args.logdir
    else:
        import stepscope

        options = (
            None
            if args.sampler_hz < 0
            else stepscope.ProfilerOptions(python_sampler_hz=args.sampler_hz)
        )
        stepscope.start(args.logdir, options)
        stopper = _stopper(args) if rank == args.stop_rank and args.stop_inside < 0 else None
        for s in range(args.steps):
            with stepscope.step(s):
                one_step(truth)
        run_dir = str(stepscope.stop())
        if stopper is not None:
            stopper.wait()
    if inside is not None and inside.stdin is not None:
        inside.stdin.close()
        inside.wait()
    truth.update(rank=rank, world=world, run_dir=run_dir)
    Path(args.truth_dir, f"truth.rank{rank}.json").write_text(json.dumps(truth))
    dist.destroy_process_group()


def _inside_stopper(args: argparse.Namespace) -> subprocess.Popen[bytes]:
    """Another process that stops this one (SIGSTOP, then SIGCONT after ``--stop-ms``) at
    each line it reads: the rank asks once its all-reduce is under way, so it stops inside
    the collective with every other rank in it too."""
    code = (
        "import os, signal, sys, time\n"
        "pid, ms = int(sys.argv[1]), float(sys.argv[2])\n"
        "for _ in sys.stdin:\n"
        "    os.kill(pid, signal.SIGSTOP)\n"
        "    time.sleep(ms / 1e3)\n"
        "    os.kill(pid, signal.SIGCONT)\n"
    )
    command = [sys.executable, "-c", code, str(os.getpid()), str(args.stop_ms)]
    return subprocess.Popen(command, stdin=subprocess.PIPE)


def _stopper(args: argparse.Namespace) -> subprocess.Popen[bytes]:
    """Another process that stops this one (SIGSTOP, then SIGCONT) for ``--stop-ms`` at
    each of ``--stop-at`` seconds from now: a rank paused as a debugger, a scheduler's
    suspend or a frozen container would pause it."""
    code = (
        "import os, signal, sys, time\n"
        "pid, ms = int(sys.argv[1]), float(sys.argv[2])\n"
        "t0 = time.monotonic()\n"
        "for at in map(float, sys.argv[3:]):\n"
        "    time.sleep(max(at - (time.monotonic() - t0), 0))\n"
        "    os.kill(pid, signal.SIGSTOP)\n"
        "    time.sleep(ms / 1e3)\n"
        "    os.kill(pid, signal.SIGCONT)\n"
    )
    at = [str(a) for a in args.stop_at]
    return subprocess.Popen([sys.executable, "-c", code, str(os.getpid()), str(args.stop_ms), *at])


def _busy(core: int) -> subprocess.Popen[bytes]:
    """A process spinning on ``core``: another program wanting the ranks' core."""
    code = f"import os\nos.sched_setaffinity(0, {{{core}}})\nwhile True:\n    pass\n"
    return subprocess.Popen([sys.executable, "-c", code])


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("logdir")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--slow-input", type=int, default=-1, help="this rank's loader is slow")
    p.add_argument("--slow-compute", type=int, default=-1, help="this rank computes more")
    p.add_argument("--input-ms", type=float, default=40.0, help="the slow loader's ms per batch")
    p.add_argument("--compute-ms", type=float, default=40.0, help="the slow rank's extra ms")
    p.add_argument("--base-compute-ms", type=float, default=0.0, help="every rank's extra ms")
    p.add_argument("--sleep-rank", type=int, default=-1, help="this rank sleeps in its step")
    p.add_argument("--sleep-ms", type=float, default=30.0, help="the sleeping rank's ms a step")
    p.add_argument("--sleep-at", type=int, nargs="*", default=[], help="only at these steps")
    p.add_argument("--stop-rank", type=int, default=-1, help="this rank is stopped (SIGSTOP)")
    p.add_argument("--stop-ms", type=float, default=150.0, help="for this long each time")
    p.add_argument("--stop-at", type=float, nargs="*", default=[0.2, 0.5], help="s after start")
    p.add_argument("--stop-inside", type=int, default=-1, help="stopped in this step's all-reduce")
    p.add_argument("--sampler-hz", type=int, default=-1, help="python_sampler_hz (-1: default)")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--port", type=int, default=29517)
    p.add_argument("--launcher", choices=("spawn", "torchrun"), default="spawn")
    p.add_argument("--start-method", choices=("fork", "spawn"), default="fork", help="ranks'")
    p.add_argument("--profiler", choices=("stepscope", "kineto"), default="stepscope")
    p.add_argument("--truth-dir", default=None)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads of each rank")
    p.add_argument("--one-core", action="store_true", help="all ranks on 1 core, and a busy loop")
    args = p.parse_args(argv)
    args.truth_dir = args.truth_dir or args.logdir
    args.one_core_id = min(os.sched_getaffinity(0))
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    Path(args.truth_dir).mkdir(parents=True, exist_ok=True)
    busy = _busy(args.one_core_id) if args.one_core else None
    try:
        if args.launcher == "spawn":
            import torch._dynamo  # noqa: F401  (DDP's construction imports it: see above)
            import torch.multiprocessing as mp

            mp.start_processes(
                work, args=(args.ranks, args), nprocs=args.ranks, start_method=args.start_method
            )
        else:
            work(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()


if __name__ == "__main__":
    main()
