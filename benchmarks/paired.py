"""Paired A/B runs against a peer, as issue #30's benchmarks report them.

Each pair runs stepscope and its peer back to back (the order alternating from pair to pair,
so neither side always runs second on a warmer cache or a quieter machine); a pair gives the
ratios peer / stepscope of CPU time (user + system of the processes, from ``wait4``) and of
wall time, and the report is the median of the per-pair ratios with their spread, and the
load average before and after. On a shared machine the CPU-time ratio of a pair is the
figure that survives load: both sides of a pair see the same load, and CPU time moves less
with it than wall time.

Processes are timed as users start them: a new interpreter each, bytecode compiled first
(`compile_bytecode`: pip installs write ``.pyc`` files; this machine sets
PYTHONDONTWRITEBYTECODE, so without it every process would compile stepscope's sources).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from stepscope.records import record

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
TF_REP = SHARED / "tools" / "tf_rep.py"
BIG_CTL = next((SHARED / "fixtures" / "tf" / "big_ctl").rglob("*.xplane.pb"), None)


@record
class Sample:
    wall_s: float
    cpu_s: float
    peak_mb: float = 0.0


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.1f}/{five:.1f}"


def compile_bytecode(src: Path | None = None) -> None:
    """stepscope's ``.pyc`` files, as a pip install leaves them (beside the sources; ``src``:
    another tree's)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.pop("PYTHONPYCACHEPREFIX", None)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(src or ROOT / "src")],
        check=True,
        stdout=subprocess.DEVNULL,
        env=env,
    )


def spawn(argv: list[str], env: dict[str, str] | None = None) -> tuple[Sample, str]:
    """Runs ``argv`` to completion: its wall time, CPU time and peak RSS, and its stdout."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    out = proc.stdout.read() if proc.stdout else b""
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{argv[:4]} failed:\n{err.decode(errors='replace')[-2000:]}")
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024), out.decode()


def repeated_trace(copies: int, workdir: Path) -> Path:
    """``tf/big_ctl`` repeated ``copies`` times along time with its flows, step numbers and
    context ids kept apart (``../shared/tools/tf_rep.py``): real density at any size."""
    if BIG_CTL is None:
        raise SystemExit("no ../shared/fixtures/tf/big_ctl")
    if copies == 1:
        return BIG_CTL
    target = workdir / f"big_ctl_x{copies}.xplane.pb"
    if not target.exists():
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        subprocess.run(
            [sys.executable, str(TF_REP), str(BIG_CTL), str(copies), str(target)],
            check=True,
            env=env,
            stderr=subprocess.DEVNULL,
        )
    return target


@record
class Paired:
    name: str
    ours: list[Sample]
    theirs: list[Sample]
    load_before: str
    load_after: str

    def ratios(self, what: str) -> list[float]:
        return [
            getattr(t, what) / max(getattr(o, what), 1e-9)
            for o, t in zip(self.ours, self.theirs, strict=True)
        ]

    def line(self, peer: str) -> str:
        cpu, wall = self.ratios("cpu_s"), self.ratios("wall_s")
        ours_cpu = statistics.median(s.cpu_s for s in self.ours)
        theirs_cpu = statistics.median(s.cpu_s for s in self.theirs)
        ours_wall = statistics.median(s.wall_s for s in self.ours)
        theirs_wall = statistics.median(s.wall_s for s in self.theirs)
        return (
            f"{self.name}: {peer} / stepscope, median of {len(cpu)} pairs: CPU "
            f"{statistics.median(cpu):.2f}x ({min(cpu):.2f}-{max(cpu):.2f}), wall "
            f"{statistics.median(wall):.2f}x ({min(wall):.2f}-{max(wall):.2f}); medians "
            f"stepscope {ours_wall:.3f} s / CPU {ours_cpu:.3f} s, {peer} {theirs_wall:.3f} s / "
            f"CPU {theirs_cpu:.3f} s; load {self.load_before} -> {self.load_after}"
        )


def run_pairs(
    name: str, ours: Callable[[], Sample], theirs: Callable[[], Sample], pairs: int
) -> Paired:
    before = load()
    a: list[Sample] = []
    b: list[Sample] = []
    for k in range(pairs):
        if k % 2 == 0:
            a.append(ours())
            b.append(theirs())
        else:
            b.append(theirs())
            a.append(ours())
    return Paired(name, a, b, before, load())
