"""Start-up cost of the CLI and of ``import stepscope``, against a bare interpreter.

    python benchmarks/bench_cli_startup.py [--repeat 15]

Each command runs in a fresh interpreter (as a user's shell would start it), interleaved so
that load on the machine hits all of them alike; the report gives the median and the best
wall time of each, and each one's excess over ``python -c pass`` measured in the same run.
``stepscope --help`` is run as the console script does (``from stepscope.cli.main import
main``), without ``python -m``'s own cost.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

_MAIN = "import sys; from stepscope.cli.main import main; sys.exit(main"
COMMANDS = {
    "python -c pass": "pass",
    "import stepscope": "import stepscope",
    "stepscope --help": f"{_MAIN}(['--help']))",
    "stepscope tool --help": f"{_MAIN}(['tool', '--help']))",
}


def _time(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeat):
        for name, code in COMMANDS.items():
            times[name].append(_time(code))
    base = statistics.median(times["python -c pass"])
    print(f"{'command':<24} {'median s':>9} {'best s':>8} {'median - bare python':>22}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<24} {median:9.3f} {min(values):8.3f} {median - base:22.3f}")


if __name__ == "__main__":
    main()
