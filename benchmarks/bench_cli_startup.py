"""Start-up cost of the CLI and of ``import stepscope``, against a bare interpreter.

    python benchmarks/bench_cli_startup.py [--repeat 15]

Each command runs in a fresh interpreter (as a user's shell would start it), interleaved so
that load on the machine hits all of them alike; the report gives the median and the best
wall time of each, and each one's excess over ``python -c pass`` measured in the same run.
``stepscope --help`` is run as the console script does (``from stepscope.cli.main import
main``), without ``python -m``'s own cost.

"stepscope tool (cached)" is ``stepscope tool <run> overview_page`` on a run analysed once
before (the ``tf/big_ctl`` fixture, 266k events, copied to a fresh log directory, with a fresh
cache directory): the answer comes from the result cache (`stepscope.result_cache`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_MAIN = "import sys; from stepscope.cli.main import main; sys.exit(main"
COMMANDS = {
    "python -c pass": "pass",
    "import stepscope": "import stepscope",
    "stepscope --help": f"{_MAIN}(['--help']))",
    "stepscope tool --help": f"{_MAIN}(['tool', '--help']))",
}
FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "tf"


def _time(code: str, *argv: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, *argv], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _analysed_run(workdir: Path) -> str | None:
    """A copy of tf/big_ctl in ``workdir``, analysed once (its answer in the result cache)."""
    source = next((FIXTURES / "big_ctl").rglob("*.xplane.pb"), None)
    if source is None:
        return None
    run = workdir / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    shutil.copy(source, run / "host.xplane.pb")
    os.environ["STEPSCOPE_CACHE_DIR"] = str(workdir / "cache")
    _time(f"{_MAIN}(sys.argv[1:]))", "tool", str(run), "overview_page")
    return str(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench_cli_"))
    commands = {name: (code,) for name, code in COMMANDS.items()}
    run = _analysed_run(workdir)
    if run is not None:
        commands["stepscope tool (cached)"] = (
            f"{_MAIN}(sys.argv[1:]))",
            "tool",
            run,
            "overview_page",
        )
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.repeat):
        for name, argv in commands.items():
            times[name].append(_time(*argv))
    shutil.rmtree(workdir, ignore_errors=True)
    base = statistics.median(times["python -c pass"])
    print(f"{'command':<24} {'median s':>9} {'best s':>8} {'median - bare python':>22}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<24} {median:9.3f} {min(values):8.3f} {median - base:22.3f}")


if __name__ == "__main__":
    main()
