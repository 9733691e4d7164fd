"""XSpace -> columnar model: events/s and peak memory, against a plain protobuf parse.

    python benchmarks/bench_load.py [--sizes 1000000 5000000] [--repeat 3] [--sparse]

Cases: the largest TensorFlow fixtures (tf/remote, tf/big_ctl) and synthetic XSpaces of the
given sizes at the real fixtures' stat density (`real_density_xspace_bytes`, 1.5 stats per
event; ``--sparse``: the older `synthetic_xspace_bytes`, 0.25). stepscope opens the file as the
tools do (`load_profile`: the file memory-mapped for the C decoder), with one decoding worker
and with two (``threads=2``). Each measurement runs in a fresh child process so peak memory is
that of the conversion alone: "peak" is the growth of the process's peak RSS (VmHWM) over its
RSS before reading the file (file bytes included); CPU is the process's user + system time
over the same span (both workers). The peer is `XSpace.FromString` (protobuf's upb parser) on
the file's bytes, which builds message objects but no analysis columns.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support: the synthetic traces and test oracles
FIXTURES = ROOT.parent / "shared" / "fixtures" / "tf"


def _status_kb(field: str) -> int:
    # VmHWM (peak RSS) belongs to this process image; ru_maxrss would include the parent's
    # peak, which survives fork + exec.
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def child(path: str, mode: str) -> None:
    """Runs in a fresh process: measure one conversion of ``path``."""
    from stepscope.model.from_xspace import load_profile
    from stepscope.xspace.io import read_profile_bytes
    from stepscope.xspace.proto.xplane_pb2 import XSpace

    before = _status_kb("VmRSS") * 1024
    started, cpu = time.perf_counter(), time.process_time()
    if mode.startswith("stepscope"):
        events = load_profile(path, threads=2 if mode == "stepscope-2w" else 1).n_events
    else:
        space = XSpace.FromString(read_profile_bytes(path))
        events = sum(len(line.events) for plane in space.planes for line in plane.lines)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = _status_kb("VmHWM") * 1024 - before
    print(json.dumps({"events": events, "seconds": seconds, "cpu": cpu, "peak_bytes": peak}))


def measure(path: str, mode: str, repeat: int) -> dict[str, float]:
    runs = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, __file__, "--child", path, mode],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        runs.append(json.loads(out))
    best = min(runs, key=lambda r: r["seconds"])
    best["cpu"] = min(r["cpu"] for r in runs)
    best["peak_bytes"] = max(0, min(r["peak_bytes"] for r in runs))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000_000, 5_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sparse", action="store_true", help="0.25 stats per event")
    parser.add_argument("--child", nargs=2, metavar=("PATH", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    from stepscope.xspace import wire
    from tests.support import synthetic

    make = synthetic.synthetic_xspace_bytes if args.sparse else synthetic.real_density_xspace_bytes
    cases = [
        (f"tf/{name} fixture", str(next((FIXTURES / name).rglob("*.xplane.pb"))))
        for name in ("remote", "big_ctl")
    ]
    tmp = tempfile.TemporaryDirectory()
    for size in args.sizes:
        path = Path(tmp.name) / f"synthetic_{size}.xplane.pb"
        path.write_bytes(make(size))
        cases.append((f"synthetic {size / 1e6:g}M", str(path)))
    print(
        f"decoder: {'C accelerator' if wire.accelerated() else 'pure Python fallback'}; "
        f"best of {args.repeat} fresh processes; cpus={os.cpu_count()}"
    )
    print(
        "| case | events | file MB | stepscope s / CPU s | M events/s | B/event "
        "| 2 workers s / CPU s | protobuf parse s / CPU s | protobuf B/event |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, path in cases:
        ours = measure(path, "stepscope", args.repeat)
        two = measure(path, "stepscope-2w", args.repeat)
        peer = measure(path, "protobuf", args.repeat)
        n = ours["events"]
        print(
            f"| {label} | {n:,} | {os.path.getsize(path) / 1e6:.1f} "
            f"| {ours['seconds']:.3f} / {ours['cpu']:.3f} | {n / ours['seconds'] / 1e6:.2f} "
            f"| {ours['peak_bytes'] / n:.1f} | {two['seconds']:.3f} / {two['cpu']:.3f} "
            f"| {peer['seconds']:.3f} / {peer['cpu']:.3f} | {peer['peak_bytes'] / n:.1f} |",
            flush=True,
        )
    # The decoder alone, one against two threads, alternating in this process: what the
    # second worker saves when it gets a core (a loaded machine often gives it none).
    print("\n| case | decode, 1 thread s (min / median) | 2 threads s (min / median) |")
    print("|---|---:|---:|")
    for label, path in cases:
        one, two = decode_walls(path, max(5, args.repeat * 3))
        print(f"| {label} | {one[0]:.3f} / {one[1]:.3f} | {two[0]:.3f} / {two[1]:.3f} |")
    tmp.cleanup()


def decode_walls(path: str, runs: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """(min, median) wall seconds of `decode_file` with one and with two threads."""
    from stepscope.model.from_xspace import decode_file

    walls: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(runs):
        for threads, found in walls.items():
            started = time.perf_counter()
            decode_file(path, threads)
            found.append(time.perf_counter() - started)
    ranked = {t: sorted(w) for t, w in walls.items()}
    return (ranked[1][0], ranked[1][runs // 2]), (ranked[2][0], ranked[2][runs // 2])


if __name__ == "__main__":
    main()
