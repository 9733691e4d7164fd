"""Synthetic multi-host runs for the pod-scale tests, written to a temporary directory."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from stepscope.xspace.builder import XSpaceBuilder
from tests.support.synthetic import synthetic_xspace_bytes

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"


def cpu_pod(root: Path, hosts: int, events: int = 3000, corrupt: tuple[int, ...] = ()) -> Path:
    """A TensorFlow-layout run of ``hosts`` synthetic CPU hosts; the hosts in ``corrupt`` get
    bytes that are not an XSpace. Returns the run directory."""
    run = root / "plugins" / "profile" / "pod"
    run.mkdir(parents=True)
    for i in range(hosts):
        path = run / f"host{i:03d}.xplane.pb"
        if i in corrupt:
            path.write_bytes(b"\x0a\xff\xff\xff not an xspace" * 8)
        else:
            path.write_bytes(synthetic_xspace_bytes(events, ops_per_step=300, seed=i))
    return run


GPU_RANKS = ("kineto/a100_nccl_rank0.json.gz", "kineto/v100_training_with_memory.json.gz")


def gpu_pod(root: Path) -> Path:
    """Two real PyTorch GPU traces (collectives, memory events) as the ranks of one run."""
    root.mkdir(parents=True, exist_ok=True)
    for rank, relative in enumerate(GPU_RANKS):
        shutil.copy(FIXTURES / relative, root / f"rank{rank}.pt.trace.json.gz")
    return root


MS = 1_000_000
INPUT_NAME = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def data_parallel_job(
    root: Path,
    ranks: int = 8,
    steps: int = 30,
    input_ms: Callable[[int, int], float] = lambda rank, step: 1.0,
    compute_ms: Callable[[int, int], float] = lambda rank, step: 5.0,
    allreduce_ms: float | Callable[[int], float] = 1.0,
    device_name: str = "NVIDIA A100-SXM4-40GB",
) -> Path:
    """A synchronous data-parallel PyTorch-like job, one XSpace per rank: per step each rank
    loads its batch (host, ``input_ms``), computes on its GPU (``compute_ms``), then all-reduces;
    every all-reduce ends ``allreduce_ms`` (of the step, when a function) after the last rank
    is ready, so ranks that are ready early wait inside it, as NCCL does. Each rank's clock
    has its own offset."""
    from tests.support.gpu_fixtures import GpuTrace  # builders shared with stats tests

    traces = [GpuTrace(host=f"rank{r}", device_name=device_name) for r in range(ranks)]
    t0 = 0
    for s in range(steps):
        ready = [t0 + int((input_ms(r, s) + 0.05 + compute_ms(r, s)) * MS) for r in range(ranks)]
        reduce_ms = allreduce_ms(s) if callable(allreduce_ms) else allreduce_ms
        end = max(ready) + int(reduce_ms * MS)
        for r, trace in enumerate(traces):
            off = 1_000 * MS + r * 7_777_777  # unrelated clocks
            loaded = t0 + int(input_ms(r, s) * MS)
            trace.step(s, off + t0, end + MS // 10 - t0)
            trace.op(INPUT_NAME, off + t0, loaded - t0)
            trace.launch(
                off + loaded,
                "volta_sgemm_128x64_nn",
                off + loaded + MS // 20,
                ready[r] - loaded - MS // 20,
            )
            trace.launch(
                off + loaded + 20_000,
                "ncclKernel_AllReduce_RING_LL_Sum_float",
                off + ready[r],
                end - ready[r],
                stream=14,
            )
        t0 = end + MS // 10
    run = root / "plugins" / "profile" / "job"
    run.mkdir(parents=True)
    for r, trace in enumerate(traces):
        (run / f"rank{r}.xplane.pb").write_bytes(trace.builder.build().SerializeToString())
    return run


def memory_pod(root: Path, hosts: int, peak_of: Callable[[int, int], int], steps: int = 5) -> Path:
    """A run of ``hosts`` CPU hosts with a TensorFlow GPU allocator (``GPU_<host>_bfc``: each
    host's own GPU) and a host allocator (``cpu``). At each step the GPU allocator allocates
    ``peak_of(host, step)`` bytes then frees them; the ``cpu`` allocator holds 1 KB."""
    from stepscope.xspace.builder import XSpaceBuilder

    run = root / "plugins" / "profile" / "pod"
    run.mkdir(parents=True)
    for h in range(hosts):
        b = XSpaceBuilder(f"host{h}")
        plane = b.plane("/host:CPU")
        loop, mem = plane.line(1, "python"), plane.line(2, "compute")
        for s in range(steps):
            t = 1_000_000 + s * 1000
            loop.event("train", t, 1000, {"step_num": s, "_r": 1})
            size = peak_of(h, s)
            for name, at, heap in (("MemoryAllocation", 100, size), ("MemoryDeallocation", 600, 0)):
                stats = {
                    "allocator_name": f"GPU_{h}_bfc",
                    "bytes_reserved": 0,
                    "bytes_allocated": heap,
                    "bytes_available": (1 << 40) - heap,
                    "peak_bytes_in_use": heap,
                    "requested_bytes": size,
                    "allocation_bytes": size,
                    "addr": s + 1,
                    "tf_op": f"model/step{s}/MatMul",
                }
                mem.event(name, t + at, 0, stats)
        mem.event(
            "MemoryAllocation",
            1_000_050,
            0,
            {
                "allocator_name": "cpu",
                "bytes_allocated": 1024,
                "addr": 99,
                "allocation_bytes": 1024,
                "requested_bytes": 1024,
            },
        )
        (run / f"host{h}.xplane.pb").write_bytes(b.build().SerializeToString())
    return run


US = 1_000


def gloo_job(
    ranks: int,
    steps: int = 12,
    input_ms: Callable[[int, int], float] = lambda rank, step: 1.0,
    compute_ms: Callable[[int, int], float] = lambda rank, step: 4.0,
    clock_ms: Callable[[int], float] = lambda rank: 0.0,
    idle_ms: Callable[[int, int], float] = lambda rank, step: 0.0,
) -> list[XSpaceBuilder]:
    """A CPU DDP job as torch.profiler records it: per step, the step thread loads its batch,
    computes, enqueues two buckets (`c10d::allreduce_`); gloo's two threads run them
    (`gloo:all_reduce`) from the enqueue until every rank has enqueued, plus 0.5 ms. The
    second bucket is enqueued 1 ms after the first, while the first still runs. A rank's
    ``idle_ms`` come before its batch, untraced (a sleep, a thread not scheduled)."""
    out = [XSpaceBuilder(f"vm.rank{r}") for r in range(ranks)]
    lines = []
    for b in out:
        plane = b.plane("/host:CPU")
        lines.append((plane.line(1, "MainThread"), plane.line(2, "gloo"), plane.line(3, "gloo")))
    t0 = 0
    for s in range(steps):
        begun = [t0 + int(idle_ms(r, s) * MS) for r in range(ranks)]
        loaded = [begun[r] + int(input_ms(r, s) * MS) for r in range(ranks)]
        ready = [loaded[r] + int(compute_ms(r, s) * MS) for r in range(ranks)]
        ends = [max(ready) + int(0.5 * MS), max(ready) + int(1.5 * MS)]
        for r, (main_line, g1, g2) in enumerate(lines):
            off = int(clock_ms(r) * MS)
            main_line.event("train", off + t0, ends[1] + MS // 10 - t0, {"step_num": s, "_r": 1})
            main_line.event(INPUT_NAME, off + begun[r], loaded[r] - begun[r])
            main_line.event("aten::addmm", off + loaded[r], ready[r] - loaded[r])
            for k, gloo in enumerate((g1, g2)):
                at = ready[r] + k * MS
                main_line.event("c10d::allreduce_", off + at, 20 * US)
                gloo.event("gloo:all_reduce", off + at, ends[k] - at)
        t0 = ends[1] + MS // 10
    return out


def write_run(root: Path, builders: list[XSpaceBuilder]) -> Path:
    """The builders' XSpaces as the host files of one run under ``root``."""
    run = root / "plugins" / "profile" / "job"
    run.mkdir(parents=True)
    for b in builders:
        (run / f"{b.hostnames[0]}.xplane.pb").write_bytes(b.build().SerializeToString())
    return run


def untraced_job(gap_ms: int | Callable[[int], int] = 6, step_ms: int = 20) -> list[XSpaceBuilder]:
    """Three ranks of ``step_ms`` steps: 1 ms input, 4 ms compute, then the all-reduce until
    12 ms (or 1 ms after rank 1 arrives); rank 1 does something no op covers for ``gap_ms``
    first (or ``gap_ms(s)`` in step ``s``)."""
    out = []
    for r in range(3):
        b = XSpaceBuilder(f"r{r}")
        cpu = b.plane("/host:CPU")
        main, gloo = cpu.line(1, "MainThread"), cpu.line(2, "gloo")
        for s in range(12):
            t = s * step_ms * MS
            gap = gap_ms(s) if callable(gap_ms) else gap_ms
            ready = t + (5 + (gap if r == 1 else 0)) * MS
            main.event("train", t, step_ms * MS, {"step_num": s, "_r": 1})
            main.event(INPUT_NAME, t, MS)
            main.event("aten::addmm", t + MS, 4 * MS)
            gloo.event("gloo:all_reduce", ready, t + max(12, 6 + gap) * MS - ready)
        out.append(b)
    return out


def fetch_samples(builder: XSpaceBuilder, step_ms: int, at_ms: int, gap_ms: int) -> None:
    """The stack sampler on ``builder``'s main thread: the loop's step function, then the
    loop entering its batch generator for the next item (``next_frames``) for ``gap_ms``
    from ``at_ms`` into each step."""
    cpu = builder.plane("/host:CPU")
    samples = cpu.line((1 << 48) + 1, "Python samples", "Python samples: MainThread")
    samples.display_id = 1
    step_fn = "<module> (train.py:40);worker (train.py:20);step_fn (train.py:30)"
    fetch = "<module> (train.py:40);worker (train.py:20);batches (train.py:14)"
    for s in range(12):
        t = s * step_ms * MS
        samples.event("step_fn (train.py:30)", t + MS, 4 * MS, {"stack": step_fn, "samples": 1})
        samples.event(
            "batches (train.py:14)",
            t + at_ms * MS,
            gap_ms * MS,
            {"stack": fetch, "samples": 3, "next_frames": "2"},
        )
