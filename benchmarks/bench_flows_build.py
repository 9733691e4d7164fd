"""The trace index's flows and counters, built in process: CPU of each tree's first build.

    python benchmarks/bench_flows_build.py --trace FILE --tree A/src --tree B/src [--pairs 3]

Each tree runs in a new process (its `src` first on the path) that reads ``FILE``
(`load_profile`), finds the nesting depths the index gives `build_flows`, then builds the flow
table and the counters three times, each timed by `time.thread_time` with its user and system
split (`getrusage(RUSAGE_THREAD)`): the first build is the one the trace viewer pays (it also
finds each stat key's rows, kept for the profile), the later ones show what its fresh pages
cost. The trees alternate ``--pairs`` times; the load average is printed before and after.
Input for issue #30's row: ``python ../shared/tools/tf_rep.py
../shared/fixtures/tf/big_ctl/plugins/profile/*/vm.xplane.pb 40 big40.xplane.pb`` (10.6M
events, 3.0M producer/consumer flows).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

CHILD = r"""
import resource, sys, time
from stepscope.model import load_profile
from stepscope.stats.trace_index.counters import build_counters
from stepscope.stats.trace_index.flows import build_flows
from stepscope.stats.trace_index.lod import line_order, nesting_depth

profile = load_profile(sys.argv[1])
start, dur = profile.start_ns, profile.dur_ns
depth = nesting_depth(line_order(profile.line, start, start + dur), profile.line, start, dur)


def clocks():
    r = resource.getrusage(resource.RUSAGE_THREAD)
    return time.thread_time(), r.ru_utime, r.ru_stime


out = []
for _ in range(3):
    t0, u0, s0 = clocks()
    flows = build_flows(profile, depth)
    t1, u1, s1 = clocks()
    build_counters(profile)
    t2 = clocks()[0]
    cpu = f"(user {u1 - u0:.2f}, sys {s1 - s0:.2f})"
    out.append(f"flows {t1 - t0:.3f} s {cpu}, counters {t2 - t1:.3f} s")
print(f"{len(flows)} flows | " + " | ".join(out))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trace", required=True)
    parser.add_argument("--tree", action="append", required=True, help="a tree's src folder")
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    print("load", os.getloadavg())
    for _ in range(args.pairs):
        for tree in args.tree:
            env = {**os.environ, "PYTHONPATH": tree}
            done = subprocess.run(
                [sys.executable, "-c", CHILD, args.trace],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode:
                print(done.stderr, file=sys.stderr)
                return 1
            print(f"{tree}: {done.stdout.strip()}")
    print("load", os.getloadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main())
