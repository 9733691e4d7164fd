"""A cached open: `stepscope.model.cache.load` of a profile the store has kept.

    python benchmarks/bench_cached_open.py [FILE ...] [--repeat 5] [--calls 50]

Each file is opened once with a fresh cache directory (the converted profile is written),
then read back from the store ``--calls`` times, ``--repeat`` times; the process CPU per read
is printed, min and all. The default files are the ctl and a100_nccl fixtures (19 arrays
each). Decision 806 has the figures: run it in two trees side by side to compare.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
DEFAULT = (
    "tf/ctl/plugins/profile/2026_11_22_00_46_33/vm.xplane.pb",
    "kineto/a100_nccl_rank0.json.gz",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    os.environ["STEPSCOPE_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench_cached_open_")
    from stepscope.model import cache
    from stepscope.model.load import open_file
    from stepscope.store import background

    files = args.files or [p for p in (FIXTURES / d for d in DEFAULT) if p.exists()]
    for path in files:
        open_file(path)
        background.wait()
        entry = cache.entry_dir(str(path))
        arrays = len(list(entry.glob("*.npy")))
        per_read = []
        for _ in range(args.repeat):
            started = time.process_time()
            for _ in range(args.calls):
                profile = cache.load(entry)
            per_read.append((time.process_time() - started) / args.calls * 1e3)
        shown = ", ".join(f"{ms:.2f}" for ms in per_read)
        print(
            f"{path.name}: {profile.n_events:,} events, {arrays} arrays: "
            f"{min(per_read):.2f} ms of CPU a cached open (min; all: {shown})"
        )


if __name__ == "__main__":
    main()
