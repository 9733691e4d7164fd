"""Shared by the page tests of every tool: one server for the session on a log directory holding
every fixture (a PyTorch GPU run, a two-rank run, a two-host TensorFlow run, JAX GPU and CPU
runs, and every other Kineto and TensorFlow fixture as a run of its own)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepscope.serve.app import RunningServer, start_server
from stepscope.serve.state import ServerState
from tests.support.browser import Recorder, check_fields, goto, open_page, tool_json

__all__ = ["Recorder", "check_fields", "goto", "gpu_server", "page_for", "run_of", "tool_json"]


def _tf_file(fixtures: Path, name: str) -> Path:
    return next((fixtures / "tf" / name).rglob("*.xplane.pb"))


def build_logdir(root: Path, fixtures: Path) -> Path:
    session = root / "tf2" / "plugins" / "profile" / "2026_01_01_00_00_00"
    session.mkdir(parents=True)
    shutil.copy(_tf_file(fixtures, "ctl"), session / "vm.xplane.pb")
    shutil.copy(_tf_file(fixtures, "ctl_opt"), session / "w1.xplane.pb")
    gpu = root / "gpu"
    gpu.mkdir()
    shutil.copy(
        fixtures / "kineto/v100_training_with_memory.json.gz", gpu / "trainer.1.pt.trace.json.gz"
    )
    jax = root / "jaxgpu" / "plugins" / "profile" / "2026_01_01_00_00_00"
    jax.mkdir(parents=True)
    shutil.copy(fixtures / "xspace/gpu_jax_fused_attention.xplane.pb", jax / "gpu0.xplane.pb")
    cnn = next((fixtures / "jax" / "cnn_cpu").rglob("*.xplane.pb"))
    jax_cpu = root / "jaxcpu" / "plugins" / "profile" / "2026_01_01_00_00_00"
    jax_cpu.mkdir(parents=True)
    shutil.copy(cnn, jax_cpu / "vm.xplane.pb")
    bert = root / "bert"
    bert.mkdir()
    shutil.copy(
        fixtures / "kineto/h100_bert_small_inference.json.gz", bert / "h100.1.pt.trace.json.gz"
    )
    ranks = root / "ranks"
    ranks.mkdir()
    for rank in (0, 1):
        shutil.copy(
            fixtures / "kineto/a100_nccl_rank0.json.gz", ranks / f"rank{rank}.1.pt.trace.json.gz"
        )
    # Every other fixture as a run of its own (the page tests of every page, tests/serve/
    # test_pages_browser.py): run "k_<name>" per Kineto trace, "tf_<name>" per TF profile.
    used = {"v100_training_with_memory", "h100_bert_small_inference", "a100_nccl_rank0"}
    for trace in sorted((fixtures / "kineto").glob("*.json.gz")):
        name = trace.name.removesuffix(".json.gz")
        if name not in used:
            (root / f"k_{name}").mkdir()
            shutil.copy(trace, root / f"k_{name}" / f"{name}.1.pt.trace.json.gz")
    for name in ("keras", "keras_marked", "remote", "big_ctl"):
        profile = next((fixtures / "tf" / name).rglob("*.xplane.pb"))
        session = root / f"tf_{name}" / "plugins" / "profile" / profile.parent.name
        session.mkdir(parents=True)
        shutil.copy(profile, session / profile.name)
    return root


@pytest.fixture(scope="session")
def gpu_server(
    fixtures_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    logdir = build_logdir(tmp_path_factory.mktemp("gpu_logs"), fixtures_dir)
    state = ServerState(logdir, cache_dir=tmp_path_factory.mktemp("gpu_cache"))
    running = start_server(state.logdir, state=state)
    yield running
    running.stop()


@pytest.fixture
def page_for(browser: Any, gpu_server: RunningServer) -> Iterator[tuple[Any, Recorder]]:
    context, page, rec = open_page(browser, gpu_server.url)
    yield page, rec
    context.close()
    rec.check()


def run_of(server: RunningServer, prefix: str) -> str:
    runs = httpx.get(server.url + "api/runs").json()["runs"]
    return next(r["run"] for r in runs if r["run"].split("/")[0] == prefix)
