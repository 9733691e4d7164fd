"""Issue #13: the fuzzer (crafted cases as seeds) and the crafted cases run through the CLI
under a per-process memory and CPU bound, as a user's shell would run them."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hardening import crafted, fuzz
from tests.support.fixtures import REPO

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

MEMORY_BOUND = 1536 << 20  # RLIMIT_DATA of each CLI run: profile limit defaults to 1/4 of it
CPU_BOUND_S = 60  # RLIMIT_CPU: the quadratic loaders needed 235 s and 30 s


def _bounded(memory: int = MEMORY_BOUND, cpu_s: int = CPU_BOUND_S) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))

    return apply


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO}", "OPENBLAS_NUM_THREADS": "1"}
    env.pop("STEPSCOPE_MAX_PROFILE_BYTES", None)
    return env


def test_fuzz_small_budget(small_limit: int) -> None:
    assert fuzz.run(cases=60, seed=3) == []


@pytest.mark.integration
def test_fuzz_under_resource_limits() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tests.hardening.fuzz", "--cases", "600", "--seed", "11"],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        preexec_fn=_bounded(cpu_s=300),
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


CRAFTED = {
    "planes.xplane.pb": lambda: crafted.many_planes(60_000),
    "missing.xplane.pb": lambda: crafted.many_missing_metadata(300_000),
    "ref.xplane.pb": crafted.ref_stat_without_metadata,
    "bomb.xplane.pb.gz": lambda: crafted.xspace_gzip_bomb(8 << 30),
    "bomb.json.gz": lambda: crafted.json_gzip_bomb(8 << 30),
    "empty_events.xplane.pb": lambda: crafted.empty_events(20_000_000),
    "cut.pt.trace.json": lambda: crafted.unterminated_json_string(50_000_000),
}


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_crafted_case_through_the_cli(name: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_bytes(CRAFTED[name]())
    result = subprocess.run(
        [sys.executable, "-m", "stepscope.cli.main", "info", str(path), "--no-cache"],
        env=_env(),
        capture_output=True,
        text=True,
        preexec_fn=_bounded(),
        timeout=300,
    )
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode in (0, 2), (result.returncode, result.stderr[-2000:])
    if result.returncode == 2:
        lines = result.stderr.strip().splitlines()  # progress lines, then the error
        assert lines[-1].startswith(f"stepscope: error: {path}: "), lines
        assert not [line for line in lines[:-1] if "error" in line.lower()], lines
