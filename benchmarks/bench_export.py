"""Trace export speed: Perfetto protobuf and Chrome-trace JSON, events per second.

    python benchmarks/bench_export.py [--events 1000000] [--repeat 3]

Chrome-trace JSON is timed two ways, in the same run: the columnar writer `stepscope export`
uses and the event-by-event reference writer it replaced (same bytes). (The C formatter and
Perfetto encoder were folded back into NumPy and Python: decision 111.)

Cases: the TensorFlow fixture ``tf/big_ctl`` (266k events, about 1.7 stats each, 75k flows) and
a synthetic XSpace of N events. The profile is read and its trace index (flows, depths) built
first, as `stepscope export` finds them in the cache after the trace viewer opened the trace;
then each format's chunks are generated and their bytes counted (no disk, no gzip), best of
``--repeat``. CPU seconds (this process) are given beside wall seconds: on a shared machine
the CPU figure is the one that does not depend on the other jobs.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support: the synthetic traces and test oracles
sys.path.insert(0, str(ROOT / "src"))

from stepscope.export import perfetto_trace  # noqa: E402
from stepscope.export.chrome_trace import chrome_trace_chunks  # noqa: E402
from stepscope.model import Profile, open_file, profile_from_bytes  # noqa: E402
from stepscope.stats.trace_index.index import build_trace_index  # noqa: E402
from tests.support.chrome_reference import reference_chunks  # noqa: E402
from tests.support.synthetic import synthetic_xspace_bytes  # noqa: E402

FIXTURE = ROOT.parent / "shared" / "fixtures" / "tf" / "big_ctl"


def _time(make: Callable[[], Iterable[str | bytes]], repeat: int) -> tuple[float, float, int]:
    best = (float("inf"), float("inf"), 0)
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        size = sum(len(chunk) for chunk in make())
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if cpu < best[1]:
            best = (wall, cpu, size)
    return best


def measure(label: str, profile: Profile, repeat: int) -> None:
    index = build_trace_index(profile)
    n = profile.n_events
    cases: dict[str, Callable[[], Iterable[str | bytes]]] = {
        "perfetto": lambda: perfetto_trace.perfetto_trace_chunks(
            profile, flows=index.flows, depth=index.depth
        ),
        "chrome-trace JSON": lambda: chrome_trace_chunks(profile, flows=index.flows),
        "chrome-trace JSON (per-event reference)": lambda: reference_chunks(
            profile, flows=index.flows
        ),
    }
    for name, make in cases.items():
        wall, cpu, size = _time(make, repeat)
        print(
            f"| {label} | {n:,} | {name} | {size / 1e6:.1f} | {wall:.2f} | {cpu:.2f} | "
            f"{n / cpu / 1e6:.2f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| case | events | format | MB | wall s | CPU s | M events/s (CPU) |")
    print("|---|---:|---|---:|---:|---:|---:|")
    measure(
        "tf/big_ctl",
        open_file(str(next(FIXTURE.rglob("*.xplane.pb"))), use_cache=False),
        args.repeat,
    )
    if args.events:
        measure("synthetic", profile_from_bytes(synthetic_xspace_bytes(args.events)), args.repeat)


if __name__ == "__main__":
    main()
