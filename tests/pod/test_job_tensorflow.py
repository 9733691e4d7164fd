"""A TensorFlow MultiWorkerMirroredStrategy job of 2 CPU workers, captured with defaults
(issue #26): one run, one file per worker, the worker slow in its input named against what
the script measured, and the ALL_HOSTS step time XProf 2.24.2 computes on the same files."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope import Analysis
from stepscope.cli.main import main
from stepscope.stats.stragglers_cpu import DESCHEDULED
from tests.support.fixtures import REPO

# TensorFlow runs in the job's processes only: imported here, its protobuf runtime would share
# the test process with the tests that compile protos in process
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        importlib.util.find_spec("tensorflow") is None, reason="pip install tensorflow"
    ),
]


# jobs run before the slow-map test gives up on a machine too loaded to hold its situation
LOADED_ATTEMPTS = 2


def _run_job(
    tmp_path_factory: pytest.TempPathFactory, *options: str
) -> tuple[Path, list[dict[str, Any]]]:
    # TF's distributed runtime fails a job now and then on a loaded machine (seen once in
    # four CI runs: a worker gone before it saved its truth, the other's all-reduce reset;
    # TF's profiler stop aborts a worker, decision 311: both attempts of one full run at load
    # 5-11); another job in a fresh log directory is started then, up to three, and each
    # failure, each worker's stderr tail, is printed (pytest shows it with the test's output).
    failures = []
    for attempt in range(3):
        logdir = tmp_path_factory.mktemp("tf")
        # the tree's own stepscope, not the one installed
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
        job = ["tests.support.tf_mwms_job", str(logdir), *options]
        proc = subprocess.run(
            [sys.executable, "-m", *job],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if proc.returncode == 0:
            break
        failures.append(proc.stderr[-4000:])
        print(f"TF job attempt {attempt + 1} failed:\n{failures[-1]}", file=sys.stderr)
    assert proc.returncode == 0, "\n\n".join(failures)
    [run] = (logdir / "plugins" / "profile").iterdir()
    truth = [json.loads((logdir / f"truth.worker{k}.json").read_text()) for k in (0, 1)]
    return run, truth


@pytest.fixture(scope="module")
def tf_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    return _run_job(tmp_path_factory, "--slow-input", "1", "--input-ms", "80")


def _tool(run: Path, tool: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["tool", str(run), tool, "--workers", "0", "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


def test_one_run_names_the_slow_worker_against_the_scripts_truth(
    tf_job: tuple[Path, list[dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    run, truth = tf_job
    machine = __import__("socket").gethostname()
    assert sorted(p.name for p in run.iterdir()) == [
        f"{machine}.worker0.xplane.pb",
        f"{machine}.worker1.xplane.pb",
    ]
    rows = {r["host"]: r for r in _tool(run, "overview_page", capsys)["job"]["rows"]}
    assert rows[f"{machine}.worker0"]["role"] == "waiting"
    [late] = _tool(run, "pod_viewer", capsys)["stragglers"]
    assert late["host"] == f"{machine}.worker1"
    # its batches come from a Python generator: untraced work before the collective, input
    # when the stack sampler saw the loop fetching from it often enough (decision 387)
    fetched = Analysis(str(run)).steps(f"{machine}.worker1").fetched
    assert late["reason"] == ("input" if fetched.counted else "other"), fetched
    slow_next_ms = 1e3 * float(np.mean(truth[1]["next_s"][1:-1]))
    assert late["reason_ms_per_step"] == pytest.approx(slow_next_ms, rel=0.25)
    # the waiting worker's collective wait, within 5 points of what the script measured: its
    # step call less the same step's compute without the all-reduce; per step, the median
    # over the steps (a step whose process lost its core for 10 ms weighs no more than one)
    pod = _tool(run, "pod_viewer", capsys)
    col = pod["workers"].index(next(w for w in pod["workers"] if w["role"] == "waiting"))
    assert pod["workers"][col]["host"] == f"{machine}.worker0"
    ours = [
        100
        * (s["workers"][col]["breakdown_ms"]["collective_wait"])
        / s["workers"][col]["duration_ms"]
        for s in pod["steps"]
    ]
    steps = [s["step_num"] for s in pod["steps"]]
    compute = truth[0]["compute_only_s"]
    measured = [100 * (truth[0]["train_s"][k] - compute) / truth[0]["step_s"][k] for k in steps]
    assert float(np.median(ours)) == pytest.approx(float(np.median(measured)), abs=5), (
        ours,
        measured,
    )


def test_all_hosts_step_time_equals_xprofs(
    tf_job: tuple[Path, list[dict[str, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    xprof = pytest.importorskip("xprof.convert.raw_to_tool_data")
    run, _ = tf_job
    copy = tmp_path / "run"  # XProf writes its own cache beside the files it reads
    shutil.copytree(run, copy)
    paths = sorted(str(p) for p in copy.glob("*.xplane.pb"))
    data, _ = xprof.xspace_to_tool_data(paths, "overview_page", {"use_saved_result": False})
    tables = json.loads(data.decode() if isinstance(data, bytes) else data)
    figures = next(t["p"] for t in tables if "steptime_ms_average" in t.get("p", {}))
    job = _tool(run, "overview_page", capsys)["job"]
    ours = job["xprof_step_time_ms"]
    # XProf prints one decimal
    assert ours["avg"] == pytest.approx(float(figures["steptime_ms_average"]), abs=0.051)
    assert ours["min"] == pytest.approx(float(figures["steptime_ms_minimum"]), abs=0.051)
    assert ours["max"] == pytest.approx(float(figures["steptime_ms_maximum"]), abs=0.051)
    # XProf pairs the hosts' steps by their times on each host's own clock: with captures
    # started apart it can pair different step numbers, which stepscope's job step does not
    # XProf's breakdown (the first host's) by stepscope's rules in XProf's categories: its
    # collectives count by time window where XProf's grouping may leave a sliver uncounted
    first = job["xprof_breakdown_ms"]
    assert first["host_compute"] == pytest.approx(
        float(figures["host_compute_time_ms_avg"]), rel=0.01
    )


def test_a_worker_waiting_for_its_maps_python_is_late_from_input(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """Worker1's tf.data map a ``numpy_function`` busy 12 ms a batch: its own page reads it
    input-bound (its step thread held while that Python holds the GIL); the job's straggler
    read "from host compute ... the same work, slower" (decision 670).

    On a machine loaded beyond its cores (load 10+ on 2) the run may not hold the situation
    tested: worker1's late run-ups are then host compute its steps' thread spent waiting for
    a core (decision 830, shape 1). The straggler rule reads that in the same run (its CPU
    readings: `stragglers_cpu.DESCHEDULED`); such a run is the machine's, not an answer on
    the map's Python, and a fresh job is run (decision 992). Any other reason, or host
    compute the readings do not call the machine's, fails."""
    machine = __import__("socket").gethostname()
    for attempt in range(1, LOADED_ATTEMPTS + 1):
        run, _ = _run_job(tmp_path_factory, "--slow-map", "1", "--map-ms", "12", "--steps", "12")
        [late] = _tool(run, "pod_viewer", capsys)["stragglers"]
        assert late["host"] == f"{machine}.worker1"
        loaded = late["reason"] == "host_compute" and DESCHEDULED in late["explanation"]
        if not loaded:
            break
        print(f"attempt {attempt}, the machine's load: {late['explanation']}", file=sys.stderr)
    else:
        pytest.skip(
            f"{LOADED_ATTEMPTS} jobs' worker1 late from waiting for a CPU core (the machine's "
            f"load, by its own readings), none from its map: {late['explanation']}"
        )
    assert late["reason"] == "input", late["explanation"]
    assert "tf.data pipeline's Python" in late["explanation"]


def test_a_worker_starting_its_capture_late_is_not_late_at_step_0(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """Worker 1 calls `stepscope.start` 300 ms after worker 0: worker 0 waits in step 0's
    all-reduce for a worker whose capture had not begun, and the job page does not blame that
    wait on worker 1's work (decision 727: "late at steps 0, 3-9 ... 81.79 ms per step after
    the next rank", its step 0's 341 ms in it)."""
    run, truth = _run_job(tmp_path_factory, "--late-start", "1", "--late-ms", "300")
    pod: dict[str, Any] = _tool(run, "pod_viewer", capsys)
    # worker 0 did wait in step 0 (its capture began first) ...
    hosts = [w["host"] for w in pod["workers"]]
    col = next(k for k, h in enumerate(hosts) if h.endswith(".worker0"))
    step0 = pod["steps"][0]
    assert step0["step_num"] == 0
    assert step0["workers"][col]["breakdown_ms"]["collective_wait"] > 100.0, step0
    # ... for no work of worker 1's: worker 1 is late at step 0 by no more than its own first
    # step took, as its script timed it (on a loaded machine its first step may be slower
    # than worker 0's, and then it is late by that, not by the 300 ms)
    heat = pod["heatmap"]
    w1 = next(k for k, h in enumerate(heat["hosts"]) if h.endswith(".worker1"))
    own_step0_ms = 1e3 * truth[1]["step_s"][0]
    assert heat["late_ms"][w1][0] <= own_step0_ms, (heat["late_ms"][w1][0], own_step0_ms)


def test_tensorflows_profiler_servers_captured_as_a_job(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each worker runs TensorFlow's profiler server (`tf.profiler.experimental.server.start`)
    and `stepscope.client.trace` captures 1 s from both while they train: no step markers, so
    the steps are inferred on each host, and each host's average step is the one its script
    timed over the same steps; the worker slow in its input is the straggler. This job feeds
    `strategy.run` from a Python generator: its trace names no device of a task, so its
    files keep their addresses (decision 1079)."""
    run, truth = _run_job(
        tmp_path_factory, "--tf-server", "--slow-input", "1", "--input-ms", "20", "--steps", "150"
    )
    host = {k: f"localhost_{truth[k]['prof_port']}" for k in (0, 1)}
    assert sorted(p.name for p in run.iterdir()) == sorted(f"{h}.xplane.pb" for h in host.values())
    analysis = Analysis(str(run))
    for k, name in host.items():
        ours = analysis.steps(name).dur_ns / 1e6
        script = 1e3 * np.array(truth[k]["step_s"])
        n = len(ours)
        assert 3 <= n <= len(script)
        # the captured steps are a window of the script's: where they differ least
        at = min(
            range(len(script) - n + 1), key=lambda o: np.median(np.abs(script[o : o + n] - ours))
        )
        assert float(ours.mean()) == pytest.approx(float(script[at : at + n].mean()), rel=0.1)
    [late] = _tool(run, "pod_viewer", capsys)["stragglers"]
    assert late["host"] == host[1]
