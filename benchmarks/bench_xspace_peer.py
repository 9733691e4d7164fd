"""Cold analysis of an XSpace against xprof-rs and XProf's C++ converter, paired in one run.

    python benchmarks/bench_xspace_peer.py [--events 1000000 5000000 20000000] [--repeat 3]
        [--xprof-max-events 5000000] [--no-xprof]

What is timed, each in a fresh process, wall clock from spawn to the last byte of the three
results (overview page, input pipeline, op stats), no cache anywhere:

- stepscope, one worker: ``stepscope.tools`` on the file with the conversion cache off
  (imports included; the process is set up as the user's ``stepscope tool`` sets its own:
  glibc's malloc keeps freed memory and OpenBLAS gets one thread, decisions 68 and 71);
- stepscope "lib": the same as a library in a user's process (malloc and BLAS as they are);
- stepscope, two workers: the same with ``STEPSCOPE_THREADS=2`` (the decoder's event chunks
  on two threads, the op metrics built on a second thread beside the step database);
- xprof-rs 0.1.3 (``pip install xprof-rs``): its server started on a fresh log directory,
  then ``overview_page``, ``input_pipeline_analyzer`` and ``framework_op_stats`` asked in
  sequence over HTTP (its converted trace is shared by the three); "1 thread" pins it to one
  core (``taskset -c 0`` and ``RAYON_NUM_THREADS=1``), "default" lets it use every core;
- XProf 2.24.2's converter (``xprof.convert.raw_to_tool_data``) for the same three tools in a
  fresh process on a fresh copy, its saved-result cache on (the second and third tools reuse
  the first one's op stats), imports included.

Peak memory is the process's (or the server's) maximum resident set (``wait4``'s ru_maxrss);
CPU is its user + system time (``wait4``), the figure that a loaded machine moves least.
Inputs: ``tf/big_ctl`` (266k events, 1.65 stats per event, see fixtures/SOURCES.md) and
`real_density_xspace_bytes` files (1.5 stats per event, the density of the real fixtures:
1.38-1.79). Medians of ``--repeat``; ratio = peer / stepscope (above 1: stepscope faster).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT.parent / "shared" / "fixtures" / "tf"
BIG_CTL = next((FIXTURES / "big_ctl").rglob("*.xplane.pb"), None) if FIXTURES.is_dir() else None
XPROF_TOOLS = ("overview_page", "input_pipeline_analyzer", "framework_op_stats")
STEPSCOPE_TOOLS = ("overview_page", "input_pipeline_analyzer", "op_stats")
_STEPSCOPE = f"""
import json, sys
if sys.argv[2] == "cli":  # what the `stepscope` command's own process does (decisions 68, 71)
    from stepscope.cli.blas import single_threaded_blas
    single_threaded_blas()
    from stepscope.cli.malloc import keep_freed_memory
    keep_freed_memory()
from stepscope.model.runs import single_file_run
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
run = single_file_run(sys.argv[1])
ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False))
size = sum(len(json.dumps(output.to_json(get_tool(t).build(ctx)))) for t in {STEPSCOPE_TOOLS!r})
print(size)
"""
_XPROF = f"""
import sys
from xprof.convert import raw_to_tool_data
size = 0
for tool in {XPROF_TOOLS!r}:
    options = {{"use_saved_result": True}}
    data, _ = raw_to_tool_data.xspace_to_tool_data([sys.argv[1]], tool, options)
    size += len(data or b"")
print(size)
"""


Sample = tuple[float, float, float]  # wall seconds, CPU seconds (user + system), peak MB


def _cpu(usage: object) -> float:
    return float(getattr(usage, "ru_utime", 0.0) + getattr(usage, "ru_stime", 0.0))


def _spawn(argv: list[str], env: dict[str, str] | None = None) -> tuple[Sample, str]:
    """Runs ``argv`` to completion: ((wall s, CPU s, peak MB), stdout)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **(env or {})}
    )
    out = proc.stdout.read() if proc.stdout else b""
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise RuntimeError(f"{argv[:3]} failed:\n{err.decode(errors='replace')[-2000:]}")
    return (seconds, _cpu(usage), usage.ru_maxrss / 1024), out.decode()


def _fresh_copy(path: str, workdir: Path) -> Path:
    """``<workdir>/<n>/plugins/profile/run/host.xplane.pb``: a log directory no tool has seen."""
    logdir = Path(tempfile.mkdtemp(dir=workdir))
    target = logdir / "plugins" / "profile" / "run" / "host.xplane.pb"
    target.parent.mkdir(parents=True)
    shutil.copy(path, target)
    return target


def stepscope(path: str, workdir: Path, workers: int, cli: bool = True) -> Sample:
    env = {"STEPSCOPE_THREADS": str(workers), "PYTHONPATH": str(ROOT / "src")}
    argv = [sys.executable, "-c", _STEPSCOPE, path, "cli" if cli else "library"]
    sample, _ = _spawn(argv, env)
    return sample


def xprof(python: str, path: str, workdir: Path) -> Sample:
    target = _fresh_copy(path, workdir)
    env = {"TF_CPP_MIN_LOG_LEVEL": "3", "GLOG_minloglevel": "3"}
    sample, _ = _spawn([python, "-c", _XPROF, str(target)], env)
    shutil.rmtree(target.parents[3], ignore_errors=True)
    return sample


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def xprof_rs(
    binary: str, path: str, workdir: Path, one_thread: bool, tags: tuple[str, ...] = XPROF_TOOLS
) -> Sample:
    """Spawn the server on a fresh log directory, ask each of ``tags`` in turn, stop it."""
    target = _fresh_copy(path, workdir)
    logdir = target.parents[3]
    port = _free_port()
    argv = [binary, "--logdir", str(logdir), "--port", str(port)]
    env = dict(os.environ)
    if one_thread:
        argv = ["taskset", "-c", "0", *argv]
        env["RAYON_NUM_THREADS"] = "1"
    base = f"http://127.0.0.1:{port}/data/plugin/profile/data?run=run&host=host&tag="
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        size = 0
        for tool in tags:
            while True:
                try:
                    with urllib.request.urlopen(base + tool, timeout=600) as response:
                        size += len(response.read())
                    break
                except (ConnectionError, urllib.error.URLError):
                    if proc.poll() is not None:
                        raise RuntimeError("xprof-rs exited") from None
                    time.sleep(0.002)  # the server is still starting
        seconds = time.perf_counter() - started
        if size < 1000:
            raise RuntimeError(f"xprof-rs answered {size} bytes for {path}")
    finally:
        proc.terminate()
        _, _, usage = os.wait4(proc.pid, 0)
        shutil.rmtree(logdir, ignore_errors=True)
    return seconds, _cpu(usage), usage.ru_maxrss / 1024


def _median(samples: list[Sample]) -> Sample:
    """Median wall and CPU seconds, highest peak."""
    return (
        statistics.median(s[0] for s in samples),
        statistics.median(s[1] for s in samples),
        max(s[2] for s in samples),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="*", default=[1_000_000, 5_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--xprof-python", default=sys.executable)
    parser.add_argument("--xprof-max-events", type=int, default=5_000_000)
    parser.add_argument("--no-xprof", action="store_true", help="skip XProf's C++ converter")
    parser.add_argument("--no-fixture", action="store_true", help="only the synthetic files")
    args = parser.parse_args()
    binary = shutil.which("xprof-rs") or str(Path(sys.executable).with_name("xprof-rs"))
    workdir = Path(tempfile.mkdtemp(prefix="bench_xspace_peer_"))
    cases: list[tuple[str, str, int]] = []
    if BIG_CTL and not args.no_fixture:
        cases.append(("tf/big_ctl", str(BIG_CTL), 265_916))
    for n in args.events:
        made = workdir / f"synthetic_{n}.xplane.pb"
        # Made in a child: this process stays small, because a child's ru_maxrss starts
        # from its parent's peak (fork copies it, exec keeps it).
        make = "import sys; from tests.support.synthetic import real_density_xspace_bytes as f"
        make += "; open(sys.argv[1], 'wb').write(f(int(sys.argv[2])))"
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
        subprocess.run([sys.executable, "-c", make, str(made), str(n)], check=True, env=env)
        cases.append((f"synthetic {n / 1e6:g}M", str(made), n))
    columns = [
        "stepscope 1w",
        "stepscope 2w",
        "stepscope lib 1w",
        "xprof-rs 1t",
        "xprof-rs default",
        "XProf C++",
    ]
    rows = []
    for label, path, n in cases:
        samples: dict[str, list[Sample]] = {c: [] for c in columns}
        for _ in range(args.repeat):  # interleaved: load on the machine hits all alike
            samples["stepscope 1w"].append(stepscope(path, workdir, 1))
            samples["stepscope 2w"].append(stepscope(path, workdir, 2))
            samples["stepscope lib 1w"].append(stepscope(path, workdir, 1, cli=False))
            samples["xprof-rs 1t"].append(xprof_rs(binary, path, workdir, True))
            samples["xprof-rs default"].append(xprof_rs(binary, path, workdir, False))
            if not args.no_xprof and n <= args.xprof_max_events:
                samples["XProf C++"].append(xprof(args.xprof_python, path, workdir))
        result = {c: _median(v) for c, v in samples.items() if v}
        rows.append((label, n, result))
        print(json.dumps({"case": label, "events": n, **result}), flush=True)
    shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n| case | events | {' | '.join(f'{c} s / CPU s (MB)' for c in columns)} | ratios |")
    print("|---|---:|" + "---:|" * len(columns) + "---|")
    for label, n, result in rows:
        cells = [
            f"{result[c][0]:.2f} / {result[c][1]:.2f} ({result[c][2]:,.0f})" if c in result else "-"
            for c in columns
        ]
        ours1, ours2 = result["stepscope 1w"][0], result["stepscope 2w"][0]
        ratios = [
            f"xprof-rs 1t/ours 1w {result['xprof-rs 1t'][0] / ours1:.2f}x",
            f"xprof-rs default/ours 2w {result['xprof-rs default'][0] / ours2:.2f}x",
        ]
        if "XProf C++" in result:
            ratios.append(f"XProf/ours 1w {result['XProf C++'][0] / ours1:.1f}x")
        print(f"| {label} | {n:,} | {' | '.join(cells)} | {'; '.join(ratios)} |")


if __name__ == "__main__":
    main()
