"""Capture tests: no session may leak from one test into the next."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import stepscope.recorder as rec
from stepscope.capture import session
from tests.support.clock import ManualAlarms
from tests.support.recorder import FakeClock, use_clock

# The variables a launcher sets (capture.job): a test run under torchrun, SLURM or MPI must
# not see its captures named and grouped as ranks of that job.
JOB_VARIABLES = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "TORCHELASTIC_RUN_ID",
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "SLURM_LOCALID",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_MCA_ess_base_jobid",
    "PMI_RANK",
    "PMI_SIZE",
    "PMIX_RANK",
    "PMIX_NAMESPACE",
    "TF_CONFIG",
    "STEPSCOPE_RUN_NAME",
)


@pytest.fixture(autouse=True)
def _outside_any_job(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in JOB_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _no_leaked_session() -> Iterator[None]:
    yield
    if session._session is not None:
        try:
            session.stop(save=False)
        except Exception:
            session._session = None


@pytest.fixture(autouse=True)
def _no_leaked_recorder() -> Iterator[None]:
    yield
    if rec.is_running():
        rec.stop()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The recorder's and the annotations' `perf_counter_ns`, advanced by the test."""
    return use_clock(monkeypatch, FakeClock())


@pytest.fixture
def alarms(monkeypatch: pytest.MonkeyPatch) -> ManualAlarms:
    """New sessions read a clock whose ``delay_ms`` / ``duration_ms`` alarms the test fires."""
    clock = ManualAlarms()
    monkeypatch.setattr(session, "CLOCK", clock)
    return clock
