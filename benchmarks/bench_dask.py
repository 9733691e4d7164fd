"""Real-density pod on a 2-worker Dask cluster vs the local pool vs one process, CPU and wall,
with and without stepscope's malloc setting (issue #32; docs/benchmarks.md, "Dask workers").

    python benchmarks/bench_dask.py --pod DIR [--hosts 64] [--copies 4] [--tool overview_page]
                                    [--cases one,one-libc,pool,pool-libc,dask,dask-libc]

The pod: ``--hosts`` copies of TensorFlow's ``big_ctl`` capture (266k events) repeated
``--copies`` times along time by ``../shared/tools/tf_rep.py`` (real density and flows; made
once in ``--pod`` and reused). Each case runs ``stepscope tool POD TOOL --no-cache -q`` as a
fresh process, so every host is parsed and analysed:

- ``one``: ``--workers 0`` (every host in the stepscope process, which keeps freed memory:
  decision 68); ``one-libc``: the same with glibc's defaults (``GLIBC_TUNABLES`` set, which
  makes the CLI leave malloc alone);
- ``pool``: ``--workers 2`` (tasks keep freed memory, decision 131); ``pool-libc``: the same
  with ``STEPSCOPE_WORKER_MALLOC=dask`` (glibc's defaults in the workers);
- ``dask``: ``--dask`` to a ``dask scheduler`` and ``dask worker --nworkers 2 --nthreads 1``
  started here (Dask's ``MALLOC_TRIM_THRESHOLD_=65536``, tasks keep freed memory while they
  run); ``dask-libc``: workers with ``STEPSCOPE_WORKER_MALLOC=dask`` (Dask's setting as is).

CPU: the command and every process it starts, plus for Dask the scheduler's and workers', over
the command's run: all of them are put in a cgroup (v1 ``cpuacct``; needs root) whose usage
counts processes that are never waited for (the local pool's forkserver children). Run under
``flock /tmp/stepscope-bench.lock``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIG_CTL = next((ROOT.parent / "shared/fixtures/tf/big_ctl/plugins/profile").glob("*/*.xplane.pb"))
TF_REP = ROOT.parent / "shared/tools/tf_rep.py"
BIN = Path(sys.executable).parent


def make_pod(pod: Path, hosts: int, copies: int) -> Path:
    run = pod / "plugins" / "profile" / f"big_ctl_x{copies}"
    if len(list(run.glob("*.xplane.pb"))) == hosts:
        return run
    run.mkdir(parents=True, exist_ok=True)
    first = run / "host000.xplane.pb"
    subprocess.run([sys.executable, str(TF_REP), str(BIG_CTL), str(copies), str(first)], check=True)
    for i in range(1, hosts):
        shutil.copyfile(first, run / f"host{i:03d}.xplane.pb")
    return run


CGROUPS = Path("/sys/fs/cgroup/cpuacct")


class CpuGroup:
    """A cpuacct cgroup: processes started in it (and theirs) count in `seconds`."""

    def __init__(self, name: str) -> None:
        if not CGROUPS.is_dir():
            raise SystemExit(f"{CGROUPS} not found: this benchmark needs cgroup v1 cpuacct")
        self.path = CGROUPS / f"stepscope-bench-{os.getpid()}-{name}"
        self.path.mkdir()

    def enter(self) -> None:  # in the child, before exec
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float:
        return int((self.path / "cpuacct.usage").read_text()) / 1e9

    def remove(self) -> None:
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:  # processes still exiting
                time.sleep(0.1)


def run_cli(run: Path, tool: str, extra: list[str], env: dict[str, str], group: CpuGroup) -> dict:
    before = group.seconds()
    started = time.perf_counter()
    done = subprocess.run(
        [str(BIN / "stepscope"), "tool", str(run), tool, "--no-cache", "-q", *extra],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=group.enter,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"stepscope failed ({done.returncode}): {done.stderr[-2000:]}")
    return {"wall_s": wall, "cpu_s": group.seconds() - before}


def start_cluster(
    folder: Path, env: dict[str, str], group: CpuGroup
) -> tuple[str, list[subprocess.Popen]]:
    sched_file = folder / "scheduler.json"
    sched_file.unlink(missing_ok=True)
    common: dict = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    scheduler = subprocess.Popen(
        [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0",
         "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(sched_file)],
        preexec_fn=group.enter,
        **common,
    )  # fmt: skip
    worker = subprocess.Popen(
        [str(BIN / "dask"), "worker", "--scheduler-file", str(sched_file), "--nworkers", "2",
         "--nthreads", "1", "--host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0"],
        env={**os.environ, **env},
        preexec_fn=group.enter,
        **common,
    )  # fmt: skip
    from distributed import Client

    while not sched_file.exists():
        time.sleep(0.2)
    address = json.loads(sched_file.read_text())["address"]
    with Client(address, timeout="60s") as client:
        client.wait_for_workers(2, timeout=120)
    time.sleep(2)  # the workers' start-up CPU settles before the measured run
    return address, [scheduler, worker]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pod", required=True, type=Path)
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--tool", default="overview_page")
    parser.add_argument("--cases", default="one,one-libc,pool,pool-libc,dask,dask-libc")
    args = parser.parse_args()
    run = make_pod(args.pod, args.hosts, args.copies)
    size = sum(p.stat().st_size for p in run.glob("*.xplane.pb"))
    print(f"pod: {args.hosts} hosts x big_ctl x{args.copies}, {size / 1e9:.2f} GB; {args.tool}")
    print(f"load average before: {os.getloadavg()}")
    rows = []
    for case in args.cases.split(","):
        libc = case.endswith("-libc")
        kind = case.removesuffix("-libc")
        env: dict[str, str] = {"OPENBLAS_NUM_THREADS": "1"}
        group = CpuGroup(case)
        procs: list[subprocess.Popen] = []
        if kind == "one":
            extra = ["--workers", "0"]
            if libc:
                env["GLIBC_TUNABLES"] = ""  # a user setting: the CLI leaves malloc alone
        elif kind == "pool":
            extra = ["--workers", "2"]
            if libc:
                env["STEPSCOPE_WORKER_MALLOC"] = "dask"
        else:
            folder = Path(tempfile.mkdtemp(prefix="stepscope-bench-dask-"))
            worker_env = {"STEPSCOPE_WORKER_MALLOC": "dask"} if libc else {}
            address, procs = start_cluster(folder, {**env, **worker_env}, group)
            extra = ["--dask", address]
        try:
            found = run_cli(run, args.tool, extra, env, group)
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(timeout=30)
            group.remove()
        rows.append((case, found))
        print(
            f"{case:<10} wall {found['wall_s']:6.1f} s  CPU {found['cpu_s']:6.1f} s  "
            f"({found['cpu_s'] / args.hosts:.2f} CPU s/host)  load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
    print(json.dumps({case: found for case, found in rows}))


if __name__ == "__main__":
    main()
