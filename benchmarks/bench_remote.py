"""Remote capture overhead: a training loop's steps/s while a remote capture records it.

    python benchmarks/bench_remote.py [--reps 7] [--duration-ms 2000] [--step-ms 1]

This process trains: a NumPy step of about ``--step-ms`` wrapped in ``stepscope.step`` with
two ``stepscope.trace`` annotations inside (an instrumented loop), and runs a stepscope
profiler server on a loopback port. A second, long-lived process is the client, as a capture
would come from another machine. Each repetition measures the loop's steps/s
- without capture, in a window of ``duration_ms`` just before the request;
- during a remote capture of ``duration_ms`` (default tracer levels: host 2, python 0), the
  window being the capture's own ``profile_start_time``/``profile_stop_time``;
- in the second after the capture, while the server builds and sends the XSpace.
Throughput is counted from each step's end time, so the windows need no coordination with the
loop. Each capture is compared with the mean of the windows just before it and 1.5 s after it
(other load on a shared machine drifts slowly); the median of these paired changes is the
figure, the target being < 5% fewer steps/s. Because wall-clock throughput also moves with
other processes, the training thread's own CPU time per step is reported too (what recording
the annotations costs the loop, whatever else runs on the machine).
"""

from __future__ import annotations

import os

# One BLAS thread: a multi-threaded matmul on a busy machine swings by 100x between calls.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse
import bisect
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import stepscope
import stepscope.server
from stepscope.xspace.formats import load_xspace

CLIENT = """
import sys
import stepscope.client
address, duration_ms = sys.argv[1], int(sys.argv[2])
print("READY", flush=True)
for line in sys.stdin:
    result = stepscope.client.trace(address, line.strip(), duration_ms, verbose=False)
    print("DONE", result.paths[0], flush=True)
"""


def make_step(step_ms: float) -> tuple[object, int]:
    """A NumPy matmul chain sized to take about ``step_ms`` here, and its repeat count."""
    a = np.random.default_rng(0).standard_normal((128, 128)).astype(np.float32)
    timings = []
    for _ in range(7):  # median of 7 batches of 100, after a warm-up batch
        start = time.perf_counter()
        for _ in range(100):
            a @ a
        timings.append((time.perf_counter() - start) / 100)
    per = statistics.median(timings[1:])
    return a, max(1, round(step_ms / 1e3 / per))


def train(ends: list[int], cpu: list[int], stop: threading.Event, a: object, repeat: int) -> None:
    step = 0
    now, thread_time = time.time_ns, time.thread_time_ns
    while not stop.is_set():
        with stepscope.step(step):
            with stepscope.trace("forward"):
                for _ in range(repeat):
                    a @ a  # type: ignore[operator]
            with stepscope.trace("optimizer"):
                a @ a  # type: ignore[operator]
        ends.append(now())
        cpu.append(thread_time())
        step += 1


def rate(ends: list[int], start_ns: int, stop_ns: int) -> float:
    count = bisect.bisect_right(ends, stop_ns) - bisect.bisect_left(ends, start_ns)
    return count / ((stop_ns - start_ns) / 1e9)


def cpu_per_step_ms(ends: list[int], cpu: list[int], start_ns: int, stop_ns: int) -> float:
    first, last = bisect.bisect_left(ends, start_ns), bisect.bisect_right(ends, stop_ns) - 1
    return (cpu[last] - cpu[first]) / max(1, last - first) / 1e6


def capture_window(path: Path) -> tuple[int, int]:
    space = load_xspace(path)
    env = next(p for p in space.planes if p.name == "Task Environment")
    times = {env.stat_metadata[s.metadata_id].name: s.uint64_value for s in env.stats}
    return times["profile_start_time"], times["profile_stop_time"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--duration-ms", type=int, default=2000)
    parser.add_argument("--step-ms", type=float, default=1.0)
    args = parser.parse_args()

    server = stepscope.server.start(0)
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT, server.address, str(args.duration_ms)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert client.stdin is not None and client.stdout is not None
    assert client.stdout.readline().startswith("READY")
    a, repeat = make_step(args.step_ms)
    ends: list[int] = []
    cpu: list[int] = []
    stop = threading.Event()
    trainer = threading.Thread(target=train, args=(ends, cpu, stop, a, repeat), name="train")
    trainer.start()
    windows = []
    seconds = args.duration_ms / 1e3
    with tempfile.TemporaryDirectory() as tmp:
        time.sleep(1.0)  # warm up
        for rep in range(args.reps):
            before = time.time_ns()
            time.sleep(seconds)
            base = (before, time.time_ns())
            client.stdin.write(f"{tmp}/rep{rep}\n")
            client.stdin.flush()
            line = client.stdout.readline().split(maxsplit=1)
            assert line and line[0] == "DONE", line
            captured = capture_window(Path(line[1].strip()))
            length = captured[1] - captured[0]
            finalize = (captured[1], captured[1] + 1_000_000_000)
            later = (captured[1] + 1_500_000_000, captured[1] + 1_500_000_000 + length)
            time.sleep(max(0.0, (later[1] - time.time_ns()) / 1e9) + 0.2)
            windows.append((base, captured, finalize, later))
    stop.set()
    trainer.join()
    client.stdin.close()
    client.wait(10)
    server.stop()

    print(
        f"training step ~{args.step_ms} ms (NumPy, 3 annotations), capture {args.duration_ms} ms, "
        f"{args.reps} repetitions, Python {sys.version.split()[0]}"
    )
    print(
        f"{'rep':>3} {'no capture':>11} {'capturing':>11} {'change':>7} {'next 1 s':>11}"
        f" | CPU ms/step: {'no capture':>10} {'capturing':>10} {'change':>7}"
    )
    changes, cpu_changes, finals = [], [], []
    for i, (before, captured, finalize, later) in enumerate(windows):
        b = (rate(ends, *before) + rate(ends, *later)) / 2
        c, f = rate(ends, *captured), rate(ends, *finalize)
        cb = (cpu_per_step_ms(ends, cpu, *before) + cpu_per_step_ms(ends, cpu, *later)) / 2
        cc = cpu_per_step_ms(ends, cpu, *captured)
        changes.append(100 * (c / b - 1))
        cpu_changes.append(100 * (cc / cb - 1))
        finals.append(100 * (f / b - 1))
        print(
            f"{i:>3} {b:>9.1f}/s {c:>9.1f}/s {changes[-1]:>+6.1f}% {f:>9.1f}/s"
            f" |              {cb:>10.3f} {cc:>10.3f} {cpu_changes[-1]:>+6.1f}%"
        )
    paired = statistics.median(changes)
    print(
        f"median change while capturing: steps/s {paired:+.1f}%, training-thread CPU per step "
        f"{statistics.median(cpu_changes):+.1f}%; in the second after the capture (XSpace "
        f"built and sent): steps/s {statistics.median(finals):+.1f}%"
    )
    print("target: < 5% fewer steps/s while capturing:", "met" if paired > -5 else "NOT met")


if __name__ == "__main__":
    main()
