"""docs/pod_scale.md's operator section, run (issue #32): its `tested` shell blocks with real
`dask scheduler` and `dask worker` processes, and the Kubernetes image's two `pip` lines
(deploy/dask-worker.Dockerfile) against a local venv, whose worker then joins a cluster where
another worker cannot see the run (a mount namespace hides it): every host is analysed, the
move is reported, and `stepscope doctor` names that worker."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pod.builders import cpu_pod
from tests.support.optional import skip_without

pytestmark = [pytest.mark.integration, pytest.mark.untimed]
psutil = pytest.importorskip("psutil")
skip_without("distributed")

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "pod_scale.md"
DOCKERFILE = ROOT / "deploy" / "dask-worker.Dockerfile"
BIN = Path(sys.executable).parent
SRUN = 'srun() { while [ "${1#-}" != "$1" ]; do shift; done; "$@"; }\n'  # runs its command


def block(name: str) -> str:
    """The shell block that follows ``<!-- tested: NAME -->`` in the doc."""
    found = re.search(rf"<!-- tested: {name} -->\n```sh\n(.*?)```", DOC.read_text(), re.S)
    assert found, f"docs/pod_scale.md has no tested block {name!r}"
    return found.group(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cpu_pod(tmp_path_factory.mktemp("operator_run"), 6, events=2000)


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **extra}
    env.pop("STEPSCOPE_DASK_SCHEDULER", None)
    return env


def _session_listeners(sid: int) -> list[str]:
    """The listening TCP addresses of every process of session ``sid``."""
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) != sid:
                continue
            found += [
                f"{c.laddr.ip}:{c.laddr.port}"
                for c in proc.net_connections(kind="inet")
                if c.status == psutil.CONN_LISTEN
            ]
        except (psutil.Error, ProcessLookupError, PermissionError):
            continue
    return found


def _run_script(script: str, cwd: Path, env: dict[str, str]) -> tuple[int, str, list[str]]:
    """Runs ``script`` in a session of its own; its output, and the addresses its background
    processes (the cluster) listen on; then ends the session."""
    log = cwd / "script.log"  # not a pipe: the background processes keep it open
    with open(log, "w") as out_file:
        proc = subprocess.Popen(
            ["bash", "-e", "-c", script],
            cwd=cwd,
            env=env,
            stdout=out_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        proc.wait(timeout=240)
        listening = _session_listeners(proc.pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    out = log.read_text()
    return proc.returncode, out, listening


def test_the_one_machine_block(run: Path, tmp_path: Path) -> None:
    port = free_port()
    script = block("local").replace("8786", str(port)).replace("127.0.0.1:8787", "127.0.0.1:0")
    status, out, listening = _run_script(script, tmp_path, _env(RUN=str(run)))
    assert status == 0, out
    assert "no problems found" in out, out
    pod = json.loads((tmp_path / "pod_viewer.json").read_text())
    assert "host_errors" not in pod and pod
    # everything it started (scheduler, nannies, workers, their dashboards) is on loopback
    assert listening and all(a.startswith("127.0.0.1:") for a in listening), listening


def test_the_slurm_block(run: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    script = (
        block("slurm")
        .replace("/shared/$USER", str(shared))
        # this machine is shared: no fixed ports (a real job owns its nodes)
        .replace("dask scheduler ", "dask scheduler --port 0 ")
        .replace("127.0.0.1:8787", "127.0.0.1:0")
    )
    env = _env(RUN=str(run), SLURM_JOB_ID="4242")
    status, out, listening = _run_script(SRUN + script, tmp_path, env)
    assert status == 0, out
    assert "no problems found" in out, out  # dashboards on loopback, files readable, cache
    # the cluster was reached through the scheduler file the job named; not the file itself:
    # the scheduler deletes it when it stops, and the cleanup above stops it (a race: under
    # load the file was sometimes still there, sometimes not)
    used = f"(--dask-scheduler-file {shared / 'stepscope-scheduler-4242.json'}): 1 worker(s)"
    assert used in out, out
    assert "host_errors" not in json.loads((tmp_path / "pod_viewer.json").read_text())
    # the scheduler's and workers' comm ports face the network (other nodes); the HTTP
    # servers do not: doctor checked them, and no listener is on a fixed dashboard port
    assert not any(a.endswith(":8787") for a in listening)


def _pip_lines() -> tuple[str, str]:
    lines = [ln for ln in DOCKERFILE.read_text().splitlines() if ln.startswith("RUN pip ")]
    assert len(lines) == 2, lines
    return lines[0].removeprefix("RUN "), lines[1].removeprefix("RUN ")


@pytest.fixture(scope="module")
def image_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The image's install, in a venv: the wheel built as the Dockerfile builds it and
    installed from it (its dependencies come from this test environment through a .pth
    file: the image gets them from the index)."""
    base = tmp_path_factory.mktemp("image")
    build, install = _pip_lines()
    build = build.replace("/wheels", str(base / "wheels")).replace("/src", str(ROOT))
    # without build isolation: setuptools is here, and nothing is fetched for the build
    subprocess.run(
        [sys.executable, "-m", *build.split(), "--no-build-isolation"],
        check=True,
        capture_output=True,
    )
    [wheel] = (base / "wheels").glob("stepscope-*.whl")
    assert "[dask,fsspec]" in install
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    (site / "test-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
         str(wheel)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return venv


def _unshare_works() -> bool:
    return (
        shutil.which("unshare") is not None
        and subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0
    )


@pytest.fixture
def cluster(run: Path, image_venv: Path, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A scheduler (scheduler file), a worker from the image's install, and a worker that
    cannot see the run: a tmpfs mounted over it in a mount namespace of its own (or, where
    `unshare` is refused, a $STEPSCOPE_PATH_MAP that sends it nowhere)."""
    sched = tmp_path / "scheduler.json"
    common = ["--scheduler-file", str(sched), "--nthreads", "1", "--host", "127.0.0.1",
              "--dashboard-address", "127.0.0.1:0"]  # fmt: skip
    dask = str(BIN / "dask")
    procs = [
        subprocess.Popen(
            [
                dask,
                "scheduler",
                "--scheduler-file",
                str(sched),
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--dashboard-address",
                "127.0.0.1:0",
            ],
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        ),
        subprocess.Popen(
            [
                str(image_venv / "bin" / "python"),
                "-m",
                "distributed.cli.dask_worker",
                *common,
                "--name",
                "image",
            ],
            # The image's worker sees only its own install, as in a real image: a
            # PYTHONPATH of the test run (a source tree) would shadow the wheel.
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        ),
    ]
    root = run.parents[2]
    if _unshare_works():
        hide = f"mount -t tmpfs none {root} && exec {dask} worker {' '.join(common)} --name blind"
        blind = ["unshare", "-m", "sh", "-c", hide]
        env = os.environ
    else:
        blind = [dask, "worker", *common, "--name", "blind"]
        env = {**os.environ, "STEPSCOPE_PATH_MAP": f"{root}=/nonexistent-stepscope"}
    procs.append(
        subprocess.Popen(blind, env=env, stderr=subprocess.DEVNULL, start_new_session=True)
    )
    try:
        from distributed import Client

        deadline = time.monotonic() + 120
        while not sched.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(sched.read_text())["address"]
        with Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
            where = client.run(eval, "__import__('stepscope').__file__")
        yield str(sched), json.dumps(where)
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=30)


def test_a_worker_that_cannot_see_the_run_beside_one_installed_from_the_wheel(
    run: Path, image_venv: Path, cluster: tuple[str, str], tmp_path: Path
) -> None:
    sched, where = cluster
    assert str(image_venv) in where  # the image's worker runs the wheel's stepscope
    stepscope = str(BIN / "stepscope")
    found = subprocess.run(
        [stepscope, "tool", str(run), "pod_viewer", "--dask-scheduler-file", sched, "--no-cache"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=240,
    )
    assert found.returncode == 0, found.stderr
    assert "host_errors" not in json.loads(found.stdout)
    moved = [ln for ln in found.stderr.splitlines() if "(blind): cannot open" in ln]
    assert moved and all("analyzed on tcp://127.0.0.1:" in ln for ln in moved), found.stderr
    doctor = subprocess.run(
        [stepscope, "doctor", "--dask-scheduler-file", sched, str(run)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=240,
    )
    assert doctor.returncode == 1
    [problem] = doctor.stderr.splitlines()[1:]
    assert "(blind) cannot open 6 of the 6 run files checked" in problem
