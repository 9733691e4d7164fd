"""Crafted hostile profiles (issue #13): load time grows linearly, memory stays under the bound.

    python benchmarks/bench_crafted.py [--repeat 3]

Time: CPU seconds of `profile_from_bytes` on the crafted cases of `tests/hardening/crafted.py`
at a size n and 4n; a linear loader takes about 4x, a quadratic one 16x. The peer is protobuf's
own parser (`XSpace.FromString`) on the same bytes, which is linear.

Memory: peak RSS (VmHWM) of a fresh `stepscope info` process on a gzip bomb and on a file of
empty events, with ``--max-profile-bytes 256M``: bounded by the limit, whatever the input
claims to hold.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from stepscope.model import profile_from_bytes  # noqa: E402
from stepscope.xspace.proto.xplane_pb2 import XSpace  # noqa: E402
from tests.hardening import crafted  # noqa: E402


def best_cpu_s(func: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        func()
        best = min(best, time.process_time() - started)
    return best


def time_table(repeat: int) -> None:
    cases = {
        "planes (1 line, 1 event each)": (crafted.many_planes, 15_000),
        "events with missing metadata": (crafted.many_missing_metadata, 75_000),
    }
    print("| case | n | MB | stepscope s | x vs n | protobuf parse s | x vs n |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (make, n) in cases.items():
        base: tuple[float, float] | None = None
        for size in (n, 4 * n):
            data = make(size)
            ours = best_cpu_s(lambda d=data: profile_from_bytes(d), repeat)
            peer = best_cpu_s(lambda d=data: XSpace.FromString(d), repeat)
            base = base or (ours, peer)
            print(
                f"| {name} | {size:,} | {len(data) / 1e6:.1f} | {ours:.2f} | "
                f"{ours / base[0]:.1f} | {peer:.3f} | {peer / base[1]:.1f} |"
            )


def peak_mb(path: Path, limit: str) -> tuple[float, int, str]:
    code = (
        "import sys; from stepscope.cli.main import main; rc = main(sys.argv[1:]); "
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]; "
        "print('HWM', hwm, rc, file=sys.stderr)"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    result = subprocess.run(
        [sys.executable, "-c", code, "info", str(path), "--no-cache", "--max-profile-bytes", limit],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = result.stderr.strip().splitlines()
    hwm_line = next(line for line in lines if line.startswith("HWM"))
    _, hwm_kb, rc = hwm_line.split()
    errors = [line for line in lines if "error" in line]
    return int(hwm_kb) / 1024, int(rc), errors[0] if errors else ""


def memory_table() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        files = {
            "xplane.pb.gz bomb, 8 GiB inflated": (
                "bomb.xplane.pb.gz",
                crafted.xspace_gzip_bomb(8 << 30),
            ),
            "json.gz bomb, 8 GiB inflated": ("bomb.json.gz", crafted.json_gzip_bomb(8 << 30)),
            "20M empty events (40 MB)": ("empty.xplane.pb", crafted.empty_events(20_000_000)),
        }
        print("\n| input | file MB | limit | peak RSS MB | exit | message |")
        print("|---|---:|---|---:|---:|---|")
        for label, (name, data) in files.items():
            path = Path(tmp) / name
            path.write_bytes(data)
            mb, rc, message = peak_mb(path, "256M")
            message = message.replace(f"stepscope: error: {path}: ", "")
            print(f"| {label} | {len(data) / 1e6:.1f} | 256M | {mb:.0f} | {rc} | {message[:70]} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    time_table(args.repeat)
    memory_table()


if __name__ == "__main__":
    main()
