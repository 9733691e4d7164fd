"""XSpace -> columnar model: events/s and peak memory, against a plain protobuf parse.

    python benchmarks/bench_load.py [--sizes 1000000 5000000] [--repeat 3]

Cases: the largest TensorFlow fixture (tf/remote) and synthetic XSpaces of the given sizes.
Each measurement runs in a fresh child process so peak memory is that of the conversion alone:
"peak" is the growth of the process's peak RSS (VmHWM) over its RSS before reading the file
(file bytes included). The peer is `XSpace.FromString` (protobuf's upb parser) on the same bytes,
which builds message objects but no analysis columns. Prints a table with ratios.
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
FIXTURE = ROOT.parent / "shared" / "fixtures" / "tf" / "remote"


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
    from stepscope.model import profile_from_bytes
    from stepscope.xspace.io import read_profile_bytes
    from stepscope.xspace.proto.xplane_pb2 import XSpace

    before = _status_kb("VmRSS") * 1024
    started = time.perf_counter()
    data = read_profile_bytes(path)
    if mode == "stepscope":
        profile = profile_from_bytes(data, source=path)
        del data
        events = profile.n_events
    else:
        space = XSpace.FromString(data)
        events = sum(len(line.events) for plane in space.planes for line in plane.lines)
    seconds = time.perf_counter() - started
    peak = _status_kb("VmHWM") * 1024 - before
    print(json.dumps({"events": events, "seconds": seconds, "peak_bytes": max(peak, 0)}))


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
    best["peak_bytes"] = min(r["peak_bytes"] for r in runs)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000_000, 5_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("PATH", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    from stepscope.xspace import wire
    from stepscope.xspace.synthetic import synthetic_xspace_bytes

    cases = [("tf/remote fixture", str(next(FIXTURE.rglob("*.xplane.pb"))))]
    tmp = tempfile.TemporaryDirectory()
    for size in args.sizes:
        path = Path(tmp.name) / f"synthetic_{size}.xplane.pb"
        path.write_bytes(synthetic_xspace_bytes(size))
        cases.append((f"synthetic {size / 1e6:g}M", str(path)))
    print(
        f"decoder: {'C accelerator' if wire.accelerated() else 'pure Python fallback'}; "
        f"best of {args.repeat} fresh processes; cpus={os.cpu_count()}"
    )
    header = (
        f"{'case':<20} {'events':>10} {'MB':>7} {'stepscope s':>12} {'Mev/s':>7} {'B/event':>8} "
        f"{'protobuf s':>11} {'B/event':>8} {'time ratio':>10}"
    )
    print(header)
    print("-" * len(header))
    for label, path in cases:
        ours = measure(path, "stepscope", args.repeat)
        peer = measure(path, "protobuf", args.repeat)
        n = ours["events"]
        print(
            f"{label:<20} {n:>10,} {os.path.getsize(path) / 1e6:>7.1f} {ours['seconds']:>12.3f} "
            f"{n / ours['seconds'] / 1e6:>7.2f} {ours['peak_bytes'] / n:>8.1f} "
            f"{peer['seconds']:>11.3f} {peer['peak_bytes'] / n:>8.1f} "
            f"{ours['seconds'] / peer['seconds']:>10.2f}"
        )
    tmp.cleanup()


if __name__ == "__main__":
    main()
